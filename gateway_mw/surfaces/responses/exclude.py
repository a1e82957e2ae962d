"""OpenAI Responses without reasoning (``reasoning_exclude``): every ``reasoning`` output item left
out, with every event about it (``response.reasoning_*``, its parts, its ``output_item`` events);
the items after it renumbered (``output_index`` 0, 1, 2… in the order the client sees them added, as
the SDKs' accumulators require), ``sequence_number`` 0, 1, 2… over the events that remain, and the
item gone from the ``response`` that ``response.created`` … ``response.completed`` carry."""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ...rawjson import Obj, as_int, as_str, encode, escaped, obj, raw_list
from ...sse import SSEEvent, encode_event
from .heads import CREATED, TERMINAL

__all__ = ["ResponsesWithoutReasoning", "body_without_reasoning"]

_RESPONSES = CREATED | TERMINAL


def _may_reason(data: bytes) -> bool:
    """Whether an event may be or hold reasoning: the word, or any ``\\u`` escape."""
    return data.find(b"reasoning") >= 0 or escaped(data)


def _reasoning_item(item: Any) -> bool:
    fields = obj(item)
    return fields is not None and as_str(fields.get("type")) == "reasoning"


def _without_items(holder: Obj) -> bool:
    """``holder``'s ``output`` without reasoning items; whether it had one."""
    output = raw_list(holder.get("output"))
    if not output or not any(_reasoning_item(i) for i in output):
        return False
    holder["output"] = [i for i in output if not _reasoning_item(i)]
    return True


class ResponsesWithoutReasoning:
    """A Responses stream's events without reasoning items (a :class:`~..exclude.ReasoningFilter`)."""

    def __init__(self) -> None:
        self._gone: list[int] = []  # the output indexes of the items left out, as the translator wrote them
        self._ids: set[str] = set()  # and their ids (an upstream may name an item by its id alone)
        self._seq: int | None = None  # the next sequence_number, from the first event left out on

    def events(self, events: list[SSEEvent]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for event in events:
            data = event.data
            if data is None or not (self._seq is not None or self._gone or self._ids or _may_reason(data)):
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
            return event  # not an event of ours to read ([DONE], an error): it goes on
        index = as_int(doc.get("output_index"))
        item = obj(doc.get("item"))
        item_id = as_str(doc.get("item_id")) or (as_str(item.get("id")) if item is not None else None)
        gone = self._gone
        at = bisect_left(gone, index) if index is not None else 0
        if (
            kind.startswith("response.reasoning")
            or (item is not None and as_str(item.get("type")) == "reasoning")
            or (index is not None and at < len(gone) and gone[at] == index)
            or (item_id is not None and item_id in self._ids)
        ):
            if kind == "response.output_item.added":
                if index is not None:
                    gone.insert(at, index)
                if item_id is not None:
                    self._ids.add(item_id)
            if self._seq is None:
                self._seq = as_int(doc.get("sequence_number"))
            return None
        changes: Obj = {}
        if index is not None and at:
            changes["output_index"] = index - at
        if self._seq is not None and "sequence_number" in doc:
            changes["sequence_number"] = self._seq
            self._seq += 1
        if kind in _RESPONSES:
            response = obj(doc.get("response"))
            if response is not None and _without_items(response):
                changes["response"] = response
        if not changes:
            return event
        doc.update(changes)
        return encode_event(encode(doc), fields=event.fields)


def body_without_reasoning(body: bytes | bytearray) -> bytes | None:
    """A ``response`` body without its reasoning items; ``None`` when it had none."""
    if not _may_reason(bytes(body)):
        return None
    doc = obj(bytes(body))
    if doc is None or not _without_items(doc):
        return None
    return encode(doc)
