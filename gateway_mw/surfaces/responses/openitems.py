"""The output items of a translated Responses stream as its client builds them, sans-I/O: the items
still open (what their parts said so far) and the items done, by ``output_index``; and the events
that close the open ones well-formed, for a stream a reasoning budget ended (:class:`Items`).

It reads events as they go to the client, numbered already. Only the events that open or close an
item or a part are decoded whole; a delta is read by its head.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec

from ...rawjson import UNREADABLE
from .heads import whole
from .items import Text

__all__ = ["Items", "Peek", "number", "peek", "send"]


class Peek(msgspec.Struct, gc=False):
    """What is read of every client event: its type, numbers and delta."""

    type: str = ""
    sequence_number: Any = None
    output_index: Any = None
    content_index: Any = None
    summary_index: Any = None
    delta: str | None = None


_decode_peek = msgspec.json.Decoder(Peek).decode


def peek(data: bytes) -> Peek | None:
    """The head of an event; ``None`` when it is no JSON object. An event with a lone surrogate
    escape (half a pair, the other half in the next event) is read with the standard library."""
    try:
        return _decode_peek(data)
    except (*UNREADABLE, RecursionError):  # RecursionError: nested deeper than a parser goes
        pass
    try:
        return msgspec.convert(json.loads(data), Peek)
    except (ValueError, RecursionError, msgspec.ValidationError):
        return None


def number(value: Any) -> int | None:
    """An index or a sequence number as the SDKs read one (the integers the translator writes
    taken as they are: this runs for every event)."""
    return value if type(value) is int else whole(value)


def load(data: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(data)  # the standard library: a lone surrogate half is read as it is
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


def send(body: dict[str, Any], named: bool) -> bytes:
    """One event, with an ``event:`` line when the stream names its events. ASCII escapes: a lone
    surrogate half is written as the escape it came as."""
    data = json.dumps(body, separators=(",", ":")).encode()
    head = b"event: " + str(body["type"]).encode() + b"\n" if named else b""
    return head + b"data: " + data + b"\n\n"


_TEXT_DELTAS = {
    "response.reasoning_text.delta": "content",
    "response.output_text.delta": "content",
    "response.refusal.delta": "content",
    "response.reasoning_summary_text.delta": "summary",
}
_PART_ADDED = {"response.content_part.added": "content", "response.reasoning_summary_part.added": "summary"}
_PART_DONE = {"response.content_part.done": "content", "response.reasoning_summary_part.done": "summary"}


class _Open:
    """An item added and not done: the item as added, and each of its parts so far."""

    __slots__ = ("arguments", "item", "parts")

    def __init__(self, item: dict[str, Any]) -> None:
        self.item = item
        self.parts: dict[tuple[str, int], tuple[dict[str, Any], Text, bool]] = {}
        """(``content`` or ``summary``, its index) → (the part as added, its text, whether it is done)."""
        self.arguments = Text()

    def part(self, form: str, index: int) -> Text:
        """The text of a part; a delta for a part never added opens one of the item's kind."""
        held = self.parts.get((form, index))
        if held is None:
            kind = "summary_text" if form == "summary" else _PART_KINDS.get(str(self.item.get("type")), "output_text")
            held = self.parts[(form, index)] = ({"type": kind}, Text(), False)
        return held[1]


_PART_KINDS = {"reasoning": "reasoning_text", "message": "output_text"}


