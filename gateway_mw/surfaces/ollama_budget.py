"""A reasoning budget the gateway enforces on Ollama's ``/api/chat``, sans-I/O: the first answer's
``thinking`` lines counted as they go to the client (:class:`OllamaBudgetCount`), the continuation's
lines made the rest of the same answer (:class:`OllamaJoined`), the body a client that asked for no
stream gets (:class:`OllamaBody`, :func:`as_stream`), and the continuation's request: the same
messages and a final assistant message (:data:`SIDE`).

Ollama streams one token per line, so the count is of lines: each that carries reasoning text in
``thinking`` (in its ``message`` on ``/api/chat``, at its top on ``/api/generate``), as the
translator wrote it for the client, or as Ollama's own parser did. Ollama sends a continuation's
tokens only, never the prefill (its runner streams what the model generates): nothing is taken out
of its lines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

from .. import surrogates
from ..ndjson import NDJSONDecoder
from ..rawjson import UNREADABLE, Obj, as_int, encode, obj
from ..sse import SSEEvent
from .budgeting import BudgetCounter, BudgetSide, Collector, Edits, Joiner, StreamFilter, prefilled
from .counting import EventCount

__all__ = ["SIDE", "OllamaBody", "OllamaBudgetCount", "OllamaJoined", "as_stream"]


class _Message(msgspec.Struct, gc=False):
    content: str | None = None
    thinking: str | None = None
    tool_calls: msgspec.Raw = msgspec.Raw()  # empty: absent (no JSON value is empty)


class _Line(msgspec.Struct, gc=False):
    model: msgspec.Raw = msgspec.Raw()
    created_at: msgspec.Raw = msgspec.Raw()
    message: _Message | None = None
    response: str | None = None
    thinking: str | None = None
    done: Any = None


_decode_line = msgspec.json.Decoder(_Line).decode
_decode_str = msgspec.json.Decoder(str).decode


def _read(data: bytes) -> _Line | None:
    """A line as the budget reads it; ``None`` when it is none. A line that carries a lone surrogate
    escape (half a pair, the other half in the next line) is read with the standard library, which
    gives the half as it is."""
    try:
        return _decode_line(data)
    except (*UNREADABLE, RecursionError):  # RecursionError: nested deeper than a parser goes
        pass
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    message = doc.get("message")
    line = _Line(done=doc.get("done"), response=_str(doc.get("response")), thinking=_str(doc.get("thinking")))
    if isinstance(message, dict):
        calls = message.get("tool_calls")
        raw_calls = msgspec.Raw(json.dumps(calls).encode()) if calls is not None else msgspec.Raw()
        line.message = _Message(_str(message.get("content")), _str(message.get("thinking")), raw_calls)
    for key in ("model", "created_at"):
        if isinstance(doc.get(key), str):
            setattr(line, key, msgspec.Raw(json.dumps(doc[key]).encode()))
    return line


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _texts(line: _Line) -> tuple[str | None, str | None]:
    """(text, reasoning) of a line: ``message`` on ``/api/chat``, ``response`` on ``/api/generate``."""
    if line.message is not None:
        return line.message.content, line.message.thinking
    return line.response, line.thinking


class OllamaBudgetCount(EventCount):
    """Counts the ``thinking`` lines of an Ollama stream on their way to the client, and says where
    the budget ends it. Feed it what the translator gives (:meth:`feed`); it watches until the
    reasoning gives way to an answer (text, a tool call, the done line), after which it passes bytes
    as they come."""

    def __init__(self, budget: int, max_event_bytes: int) -> None:
        super().__init__(budget, NDJSONDecoder(max_event_bytes))
        self.model_raw: msgspec.Raw | None = None
        """The first answer's ``model``, as it wrote it."""
        self.created_at: msgspec.Raw | None = None
        """The ``created_at`` of the last line read (the one the cut fell on, if it was cut)."""
        self.chat = True
        """The answer is ``/api/chat``'s (a ``message``), not ``/api/generate``'s (a ``response``)."""

    @property
    def model(self) -> str | None:
        try:
            return _decode_str(self.model_raw) if self.model_raw is not None else None
        except UNREADABLE:
            return None

    def joiner(self, max_event_bytes: int) -> Joiner:
        return OllamaJoined(self, max_event_bytes)

    def _take(self, event: SSEEvent) -> bool:
        """Note one line; ``False`` when it would take the reasoning over the budget."""
        data = event.data
        line = _read(data) if data is not None and not event.oversized else None
        if line is None:
            return True  # not a line the budget can read: passed as the translator gave it
        if self.model_raw is None and line.model:  # from the line the cut may fall on too
            self.model_raw = line.model
        if line.created_at:
            self.created_at = line.created_at
        if line.message is not None or line.response is not None:
            self.chat = line.message is not None
        text, thinking = _texts(line)
        if thinking:
            if self.counted >= self.budget:
                return False
            self.counted += 1
            self._reasoning.append(thinking)
        calls = line.message.tool_calls if line.message is not None else msgspec.Raw()
        if line.done is True or (text or "").strip() or bytes(calls) not in (b"", b"null", b"[]"):
            self._watching = False  # the reasoning is over: an answer, a call or the end
        return True


