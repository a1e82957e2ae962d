"""The soft switch some families read in the text itself (Qwen3 hybrid, Nemotron Nano v2): the latest
user or system text that ends with ``/think`` or ``/no_think`` says on or off.

Most bodies hold neither word: a search of the bytes tells, and only a body that holds one is read
for its messages (which a body of several megabytes would otherwise pay on every request)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .intent import Intent

__all__ = ["text_switch"]

_SWITCHES = ((b"/no_think", "off"), (b"/think", "on"))


class _Texts(msgspec.Struct, gc=False):
    """Where each surface carries user and system text (``system`` is messages' and Ollama's
    ``/api/generate``'s, ``prompt`` the latter's, ``instructions`` and ``input`` Responses')."""

    messages: list[msgspec.Raw] | None = None
    system: msgspec.Raw = msgspec.Raw()
    prompt: msgspec.Raw = msgspec.Raw()
    instructions: msgspec.Raw = msgspec.Raw()
    input: msgspec.Raw = msgspec.Raw()


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    type: Any = None
    content: Any = None


_decode_texts = msgspec.json.Decoder(_Texts).decode
_decode_message = msgspec.json.Decoder(_Message).decode
_decode_any = msgspec.json.Decoder().decode
_decode_items = msgspec.json.Decoder(list[msgspec.Raw]).decode
_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError)
_SPEAKERS = ("user", "system", "developer")


def text_switch(body: bytes, surface: Literal["chat", "messages", "responses", "ollama"]) -> Intent | None:
    """``off`` or ``on`` (form ``text``) when the latest user or system text ends with a switch."""
    if body.find(b"/no_think") < 0 and body.find(b"/think") < 0:
        return None
    try:
        texts = _decode_texts(body)
        for text in _latest_first(texts):
            said = _switch_of(text)
            if said is not None:
                return Intent(said, form="text")
    except _UNREADABLE:
        return None
    return None


def _latest_first(texts: _Texts) -> list[str]:
    """The user and system texts of a body, the latest first (only as far as they are asked for:
    a generator would hold the decoder's errors past the ``try``; a list of a few texts is cheap)."""
    found: list[str] = []
    messages = texts.messages
    first = bytes(memoryview(texts.input)[:1])
    if messages is None and first == b'"':
        found.append(_plain(_decode_any(texts.input)))  # Responses' input as one user message
    elif messages is None and first == b"[":
        messages = _decode_items(texts.input)
    if texts.prompt:
        found.append(_plain(_decode_any(texts.prompt)))
    for raw in reversed(messages or ()):
        message = _decode_message(raw)
        if message.role in _SPEAKERS and message.type in (None, "message"):
            text = _plain(message.content)
            if _switch_of(text) is not None:
                found.append(text)
                break
    found.extend(_plain(_decode_any(raw)) for raw in (texts.system, texts.instructions) if raw)
    return found


def _plain(content: Any) -> str:
    """The text of a content: a string, or the last text part of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for part in reversed(content):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                return str(part["text"])
    return ""


def _switch_of(text: str) -> Literal["off", "on"] | None:
    end = text.rstrip().encode()
    for word, said in _SWITCHES:
        if end.endswith(word):
            return "off" if said == "off" else "on"
    return None
