"""One chat message read (chat completions, Ollama's ``/api/chat``; its fields, each value raw): what
an assistant message carries — the reasoning in its fields, the first of its carriers that holds text
(``reasoning_details``: its text or summary entries), and its content's reasoning (``thinking``
parts, the model's tags) and answer — and what it said: its text, its tool calls' ids, names and
arguments."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from ..calls import call_spellings
from ..config import ThinkExtractConfig
from ..rawjson import UNREADABLE, Obj, as_str
from .text import split_inline

__all__ = [
    "Reading",
    "call_ids",
    "call_names",
    "calls_tools",
    "content_of",
    "read_message",
    "text_of",
    "tool_calls",
]

_decode_any = msgspec.json.Decoder().decode
_NO_VALUE = msgspec.Raw()


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


class _Call(msgspec.Struct, gc=False):
    id: Any = None


_decode_calls = msgspec.json.Decoder(list[_Call]).decode


def content_of(fields: Obj) -> msgspec.Raw:
    raw: msgspec.Raw = fields.get("content", _NO_VALUE)
    return raw


def tool_calls(fields: Obj) -> msgspec.Raw:
    raw: msgspec.Raw = fields.get("tool_calls", _NO_VALUE)
    return raw


def call_ids(message: Obj) -> list[str]:
    raw = bytes(tool_calls(message))
    if not raw or raw == b"null":
        return []
    try:
        return [c.id for c in _decode_calls(raw) if isinstance(c.id, str)]
    except UNREADABLE:
        return []


def call_names(message: Obj) -> tuple[str, ...]:
    """The names and arguments of the message's tool calls (a turn whose calls keep no ids is
    found by them)."""
    if not calls_tools(message):
        return ()
    try:
        return call_spellings(_decode_any(bytes(tool_calls(message))))
    except UNREADABLE:
        return ()


def calls_tools(message: Obj) -> bool:
    """Whether the message calls tools, whatever its calls' ids (Ollama's clients keep none)."""
    raw = bytes(tool_calls(message)).strip()
    return bool(raw) and raw not in (b"null", b"[]")


def text_of(raw: msgspec.Raw) -> str:
    """A message's text: its string content, or its text parts joined."""
    value = bytes(raw)
    if not value or value == b"null":
        return ""
    try:
        content = _decode_any(value)
    except UNREADABLE:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""
