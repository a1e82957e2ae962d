"""Chat completion chunks as real servers spell them: the upstream layouts of the deployment benchmarks.

Each layout writes the same chunk (one choice, a delta, no finish) the way one server does, key
order, spacing and explicit nulls included:

* ``openai`` — OpenAI's own: ``service_tier``, ``system_fingerprint``, ``logprobs``, ``obfuscation``;
* ``vllm`` — ``"logprobs":null,"finish_reason":null`` after the delta;
* ``sglang`` — every absent delta field an explicit null (``role``, ``reasoning_content``,
  ``tool_calls``), ``matched_stop`` and ``"usage":null``;
* ``llamacpp`` — ``choices`` first, ``finish_reason`` before ``index``, envelope after;
* ``ollama`` — ``"role":"assistant"`` in every delta, ``system_fingerprint``;
* ``pyjson`` — Python's ``json.dumps`` default spacing (``", "`` and ``": "``), non-ASCII as ``\\uXXXX``.
"""

from __future__ import annotations

import json
from typing import Any

LAYOUTS = {
    "openai": "OpenAI",
    "vllm": "vLLM",
    "sglang": "SGLang (explicit nulls)",
    "llamacpp": "llama.cpp (`choices` first)",
    "ollama": "Ollama (`role` in every delta)",
    "pyjson": "Python `json.dumps` spacing",
}
WORDS = [" step", " by", " step", " the", " sum", " is", " four", " then"]
STREAMS = {
    "content": "steady content",
    "reasoning": "steady reasoning",
    "typical": "typical (reasoning, then answer)",
    "tagged": "a tag every 4 events",
}


def body(layout: str, content: str | None, finish: str | None = None, first: bool = False) -> dict[str, Any]:
    """One chunk as ``layout`` writes it (``first``: the chunk that opens the stream with its role)."""
    delta: dict[str, Any]
    if layout == "sglang":
        delta = {"role": "assistant" if first else None, "content": content, "reasoning_content": None}
        delta["tool_calls"] = None
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, "matched_stop": None}
        return {
            "id": "0f3c9a",
            "object": "chat.completion.chunk",
            "created": 1730000000,
            "model": "bench-model",
            "choices": [choice],
            "usage": None,
        }
    delta = {}
    if first or layout == "ollama":
        delta["role"] = "assistant"
    if content is not None:
        delta["content"] = content
    if layout == "llamacpp":
        return {
            "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
            "created": 1730000000,
            "id": "chatcmpl-bench",
            "model": "bench-model",
            "system_fingerprint": "b5000-abcdef",
            "object": "chat.completion.chunk",
        }
    if layout == "ollama":
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "created": 1730000000,
            "model": "bench-model",
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    out: dict[str, Any] = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1730000000,
        "model": "bench-model",
    }
    if layout == "openai":
        out["service_tier"] = "default"
        out["system_fingerprint"] = "fp_abc123"
    out["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    if layout == "openai":
        out["obfuscation"] = "Xk2"
    return out


def event(layout: str, content: str | None, finish: str | None = None, first: bool = False) -> bytes:
    doc = body(layout, content, finish, first)
    if layout == "pyjson":
        text = json.dumps(doc)
    else:
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return b"data: " + text.encode() + b"\n\n"


def texts(kind: str, n: int) -> list[str]:
    """``n`` deltas of a stream of ``kind``."""
    words = [WORDS[i % len(WORDS)] for i in range(max(n - 1, 1))]
    if kind == "content":
        return ["The", *words]
    if kind == "reasoning":
        return ["<think>", *words]
    if kind == "typical":
        half = len(words) // 2
        return ["<think>", *words[:half], "</think>", *words[half:]]
    cycle = ["<think>a", " bc", "d</think>", "e f"]
    return [cycle[i % 4] for i in range(max(n, 1))]


def stream(layout: str, kind: str, n: int) -> list[bytes]:
    """A whole stream of ``n`` events, one ``bytes`` per event: role chunk, deltas, finish, ``[DONE]``."""
    out = [event(layout, "", first=True)]
    out += [event(layout, t) for t in texts(kind, max(n - 3, 1))[: max(n - 3, 1)]]
    out += [event(layout, None, "stop"), b"data: [DONE]\n\n"]
    return out
