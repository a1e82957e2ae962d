"""The output blocks of the messages stream: the numbering, and the blocks one text block's runs become.

Output blocks are numbered 0, 1, 2… in the order they start. A scanned upstream text block writes
one output block per run: a ``text`` block, or a ``thinking`` block (its deltas as they come, one
``signature_delta`` before its stop) or a ``redacted_thinking`` block (written whole when its run
ends, or when it outgrows ``max_buffer_bytes``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ...channels import Channels
from ...rawjson import Obj, encode, obj
from ...scanner import CONTENT, REASONING, Kind, Segment
from ...sse import SSEEvent, encode_event
from .events import (
    EMPTY_TEXT,
    TEXT_BLOCK,
    THINKING_BLOCK,
    delta_event,
    fields_for,
    one_line,
    read_event,
    redacted_data,
    resent,
    signature_of,
    start_event,
    stop_event,
    text_delta,
    thinking_delta,
)

__all__ = ["BlockIndexes", "ContentBlockWriter", "TextBlock"]


class BlockIndexes:
    """The map from upstream indexes to output indexes, in three parts: blocks not scanned (one
    output block each), open text blocks (kept with their :class:`TextBlock`), and text blocks that
    ended (their last output block, for a late event that names them)."""

    __slots__ = ("closed", "next", "passed")

    def __init__(self) -> None:
        self.next = 0  # the next output index
        self.passed: dict[int, int] = {}
        self.closed: dict[int, int] = {}

    def take(self) -> int:
        index = self.next
        self.next += 1
        return index

    def pass_block(self, upstream: int) -> int:
        """A block passed as it is (not scanned): it takes the next output index."""
        new = self.passed[upstream] = self.take()
        return new


class TextBlock:
    """One upstream text block being scanned, and the output block it currently writes."""

    __slots__ = ("digest", "emitted", "half", "held", "kind", "out", "parts", "start", "upstream")

    def __init__(self, upstream: int, start: SSEEvent | None) -> None:
        self.upstream = upstream
        self.start = start  # the upstream start event, held for the first text block made from it
        self.kind: Kind | None = None  # the kind of the open output block
        self.out = -1  # the open output block's index
        self.parts: list[str] = []  # redacted: the open block's text, written whole when it ends
        self.held = 0  # its size (UTF-8 bytes), bounded by max_buffer_bytes
        self.digest: Any = None  # unsigned: the SHA-256 of the open block's text, for its signature
        self.emitted = False  # an output block was opened for it
        self.half = ""  # a high surrogate that ended the last delta, held for the next one


class ContentBlockWriter:
    """Writes the output blocks of text blocks: opens, closes, and the deltas of each run."""

    __slots__ = ("_channels", "_numbering", "redacted")

    def __init__(self, numbering: BlockIndexes, channels: Channels, redacted: bool) -> None:
        self._numbering = numbering
        self._channels = channels  # their settings, resolved for the model, hold a redacted block's cap
        self.redacted = redacted

    def emit(
        self, block: TextBlock, segments: list[Segment], source: tuple[SSEEvent, Obj] | None = None
    ) -> list[SSEEvent]:
        """The events for ``segments`` of ``block``; ``source``: the upstream event whose fields the
        translator does not own ride on the first delta written for it."""
        out: list[SSEEvent] = []
        for seg in segments:
            if seg.kind != block.kind:
                out += self.close(block)
                out += self.open(block, seg.kind)
            if seg.kind == REASONING:
                if self.redacted:
                    out += self._hold_redacted(block, seg.text)
                    continue
                block.digest.update(seg.text.encode())
            if source is not None:
                out.append(_delta_from(source, block.out, seg))
                source = None
            elif seg.kind == CONTENT:
                out.append(delta_event(block.out, text_delta(seg.text)))
            else:
                out.append(delta_event(block.out, thinking_delta(seg.text)))
        return out

    def to_text(self, block: TextBlock) -> list[SSEEvent]:
        """The events that leave ``block`` writing to an open text block."""
        if block.kind == CONTENT:
            return []
        return self.close(block) + self.open(block, CONTENT)

    def open(self, block: TextBlock, kind: Kind) -> list[SSEEvent]:
        block.kind = kind
        block.emitted = True
        if kind == REASONING:
            if self.redacted:
                block.parts, block.held = [], 0
                return []  # written whole when the run ends
            block.digest = hashlib.sha256()
            block.out = self._numbering.take()
            return [start_event(block.out, THINKING_BLOCK)]
        block.out = self._numbering.take()
        start, block.start = block.start, None
        if start is None:
            return [start_event(block.out, TEXT_BLOCK)]
        # The upstream start event goes out for the first text block, with all its fields.
        assert start.data is not None
        read, lenient = read_event(start.data)
        if not lenient and read is not None and block.out == block.upstream and read.content_block == EMPTY_TEXT:
            return [resent(start, "content_block_start")]
        doc = obj(one_line(start.data))
        if doc is None:  # only the lenient reader could read it: written afresh
            return [start_event(block.out, TEXT_BLOCK)]
        doc["index"] = block.out
        content_block = obj(doc["content_block"])
        if content_block is not None:
            content_block["text"] = ""
            doc["content_block"] = content_block
        return [encode_event(encode(doc), fields=fields_for(start, "content_block_start"))]

    def close(self, block: TextBlock) -> list[SSEEvent]:
        kind, block.kind = block.kind, None
        if kind is None:
            return []
        if kind == CONTENT:
            return [stop_event(block.out)]
        if self.redacted:
            text = "".join(block.parts)
            block.parts, block.held = [], 0
            index = block.out = self._numbering.take()
            content_block = b'{"type":"redacted_thinking","data":%s}' % encode(redacted_data(text))
            return [start_event(index, content_block), stop_event(index)]
        signature = b'{"type":"signature_delta","signature":%s}' % encode(signature_of(block.digest))
        block.digest = None
        return [delta_event(block.out, signature), stop_event(block.out)]

    def holds(self, block: TextBlock, text: str) -> bool:
        """Whether ``text`` of a redacted run fits the block under way (its size within the cap)."""
        size = len(text) if text.isascii() else len(text.encode())
        return size <= self.room(block)

    def room(self, block: TextBlock) -> int:
        """How many more UTF-8 bytes the redacted block under way holds within the cap."""
        return self._cap() - block.held

    def _cap(self) -> int:
        return self._channels.resolve(None).max_buffer_bytes

    def _hold_redacted(self, block: TextBlock, text: str) -> list[SSEEvent]:
        """Hold reasoning for the redacted block under way; past ``max_buffer_bytes``, write the
        block so far and go on in a new one, so that memory stays bounded."""
        block.parts.append(text)
        block.held += len(text) if text.isascii() else len(text.encode())
        if block.held <= self._cap():
            return []
        out = self.close(block)
        out += self.open(block, REASONING)
        return out


def _delta_from(source: tuple[SSEEvent, Obj], index: int, seg: Segment) -> SSEEvent:
    """A delta for ``seg`` keeping, in order, the fields of the upstream event it came from."""
    event, doc = source
    reasoning = seg.kind == REASONING
    body: Obj = {}
    for key, value in doc.items():
        if key == "index":
            body[key] = index
        elif key == "delta" and (fields := obj(value)) is not None:
            delta: Obj = {}
            for k, v in fields.items():
                if k == "type":
                    delta[k] = "thinking_delta" if reasoning else "text_delta"
                elif k == "text":
                    delta["thinking" if reasoning else "text"] = seg.text
                elif not (reasoning and k == "thinking"):  # the text is the thinking: no other
                    delta[k] = v
            body[key] = delta
        else:
            body[key] = value
    return encode_event(encode(body), fields=fields_for(event, "content_block_delta"))
