"""Chat completion chunks as the servers people deploy spell them (key order, spacing, nulls)."""

from __future__ import annotations

import json
from typing import Any

LAYOUTS = ("openai", "vllm", "sglang", "llamacpp", "ollama", "pyjson")


def body(layout: str, content: str | None, finish: str | None = None, first: bool = False) -> dict[str, Any]:
    """One chunk of choice 0 as ``layout`` writes it; ``first``: the chunk that carries the role."""
    if layout == "sglang":
        delta: dict[str, Any] = {"role": "assistant" if first else None, "content": content}
        delta |= {"reasoning_content": None, "tool_calls": None}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, "matched_stop": None}
        envelope = {"id": "0f3c9a", "object": "chat.completion.chunk", "created": 1730000000, "model": "m"}
        return {**envelope, "choices": [choice], "usage": None}
    delta = {"role": "assistant"} if first or layout == "ollama" else {}
    if content is not None:
        delta["content"] = content
    if layout == "llamacpp":
        return {
            "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
            "created": 1730000000,
            "id": "chatcmpl-1",
            "model": "m",
            "system_fingerprint": "b5000-abcdef",
            "object": "chat.completion.chunk",
        }
    if layout == "ollama":
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1730000000,
            "model": "m",
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    out: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1730000000, "model": "m"}
    if layout == "openai":
        out |= {"service_tier": "default", "system_fingerprint": "fp_abc123"}
    out["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    if layout == "openai":
        out["obfuscation"] = "Xk2"
    return out


def dumps(doc: Any, layout: str, ascii_only: bool = False) -> str:
    """``doc`` as ``layout``'s server serialises it (Python's ``json.dumps`` defaults for pyjson)."""
    if layout == "pyjson":
        return json.dumps(doc)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=ascii_only)


def event(layout: str, content: str | None, finish: str | None = None, first: bool = False) -> bytes:
    return b"data: " + dumps(body(layout, content, finish, first), layout).encode() + b"\n\n"
