"""A reasoning budget the gateway enforces on a chat stream, sans-I/O: the first answer's reasoning
events counted as they go to the client (:class:`BudgetCount`), the continuation's events joined
into the same answer (:class:`Joined`), llama.cpp's echo of the prefill read from choice 0's content;
:data:`SIDE` is chat's :class:`~gateway_mw.surfaces.budgeting.BudgetSide`.

Servers stream one token per event, so the count is of events: each chunk that carries reasoning
text in choice 0, as the translator wrote it for the client. The cut comes before the event that
would go over the budget, so the client gets at most ``budget`` of them; what the translator still
held then (a possible partial tag) is dropped, from the client's stream and from the continuation
alike, so that the two agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

from ... import surrogates
from ...rawjson import UNREADABLE, encode, obj, raw_list
from ...sse import SSEDecoder, SSEEvent
from ..budgeting import BudgetCounter, BudgetSide, Collector, Edits, Joiner, StreamFilter, limited, prefilled
from ..counting import EventCount
from ..echo import Echo
from .budgetbody import ChatBody, as_stream

__all__ = ["SIDE", "BudgetCount", "Joined"]


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: msgspec.Raw = msgspec.Raw()  # empty: absent (no JSON value is empty)


class _Choice(msgspec.Struct, gc=False):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct, gc=False):
    id: msgspec.Raw = msgspec.Raw()
    created: msgspec.Raw = msgspec.Raw()
    model: msgspec.Raw = msgspec.Raw()
    choices: list[_Choice] = []


_decode_chunk = msgspec.json.Decoder(_Chunk).decode
_decode_str = msgspec.json.Decoder(str).decode
_UNREADABLE = (*UNREADABLE, RecursionError)  # a value nested deeper than a parser goes is none it reads
_HEAD = ("id", "created", "model")
_DONE = b"[DONE]"


class BudgetCount(EventCount):
    """Counts the reasoning events of a chat stream's choice 0 on their way to the client, and says
    where the budget ends it. Feed it what the translator gives (:meth:`feed`); it watches until the
    reasoning gives way to an answer (content, a tool call, a finish), after which it passes bytes
    as they come."""

    def __init__(self, budget: int, max_event_bytes: int) -> None:
        super().__init__(budget, SSEDecoder(max_event_bytes))
        self.head: dict[str, msgspec.Raw] = {}
        """The first answer's ``id``, ``created`` and ``model``, as it wrote them."""

    @property
    def model(self) -> str | None:
        raw = self.head.get("model")
        try:
            return _decode_str(raw) if raw is not None else None
        except UNREADABLE:
            return None

    def joiner(self, max_event_bytes: int) -> Joiner:
        return Joined(self.head, max_event_bytes)

    def _take(self, event: SSEEvent) -> bool:
        """Note one event; ``False`` when it would take the reasoning over the budget."""
        data = event.data
        if data is None or event.oversized or data == _DONE:
            return True
        chunk = _read(data)
        if chunk is None:
            return True  # not a chunk the budget can read: passed as the translator gave it
        if not self.head:
            self.head = {key: value for key in _HEAD if (value := getattr(chunk, key))}
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            text = None
            if delta is not None:
                text = delta.reasoning_content if delta.reasoning_content is not None else delta.reasoning
            if text:
                if self.counted >= self.budget:
                    return False
                self.counted += 1
                self._reasoning.append(text)
            if choice.finish_reason is not None or (
                delta is not None and (bytes(delta.tool_calls) not in (b"", b"null") or (delta.content or "").strip())
            ):
                self._watching = False  # the reasoning is over: an answer, a call or the end
        return True


def _read(data: bytes) -> _Chunk | None:
    """A chunk as the budget reads it; ``None`` when it is none. A chunk that carries a lone
    surrogate escape (half a pair, the other half in the next event: native reasoning passes as the
    server cut it) is read with the standard library, which gives the half as it is."""
    try:
        return _decode_chunk(data)
    except _UNREADABLE:
        masked = surrogates.mask(data)
    try:
        chunk = _decode_chunk(masked) if masked is not None else None
        texts = json.loads(data).get("choices") if chunk is not None else None
    except (*_UNREADABLE, ValueError, AttributeError):
        return None
    if chunk is None or not isinstance(texts, list) or len(texts) != len(chunk.choices):
        return None
    for choice, read in zip(chunk.choices, texts, strict=True):
        delta = read.get("delta") if isinstance(read, dict) else None
        if choice.delta is not None and isinstance(delta, dict):
            for name in ("content", "reasoning_content", "reasoning"):
                value = delta.get(name)
                setattr(choice.delta, name, value if isinstance(value, str) else None)
    return chunk


