"""A reasoning budget the gateway enforces on a messages stream, sans-I/O: the first answer's
``thinking_delta`` events counted as they go to the client (:class:`BudgetCount`), and the
continuation's events made the rest of the same message (:class:`Joined`); :data:`SIDE` is the
surface's :class:`~gateway_mw.surfaces.budgeting.BudgetSide`.

Servers stream one token per event, so the count is of events: each ``thinking_delta`` with text,
as the translator wrote it for the client (a thinking block the gateway made of tags, or the
server's own). The cut comes before the event that would go over the budget; the blocks it leaves
open are closed by the joiner, a thinking block with the ``signature_delta`` the translator would
have written for its text (the gateway's signature) and its ``content_block_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

from ...marks import gateway_signature
from ...rawjson import UNREADABLE, encode, obj
from ...sse import SSEDecoder, SSEEvent, encode_event
from ..budgeting import (
    BudgetCounter,
    BudgetSide,
    Collector,
    Edits,
    Joiner,
    StreamFilter,
    limited,
    prefilled,
    summed,
)
from ..counting import EventCount, joined
from ..echo import Echo
from .budgetbody import MessagesBody, as_stream, echo_text, with_echo_text
from .events import delta_event, one_line, reindexed, stop_event

__all__ = ["SIDE", "BudgetCount", "Joined"]


class _Part(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    thinking: str | None = None


class _Event(msgspec.Struct, gc=False):
    type: str = ""
    index: int | None = None
    delta: _Part | None = None
    content_block: _Part | None = None
    message: Any = None
    usage: Any = None


_decode_event = msgspec.json.Decoder(_Event).decode
_BLOCK_EVENTS = frozenset({"content_block_start", "content_block_delta", "content_block_stop"})
_ENDS = frozenset({"message_delta", "message_stop", "error"})


def read(data: bytes) -> _Event | None:
    """What the budget reads of an event; ``None``: no event it can read. An event that carries a
    lone surrogate escape (half a pair, the other half in the next event: the server's own thinking
    passes as it cut it) is read with the standard library, which gives the half as it is."""
    try:
        return _decode_event(data)
    except (*UNREADABLE, RecursionError):
        pass
    try:
        return msgspec.convert(json.loads(data), _Event, strict=False)
    except (ValueError, RecursionError, *UNREADABLE):
        return None


class _OpenBlocks:
    """The blocks of a stream that started and did not stop, by index: their type, and a thinking
    block's text (its signature, when the gateway closes it)."""

    __slots__ = ("kinds", "next", "signed", "texts")

    def __init__(self) -> None:
        self.kinds: dict[int, str] = {}
        self.texts: dict[int, list[str]] = {}
        self.signed: set[int] = set()
        self.next = 0
        """The index after every block seen."""

    def note(self, ev: _Event, index: int) -> None:
        kind = ev.type
        if kind == "content_block_start":
            self.kinds[index] = ev.content_block.type if ev.content_block is not None else ""
            self.texts[index] = []
            self.next = max(self.next, index + 1)
        elif kind == "content_block_delta" and ev.delta is not None and index in self.kinds:
            if ev.delta.type == "thinking_delta" and ev.delta.thinking:
                self.texts[index].append(ev.delta.thinking)
            elif ev.delta.type == "signature_delta":
                self.signed.add(index)
        elif kind == "content_block_stop":
            self.kinds.pop(index, None)
            self.texts.pop(index, None)
            self.signed.discard(index)

    def close(self) -> bytes:
        """The events that end every open block well-formed, in order of index."""
        out = []
        for index in sorted(self.kinds):
            if self.kinds[index] == "thinking" and index not in self.signed:
                signature = encode(gateway_signature(joined(self.texts[index])))
                out.append(delta_event(index, b'{"type":"signature_delta","signature":%s}' % signature).raw)
            out.append(stop_event(index).raw)
        self.kinds.clear()
        self.texts.clear()
        self.signed.clear()
        return b"".join(out)


class BudgetCount(EventCount):
    """Counts the ``thinking_delta`` events of a messages stream on their way to the client, and
    says where the budget ends it. It watches until the thinking gives way to an answer (text that
    is not white space, a tool call, the message's end), after which it passes bytes as they come."""

    def __init__(self, budget: int, max_event_bytes: int) -> None:
        super().__init__(budget, SSEDecoder(max_event_bytes))
        self.usage: dict[str, Any] = {}
        """The first answer's usage, as its ``message_start`` gave it (a cut stream gives no other)."""
        self._model: str | None = None
        self._open = _OpenBlocks()

    @property
    def model(self) -> str | None:
        return self._model

    def joiner(self, max_event_bytes: int) -> Joiner:
        return Joined(self._open, self.usage, max_event_bytes)

    def _take(self, event: SSEEvent) -> bool:
        """Note one event; ``False`` when it would take the thinking over the budget."""
        data = event.data
        if data is None or event.oversized:
            return True
        ev = read(data)
        if ev is None:
            return True  # not an event the budget can read: passed as the translator gave it
        kind = ev.type
        if kind == "message_start" and isinstance(ev.message, dict):
            model, usage = ev.message.get("model"), ev.message.get("usage")
            self._model = model if isinstance(model, str) else None
            self.usage = usage if isinstance(usage, dict) else {}
        elif kind in _ENDS:
            self._watching = False
        elif kind in _BLOCK_EVENTS and ev.index is not None:
            delta, block = ev.delta, ev.content_block
            if delta is not None and delta.type == "thinking_delta" and delta.thinking:
                if self.counted >= self.budget:
                    return False
                self.counted += 1
                self._reasoning.append(delta.thinking)
            elif delta is not None and (delta.type == "input_json_delta" or (delta.text or "").strip()):
                self._watching = False  # the answer, or a tool call, has begun
            elif block is not None and block.type not in ("thinking", "redacted_thinking", "text"):
                self._watching = False
            self._open.note(ev, ev.index)
        return True