class OllamaJoined:
    """The continuation's lines made the rest of the first answer: its ``model``, and one done line
    (the first answer, cut, sent none), whose ``eval_count`` also counts the reasoning lines the
    first answer gave (Ollama counts reasoning and answer together there). Each line keeps its own
    ``created_at``, as the lines of one uncut answer do; a line that needs no change goes on as the
    same bytes."""

    def __init__(self, first: OllamaBudgetCount, max_event_bytes: int) -> None:
        self._first = first
        self._decoder = NDJSONDecoder(max_event_bytes)
        self._lines = 0
        self.done = False
        """The continuation's done line went to the client."""

    def feed(self, out: bytes) -> bytes:
        """The client's bytes for ``out``, what the translator gave of the continuation."""
        return b"".join(self._joined(event) for event in self._decoder.feed(out))

    def finish(self) -> bytes:
        """At the continuation's end: what the reader held, and the answer ended by a done line if
        its stream did not end it (on a line of its own)."""
        events, tail = self._decoder.finish()
        out = b"".join(self._joined(event) for event in events)
        if not self.done and out and not out.endswith(b"\n"):
            out += b"\n"
        return out + self.closing() + tail

    def closing(self, reason: str = "length") -> bytes:
        """The done line of an answer no continuation ended: ``done_reason`` ``reason`` (a limit
        ended it), and the tokens the client got in ``eval_count``. Nothing after a done line."""
        if self.done:
            return b""
        first = self._first
        line: Obj = {}
        if first.model_raw is not None:
            line["model"] = first.model_raw
        if first.created_at is not None:
            line["created_at"] = first.created_at
        if first.chat:
            line["message"] = {"role": "assistant", "content": ""}
        else:
            line["response"] = ""
        line |= {"done": True, "done_reason": reason, "eval_count": first.counted + self._lines}
        self.done = True
        return encode(line) + b"\n"

    def _joined(self, event: SSEEvent) -> bytes:
        if self.done:
            return b""  # past the answer's done line: a second answer, or a second end
        data = event.data
        line = _read(data) if data is not None and not event.oversized else None
        if data is None or line is None:
            return event.raw
        text, thinking = _texts(line)
        self._lines += bool(text or thinking)
        model = self._first.model_raw
        renamed = model is not None and line.model and bytes(line.model) != bytes(model)
        if line.done is not True and not renamed:
            return event.raw
        top, masked = _obj(data)
        if top is None:
            return event.raw
        if renamed:
            top["model"] = model
        if line.done is True:
            self.done = True
            count = as_int(top.get("eval_count", msgspec.Raw(b"0")))  # absent: none (Go's omitempty)
            if count is not None:
                top["eval_count"] = count + self._first.counted
        return _encoded(top, masked) + event.raw[len(event.raw.rstrip(b"\r\n")) :]


def _obj(data: bytes) -> tuple[Obj | None, bool]:
    """``data`` as an object of raw values, and whether it was read masked (a lone surrogate escape)."""
    top = obj(data)
    if top is not None:
        return top, False
    masked = surrogates.mask(data)
    return (obj(masked), True) if masked is not None else (None, False)


def _encoded(top: Obj, masked: bool) -> bytes:
    out: bytes = encode(top)
    return surrogates.unmask(out) if masked else out


