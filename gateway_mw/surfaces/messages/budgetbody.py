"""A messages answer under a budget the gateway enforces, the parts that are not the stream's count:
the one body a client that asked for no stream gets (:class:`MessagesBody`), a continuation answered
with one body made a stream (:func:`as_stream`), and llama.cpp's echo of the prefill taken out of the
continuation (:func:`echo_text`, :func:`with_echo_text`). Sans-I/O.
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

from ...sse import SSEDecoder, encode_event

__all__ = ["MessagesBody", "as_stream", "echo_text", "with_echo_text"]

_MESSAGE_KEYS = ("id", "type", "role", "model", "stop_reason", "stop_sequence", "usage")


def _loads(data: bytes) -> Any:
    """An event's data: the standard library reads a lone surrogate half as it is."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()  # ASCII escapes: any half is written


class MessagesBody:
    """Feed it the client-bound events of one answer (:meth:`feed`); :meth:`body` is the message
    they make, as the SDKs' accumulators make it: the blocks by index with their deltas joined (a
    tool call's ``input`` read from its JSON), the last stop reason, the usage of ``message_start``
    with ``message_delta``'s over it."""

    def __init__(self, max_event_bytes: int) -> None:
        self._decoder = SSEDecoder(max_event_bytes)
        self._message: dict[str, Any] = {"type": "message", "role": "assistant"}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}

    def feed(self, out: bytes) -> None:
        for event in self._decoder.feed(out):
            doc = _loads(event.data) if event.data is not None and not event.oversized else None
            if isinstance(doc, dict):
                self._take(doc)

    def body(self) -> bytes:
        message = dict(self._message)
        content = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if index in self._json:
                with suppress(ValueError, RecursionError):  # not JSON: the input as the block started it
                    block["input"] = json.loads("".join(self._json[index]) or "{}")
            content.append(block)
        message["content"] = content
        message.setdefault("stop_reason", None)
        message.setdefault("stop_sequence", None)
        return _dumps(message)

    def _take(self, doc: dict[str, Any]) -> None:
        kind, index = doc.get("type"), doc.get("index")
        if kind == "message_start" and isinstance(doc.get("message"), dict):
            start = doc["message"]
            self._message |= {key: start[key] for key in _MESSAGE_KEYS if key in start}
        elif kind == "message_delta":
            delta, usage = doc.get("delta"), doc.get("usage")
            if isinstance(delta, dict):
                self._message |= {key: delta[key] for key in ("stop_reason", "stop_sequence") if key in delta}
            if isinstance(usage, dict):
                self._message["usage"] = (self._message.get("usage") or {}) | usage
        elif kind == "content_block_start" and isinstance(index, int) and isinstance(doc.get("content_block"), dict):
            self._blocks[index] = dict(doc["content_block"])
        elif kind == "content_block_delta" and isinstance(index, int) and isinstance(doc.get("delta"), dict):
            block = self._blocks.setdefault(index, {"type": "text", "text": ""})
            self._delta(index, block, doc["delta"])

    def _delta(self, index: int, block: dict[str, Any], delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        for name, key in (("text_delta", "text"), ("thinking_delta", "thinking"), ("signature_delta", "signature")):
            if kind == name and isinstance(delta.get(key), str):
                block[key] = (block.get(key) or "") + delta[key]
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self._json.setdefault(index, []).append(delta["partial_json"])
        elif kind == "citations_delta" and "citation" in delta:
            block.setdefault("citations", []).append(delta["citation"])


_EMPTIED = {"text": ("text", ""), "thinking": ("thinking", ""), "tool_use": ("input", {})}


def as_stream(body: bytes) -> bytes | None:
    """A ``message`` body as the stream of the same answer (its start, each block opened empty and
    given its text in one delta, its stop; the stop reason and usage; ``message_stop``), for a
    continuation an upstream answered with one body though a stream was asked for; ``None``: no
    such body."""
    message = _loads(body)
    content = message.get("content") if isinstance(message, dict) and message.get("type") == "message" else None
    if not isinstance(content, list):
        return None
    start = {key: value for key, value in message.items() if key != "content"} | {"content": []}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            return None
        kind = block.get("type")
        emptied = dict(block)
        delta: dict[str, Any] | None = None
        if kind in _EMPTIED:
            key, empty = _EMPTIED[kind]
            emptied[key] = empty
            if kind == "tool_use":
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
            elif isinstance(block.get(key), str):
                delta = {"type": f"{kind}_delta", key: block[key]}
        if kind == "thinking":
            emptied["signature"] = ""
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": emptied})
        )
        if delta is not None:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        if kind == "thinking" and isinstance(block.get("signature"), str):
            signature = {"type": "signature_delta", "signature": block["signature"]}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": signature}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    end: dict[str, Any] = {"type": "message_delta", "delta": stop}
    if isinstance(message.get("usage"), dict):
        end["usage"] = message["usage"]
    events += [("message_delta", end), ("message_stop", {"type": "message_stop"})]
    return b"".join(encode_event(_dumps(data), event=kind).raw for kind, data in events)


def echo_text(data: bytes) -> str | None:
    """A ``text_delta``'s text: where llama.cpp echoes the prefill (on ``/v1/messages`` as on chat)."""
    doc = _loads(data)
    delta = doc.get("delta") if isinstance(doc, dict) and doc.get("type") == "content_block_delta" else None
    text = delta.get("text") if isinstance(delta, dict) and delta.get("type") == "text_delta" else None
    return text if isinstance(text, str) else None


def with_echo_text(data: bytes, text: str) -> bytes:
    """``data`` (a ``text_delta``, as :func:`echo_text` read it) with its text replaced."""
    doc = _loads(data)
    doc["delta"]["text"] = text
    return _dumps(doc)
