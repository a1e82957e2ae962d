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

__all__ = ["SPEAKERS", "conversation_texts", "message_content", "read_with_texts", "role_of", "text_switch"]

SPEAKERS = ("user", "system", "developer")
"""The roles whose text may carry a switch."""

_PROMPTS = ("system", "developer")
"""The roles of a first message that is the system prompt."""


class _Said(msgspec.Struct, gc=False):
    """What is read of a message: its role (the last where it is named twice, as the servers'
    parsers read it) and its content, each as it came; the rest skipped."""

    role: msgspec.Raw = msgspec.Raw()
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


class _EachMessage(ControlFields, gc=False):
    """:class:`_WithMessages` for a body it cannot read (a number out of a double's range in a message
    that is no object, say): each message then read apart."""

    messages: list[msgspec.Raw] | None = None
    system: msgspec.Raw = msgspec.Raw()
    prompt: msgspec.Raw = msgspec.Raw()


class _AnyInput(ControlFields, gc=False):
    """:class:`_WithInput` for a body it cannot read (an input that is an object, say)."""

    input: msgspec.Raw = msgspec.Raw()
    instructions: msgspec.Raw = msgspec.Raw()


_DECODERS: dict[str, tuple[Callable[[bytes], ControlFields], Callable[[bytes], ControlFields]]] = {
    "messages": (msgspec.json.Decoder(_WithMessages).decode, msgspec.json.Decoder(_EachMessage).decode),
    "input": (msgspec.json.Decoder(_WithInput).decode, msgspec.json.Decoder(_AnyInput).decode),
}
_decode_said = msgspec.json.Decoder(_Said).decode
_decode_items = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_text = msgspec.json.Decoder(str).decode
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
    said = _said(message)
    return msgspec.Raw() if said is None else said.content


def read_with_texts(body: bytes, surface: SurfaceControls) -> tuple[ControlFields, list[Any]] | None:
    """The control fields of ``body`` (a request of ``surface``) and the texts a switch may end (one
    pass); ``None`` when it is no JSON object."""
    typed, lenient = _DECODERS[surface.conversation]
    read = decode_masked(typed, body) or decode_masked(lenient, body)
    if read is None:
        return None
    conversation = _conversation(read)
    if isinstance(conversation, str):  # Responses' input as one user message
        texts: list[Any] = [conversation]
    elif conversation:
        latest = next((at for at in range(len(conversation) - 1, -1, -1) if _role(conversation[at]) in SPEAKERS), -1)
        texts = conversation_texts(latest, _role(conversation[0]), lambda at: _content(conversation[at]))
    else:
        texts = [getattr(read, member) for member in surface.texts_alone]
    texts += [getattr(read, member) for member in surface.texts_around]
    return read, [text for text in texts if text]


def _conversation(read: ControlFields) -> list[Any] | str | None:
    """The messages (or Responses' items, or its input string) as read: each a :class:`_Said`, or
    anything else when it is no object."""
    if isinstance(read, _WithMessages):
        return read.messages
    if isinstance(read, _WithInput):
        return read.input
    if isinstance(read, _EachMessage):
        return None if read.messages is None else [_said(message) for message in read.messages]
    assert isinstance(read, _AnyInput)
    first = bytes(memoryview(read.input)[:1])
    try:
        if first == b'"':
            return _decode_text(read.input)
        return [_said(message) for message in _decode_items(read.input)] if first == b"[" else None
    except _UNREADABLE:  # a string with a lone surrogate escape, say
        return None


def role_of(message: msgspec.Raw) -> Any:
    """A message's role from its bytes (``None``: none, no object, or a value no decoder takes)."""
    return _role(_said(message))


def _said(message: msgspec.Raw) -> _Said | None:
    try:
        return _decode_said(message)
    except _UNREADABLE:  # no object
        return None


def _role(said: Any) -> Any:
    """A message's role as the history side's readings decode it (``None``: none, or unreadable)."""
    if not isinstance(said, _Said) or not said.role:
        return None
    try:
        return _decode_any(said.role)
    except _UNREADABLE:  # a number out of a double's range
        return None


def _content(said: Any) -> msgspec.Raw:
    return said.content if isinstance(said, _Said) else msgspec.Raw()


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
    """The switch ``text`` ends with: a word of its own (a path or an address that ends in
    ``/think`` is no switch), whitespace after it."""
    end = text.rstrip()
    for switch, said in _SWITCHES:
        if end.endswith(switch):
            before = end[: -len(switch)]
            return said if not before or before[-1].isspace() else None
    return None


_SWITCHES: tuple[tuple[str, Literal["off", "on"]], ...] = (("/no_think", "off"), ("/think", "on"))
