"""Incremental newline-delimited JSON framing over bytes (Ollama's native API streams it).

The decoder cuts a byte stream into lines wherever the chunks are cut, keeping each line's exact bytes
(its ``\\n`` or ``\\r\\n`` included) so that a line the translator leaves alone goes out byte for byte.
It hands over the same event records as the SSE decoder (``data`` is the line without its ending;
``None`` for a blank line), so that the pipeline and the translators treat both framings alike.

Memory is bounded: a line that grows past ``max_event_bytes`` is handed on in raw pieces as its bytes
arrive (events marked ``oversized``), never held whole. Linear: no byte is searched twice.
"""

from __future__ import annotations

from .sse import SSEEvent

__all__ = ["NDJSONDecoder", "encode_line"]


def encode_line(data: bytes) -> SSEEvent:
    """A new line carrying ``data`` (JSON from msgspec never holds a raw line break)."""
    return SSEEvent(raw=data + b"\n", data=data)


class NDJSONDecoder:
    """Feed bytes, get complete lines; ``finish()`` returns the last line when it had no line ending."""

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes
        self.large_events: frozenset[bytes] = frozenset()  # no line type may grow past the cap
        self.newline = b"\n"
        """The stream's line ending, from its first line: the one lines written into it use."""
        self.oversized_events = 0
        self._buf = bytearray()
        self._searched = 0  # no line ending lies in _buf before this offset
        self._skipping = False  # an oversized line is streaming through
        self._newline_known = False

    @property
    def at_boundary(self) -> bool:
        """Whether the next byte starts a line (nothing held)."""
        return not self._buf and not self._skipping

    @property
    def pending(self) -> int:
        return len(self._buf)

    def take_pending(self) -> bytes:
        pending = bytes(self._buf)
        self._buf = bytearray()
        self._searched = 0
        return pending

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if self._skipping:
            end = chunk.find(b"\n")
            if end < 0:
                if chunk:
                    events.append(SSEEvent(raw=chunk, oversized=True, more=True))
                return events
            events.append(SSEEvent(raw=chunk[: end + 1], oversized=True))
            self._skipping = False
            chunk = chunk[end + 1 :]
        buf = self._buf
        buf += chunk
        start = 0
        idx = buf.find(b"\n", self._searched)
        while idx >= 0:
            line = bytes(buf[start : idx + 1])
            if not self._newline_known:
                self.newline = b"\r\n" if line.endswith(b"\r\n") else b"\n"
                self._newline_known = True
            events.append(self._line(line))
            start = idx + 1
            idx = buf.find(b"\n", start)
        if start:
            del buf[:start]
        self._searched = len(buf)
        if len(buf) > self.max_event_bytes:  # a line longer than the cap: through as it comes
            self.oversized_events += 1
            self._skipping = True
            events.append(SSEEvent(raw=self.take_pending(), oversized=True, more=True))
        return events

    def finish(self) -> tuple[list[SSEEvent], bytes]:
        """The end of the stream: a last line without its line ending is a line all the same."""
        self._skipping = False
        tail = self.take_pending()
        return ([self._line(tail)] if tail.strip() else []), (tail if not tail.strip() else b"")

    def _line(self, raw: bytes) -> SSEEvent:
        data = raw.rstrip(b"\r\n")
        if len(raw) > self.max_event_bytes:
            self.oversized_events += 1
            return SSEEvent(raw=raw, oversized=True)
        return SSEEvent(raw=raw, data=data if data.strip() else None)
