"""Builders and readers for Anthropic messages wire data, shared by the messages tests."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from anthropic._models import validate_type
from anthropic.types import Message, RawMessageStreamEvent

from gateway_mw.sse import SSEDecoder

MODEL = "m"


def signature(thinking: str) -> str:
    """The documented gateway signature, computed here independently of the code under test."""
    digest = hashlib.sha256(thinking.encode("utf-8")).digest()
    return "gw1:" + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode()


# -- stream events ------------------------------------------------------------------------------


def message_start(model: str = MODEL, content: list[Any] | None = None) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": content or [],
            "model": model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 1},
        },
    }


def start(index: int, block: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block or {"type": "text", "text": ""}}


def thinking_start(index: int) -> dict[str, Any]:
    return start(index, {"type": "thinking", "thinking": "", "signature": ""})


def redacted_start(index: int, reasoning: str) -> dict[str, Any]:
    return start(index, {"type": "redacted_thinking", "data": b64(reasoning)})


def tool_start(index: int) -> dict[str, Any]:
    return start(index, {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}})


def delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def text(index: int, value: str) -> dict[str, Any]:
    return delta(index, {"type": "text_delta", "text": value})


def thinking(index: int, value: str) -> dict[str, Any]:
    return delta(index, {"type": "thinking_delta", "thinking": value})


def sig(index: int, reasoning: str) -> dict[str, Any]:
    return delta(index, {"type": "signature_delta", "signature": signature(reasoning)})


def json_delta(index: int, partial: str) -> dict[str, Any]:
    return delta(index, {"type": "input_json_delta", "partial_json": partial})


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


PING = {"type": "ping"}
MESSAGE_STOP = {"type": "message_stop"}


def message_delta(stop_reason: str = "end_turn", output_tokens: int = 20, thinking: int = 0) -> dict[str, Any]:
    """``thinking``: the reasoning events the gateway counted, in the usage where it writes them."""
    usage: dict[str, Any] = {"output_tokens": output_tokens}
    if thinking:
        usage["output_tokens_details"] = {"thinking_tokens": thinking}
    return {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": usage}


def end(stop_reason: str = "end_turn", thinking: int = 0) -> list[dict[str, Any]]:
    return [message_delta(stop_reason, thinking=thinking), MESSAGE_STOP]


def text_block(index: int, *pieces: str, block: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """An upstream text block streamed in ``pieces``."""
    return [start(index, block), *(text(index, p) for p in pieces), stop(index)]


def thinking_block(index: int, reasoning: str, *pieces: str) -> list[dict[str, Any]]:
    """A translated thinking block: its deltas (``pieces``, or the whole text), signature, stop."""
    return [
        thinking_start(index),
        *(thinking(index, p) for p in (pieces or (reasoning,))),
        sig(index, reasoning),
        stop(index),
    ]


def redacted_block(index: int, reasoning: str) -> list[dict[str, Any]]:
    return [redacted_start(index, reasoning), stop(index)]


def sse(*items: dict[str, Any] | str, event_lines: bool = True) -> bytes:
    """Encode events (dicts, with their ``event:`` line) and raw data strings as an SSE stream."""
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(f"data: {item}\n\n".encode())
            continue
        data = json.dumps(item, separators=(",", ":"), ensure_ascii=False)  # UTF-8, as servers send it
        head = f"event: {item['type']}\n" if event_lines else ""
        out.append(f"{head}data: {data}\n\n".encode())
    return b"".join(out)


EVENT_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)


def _as_sdk_reads(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` as the SDK reads it: llama.cpp starts a thinking block without its ``signature``, which
    the SDK (it builds events without validating them) leaves unset until the ``signature_delta``."""
    block = item.get("content_block")
    if item["type"] == "content_block_start" and isinstance(block, dict) and block.get("type") == "thinking":
        return {**item, "content_block": {"signature": "", **block}}
    return item


def read_sse(body: bytes, max_event_bytes: int = 64 * 1024 * 1024) -> list[Any]:
    """The data of each event: decoded JSON, or the raw string (bytes if not UTF-8) when it is not JSON.

    Every event of a messages type must carry an ``event:`` line naming it, and is validated as
    the anthropic SDK's strict mode does. Events of any size are read, as clients read them.
    """
    decoder = SSEDecoder(max_event_bytes)
    events = decoder.feed(body) + decoder.finish()[0]  # an unterminated tail is no event: parsers drop it
    out: list[Any] = []
    for event in events:
        if event.data is None:
            continue
        try:
            raw = event.data.decode()
        except UnicodeDecodeError:
            out.append(event.data)  # not text: kept as bytes
            continue
        try:
            item = json.loads(raw)
        except ValueError:
            out.append(raw)
            continue
        if isinstance(item, dict) and item.get("type") in EVENT_TYPES:
            assert event.event == item["type"], (event.event, item)
            if item["type"] not in ("error", "ping"):
                validate_type(type_=RawMessageStreamEvent, value=_as_sdk_reads(item))
        out.append(item)
    return out


# -- non-stream bodies --------------------------------------------------------------------------


def message(*content: dict[str, Any], model: str = MODEL, stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 20},
    }


def tb(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def th(reasoning: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": reasoning, "signature": signature(reasoning)}


def rd(reasoning: str) -> dict[str, Any]:
    return {"type": "redacted_thinking", "data": b64(reasoning)}


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 2}}


def read_message(body: bytes) -> dict[str, Any]:
    """A non-stream body, validated as the anthropic SDK's strict mode does."""
    doc: dict[str, Any] = json.loads(body)
    validate_type(type_=Message, value=doc)
    return doc


def replay(items: list[Any]) -> dict[str, Any]:
    """The final message a client accumulates from a stream's events (indexes as list positions)."""
    msg: dict[str, Any] | None = None
    tool_json: dict[int, str] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item["type"]
        if kind == "message_start":
            msg = json.loads(json.dumps(item["message"]))
            continue
        assert msg is not None, "an event before message_start"
        if kind == "content_block_start":
            assert item["index"] == len(msg["content"]), "indexes must be contiguous, in start order"
            msg["content"].append(dict(item["content_block"]))
        elif kind == "content_block_delta":
            index, d = item["index"], item["delta"]
            block = msg["content"][index]
            if d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                block["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
            elif d["type"] == "input_json_delta":
                tool_json[index] = tool_json.get(index, "") + d["partial_json"]
        elif kind == "content_block_stop" and item["index"] in tool_json:
            msg["content"][item["index"]]["input"] = json.loads(tool_json.pop(item["index"]))
        elif kind == "message_delta":
            msg["stop_reason"] = item["delta"]["stop_reason"]
            msg["usage"]["output_tokens"] = item["usage"]["output_tokens"]
    assert msg is not None
    return msg
