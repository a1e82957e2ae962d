"""The soft switch some families read in the text itself (Qwen3 hybrid, Nemotron Nano v2): the latest
user or system text that ends with ``/think`` or ``/no_think`` says on or off.

The texts looked at are the latest user message's and the system prompt's (latest first). A reader
that has the body's messages already (the history side) hands them in; otherwise they are read here
with the control fields, in the same pass, and each message's role from its first bytes where it
is spelled first (as nearly every client does), so that a long history is not read again."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from .fields import ControlFields, decode_masked
from .intent import Intent

__all__ = ["SPEAKERS", "read_with_texts", "text_switch"]

SPEAKERS = ("user", "system", "developer")
"""The roles whose text may carry a switch."""


class _WithTexts(ControlFields, gc=False):
    """The control fields, and where each surface carries user and system text (``system``:
    messages' and Ollama's ``/api/generate``'s; ``prompt``: the latter's; ``instructions`` and
    ``input``: Responses')."""

    messages: list[msgspec.Raw] | None = None
    system: msgspec.Raw = msgspec.Raw()
    prompt: msgspec.Raw = msgspec.Raw()
    instructions: msgspec.Raw = msgspec.Raw()
    input: msgspec.Raw = msgspec.Raw()


class _Role(msgspec.Struct, gc=False):
    role: Any = None


_decode_with_texts = msgspec.json.Decoder(_WithTexts).decode
_decode_role = msgspec.json.Decoder(_Role).decode
_decode_items = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_any = msgspec.json.Decoder().decode
_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError)
_ROLE_FIRST = (b'{"role":"', b'{"role": "')


def read_with_texts(body: bytes) -> tuple[ControlFields, list[Any]] | None:
    """The control fields of ``body`` and the texts a switch may end (one pass); ``None`` when it
    is no JSON object."""
    read = decode_masked(_decode_with_texts, body)
    if read is None:
        return None
    texts: list[Any] = []
    if read.prompt:
        texts.append(read.prompt)
    messages = read.messages
    first = bytes(memoryview(read.input)[:1])
    if messages is None and first == b'"':
        texts.append(read.input)  # Responses' input as one user message
    elif messages is None and first == b"[":
        messages = decode_masked(_decode_items, bytes(read.input))
    latest = next((raw for raw in reversed(messages or ()) if _role_of(raw) in SPEAKERS), None)
    if latest is not None:
        texts.append(latest)
    if messages and messages[0] is not latest and _role_of(messages[0]) in ("system", "developer"):
        texts.append(messages[0])  # the system prompt of chat
    texts.extend(raw for raw in (read.system, read.instructions) if raw)
    return read, texts


def _role_of(raw: msgspec.Raw) -> Any:
    head = bytes(memoryview(raw)[:32])
    for prefix in _ROLE_FIRST:
        if head.startswith(prefix):
            end = head.find(b'"', len(prefix))
            if end > 0 and head.find(b"\\", len(prefix), end) < 0:
                return head[len(prefix) : end].decode()
    try:
        return _decode_role(raw).role
    except _UNREADABLE:
        return None


def text_switch(texts: Iterable[Any]) -> Intent | None:
    """``off`` or ``on`` (form ``text``) when one of ``texts`` (latest first: a message, its content
    or a prompt, raw or read) ends with a switch."""
    for text in texts:
        said = _switch_of(_plain(text))
        if said is not None:
            return Intent(said, form="text")
    return None


def _plain(value: Any, within: bool = False) -> str:
    """The text of a message or a content: a string, or the last text part of a list of parts."""
    if isinstance(value, msgspec.Raw):
        try:
            value = _decode_any(value)
        except _UNREADABLE:
            return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and not within:
        return _plain(value.get("content"), True)
    if isinstance(value, list):
        for part in reversed(value):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                return str(part["text"])
    return ""


def _switch_of(text: str) -> Literal["off", "on"] | None:
    end = text.rstrip()
    if end.endswith("/no_think"):
        return "off"
    if end.endswith("/think"):
        return "on"
    return None
