"""A reasoning budget the gateway enforces on a Responses stream, sans-I/O: the first answer's
reasoning deltas counted as they go to the client (:class:`BudgetCount`), and the continuation's
events made the rest of the same response (:class:`Joined`).

What is counted: ``response.reasoning_text.delta`` events, one per token the server streamed. The
translator writes a reasoning run as ``reasoning_text`` content, as a ``summary_text`` summary, or as
both (``responses_reasoning_format``), each piece then twice, once per form; the count is of the
form the stream writes first (the content's when there are both), so that a piece is counted once
and its twin in the other form goes with it. The cut comes before the delta that would go over the
budget, its twin and everything after it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...rawjson import TopLevelKeys, as_int
from ...sse import SSEDecoder, SSEEvent, encode_event
from ..budgeting import Joiner
from ..counting import EventCount
from .heads import CREATED, LARGE, TERMINAL, whole
from .openitems import Items, load, number, peek, send

__all__ = ["BudgetCount", "Joined"]

_REASONING = frozenset({"response.reasoning_text.delta", "response.reasoning_summary_text.delta"})
# Events that say the reasoning is over: the answer's text, a refusal, a call, the response's end.
_ANSWER = frozenset({"response.refusal.delta", "response.function_call_arguments.delta", "error", *TERMINAL})
_LARGE_FACTOR = 64
"""The terminal event repeats every item: held up to this many times the event cap (the default
body cap), as the translator holds it."""


def decoder(max_event_bytes: int) -> SSEDecoder:
    return SSEDecoder(max_event_bytes, LARGE, _LARGE_FACTOR * max_event_bytes)


class BudgetCount(EventCount):
    """Counts the reasoning deltas of a translated Responses stream on their way to the client, and
    says where the budget ends it. It watches until the reasoning gives way to an answer (text, a
    refusal, a call, the end), after which it passes bytes as they come."""

    def __init__(self, budget: int, max_event_bytes: int) -> None:
        super().__init__(budget, decoder(max_event_bytes))
        self.items = Items()
        """The items the client got, those still open with what their parts said."""
        self.seq = 0
        """The ``sequence_number`` of the next event."""
        self.named = False
        """The stream names its events (``event:`` lines)."""
        self.response: dict[str, Any] | None = None
        """The response object of ``response.created``, as the client got it."""
        self._kind: str | None = None  # the delta type counted

    @property
    def model(self) -> str | None:
        model = self.response.get("model") if self.response is not None else None
        return model if isinstance(model, str) and model else None

    def joiner(self, max_event_bytes: int) -> Joiner:
        return Joined(self, max_event_bytes)

    def _take(self, event: SSEEvent) -> bool:
        """Note one event; ``False`` when it would take the reasoning over the budget."""
        data = event.data
        head = peek(data) if data is not None and not event.oversized else None
        if head is None or data is None:
            return True  # not an event the budget can read: passed as the translator gave it
        kind = head.type
        if kind in _REASONING and head.delta:
            self._kind = self._kind or kind
            if kind == self._kind:
                if self.counted >= self.budget:
                    return False
                self.counted += 1
                self._reasoning.append(head.delta)
        elif kind in CREATED and self.response is None:
            body = load(data)
            response = body.get("response") if body is not None else None
            self.response = response if isinstance(response, dict) else None
        elif kind in _ANSWER or (kind == "response.output_text.delta" and (head.delta or "").strip()):
            self._watching = False
        self.named = self.named or event.event is not None
        seq = number(head.sequence_number)
        if seq is not None:
            self.seq = seq + 1
        self.items.note(head, data)
        if kind == "response.output_item.added":
            index = whole(head.output_index)
            added = self.items.open.get(index) if index is not None else None
            if added is not None and added.item.get("type") not in ("reasoning", "message"):
                self._watching = False  # a call: the answer
        return True


class Joined:
    """The continuation's translated events made the rest of the first answer: the cut item closed
    first, no second ``response.created`` or ``in_progress``, ``output_index`` after the first
    answer's items, ``sequence_number`` going on from the first answer's, and one terminal event
    with the first answer's id whose ``output`` holds both answers' items."""

    def __init__(self, first: BudgetCount, max_event_bytes: int) -> None:
        self._first = first
        self._items = first.items  # the client's items, both answers' (the continuation's renumbered)
        self._offset = first.items.next_index
        self._seq = first.seq  # the next sequence_number: the first answer's go on
        self._decoder = decoder(max_event_bytes)
        self._started = False
        self.done = False
        """The response's terminal event went to the client."""

    def feed(self, out: bytes) -> bytes:
        return b"".join(self._joined(event) for event in self._decoder.feed(out))

    def finish(self) -> bytes:
        """At the continuation's end: what the reader held, and the response ended if its stream
        did not end it (a stream cut short after its text still ends well-formed). An unterminated
        tail goes last, as it came: a reader drops it at the end, and the end before it stays whole."""
        events, tail = self._decoder.finish()
        return b"".join(self._joined(event) for event in events) + self.closing() + tail

    def closing(self, reason: str = "length") -> bytes:
        """The end of the response when no continuation follows, or it ended early: every open item
        closed, then ``response.incomplete`` (``incomplete_details.reason: "max_output_tokens"``,
        the limit that ended it: Responses' one word for ``reason``) holding every item the client got."""
        if self.done:
            return b""
        self.done = True
        out = self._start() + self._items.closing(self._send, "incomplete")
        response = dict(self._first.response or {})
        response |= {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
        response["output"] = self._items.output()
        return out + self._send({"type": "response.incomplete", "response": response})

    def _next(self) -> int:
        self._seq += 1
        return self._seq - 1

    def _send(self, body: dict[str, Any]) -> bytes:
        body["sequence_number"] = self._next()
        return send(body, self._first.named)

    def _start(self) -> bytes:
        """Before the continuation's first event: the first answer's open items (the reasoning the
        budget cut) closed with what the client got of them."""
        if self._started:
            return b""
        self._started = True
        return self._items.closing(self._send, "incomplete")

    def _joined(self, event: SSEEvent) -> bytes:
        if self.done:
            return b""  # past the response's end: a second answer, or a second end
        data = event.data
        head = peek(data) if data is not None and not event.oversized else None
        if head is None or data is None:
            return event.raw  # a comment, or a piece too large to hold: as it came
        out = self._start()
        kind = head.type
        if kind in CREATED:
            return out  # the first answer's went out
        if kind in TERMINAL:
            return out + self._terminal(event.raw, data)
        index = whole(head.output_index)
        if index is not None:
            head.output_index = index + self._offset
        self._items.note(head, data)
        raw = event.raw
        if (event.event is not None) != self._first.named:  # named as the first answer's events are
            fields = b"".join(line + b"\n" for line in event.fields.splitlines() if not line.startswith(b"event:"))
            named = b"event: " + kind.encode() + b"\n" if self._first.named else b""
            raw = encode_event(data, fields=named + fields).raw
        return out + self._renumbered(raw)

    def _renumbered(self, raw: bytes) -> bytes:
        """An event's bytes with its numbers in the joined response's: ``sequence_number`` next,
        ``output_index`` after the first answer's items; every other byte as it came."""
        offset = self._offset

        def value_for(key: bytes, value: bytes) -> bytes | None:
            if key == b"sequence_number":
                return b"%d" % self._next()
            index = as_int(msgspec.Raw(value))
            return None if index is None else b"%d" % (index + offset)

        rewriter = TopLevelKeys(frozenset({b"sequence_number", b"output_index"}), value_for)
        return rewriter.feed(raw) + rewriter.finish()

    def _terminal(self, raw: bytes, data: bytes) -> bytes:
        self.done = True
        body = load(data)
        response = body.get("response") if body is not None else None
        if body is None or not isinstance(response, dict):
            return self._renumbered(raw)  # no response to join: the event as it came, numbered
        out = self._items.closing(self._send, "incomplete")  # an item the continuation left open
        first = self._first.response or {}
        for key in ("id", "created_at"):
            if key in first:
                response[key] = first[key]
        response["output"] = output = self._items.output()
        if "output_text" in response:
            response["output_text"] = "".join(_texts(output))
        body["response"] = response
        return out + self._send(body)


def _texts(output: list[Any]) -> list[str]:
    """What the SDK's ``output_text`` reads: every message's ``output_text`` parts."""
    return [
        part["text"]
        for item in output
        if isinstance(item, dict) and item.get("type") == "message" and isinstance(item.get("content"), list)
        for part in item["content"]
        if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str)
    ]
