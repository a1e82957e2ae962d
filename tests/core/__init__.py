"""What every surface shares: the scanner, model families, configuration, the SSE codec, raw JSON, the matrix."""