class Items:
    """The items of one client stream (or of two joined: the continuation's numbered after)."""

    def __init__(self) -> None:
        self.open: dict[int, _Open] = {}
        self.done: dict[int, Any] = {}
        self.next_index = 0
        """The first ``output_index`` no item has yet."""

    def note(self, head: Peek, data: bytes) -> None:
        """One client event (``head`` read of its ``data``)."""
        kind = head.type
        form = _TEXT_DELTAS.get(kind)
        if form is not None:  # a delta: most events, read first
            delta, index = head.delta, number(head.output_index)
            held = self.open.get(index) if delta and index is not None else None
            if held is not None and delta:
                at = number(head.summary_index if form == "summary" else head.content_index) or 0
                held.part(form, at).add(delta)
            return
        index = number(head.output_index)
        if index is None:
            return
        if kind == "response.output_item.added":
            body = load(data)
            item = body.get("item") if body is not None else None
            self.open[index] = _Open(item if isinstance(item, dict) else {})
            self.next_index = max(self.next_index, index + 1)
            return
        held = self.open.get(index)
        if held is None:
            return
        if kind == "response.function_call_arguments.delta" and head.delta:
            held.arguments.add(head.delta)
        elif kind in _PART_ADDED or kind in _PART_DONE:
            form = _PART_ADDED.get(kind) or _PART_DONE[kind]
            at = whole(head.summary_index if form == "summary" else head.content_index) or 0
            body = load(data)
            part = body.get("part") if body is not None else None
            template, text, _ = held.parts.get((form, at), ({}, Text(), False))
            template = part if isinstance(part, dict) else template or {"type": "output_text"}
            held.parts[(form, at)] = (template, text, kind in _PART_DONE)
        elif kind == "response.output_item.done":
            body = load(data)
            self.done[index] = body.get("item") if body is not None else held.item
            del self.open[index]

    def output(self) -> list[Any]:
        """Every item done, in the client's order."""
        return [self.done[index] for index in sorted(self.done)]

    def closing(self, numbered: Callable[[dict[str, Any]], bytes], status: str) -> bytes:
        """The events that end every open item well-formed, in order (``numbered`` writes one):
        each open part's done events with the text it got, then the item's ``output_item.done``
        (a reasoning item ``completed``: its text is what the model thought; any other ``status``)."""
        out: list[bytes] = []
        for index in sorted(self.open):
            held = self.open.pop(index)
            item = dict(held.item)
            kind = item.get("type")
            where: dict[str, Any] = {"item_id": item.get("id"), "output_index": index}
            forms: dict[str, list[Any]] = {"content": [], "summary": []}
            for (form, at), (template, pieces, done) in sorted(held.parts.items()):
                text = pieces.value()
                part = _part(template, text)
                forms[form].append(part)
                if not done:
                    out += [numbered(body) for body in _part_done(kind, form, at, part, text, where)]
            if kind == "reasoning":
                item["summary"] = forms["summary"]
                if forms["content"] or "content" in item:
                    item["content"] = forms["content"]
                item["status"] = "completed"
            elif kind == "message":
                item["content"] = forms["content"]
                item["status"] = status
            elif kind == "function_call":
                arguments = held.arguments.value()
                item["arguments"] = arguments
                item["status"] = status
                out.append(numbered({"type": "response.function_call_arguments.done", **where, "arguments": arguments}))
            else:
                item["status"] = status
            out.append(numbered({"type": "response.output_item.done", "output_index": index, "item": item}))
            self.done[index] = item
        return b"".join(out)


def _part(template: dict[str, Any], text: str) -> dict[str, Any]:
    """A part as done: its template with the text it got (a refusal's under its own name)."""
    if template.get("type") == "refusal":
        return {**template, "refusal": text}
    part = {**template, "text": text}
    if part.get("type") == "output_text":
        part.setdefault("annotations", [])  # required of an output_text part by a strict client
    return part


def _part_done(
    kind: Any, form: str, at: int, part: dict[str, Any], text: str, where: dict[str, Any]
) -> list[dict[str, Any]]:
    """A part's done events: its text's, then the part's."""
    if form == "summary":
        at_part = {**where, "summary_index": at}
        return [
            {"type": "response.reasoning_summary_text.done", **at_part, "text": text},
            {"type": "response.reasoning_summary_part.done", **at_part, "part": part},
        ]
    at_part = {**where, "content_index": at}
    if kind == "reasoning":
        text_done = {"type": "response.reasoning_text.done", **at_part, "text": text}
    elif part.get("type") == "refusal":
        text_done = {"type": "response.refusal.done", **at_part, "refusal": text}
    else:
        text_done = {"type": "response.output_text.done", **at_part, "text": text, "logprobs": []}
    return [text_done, {"type": "response.content_part.done", **at_part, "part": part}]
