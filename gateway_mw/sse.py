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
    """Feed bytes, get complete :class:`SSEEvent` values; ``finish()`` returns an unterminated tail.

    Streams whose lines end in ``\n`` (nearly all) are cut at ``\n\n`` with ``bytes.find``; the
    first ``\r`` switches the decoder to a line-by-line reader that knows every line ending.
    """

    def __init__(self) -> None:
        self._lf_only = True
        self._reset()

    def _reset(self) -> None:
        self._buf = bytearray()  # the event being read (and, line by line, its parsed lines)
        self._searched = 0  # "\n\n" cannot end before this offset of _buf
        self._line_start = 0  # line-by-line reader: offset in _buf of the line being read
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
        if self._lf_only and b"\r" in chunk:
            self._lf_only = False  # _buf holds one unparsed partial event: read it again by lines
        if not self._lf_only:
            return self._feed_lines(chunk)
        buf = self._buf
        data: bytes | bytearray
        if buf:
            buf += chunk
            data = buf
        else:
            data = chunk
        events: list[SSEEvent] = []
        start = 0
        find = data.find
        idx = find(b"\n\n", self._searched)
        while idx >= 0:
            end = idx + 2
            self._block(data[start:end] if data is chunk else bytes(data[start:end]), events)
            start = end
            idx = find(b"\n\n", start)
        if data is chunk:
            if start < len(chunk):
                buf += chunk[start:]
        elif start:
            del buf[:start]
        self._searched = max(0, len(buf) - 1)
        return events

    def finish(self) -> list[SSEEvent]:
        """The bytes left at end of stream, as one last event (a line may lack its terminator)."""
        if self._lf_only:
            self._lf_only = False
            events = self._feed_lines(b"")
        else:
            events = []
        buf = self._buf
        if buf:
            if self._line_start < len(buf):
                line_end = len(buf) - 1 if buf.endswith(b"\r") else len(buf)
                self._field(bytes(buf[self._line_start : line_end]), bytes(buf[self._line_start :]))
            events.append(self._dispatch(bytes(buf)))
        self._reset()
        return events

    # -- "\n" streams: whole events at a time ----------------------------------------------------

    def _block(self, raw: bytes, events: list[SSEEvent]) -> None:
        """``raw`` ends with the only blank line in it, perhaps after leading blank lines."""
        lead = 0
        while lead < len(raw) and raw[lead] == 10:  # blank lines before any field: empty events
            events.append(SSEEvent(raw=b"\n"))
            lead += 1
        if lead:
            raw = raw[lead:]
            if not raw:
                return
        body = raw[:-2]
        if body.startswith(b"data:") and b"\n" not in body:  # the usual event: one data line
            value = body[5:]
            events.append(SSEEvent(raw=raw, data=value[1:] if value[:1] == b" " else value))
            return
        for line in body.split(b"\n"):
            self._field(line, line + b"\n")
        events.append(self._dispatch(raw))

    # -- any line endings: line by line ---------------------------------------------------------

    def _feed_lines(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buf
        buf += chunk
        events: list[SSEEvent] = []
        pos = self._line_start
        event_start = 0
        n = len(buf)
        while True:
            m = _EOL.search(buf, pos)
            if m is None:
                break
            end = m.end()
            if end == n and buf[m.start()] == 13:  # b"\r": a "\n" may still follow in the next chunk
                break
            if m.start() == pos:  # a blank line ends the event
                events.append(self._dispatch(bytes(buf[event_start:end])))
                event_start = end
            else:
                self._field(bytes(buf[pos : m.start()]), bytes(buf[pos:end]))
            pos = end
        self._line_start = pos - event_start
        if event_start:
            del buf[:event_start]
        return events

    def _field(self, line: bytes, raw_line: bytes) -> None:
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            return
        if name == b"event":
            self._event = value.decode("utf-8", "replace")
        self._fields.append(raw_line)

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
