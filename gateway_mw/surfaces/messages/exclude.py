"""Anthropic messages without reasoning (``reasoning_exclude``): every ``thinking`` and
``redacted_thinking`` block left out, its start, deltas (``signature_delta`` too) and stop with it, and
the blocks after it renumbered, so that the indexes the client sees are 0, 1, 2… as the SDKs'
accumulators require (they file each delta under the block of its index)."""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ...rawjson import Obj, as_int, as_str, encode, escaped, obj, raw_list
from ...sse import SSEEvent, encode_event
from .events import NATIVE, fields_for, reindexed

__all__ = ["MessagesWithoutReasoning", "body_without_reasoning"]


def _may_reason(data: bytes) -> bool:
    """Whether an event may open or hold a reasoning block: the word, or any ``\\u`` escape."""
    return data.find(b"thinking") >= 0 or escaped(data)


def _is_reasoning(block: Any) -> bool:
    fields = obj(block)
    return fields is not None and as_str(fields.get("type")) in NATIVE


class MessagesWithoutReasoning:
    """A messages stream's events without reasoning blocks (a :class:`~..exclude.ReasoningFilter`)."""

    def __init__(self) -> None:
        self._gone: list[int] = []  # the indexes of the blocks left out, as the translator wrote them, in order

    def events(self, events: list[SSEEvent]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for event in events:
            data = event.data
            if data is None or not (self._gone or _may_reason(data)):
                out.append(event)
                continue
            kept = self._event(event, data)
            if kept is not None:
                out.append(kept)
        return out

    def _event(self, event: SSEEvent, data: bytes) -> SSEEvent | None:
        doc = obj(data)
        kind = as_str(doc.get("type")) if doc is not None else None
        if doc is None or kind is None:
            return event  # not an event of ours to read: it goes on
        if kind == "message_start":
            return self._message_start(event, doc)
        index = as_int(doc.get("index"))
        if index is None:
            return event
        gone = self._gone
        if kind == "content_block_start" and _is_reasoning(doc.get("content_block")):
            gone.append(index)
            return None
        before = bisect_left(gone, index)
        if before < len(gone) and gone[before] == index:
            return None  # a delta or the stop of a block left out
        return reindexed(event, kind, index, index - before) if before else event

    def _message_start(self, event: SSEEvent, doc: Obj) -> SSEEvent:
        """A ``message_start`` whose message already holds blocks (none, from every server known)."""
        message = obj(doc.get("message"))
        content = raw_list(message.get("content")) if message is not None else None
        if message is None or not content or not any(_is_reasoning(b) for b in content):
            return event
        message["content"] = [b for b in content if not _is_reasoning(b)]
        doc["message"] = message
        return encode_event(encode(doc), fields=fields_for(event, "message_start"))


def body_without_reasoning(body: bytes | bytearray) -> bytes | None:
    """A ``message`` body without its reasoning blocks; ``None`` when it had none."""
    if not _may_reason(bytes(body)):
        return None
    doc = obj(bytes(body))
    content = raw_list(doc.get("content")) if doc is not None else None
    if doc is None or not content or not any(_is_reasoning(b) for b in content):
        return None
    doc["content"] = [b for b in content if not _is_reasoning(b)]
    return encode(doc)
