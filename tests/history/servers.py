"""What each inference server's model sees of a replayed assistant turn, and what it refuses: a plain
model of their request handling as ../shared/reference/roundtrip.md reads it from their sources
(vLLM ≥ 0.16, SGLang, llama.cpp's llama-server, Ollama). The oracle of the round-trip table: each
reader returns, per assistant turn, the text of the turn as the model reads it (reasoning fields it
reads, then content), or raises :class:`Refused`."""

from __future__ import annotations

import base64
from typing import Any


class Refused(Exception):
    """The server answers 400 (or 500) to this request."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def chat(server: str, body: dict[str, Any]) -> list[str]:
    seen = []
    for m in body["messages"]:
        if m["role"] != "assistant":
            continue
        content = m.get("content")
        if server == "llamacpp":
            if content in (None, "", []) and not m.get("tool_calls") and not m.get("reasoning_content"):
                raise Refused("an assistant message needs content or tool_calls")
            if m.get("reasoning_content", "") is None and not content:
                raise Refused("reasoning_content null")
            if isinstance(content, list) and any(p.get("type") not in ("text", "media_marker") for p in content):
                raise Refused("unsupported content part")
        field = {"vllm": "reasoning", "ollama": "reasoning"}.get(server, "reasoning_content")
        reasoning = m.get(field) or ""
        if server == "ollama" and isinstance(content, list) and not m.get("tool_calls"):
            reasoning = ""  # kept only with tool calls when content is an array
        if server == "vllm" and isinstance(content, list):  # a thinking part becomes plain content text
            content = [{"type": "text", "text": p.get("thinking", p.get("text", ""))} for p in content]
        seen.append(reasoning + "\x00" + _text(content))
    return seen


def messages(server: str, body: dict[str, Any]) -> list[str]:
    seen = []
    for m in body["messages"]:
        if m["role"] != "assistant":
            continue
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        thinking = [b["thinking"] for b in content if b.get("type") == "thinking"]
        if server == "sglang" and any(b.get("type") == "redacted_thinking" for b in content):
            raise Refused("Anthropic redacted_thinking history is not supported")
        if server == "ollama":
            reasoning = thinking[-1] if thinking else ""
        else:
            reasoning = "".join(thinking)
        text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        seen.append(reasoning + "\x00" + text)
    return seen


def responses(server: str, body: dict[str, Any]) -> list[str]:
    seen: list[str] = []
    items = body["input"] if isinstance(body["input"], list) else []
    reasoning = ""
    for item in items:
        kind = item.get("type", "message")
        if kind == "item_reference" and server in ("vllm", "llamacpp", "ollama"):
            raise Refused("item_reference: no stored response")
        if kind == "reasoning":
            blob = item.get("encrypted_content")
            if server == "vllm":
                if blob:
                    raise Refused("Encrypted content is not supported.")
                parts = item.get("content") or item.get("summary") or []
                reasoning += parts[0]["text"] if parts else ""
            elif server == "llamacpp":
                content = item.get("content")
                if not isinstance(item.get("summary"), list):
                    raise Refused("item['summary'] is not an array")
                if not isinstance(content, list) or not content or not content[0].get("text"):
                    raise Refused("item['content'] is not an array / is empty")
                reasoning += content[0]["text"]
            elif server == "ollama":
                reasoning += blob or ""
            continue
        if kind == "message" and item.get("role") == "assistant":
            seen.append(reasoning + "\x00" + _text(item.get("content")))
            reasoning = ""
        elif kind == "function_call" and reasoning:
            seen.append(reasoning + "\x00")
            reasoning = ""
    return seen


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
