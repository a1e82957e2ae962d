"""A non-stream Responses answer under a budget the gateway enforces, sans-I/O: the gateway asks for a
stream (so that it can count and cut), and gives the client the response object its terminal event
carries (:class:`ResponsesBody`); and a continuation an upstream answered with one body, as the
stream of the same answer (:func:`as_stream`).
"""

from __future__ import annotations

import json
from typing import Any

from .budget import decoder
from .heads import CREATED, TERMINAL
from .openitems import Items, load, peek

__all__ = ["ResponsesBody", "as_stream"]


class ResponsesBody:
    """Feed it the client-bound events of one response (:meth:`feed`); :meth:`body` is the response
    object its terminal event carries (both answers' items, when a budget joined two). A stream that
    ended without one gives the response it began with, ``incomplete``, holding the items done."""

    def __init__(self, max_event_bytes: int) -> None:
        self._decoder = decoder(max_event_bytes)
        self._items = Items()
        self._begun: dict[str, Any] = {}
        self._ended: dict[str, Any] | None = None

    def feed(self, out: bytes) -> None:
        for event in self._decoder.feed(out):
            data = event.data
            head = peek(data) if data is not None and not event.oversized else None
            if head is None or data is None:
                continue
            if head.type in TERMINAL or (head.type in CREATED and not self._begun):
                body = load(data)
                response = body.get("response") if body is not None else None
                if isinstance(response, dict):
                    if head.type in TERMINAL:
                        self._ended = response
                    else:
                        self._begun = response
            else:
                self._items.note(head, data)

    def body(self) -> bytes:
        response = self._ended
        if response is None:
            response = {**self._begun, "status": "incomplete", "output": self._items.output()}
        return json.dumps(response, separators=(",", ":")).encode()  # ASCII escapes: any half is written


def as_stream(body: bytes) -> bytes | None:
    """A ``response`` body as the upstream stream of the same answer: ``response.created``, each
    output item added and done (a message's text as one delta of each part, so that the translator
    reads it), and ``response.completed`` carrying the body; ``None``: no such body."""
    try:
        response = json.loads(body)  # the standard library: a lone surrogate half is read as it is
    except (ValueError, RecursionError):
        return None
    output = response.get("output") if isinstance(response, dict) else None
    if not isinstance(output, list):
        return None
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {**response, "output": []}}]
    for index, item in enumerate(output):
        if isinstance(item, dict):
            events += _item_events(index, item)
    events.append({"type": "response.completed", "response": response})
    out = []
    for seq, event in enumerate(events):
        data = json.dumps(event | {"sequence_number": seq}, separators=(",", ":")).encode()
        out.append(b"event: " + event["type"].encode() + b"\ndata: " + data + b"\n\n")
    return b"".join(out)


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    at = {"output_index": index}
    content = item.get("content")
    if item.get("type") != "message" or not isinstance(content, list):
        return [{"type": "response.output_item.added", **at, "item": item}, _done(at, item)]
    where = {"item_id": item.get("id"), **at}
    events: list[dict[str, Any]] = [{"type": "response.output_item.added", **at, "item": {**item, "content": []}}]
    for part_index, part in enumerate(content):
        if not isinstance(part, dict):
            continue
        in_part = {**where, "content_index": part_index}
        text = part.get("text")
        events.append({"type": "response.content_part.added", **in_part, "part": {**part, "text": ""}})
        if part.get("type") == "output_text" and isinstance(text, str):
            events.append({"type": "response.output_text.delta", **in_part, "delta": text, "logprobs": []})
            events.append({"type": "response.output_text.done", **in_part, "text": text, "logprobs": []})
        events.append({"type": "response.content_part.done", **in_part, "part": part})
    events.append(_done(at, item))
    return events


def _done(at: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", **at, "item": item}
