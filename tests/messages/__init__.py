"""The Anthropic messages surface: stream and body translation, numbering, the fast path, the SDK."""
