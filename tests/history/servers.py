"""What each inference server's model sees of a replayed assistant turn, and what it refuses: a plain
model of their request handling as ../shared/reference/roundtrip.md reads it from their sources
(vLLM ≥ 0.16, SGLang, llama.cpp's llama-server, Ollama). The oracle of the round-trip table: each
reader returns, per assistant turn, the text of the turn as the model reads it (reasoning fields it
reads, then content), or raises :class:`Refused`."""

from __future__ import annotations

import base64
import zlib
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
    if server == "sglang":
        return chat(server, {"messages": _sglang_messages(items)})
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


# SGLang's /v1/responses (python/sglang/srt/entrypoints/openai/serving_responses.py, read at commit
# 0c08092e: `_normalize_response_message_for_chat`, `_merge_consecutive_assistant_messages`) turns each
# input item into a chat message and renders them with the chat template, as its chat completions do:
# a reasoning item is an assistant message of `reasoning_content` (its `summary` texts joined by "\n",
# else its `content` texts, else an `encrypted_content` SGLang made itself; empty, it is dropped), and
# the assistant messages in a row (reasoning, message, calls) are one message. An item of any other
# type (`item_reference`) is a 400. An earlier revision of the file reads `summary`, else `content`, and
# never `encrypted_content`; the handler from before sglang#25881 (mid-2026) gave the items to the chat
# request as they came, which fails its schema: not modelled.
_SGLANG_BLOB = "sglang-reasoning-v1."
_SGLANG_CALLS = ("function_call", "custom_tool_call")


def _sglang_reasoning(item: dict[str, Any]) -> str:
    for key in ("summary", "content"):
        texts = [p["text"] for p in item.get(key) or [] if isinstance(p, dict) and p.get("text")]
        if texts:
            return "\n".join(texts)
    blob = item.get("encrypted_content")
    if isinstance(blob, str) and blob.startswith(_SGLANG_BLOB):
        return zlib.decompress(base64.urlsafe_b64decode(blob[len(_SGLANG_BLOB) :])).decode()
    return ""


def _sglang_message(item: dict[str, Any]) -> dict[str, Any] | None:
    kind = item.get("type", "message")
    if kind == "reasoning":
        reasoning = _sglang_reasoning(item)
        return {"role": "assistant", "reasoning_content": reasoning} if reasoning else None
    if kind in _SGLANG_CALLS:
        call = {"id": item.get("call_id"), "function": {"name": item.get("name")}}
        return {"role": "assistant", "tool_calls": [call]}
    if kind in ("function_call_output", "custom_tool_call_output"):
        return {"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")}
    if kind != "message":
        raise Refused(f"Unsupported Responses API input item type: {kind!r}")
    return {k: v for k, v in item.items() if v is not None and k not in ("id", "status", "type")}


def _sglang_messages(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for item in items:
        message = _sglang_message(item)
        if message is None:
            continue
        last = messages[-1] if messages else {}
        if message["role"] != "assistant" or last.get("role") != "assistant":
            messages.append(message)
            continue
        if message.get("content"):
            last["content"] = _sglang_joined(last.get("content"), message["content"])
        last["tool_calls"] = [*(last.get("tool_calls") or []), *(message.get("tool_calls") or [])]
        reasoning = [r for r in (last.get("reasoning_content"), message.get("reasoning_content")) if r]
        if reasoning:
            last["reasoning_content"] = "\n".join(reasoning)
    return messages


def _sglang_joined(before: Any, after: Any) -> Any:
    if not before:
        return after
    if isinstance(before, str) and isinstance(after, str):
        return before + "\n\n" + after

    def parts(content: Any) -> list[Any]:
        return list(content) if isinstance(content, list) else [{"type": "text", "text": content}]

    return parts(before) + parts(after)


def sglang_blob(text: str) -> str:
    """An ``encrypted_content`` as SGLang writes it (python/sglang/srt/entrypoints/openai/responses_adapters.py
    ``encode_reasoning_state``): no ciphertext, its prefix and the base64url of the zlib-compressed text."""
    return _SGLANG_BLOB + base64.urlsafe_b64encode(zlib.compress(text.encode())).decode()


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
