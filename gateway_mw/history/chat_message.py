"""What one chat assistant message carries (chat completions, Ollama's ``/api/chat``): the reasoning
in its fields, the first of its carriers that holds text (``reasoning_details``: its text or summary
entries), and its content's reasoning (``thinking`` parts, the model's tags) and answer."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from ..config import ThinkExtractConfig
from ..rawjson import UNREADABLE, Obj, as_str
from .text import split_inline

__all__ = ["Reading", "read_message"]

_decode_any = msgspec.json.Decoder().decode


def _reasoning_of(msg: Obj, carriers: tuple[str, ...]) -> str:
    """The reasoning the message carries in its fields: the first that holds text."""
    for key in carriers:
        text = as_str(msg.get(key)) if key != "reasoning_details" else None
        if text:
            return text
    details = msg.get("reasoning_details") if "reasoning_details" in carriers else None
    if details is not None:
        try:
            entries = _decode_any(bytes(details))
        except UNREADABLE:
            entries = None
        if isinstance(entries, list):
            texts = [e["text"] for e in entries if isinstance(e, dict) and isinstance(e.get("text"), str)]
            if not texts:
                texts = [e["summary"] for e in entries if isinstance(e, dict) and isinstance(e.get("summary"), str)]
            return "\n".join(str(t) for t in texts if t)
    return ""


class Reading(NamedTuple):
    """What one assistant message carries: the reasoning in its fields, its content (decoded), and
    the content's reasoning (thinking parts, the model's tags) and answer (no raw value: a reading
    is carried to later requests, which must not keep this one's body)."""

    fields: str
    content: Any
    thinking: str
    tagged: str
    answer: Any
    parted: bool

    @property
    def reasoning(self) -> str:
        return self.fields or self.thinking or self.tagged


def read_message(msg: Obj, config: ThinkExtractConfig, carriers: tuple[str, ...]) -> Reading | None:
    """What the assistant message ``msg`` (its fields, raw) carries (``None``: its content is no JSON)."""
    fields = _reasoning_of(msg, carriers)
    content_raw = msg.get("content")
    content: Any = None
    if content_raw is not None:
        try:
            content = _decode_any(bytes(content_raw))
        except UNREADABLE:
            return None
    # The content without the reasoning it carries: thinking parts and the model's tags.
    thinking, tagged, answer, parted = "", "", content, False
    if isinstance(content, str):
        tagged, answer = split_inline(content, config)
    elif isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "thinking":
                parted = True
                text = part.get("thinking")
                thinking = thinking or (text if isinstance(text, str) else "")
                continue
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                found_here, text = split_inline(part["text"], config)
                tagged = tagged or found_here
                part = {**part, "text": text}
            parts.append(part)
        answer = parts
    return Reading(fields, content, thinking, tagged, answer, parted)
