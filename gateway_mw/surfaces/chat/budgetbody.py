"""A non-stream chat answer under a budget the gateway enforces, sans-I/O: the gateway asks for a
stream (so that it can count and cut), and gives the client the one body the chunks it would have
streamed make (:class:`ChatBody`): the first answer's ``id``, ``created`` and ``model``, the texts
joined under the names the translator wrote, tool calls put together by their index, the last finish,
and the usage (summed when both answers carry one).
"""

from __future__ import annotations

import json
from typing import Any

from ...sse import SSEDecoder

__all__ = ["ChatBody", "as_stream"]

_HEAD = ("id", "created", "model", "system_fingerprint")
_TEXTS = ("content", "reasoning_content", "reasoning")


class ChatBody:
    """Feed it the client-bound chunks of one answer (:meth:`feed`); :meth:`body` is the answer."""

    def __init__(self, max_event_bytes: int) -> None:
        self._decoder = SSEDecoder(max_event_bytes)
        self._head: dict[str, Any] = {}
        self._texts: dict[str, list[str]] = {}
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: Any = None
        self._usage: dict[str, Any] | None = None

    def feed(self, out: bytes) -> None:
        for event in self._decoder.feed(out):
            data = event.data
            if data is None or event.oversized or data == b"[DONE]":
                continue
            try:
                chunk = json.loads(data)  # the standard library: a lone surrogate half is read as it is
            except (ValueError, RecursionError):
                continue
            if isinstance(chunk, dict):
                self._take(chunk)

    def body(self) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": None}
        for name, texts in self._texts.items():
            message[name] = "".join(texts)
        if self._calls:
            message["tool_calls"] = [self._calls[i] for i in sorted(self._calls)]
        answer: dict[str, Any] = {"id": self._head.get("id"), "object": "chat.completion"}
        answer |= {key: self._head[key] for key in _HEAD[1:] if key in self._head}
        answer["choices"] = [{"index": 0, "message": message, "logprobs": None, "finish_reason": self._finish}]
        if self._usage is not None:
            answer["usage"] = self._usage
        return json.dumps(answer, separators=(",", ":")).encode()  # ASCII escapes: any half is written

    def _take(self, chunk: dict[str, Any]) -> None:
        for key in _HEAD:
            if key in chunk and key not in self._head:
                self._head[key] = chunk[key]
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage if self._usage is None else _summed(self._usage, usage)
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason") is not None:
                self._finish = choice["finish_reason"]
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            for name in _TEXTS:
                text = delta.get(name)
                if isinstance(text, str):
                    self._texts.setdefault(name, []).append(text)
            calls = delta.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict):
                    self._call(call)

    def _call(self, call: dict[str, Any]) -> None:
        index = call.get("index", 0)
        if not isinstance(index, int) or isinstance(index, bool):
            index = 0  # no place to read: the first call's, where the SDKs' accumulators cannot place it either
        held = self._calls.setdefault(index, {"function": {"arguments": ""}})
        for key in ("id", "type"):
            if call.get(key) is not None:
                held[key] = call[key]
        function = call.get("function")
        if isinstance(function, dict):
            if function.get("name") is not None:
                held["function"]["name"] = function["name"]
            if isinstance(function.get("arguments"), str):
                held["function"]["arguments"] += function["arguments"]


def as_stream(body: bytes) -> bytes | None:
    """A ``chat.completion`` body as the stream of the same answer (its first choice: one chunk
    with the message's members as its delta, then the usage, then ``[DONE]``), for a continuation
    an upstream answered with one body though a stream was asked for; ``None``: no such body."""
    try:
        answer = json.loads(body)  # the standard library: a lone surrogate half is read as it is
    except (ValueError, RecursionError):
        return None
    choices = answer.get("choices") if isinstance(answer, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(first, dict) or not isinstance(message, dict):
        return None
    delta = {key: value for key, value in message.items() if key != "role" and value is not None}
    calls = delta.get("tool_calls")
    if isinstance(calls, list):
        delta["tool_calls"] = [{"index": i, **c} if isinstance(c, dict) else c for i, c in enumerate(calls)]
    head = {key: answer[key] for key in _HEAD if key in answer} | {"object": "chat.completion.chunk"}
    chunks = [head | {"choices": [{"index": 0, "delta": delta, "finish_reason": first.get("finish_reason")}]}]
    if isinstance(answer.get("usage"), dict):
        chunks.append(head | {"choices": [], "usage": answer["usage"]})
    events = [b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n" for chunk in chunks]
    return b"".join(events) + b"data: [DONE]\n\n"


def _summed(first: dict[str, Any], then: dict[str, Any]) -> dict[str, Any]:
    """Two usages added up, number by number (a nested object's too); the rest is the later one's."""
    out = dict(then)
    for key, value in first.items():
        other = then.get(key)
        if isinstance(value, int) and isinstance(other, int) and not isinstance(value, bool):
            out[key] = value + other
        elif isinstance(value, dict) and isinstance(other, dict):
            out[key] = _summed(value, other)
    return out
