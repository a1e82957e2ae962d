"""Builders and readers for OpenAI chat completion wire data, shared by the chat tests."""

from __future__ import annotations

import json
from typing import Any

from openai.types.chat import ChatCompletionChunk

from gateway_mw.sse import SSEDecoder

ENVELOPE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1730000000, "model": "m"}


def chunk(
    content: str | None = None,
    *,
    index: int = 0,
    finish: str | None = None,
    delta: dict[str, Any] | None = None,
    choices: list[dict[str, Any]] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """A chat.completion.chunk with one choice (or the given ``choices``)."""
    if choices is None:
        d: dict[str, Any] = dict(delta or {})
        if content is not None:
            d["content"] = content
        choices = [{"index": index, "delta": d, "logprobs": None, "finish_reason": finish}]
    return {**ENVELOPE, "choices": choices, **top}


def completion(content: Any, **message: Any) -> dict[str, Any]:
    """A non-stream chat.completion whose one message has ``content`` and the ``message`` fields."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content, **message}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }


def choice(index: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}


def sse(*items: dict[str, Any] | str) -> bytes:
    """Encode chunks (dicts) and raw data strings (``"[DONE]"``) as an SSE stream."""
    out = []
    for item in items:
        data = item if isinstance(item, str) else json.dumps(item, separators=(",", ":"))
        out.append(f"data: {data}\n\n".encode())
    return b"".join(out)


def read_sse(body: bytes) -> list[Any]:
    """The data of each event: decoded JSON, or the raw string when it is not JSON.

    Every chat.completion.chunk is also validated as the openai SDK's strict mode does.
    """
    decoder = SSEDecoder()
    events = decoder.feed(body) + decoder.finish()[0]  # an unterminated tail is no event: parsers drop it
    out: list[Any] = []
    for event in events:
        if event.data is None:
            continue
        text = event.data.decode()
        try:
            item = json.loads(text)
        except ValueError:
            out.append(text)
            continue
        if isinstance(item, dict) and item.get("object") == "chat.completion.chunk":
            ChatCompletionChunk.model_validate(item, strict=True)
        out.append(item)
    return out


def texts(items: list[Any], field: str = "reasoning_content") -> tuple[str, str]:
    """(reasoning, content) of choice 0, joined over a translated stream."""
    reasoning, content = [], []
    for item in items:
        if not isinstance(item, dict):
            continue
        for ch in item.get("choices", []):
            if ch["index"] != 0:
                continue
            delta = ch.get("delta") or {}
            reasoning.append(delta.get(field) or "")
            content.append(delta.get("content") or "")
    return "".join(reasoning), "".join(content)
