"""Incremental Server-Sent Events framing over bytes, and the canonical encoding of new events.

The decoder splits a byte stream into events wherever the chunks happen to be cut (inside a line,
inside ``\\r\\n``, inside a multi-byte UTF-8 character: it works on bytes and never decodes text).
Each event keeps its exact bytes, so an event the translator leaves alone is re-emitted byte-for-byte.

Memory is bounded: an event that grows past ``max_event_bytes`` is handed on in raw pieces as its
bytes arrive (events marked ``oversized``), never held whole. Cost is linear in the bytes received,
whatever the line endings: no byte is searched twice for a line terminator.
"""

from __future__ import annotations

import msgspec

__all__ = ["BOM", "DEFAULT_MAX_EVENT_BYTES", "SSEDecoder", "SSEEvent", "encode_event", "event_type"]

BOM = b"\xef\xbb\xbf"
_HEAD = 256  # where an event's type is looked for: its event: line, or the start of its data
DEFAULT_MAX_EVENT_BYTES = 1024 * 1024


class SSEEvent(msgspec.Struct, gc=False):
    """One event as it was on the wire.

    ``raw`` holds its exact bytes, blank line included. ``data`` joins its ``data:`` lines with
    ``\\n`` (``None`` when it has none: a comment, a keep-alive, a BOM). ``event`` is the ``event:``
    field. ``fields`` holds the lines other than ``data:`` ones (``event:``, ``id:``, ``retry:``,
    comments), each ended by ``\\n``, kept when the event is rewritten. ``oversized`` marks a raw
    piece of an event larger than the decoder's cap: it carries no ``data`` and is never decoded;
    ``more`` says that further pieces of the same event follow.
    """

    raw: bytes
    data: bytes | None = None
    event: str | None = None
    fields: bytes = b""
    oversized: bool = False
    more: bool = False


def encode_event(data: bytes, event: str | None = None, fields: bytes | None = None) -> SSEEvent:
    """A new event carrying ``data``.

    ``fields`` (the non-data lines of the event this one replaces) takes precedence over ``event``.
    Lines end in ``\\n``; the pipeline rewrites them for a stream that uses another line ending.
    ``data`` holding line breaks (values kept as an upstream wrote them over several ``data:``
    lines) is written one ``data:`` line per line, which every reader joins back with ``\\n``: a
    raw line break inside one ``data:`` line would end it, and the rest of the event would be lost.
    """
    if fields is None:
        fields = b"event: " + event.encode() + b"\n" if event is not None else b""
    if b"\n" in data or b"\r" in data:
        lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        raw = b"".join((fields, b"data: ", b"\ndata: ".join(lines), b"\n\n"))
    else:
        raw = b"".join((fields, b"data: ", data, b"\n\n"))  # one copy of data, however large
    return SSEEvent(raw=raw, data=data, event=event, fields=fields)


def event_type(head: bytes) -> bytes | None:
    """The type of an event from its first bytes: its ``event:`` line, else a ``"type"`` key that
    opens its data object. Never a search of the data: the model's text may hold any name."""
    for line in head.splitlines():
        name, colon, value = line.partition(b":")
        if name == b"event":
            return value[1:] if value[:1] == b" " else value
        if name == b"data":
            value = value.lstrip()
            if not value.startswith(b"{"):
                return None
            value = value[1:].lstrip()
            if not value.startswith(b'"type"'):
                return None
            value = value[6:].lstrip()
            if not value.startswith(b":"):
                return None
            value = value[1:].lstrip()
            end = value.find(b'"', 1)
            return value[1:end] if value.startswith(b'"') and end > 0 else None
        if name and not colon:
            return None
    return None


