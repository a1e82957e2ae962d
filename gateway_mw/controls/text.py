"""The soft switch some families read in the text itself (Qwen3 hybrid, Nemotron Nano v2): the latest
user or system text that ends with ``/think`` or ``/no_think`` says on or off.

The texts looked at, latest first: the content of the conversation's latest user, system or developer
message, the first message's when it is the system prompt, and the surface's own members that carry
text (:class:`~.side.SurfaceControls`). Every reader gives the same texts of a body
(:func:`conversation_texts`): the history side, which has the body's messages already, hands them in;
otherwise they are read here with the control fields, in the same pass (of each message only its role
and its content's bounds)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

import msgspec

from .fields import ControlFields, decode_masked
from .intent import Intent
from .side import SurfaceControls

__all__ = ["SPEAKERS", "conversation_texts", "message_content", "read_with_texts", "text_switch"]

SPEAKERS = ("user", "system", "developer")
"""The roles whose text may carry a switch."""

_PROMPTS = ("system", "developer")
"""The roles of a first message that is the system prompt."""


class _Said(msgspec.Struct, gc=False):
    """What is read of a message: its role (the last where it is named twice, as the servers'
    parsers read it) and its content as it came; the rest skipped."""

    role: Any = None
    content: msgspec.Raw = msgspec.Raw()


_Message = _Said | str | int | float | bool | None | list[Any]
"""A message, or anything a client writes in its place (no text of it is read)."""


class _WithMessages(ControlFields, gc=False):
    """The control fields, and the members in which a surface whose conversation is a list of
    messages carries text (which of them it reads: its :class:`~.side.SurfaceControls`)."""

    messages: list[_Message] | None = None
    system: msgspec.Raw = msgspec.Raw()
    prompt: msgspec.Raw = msgspec.Raw()


class _WithInput(ControlFields, gc=False):
    """The control fields, Responses' input (a string: one user message; or a list of items) and
    its instructions."""

    input: list[_Message] | str | None = None
    instructions: msgspec.Raw = msgspec.Raw()


class _Content(msgspec.Struct, gc=False):
    content: msgspec.Raw = msgspec.Raw()


_DECODERS: dict[str, Callable[[bytes], ControlFields]] = {
    "messages": msgspec.json.Decoder(_WithMessages).decode,
    "input": msgspec.json.Decoder(_WithInput).decode,
}
_decode_content = msgspec.json.Decoder(_Content).decode
_decode_any = msgspec.json.Decoder().decode
_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError)


def conversation_texts(latest: int, first_role: Any, content_at: Callable[[int], Any]) -> list[Any]:
    """The contents a switch may end in a conversation, latest first: its latest user, system or
    developer message's (at ``latest``; -1: none), then its first message's when that one is the
    system prompt (its role ``first_role``). ``content_at(i)`` gives message ``i``'s content."""
    texts = [] if latest < 0 else [content_at(latest)]
    if latest != 0 and first_role in _PROMPTS:
        texts.append(content_at(0))
    return texts


def message_content(message: msgspec.Raw) -> msgspec.Raw:
    """The content of a message's bytes, as it came (empty: none, or no object)."""
    try:
        return _decode_content(message).content
    except _UNREADABLE:
        return msgspec.Raw()


def read_with_texts(body: bytes, surface: SurfaceControls) -> tuple[ControlFields, list[Any]] | None:
    """The control fields of ``body`` (a request of ``surface``) and the texts a switch may end (one
    pass); ``None`` when it is no JSON object."""
    read = decode_masked(_DECODERS[surface.conversation], body)
    if read is None:
        return None
    conversation: list[_Message] | str | None = None
    if isinstance(read, _WithMessages):
        conversation = read.messages
    elif isinstance(read, _WithInput):
        conversation = read.input
    if isinstance(conversation, str):  # Responses' input as one user message
        texts: list[Any] = [conversation]
    elif conversation:
        roles = [message.role if isinstance(message, _Said) else None for message in conversation]
        latest = next((at for at in range(len(roles) - 1, -1, -1) if roles[at] in SPEAKERS), -1)
        texts = conversation_texts(latest, roles[0], lambda at: _content_of(conversation[at]))
    else:
        texts = [read.__getattribute__(member) for member in surface.texts_alone]
    texts += [read.__getattribute__(member) for member in surface.texts_around]
    return read, [text for text in texts if text]


def _content_of(message: _Message) -> msgspec.Raw:
    return message.content if isinstance(message, _Said) else msgspec.Raw()


def text_switch(texts: Iterable[Any]) -> Intent | None:
    """``off`` or ``on`` (form ``text``) when one of ``texts`` (latest first: a content or a
    member's value, raw or read) ends with a switch."""
    for text in texts:
        said = _switch_of(_plain(text))
        if said is not None:
            return Intent(said, form="text")
    return None


def _plain(value: Any) -> str:
    """The text of a content: a string, or the last text part of a list of parts."""
    if isinstance(value, msgspec.Raw):
        try:
            value = _decode_any(value)
        except _UNREADABLE:
            return ""
    if isinstance(value, str):
        return value
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
