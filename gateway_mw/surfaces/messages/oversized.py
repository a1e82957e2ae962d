"""An event over ``max_event_bytes``: never held or decoded, renumbered on its bytes as they go by."""

from __future__ import annotations

from typing import Protocol

import msgspec

from ...rawjson import TopLevelKeys, as_int, as_str
from ...scanner import CONTENT
from ...sse import SSEEvent, event_type
from .blocks import TextBlock
from .events import INDEX, has_event_line, newline_of

__all__ = ["HEAD", "OversizedEvent", "Renumbering"]

HEAD = 256  # where an oversized event's type is read: its event: line, or the key that opens its data


class Renumbering(Protocol):
    """What an oversized event asks of the stream's numbering."""

    def map_index(self, upstream: int, kind: bytes | None, may_open: bool) -> tuple[list[SSEEvent], int | None]:
        """The output index for an event naming ``upstream``, and the events to send before it."""
        ...

    def likely_text_block(self) -> TextBlock | None:
        """The text block a delta whose ``"index"`` is not known yet most likely writes to."""
        ...

    def to_text(self, block: TextBlock) -> list[SSEEvent]:
        """The events that leave ``block`` writing to an open text block."""
        ...

    def alias(self, upstream: int, out: int) -> None:
        """Block ``upstream`` is numbered ``out`` too (a start's duplicate ``"index"`` key)."""
        ...

    def named(self, upstream: int) -> None:
        """An event named block ``upstream``."""
        ...


class OversizedEvent:
    """One event over the cap under way: the value of every top-level ``"index"`` key rewritten
    through the numbering map as its bytes pass (a duplicate key gets the value the first got).

    * A ``content_block_start`` (a 1 MB ``tool_use`` or ``web_search_tool_result``) with an index
      not seen before takes the next output index, so that the blocks after it follow it.
    * An event naming a scanned text block (an oversized ``text_delta``, not scanned) goes on an open
      *text* output block: a thinking block open there is closed, and a text block opened, before its
      first byte. When its ``"index"`` is not in its first piece (llama.cpp writes keys sorted, after
      the body), the text block the last block event named is taken to be the one it names: at
      worst the client sees an empty text block more.
    * Any other index is mapped when known, and left alone when not.
    """

    __slots__ = ("_before", "_block", "_keys", "_kind", "_out", "_stream")

    def __init__(self, head: bytes, stream: Renumbering) -> None:
        self._stream = stream
        self._kind = event_type(head)  # from its event: line or the type that opens its data
        self._out: int | None = None  # the output index every top-level "index" key gets
        self._block: TextBlock | None = None  # the text block it writes to, when it names one
        self._before: list[SSEEvent] | None = None  # while the first piece is read: events to send first
        self._keys = TopLevelKeys(INDEX, self._index)

    def first(self, piece: bytes) -> bytes:
        """The bytes for the event's first piece: what must go before it, then the piece."""
        self._before = before = []
        try:
            out = self._keys.feed(piece)
            if self._out is None and self._kind == b"content_block_delta":
                self._block = self._stream.likely_text_block()
                if self._block is not None:
                    before += self._stream.to_text(self._block)
        finally:
            self._before = None
        newline = newline_of(piece)
        written = b"".join(e.raw for e in before)
        if newline != b"\n":
            written = written.replace(b"\n", newline)
        if self._kind is not None and not has_event_line(piece[:HEAD]):
            written += b"event: " + self._kind + newline  # the SDKs skip frames without one
        return written + out

    def feed(self, piece: bytes) -> bytes:
        return self._keys.feed(piece)

    def finish(self) -> bytes:
        return self._keys.finish()

    def _index(self, key: bytes, value: bytes) -> bytes | None:
        if key != b"index":
            return None
        upstream = as_int(msgspec.Raw(value))
        if self._out is not None:  # a duplicate key: it gets the value the first one got
            if upstream is not None and self._kind == b"content_block_start":
                self._stream.alias(upstream, self._out)
            return b"%d" % self._out
        if upstream is None:
            return None
        kind = self._kind
        if kind is None and b"type" in self._keys.seen:
            name = as_str(msgspec.Raw(self._keys.seen[b"type"]))
            kind = name.encode() if name is not None else None
        block = self._block
        if block is not None and block.upstream == upstream and block.kind == CONTENT:
            new: int | None = block.out
        else:
            before, new = self._stream.map_index(upstream, kind, self._before is not None)
            if self._before is not None:
                self._before += before
        self._out = new
        self._stream.named(upstream)
        return None if new is None else b"%d" % new