class SSEDecoder:
    """Feed bytes, get complete :class:`SSEEvent` values; ``finish()`` returns an unterminated tail.

    Streams whose lines end in ``\\n`` (nearly all) are cut at ``\\n\\n`` with ``bytes.find``; the
    first ``\\r`` switches the decoder to a line-by-line reader that knows every line ending. A UTF-8
    byte order mark at the very start is passed on as an event of its own and not parsed, as the
    SSE standard says.
    """

    def __init__(
        self,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        large_events: frozenset[bytes] = frozenset(),
        max_large_event_bytes: int = 0,
    ) -> None:
        self.max_event_bytes = max_event_bytes
        # Event types that are a whole document by nature (a Responses terminal event repeats every
        # text): recognised in an event's first bytes, they may grow to max_large_event_bytes.
        self.large_events = frozenset(large_events)
        self._max_large = max(max_large_event_bytes, max_event_bytes)
        self.newline = b"\n"
        """The stream's line ending, from its first line: the one events written into it use."""
        self.oversized_events = 0
        self._lf_only = True
        self._at_start = True  # a BOM may still come
        self._newline_known = False
        # Streaming an oversized event through: where we are in its lines.
        self._skipping = False
        self._skip_at_line_start = False
        self._skip_after_cr = False
        self._reset()

    def _reset(self) -> None:
        self._buf = bytearray()  # the event being read (and, line by line, its parsed lines)
        self._searched = 0  # no line terminator we have not handled lies before this offset of _buf
        self._line_start = 0  # line-by-line reader: offset in _buf of the line being read
        self._data: list[bytes] = []
        self._event: str | None = None
        self._fields: list[bytes] = []

    @property
    def pending(self) -> int:
        """Bytes received that belong to no complete event yet."""
        return len(self._buf)

    @property
    def plain(self) -> bool:
        """Whether the stream so far is ``\\n``-only and not inside an oversized event: then every
        ``\\n\\n`` after :meth:`feed_pending` ends an event."""
        return self._lf_only and not self._skipping

    @property
    def at_boundary(self) -> bool:
        """Whether the next byte starts an event: :attr:`plain`, past the start, nothing pending."""
        return self._lf_only and not self._skipping and not self._at_start and not self._buf

    def feed_pending(self, chunk: bytes, start: int = 0) -> tuple[list[SSEEvent], int]:
        """For a :attr:`plain` decoder in the middle of an event, and a ``chunk`` that holds no
        ``\\r``: :meth:`feed` it ``chunk`` from ``start`` up to the end of that event (just past its
        blank line), or to the end of ``chunk`` if the event does not end in it. The events, and
        where in ``chunk`` the feeding stopped: after it, every ``\\n\\n`` ends an event again."""
        if self._buf.endswith(b"\n") and chunk.startswith(b"\n", start):
            end = start + 1
        else:
            end = chunk.find(b"\n\n", start)
            end = end + 2 if end >= 0 else len(chunk)
        return self.feed(chunk[start:end] if start or end < len(chunk) else chunk), end

    def one_event(self, chunk: bytes) -> bool:
        """Whether ``chunk`` is one event on one line, at an event boundary of a ``\\n`` stream:
        then the caller may handle it whole, and :meth:`one` is what :meth:`feed` would give for it
        (at the very start of the stream, what feeding it would note is noted)."""
        # One line and its blank line: the first newline is the last but one byte, and so the last
        # is one too (a chunk shorter than two bytes finds none where it looks). A one-byte search
        # runs at memchr speed.
        if chunk.find(b"\n") != len(chunk) - 2 or chunk[-1] != 10 or chunk.find(b"\r") >= 0:
            return False
        return self.at_boundary or self.open_plain(chunk)

    def one(self, chunk: bytes) -> list[SSEEvent]:
        """The event of a ``chunk`` that :meth:`one_event` accepted, as :meth:`feed` makes it: a data
        line is made here (at a boundary, one line changes none of the decoder's state)."""
        if chunk.startswith(b"data: ") and self.newline == b"\n":
            return [SSEEvent(raw=chunk, data=chunk[6:-2])]
        return self.feed(chunk)

    def open_plain(self, chunk: bytes) -> bool:
        """At the very start of the stream, for a first ``chunk`` that opens with no BOM and holds
        no ``\\r`` but a ``\\n``: note what feeding it would (no BOM, ``\\n`` line endings), so that
        the caller may handle its whole events itself. ``False``, nothing noted, otherwise."""
        if not self._at_start or self._buf or chunk[:1] in (b"", BOM[:1]) or chunk.find(b"\r") >= 0:
            return False
        if chunk.find(b"\n") < 0:
            return False
        self._at_start = False
        self.newline = b"\n"
        self._newline_known = True
        return True

    def take_pending(self) -> bytes:
        """Give up decoding: the bytes of the unfinished event, which the decoder forgets."""
        pending = bytes(self._buf)
        self._reset()
        return pending

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if self._at_start:
            chunk = self._start(chunk, events)
        if self._lf_only and b"\r" in chunk:
            self._lf_only = False  # _buf holds one unparsed partial event: read it again by lines
            self._searched = self._line_start = 0
        if self._skipping:
            end = self._skip(chunk)
            if end < 0:
                if chunk:
                    events.append(SSEEvent(raw=chunk, oversized=True, more=True))
                return events
            events.append(SSEEvent(raw=chunk[:end], oversized=True))
            chunk = chunk[end:]
        if not chunk:
            return events
        if not self._newline_known:
            self._learn_newline(chunk)
        if self._lf_only:
            self._feed_lf(chunk, events)
        else:
            self._feed_lines(chunk, events)
        if len(self._buf) > self.max_event_bytes and self._too_large(self._buf):
            self._overflow(events)
        return events

    def finish(self) -> tuple[list[SSEEvent], bytes]:
        """End of stream: the last events (a final ``\r`` ends its line), and the bytes of an event
        that never ended, to be passed on as they are (the SSE standard drops such an event)."""
        events: list[SSEEvent] = []
        if not self._lf_only and self._buf.endswith(b"\r") and not self._skipping:
            self._feed_lines(b"", events, final=True)
        tail = bytes(self._buf)
        self._reset()
        self._skipping = False
        return events, tail

    # -- the start of the stream ------------------------------------------------------------------

    def _start(self, chunk: bytes, events: list[SSEEvent]) -> bytes:
        head = bytes(self._buf) + chunk if self._buf else chunk
        if len(head) < len(BOM) and BOM.startswith(head):
            self._buf = bytearray(head)  # too short to tell yet
            return b""
        self._at_start = False
        self._buf = bytearray()
        if head.startswith(BOM):
            events.append(SSEEvent(raw=BOM))
            return head[len(BOM) :]
        return head

    def _learn_newline(self, chunk: bytes) -> None:
        lf, cr = chunk.find(b"\n"), chunk.find(b"\r")
        if cr < 0 and lf < 0:
            return
        if cr < 0 or 0 <= lf < cr:
            self.newline = b"\n"
        elif cr + 1 < len(chunk):
            self.newline = b"\r\n" if chunk[cr + 1] == 10 else b"\r"
        else:
            self.newline = b"\r\n"  # the likelier of the two; "\r" alone is rare
        self._newline_known = True

    # -- "\n" streams: whole events at a time ----------------------------------------------------

    def _feed_lf(self, chunk: bytes, events: list[SSEEvent]) -> None:
        buf = self._buf
        data: bytes | bytearray
        if buf:
            buf += chunk
            data = buf
        else:
            data = chunk
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
        if len(raw) > self.max_event_bytes and self._too_large(raw):
            self.oversized_events += 1
            events.append(SSEEvent(raw=raw, oversized=True))
            return
        # Offsets, not slices, until a value is taken: an event may be as large as the body cap.
        end = len(raw) - 2
        first = raw.find(b"\n", 0, end)
        if first < 0 and raw.startswith(b"data:"):  # the usual event: one data line
            events.append(SSEEvent(raw=raw, data=raw[6 if raw[5:6] == b" " else 5 : end]))
            return
        pos = 0
        while pos <= end:
            eol = raw.find(b"\n", pos, end)
            if eol < 0:
                eol = end
            if raw.startswith(b"data", pos) and (eol == pos + 4 or raw[pos + 4] == 58):
                value = min(pos + 5, eol)
                if raw[value : value + 1] == b" ":
                    value += 1
                self._data.append(raw[value:eol])
            else:
                self._field(raw[pos:eol])
            pos = eol + 1
        events.append(self._dispatch(raw))

    # -- any line endings: line by line ---------------------------------------------------------

    def _feed_lines(self, chunk: bytes, events: list[SSEEvent], final: bool = False) -> None:
        buf = self._buf
        buf += chunk
        n = len(buf)
        pos = self._line_start
        event_start = 0
        find = buf.find
        search = max(pos, self._searched)
        # The next "\n" and the next "\r", each looked up again only once passed: a stream that uses
        # one of them never rescans the buffer for the other (-1: none until the end of the buffer).
        lf, cr = find(b"\n", search), find(b"\r", search)
        while True:
            if 0 <= lf < search:
                lf = find(b"\n", search)
            if 0 <= cr < search:
                cr = find(b"\r", search)
            if lf < 0 and cr < 0:
                search = n
                break
            eol = lf if cr < 0 or 0 <= lf < cr else cr
            end = eol + 1
            if buf[eol] == 13:
                if end == n and not final:  # a "\n" may still come in the next chunk
                    search = eol
                    break
                if end < n and buf[end] == 10:
                    end += 1
            if eol == pos:  # a blank line ends the event
                events.append(self._dispatch(bytes(buf[event_start:end])))
                event_start = end
            else:
                self._field(bytes(buf[pos:eol]))
            pos = search = end
        self._line_start = pos - event_start
        self._searched = search - event_start
        if event_start:
            del buf[:event_start]

    def _field(self, line: bytes) -> None:
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            return
        if name == b"event":
            self._event = value.decode("utf-8", "replace")
        self._fields.append(line + b"\n")

    def _dispatch(self, raw: bytes) -> SSEEvent:
        data = self._data
        if len(raw) > self.max_event_bytes and self._too_large(raw):
            self.oversized_events += 1
            event = SSEEvent(raw=raw, oversized=True)
        else:
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

    # -- oversized events: streamed through raw ----------------------------------------------------

    def outgrown(self, event: SSEEvent) -> bool:
        """Whether ``event``, decoded whole, is over its cap as ``large_events`` stand now (and then
        it counts as oversized). A chunk's events are all decoded before the first is translated,
        and a translator may stop holding large events in between."""
        if event.oversized or len(event.raw) <= self.max_event_bytes or not self._too_large(event.raw):
            return False
        self.oversized_events += 1
        return True

    def _too_large(self, raw: bytes | bytearray) -> bool:
        """Whether ``raw`` (an event, whole or begun, over ``max_event_bytes``) is over its cap."""
        if len(raw) > self._max_large or not self.large_events:
            return True
        return event_type(bytes(raw[:_HEAD])) not in self.large_events

    def _overflow(self, events: list[SSEEvent]) -> None:
        """The pending event outgrew the cap: hand its bytes on and stream the rest of it raw."""
        buf = self._buf
        self.oversized_events += 1
        if not self._lf_only and buf.endswith(b"\r") and self._line_start == len(buf) - 1:
            # The held "\r" ends a blank line: the event is over, only its "\n" may be to come.
            events.append(SSEEvent(raw=self.take_pending(), oversized=True))
            return
        self._skipping = True
        if self._lf_only:
            self._skip_at_line_start = buf.endswith(b"\n")
            self._skip_after_cr = False
        else:
            self._skip_after_cr = buf.endswith(b"\r")
            self._skip_at_line_start = self._skip_after_cr or self._line_start == len(buf)
        events.append(SSEEvent(raw=self.take_pending(), oversized=True, more=True))

    def _skip(self, chunk: bytes) -> int:
        """The offset in ``chunk`` just past the blank line that ends the oversized event, or -1."""
        pos, n = 0, len(chunk)
        at_line_start, after_cr = self._skip_at_line_start, self._skip_after_cr
        lf_only = self._lf_only and b"\r" not in chunk
        while pos < n:
            if after_cr:
                after_cr = False
                if chunk[pos] == 10:  # the "\n" of a "\r\n" cut between chunks
                    pos += 1
                    continue
            lf = chunk.find(b"\n", pos)
            cr = -1 if lf_only else chunk.find(b"\r", pos)
            if lf < 0 and cr < 0:
                at_line_start = False
                break
            eol = lf if cr < 0 or 0 <= lf < cr else cr
            if eol == pos and at_line_start:  # the blank line: the event ends here
                end = eol + 1
                if chunk[eol] == 13 and end < n and chunk[end] == 10:
                    end += 1
                self._skipping = False
                return end
            at_line_start = True
            after_cr = chunk[eol] == 13
            pos = eol + 1
        self._skip_at_line_start, self._skip_after_cr = at_line_start, after_cr
        return -1