class Joined:
    """The continuation's events made the rest of the first answer: the blocks the cut left open
    closed first, the continuation's ``message_start`` left out (the first answer's went), its blocks
    numbered after the first answer's, its ``message_delta`` carrying both answers' usage summed."""

    def __init__(self, first: _OpenBlocks, usage: Mapping[str, Any], max_event_bytes: int) -> None:
        self._lead: bytes | None = None
        self._first = first
        self._shift = first.next
        self._first_usage = usage
        self._usage: dict[str, Any] = {}  # the continuation's: its message_start's, then its message_delta's over it
        self._open = _OpenBlocks()  # the continuation's, numbered as the client sees them
        self._decoder = SSEDecoder(max_event_bytes)
        self._delta_sent = False
        self.done = False

    def feed(self, out: bytes) -> bytes:
        return self._led(b"".join(self._joined(event) for event in self._decoder.feed(out)))

    def finish(self) -> bytes:
        """At the continuation's end: what the reader held, and the message ended if its stream did
        not end it; an unterminated tail last, as it came (a reader drops it at the end)."""
        events, tail = self._decoder.finish()
        return self._led(b"".join(self._joined(event) for event in events)) + self.closing() + tail

    def closing(self, reason: str = "length") -> bytes:
        if self.done:
            return b""
        out = self._led(self._open.close())
        if not self._delta_sent:
            stop = encode("max_tokens" if reason == "length" else reason)
            usage = encode(summed(self._first_usage, self._usage))
            data = b'{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":%s}' % (
                stop,
                usage,
            )
            out += encode_event(data, event="message_delta").raw
        self.done = True
        return out + encode_event(b'{"type":"message_stop"}', event="message_stop").raw

    def _led(self, out: bytes) -> bytes:
        """``out`` after, the first time, the end of the blocks the cut left open."""
        if self._lead is None:
            self._lead = self._first.close()
            return self._lead + out
        return out

    def _joined(self, event: SSEEvent) -> bytes:
        if self.done:
            return b""  # past the message's end: a second answer, or a second end
        data = event.data
        if data is None or event.oversized:
            return event.raw  # an oversized block event keeps the continuation's own index
        ev = read(data)
        if ev is None:
            return event.raw
        kind = ev.type
        if kind == "message_start":
            usage = ev.message.get("usage") if isinstance(ev.message, dict) else None
            self._usage = dict(usage) if isinstance(usage, dict) else {}
            return b""
        if kind in _BLOCK_EVENTS and ev.index is not None:
            index = ev.index + self._shift
            self._open.note(ev, index)
            return reindexed(event, kind, ev.index, index).raw
        if kind == "message_delta":
            return self._with_usage(event, data, ev.usage)
        if kind == "message_stop":
            self.done = True
        return event.raw

    def _with_usage(self, event: SSEEvent, data: bytes, usage: Any) -> bytes:
        self._delta_sent = True
        if isinstance(usage, dict):
            self._usage |= usage
        top = obj(one_line(data))
        if top is None:
            return event.raw
        top["usage"] = msgspec.Raw(encode(summed(self._first_usage, self._usage)))
        return event.fields + b"data: " + encode(top) + b"\n\n"


_LIMITS = ("max_tokens",)


class _MessagesBudget:
    def counter(self, budget: int, max_event_bytes: int) -> BudgetCounter:
        return BudgetCount(budget, max_event_bytes)

    def echo(self, prefill: str, max_event_bytes: int) -> StreamFilter:
        return Echo(prefill, max_event_bytes, echo_text, with_echo_text)

    def collector(self, max_event_bytes: int) -> Collector:
        return MessagesBody(max_event_bytes)

    def as_stream(self, body: bytes) -> bytes | None:
        return as_stream(body)

    def continued(self, top: Mapping[str, msgspec.Raw], prefill: str, spent: int) -> Edits | None:
        return prefilled(top, prefill, limited(top, _LIMITS, spent))


SIDE: BudgetSide = _MessagesBudget()