class Joined:
    """The continuation's chunks made part of the first answer: its ``id``, ``created`` and
    ``model``, no second ``role``, and one ``[DONE]`` (the first answer, cut, sent none)."""

    def __init__(self, head: dict[str, msgspec.Raw], max_event_bytes: int) -> None:
        self._head = head
        self._decoder = SSEDecoder(max_event_bytes)
        self._finished = False  # choice 0's finish_reason went to the client
        self.done = False
        """The continuation's ``[DONE]`` went to the client: nothing goes after it."""

    def feed(self, out: bytes) -> bytes:
        """The client's bytes for ``out``, what the translator gave of the continuation."""
        return b"".join(self._joined(event) for event in self._decoder.feed(out))

    def finish(self) -> bytes:
        """At the continuation's end: what the reader held, and the answer ended if its stream did
        not end it; an unterminated tail last, as it came (a reader drops it at the end)."""
        events, tail = self._decoder.finish()
        return b"".join(self._joined(event) for event in events) + self.closing() + tail

    def closing(self, finish_reason: str = "length") -> bytes:
        """The end of the answer when no continuation follows (or it ended early): choice 0
        finished, unless the continuation finished it, and ``[DONE]``; nothing after ``[DONE]``."""
        if self.done:
            return b""
        self.done = True
        if self._finished:
            return b"data: [DONE]\n\n"
        chunk: dict[str, Any] = dict(self._head)
        chunk.setdefault("object", "chat.completion.chunk")
        chunk["choices"] = [{"index": 0, "delta": {}, "finish_reason": finish_reason}]
        return b"data: " + encode(chunk) + b"\n\ndata: [DONE]\n\n"

    def _joined(self, event: SSEEvent) -> bytes:
        if self.done:
            return b""  # past the answer's end: a second answer, or a second end
        data = event.data
        if data is None or event.oversized:
            return event.raw
        if data == _DONE:
            self.done = True
            return event.raw
        if not self._finished and b'"finish_reason"' in data:
            chunk = _read(data)
            self._finished = chunk is not None and any(
                c.index == 0 and c.finish_reason is not None for c in chunk.choices
            )
        top, masked = _obj(data)
        if top is None:
            return event.raw
        for key, value in self._head.items():
            if key in top:
                top[key] = value
        if b'"role"' in data and not _without_role(top):
            return b""  # a role and nothing else: the first answer said it
        return event.fields + b"data: " + _encoded(top, masked) + b"\n\n"


def _obj(data: bytes) -> tuple[dict[str, Any] | None, bool]:
    """``data`` as an object of raw values, and whether it was read masked: a chunk that carries a
    lone surrogate escape (half a pair) is read with the escape masked (:mod:`.surrogates`)."""
    try:
        top = obj(data)
        if top is not None:
            return top, False
        masked = surrogates.mask(data)
        return (obj(masked), True) if masked is not None else (None, False)
    except RecursionError:  # nested deeper than a parser goes: passed as it came
        return None, False


def _encoded(top: dict[str, Any], masked: bool) -> bytes:
    out: bytes = encode(top)
    return surrogates.unmask(out) if masked else out


def _without_role(top: dict[str, Any]) -> bool:
    """Each choice's ``role`` removed from ``top``; ``False`` when the chunk then says nothing (a
    role, maybe with an empty content, and no finish, no usage)."""
    choices = raw_list(top.get("choices"))
    if choices is None:
        return True
    says = "usage" in top and bytes(top["usage"]) != b"null"
    kept = []
    for raw in choices:
        choice = obj(raw)
        delta = obj(choice.get("delta")) if choice is not None else None
        if choice is None or delta is None or "role" not in delta:
            kept.append(raw)
            says = True
            continue
        del delta["role"]
        if delta.get("content") is not None and bytes(delta["content"]) == b'""':
            del delta["content"]
        finished = choice.get("finish_reason") is not None and bytes(choice["finish_reason"]) != b"null"
        says = says or bool(delta) or finished
        choice["delta"] = msgspec.Raw(encode(delta))
        kept.append(msgspec.Raw(encode(choice)))
    top["choices"] = kept
    return says


def _content(data: bytes) -> str | None:
    """Choice 0's answer text in a chunk: where llama.cpp echoes the prefill."""
    chunk = _read(data) if data != _DONE else None
    if chunk is None:
        return None
    return next((c.delta.content for c in chunk.choices if c.index == 0 and c.delta is not None), None)


def _with_content(data: bytes, content: str) -> bytes | None:
    """``data`` (a chunk) with choice 0's ``delta.content`` replaced."""
    top, masked = _obj(data)
    choices = raw_list(top.get("choices")) if top is not None else None
    if top is None or choices is None:
        return None
    for at, raw in enumerate(choices):
        choice = obj(raw)
        delta = obj(choice.get("delta")) if choice is not None else None
        if choice is None or delta is None or bytes(choice.get("index", b"0")) != b"0":
            continue
        delta["content"] = msgspec.Raw(json.dumps(content).encode())  # ASCII escapes: a lone half too
        choice["delta"] = msgspec.Raw(encode(delta))
        choices[at] = msgspec.Raw(encode(choice))
    top["choices"] = choices
    return _encoded(top, masked)


_LIMITS = ("max_tokens", "max_completion_tokens", "n_predict")
"""The members that bound the answer's tokens (OpenAI's two, llama.cpp's own)."""


class _ChatBudget:
    def counter(self, budget: int, max_event_bytes: int) -> BudgetCounter:
        return BudgetCount(budget, max_event_bytes)

    def echo(self, prefill: str, max_event_bytes: int) -> StreamFilter:
        return Echo(prefill, max_event_bytes, _content, _with_content)

    def collector(self, max_event_bytes: int) -> Collector:
        return ChatBody(max_event_bytes)

    def as_stream(self, body: bytes) -> bytes | None:
        return as_stream(body)

    def continued(self, top: Mapping[str, msgspec.Raw], prefill: str, spent: int) -> Edits | None:
        return prefilled(top, prefill, limited(top, _LIMITS, spent))


SIDE: BudgetSide = _ChatBudget()