class OllamaBody:
    """The non-stream answer an Ollama client gets, from the client-bound lines of one answer, as
    Ollama makes its own (server/routes.go ``writeChatResponse``): the done line, with the texts of
    every line joined (``thinking`` left out when there is none), their tool calls and logprobs in
    order."""

    def __init__(self, max_event_bytes: int) -> None:
        self._decoder = NDJSONDecoder(max_event_bytes)
        self._last: dict[str, Any] = {}
        self._texts: dict[str, list[str]] = {"content": [], "thinking": []}
        self._calls: list[Any] = []
        self._logprobs: list[Any] = []

    def feed(self, out: bytes) -> None:
        for event in self._decoder.feed(out):
            self._take(event)

    def body(self) -> bytes:
        events, _ = self._decoder.finish()
        for event in events:
            self._take(event)
        answer = dict(self._last)
        content, thinking = ("".join(self._texts[key]) for key in ("content", "thinking"))
        if "message" in answer or "response" not in answer:
            message = answer.get("message")
            message = dict(message) if isinstance(message, dict) else {"role": "assistant"}
            message["content"] = content
            message.pop("thinking", None)
            if thinking:
                message["thinking"] = thinking
            message.pop("tool_calls", None)
            if self._calls:
                message["tool_calls"] = self._calls
            answer["message"] = message
        else:
            answer["response"] = content
            answer.pop("thinking", None)
            if thinking:
                answer["thinking"] = thinking
        answer.pop("logprobs", None)
        if self._logprobs:
            answer["logprobs"] = self._logprobs
        return json.dumps(answer, separators=(",", ":")).encode()  # ASCII escapes: any half is written

    def _take(self, event: SSEEvent) -> None:
        if event.data is None or event.oversized:
            return
        try:
            line = json.loads(event.data)  # the standard library: a lone surrogate half is read as it is
        except (ValueError, RecursionError):
            return
        if not isinstance(line, dict):
            return
        self._last = line
        message = line.get("message")
        holder = message if isinstance(message, dict) else line
        for key, name in (("content", "content"), ("response", "content"), ("thinking", "thinking")):
            text = holder.get(key)
            if isinstance(text, str):
                self._texts[name].append(text)
        calls = holder.get("tool_calls")
        if isinstance(calls, list):
            self._calls += calls
        logprobs = line.get("logprobs")
        if isinstance(logprobs, list):
            self._logprobs += logprobs


def as_stream(body: bytes) -> bytes | None:
    """A non-stream Ollama answer as the stream of the same answer: itself, one done line (Ollama's
    body is its done line with the texts whole); ``None``: no such body."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(answer, dict) or answer.get("done") is not True:
        return None
    return json.dumps(answer, separators=(",", ":")).encode() + b"\n"


class _Echoless:
    """Ollama sends a continuation's tokens only: its bytes pass as they came."""

    def feed(self, raw: bytes) -> bytes:
        return raw

    def finish(self) -> bytes:
        return b""


_decode_any = msgspec.json.Decoder().decode


def _num_predict(options: Obj | None, spent: int) -> Edits | None:
    """``options`` with ``num_predict`` reduced by ``spent`` (the two requests together keep the
    client's limit); ``{}``: nothing to reduce (absent, ``-1`` no bound, ``-2`` fill the context,
    or another value, left as it came); ``None``: the limit is used up."""
    raw = options.get("num_predict") if options is not None else None
    try:
        limit = _decode_any(raw) if raw is not None else None
    except msgspec.DecodeError:
        return {}
    if options is None or not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        return {}
    if limit <= spent:
        return None
    return {"options": encode(options | {"num_predict": msgspec.Raw(encode(limit - spent))})}


class _OllamaBudget:
    """Ollama's pieces (:class:`~.budgeting.BudgetSide`)."""

    def counter(self, budget: int, max_event_bytes: int) -> BudgetCounter:
        return OllamaBudgetCount(budget, max_event_bytes)

    def echo(self, prefill: str, max_event_bytes: int) -> StreamFilter:
        return _Echoless()

    def collector(self, max_event_bytes: int) -> Collector:
        return OllamaBody(max_event_bytes)

    def as_stream(self, body: bytes) -> bytes | None:
        return as_stream(body)

    def continued(self, top: Mapping[str, msgspec.Raw], prefill: str, spent: int) -> Edits | None:
        """``/api/chat``'s messages with ``prefill`` as a final assistant message's ``content`` (not
        ``thinking``: a builtin parser expects the answer after a prefill that has content), and
        ``options.num_predict`` reduced; ``None`` for ``/api/generate`` (no messages: Ollama has no
        way to continue there) or a limit used up."""
        return prefilled(top, prefill, _num_predict(obj(top.get("options")), spent))


SIDE: BudgetSide = _OllamaBudget()
