"""Incremental Server-Sent Events framing over bytes, and the canonical encoding of new events.

The decoder splits a byte stream into events wherever the chunks happen to be cut (inside a line,
inside ``\\r\\n``, inside a multi-byte UTF-8 character: it works on bytes and never decodes text).
Each event keeps its exact bytes, so an event the translator leaves alone is re-emitted byte-for-byte.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["SSEDecoder", "SSEEvent", "encode_event"]

_EOL = re.compile(rb"\r\n|\r|\n")


class SSEEvent(msgspec.Struct, gc=False):
    """One event as it was on the wire.

    ``raw`` holds its exact bytes, blank line included. ``data`` joins its ``data:`` lines with
    ``\\n`` (``None`` when it has none: a comment or keep-alive). ``event`` is the ``event:`` field.
    ``fields`` holds the raw lines other than ``data:`` ones (``event:``, ``id:``, ``retry:``,
    comments), kept when the event is rewritten.
    """

    raw: bytes
    data: bytes | None = None
    event: str | None = None
    fields: bytes = b""


def encode_event(data: bytes, event: str | None = None, fields: bytes | None = None) -> SSEEvent:
    """A new event carrying ``data`` (one line: JSON from msgspec never holds a raw newline).

    ``fields`` (the non-data lines of the event this one replaces) takes precedence over ``event``.
    """
    if fields is None:
        fields = b"event: " + event.encode() + b"\n" if event is not None else b""
    return SSEEvent(raw=fields + b"data: " + data + b"\n\n", data=data, event=event, fields=fields)


class SSEDecoder:
    """Feed bytes, get complete :class:`SSEEvent` values; ``finish()`` returns an unterminated tail."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._buf = bytearray()
        self._event_start = 0  # offset in _buf of the event being read
        self._line_start = 0  # offset in _buf of the line being read
        self._data: list[bytes] = []
        self._event: str | None = None
        self._fields: list[bytes] = []

    @property
    def pending(self) -> int:
        """Bytes received that belong to no complete event yet."""
        return len(self._buf)

    def take_pending(self) -> bytes:
        """Give up decoding: the bytes of the unfinished event, which the decoder forgets."""
        pending = bytes(self._buf)
        self._reset()
        return pending

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buf
        buf += chunk
        events: list[SSEEvent] = []
        pos = self._line_start
        n = len(buf)
        while True:
            m = _EOL.search(buf, pos)
            if m is None:
                break
            end = m.end()
            if end == n and buf[m.start()] == 13:  # b"\r": a "\n" may still follow in the next chunk
                break
            if m.start() == pos:  # a blank line ends the event
                events.append(self._dispatch(bytes(buf[self._event_start : end])))
                self._event_start = end
            else:
                self._field(buf, pos, m.start(), end)
            pos = end
        self._line_start = pos
        if self._event_start:
            del buf[: self._event_start]
            self._line_start -= self._event_start
            self._event_start = 0
        return events

    def finish(self) -> list[SSEEvent]:
        """The bytes left at end of stream, as one last event (a line may lack its terminator)."""
        buf = self._buf
        if not buf:
            return []
        if self._line_start < len(buf):
            line_end = len(buf)
            if buf.endswith(b"\r"):
                line_end -= 1
            self._field(buf, self._line_start, line_end, len(buf))
        event = self._dispatch(bytes(buf))
        self._reset()
        return [event]

    def _field(self, buf: bytearray, start: int, end: int, line_end: int) -> None:
        line = bytes(buf[start:end])
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            return
        if name == b"event":
            self._event = value.decode("utf-8", "replace")
        self._fields.append(bytes(buf[start:line_end]))

    def _dispatch(self, raw: bytes) -> SSEEvent:
        data = self._data
        event = SSEEvent(
            raw=raw,
            data=(data[0] if len(data) == 1 else b"\n".join(data)) if data else None,
            event=self._event,
            fields=b"".join(self._fields) if self._fields else b"",
        )
        self._data = []
        self._event = None
        self._fields = []
        return event
