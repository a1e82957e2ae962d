"""The OpenAI Responses surface: stream and body translation, numbering, the fast path, the SDKs."""
