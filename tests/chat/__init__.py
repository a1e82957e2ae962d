"""The chat completions surface: stream and body translation, the fast paths, the SDKs."""
