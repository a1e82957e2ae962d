"""What a non-stream response body said, for the reasoning record: read from the upstream's body once
the response is over (a stream's translators keep it as it goes by instead)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..calls import call_spellings
from ..config import Surface
from .base import Said

__all__ = ["said_of_body"]

_decode = msgspec.json.Decoder().decode


def _text(content: Any, kind: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == kind and isinstance(p.get("text"), str)
        )
    return ""


def _ids(values: Any, key: str) -> tuple[str, ...]:
    return (
        tuple(v[key] for v in values if isinstance(v, dict) and isinstance(v.get(key), str))
        if isinstance(values, list)
        else ()
    )


def said_of_body(surface: Surface, body: bytes, item_ids: tuple[str, ...] = ()) -> list[Said]:
    """Each answer of the upstream's ``body``: its text as the model wrote it and its tool calls
    (``item_ids``: the ids the gateway gave the items of a Responses answer)."""
    try:
        doc = _decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return []
    if not isinstance(doc, dict):
        return []
    if surface == "chat":
        out = []
        for choice in doc.get("choices") or []:
            message = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(message, dict):
                calls = message.get("tool_calls")
                out.append(Said(_text(message.get("content"), "text"), _ids(calls, "id"), (), call_spellings(calls)))
        return out
    if surface == "ollama":  # /api/chat's message, or /api/generate's response (no history to key it)
        message = doc.get("message")
        if isinstance(message, dict):
            calls = message.get("tool_calls")
            return [Said(_text(message.get("content"), "text"), _ids(calls, "id"), (), call_spellings(calls))]
        return [Said(_text(doc.get("response"), "text"))]
    if surface == "messages":
        content = doc.get("content")
        calls = tuple(
            c["id"]
            for c in content or []
            if isinstance(c, dict) and c.get("type") == "tool_use" and isinstance(c.get("id"), str)
        )
        return [Said(_text(content, "text"), calls)]
    output = [i for i in doc.get("output") or [] if isinstance(i, dict)]
    text = "".join(_text(i.get("content"), "output_text") for i in output if i.get("type") == "message")
    calls = tuple(
        i["call_id"] for i in output if i.get("type") == "function_call" and isinstance(i.get("call_id"), str)
    )
    messages = tuple(i["id"] for i in output if i.get("type") == "message" and isinstance(i.get("id"), str))
    return [Said(text, calls, (*item_ids, *(m for m in messages if m not in item_ids)))]
