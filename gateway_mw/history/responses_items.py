"""The items of an OpenAI Responses input as a reading reads them: each one's head (its type and
role), the assistant side's whole, which the transform may change; a client's item, unread past its
head, goes on as its bytes."""

from __future__ import annotations

from typing import Any

import msgspec

from ..controls.text import role_of

__all__ = ["ASSISTANT_SIDE", "Unread", "kind_of", "read_item", "written"]

_decode_any = msgspec.json.Decoder().decode
ASSISTANT_SIDE = frozenset({"reasoning", "function_call", "custom_tool_call", "item_reference"})
"""The kinds of the items the assistant side writes (with a ``message`` whose role is ``assistant``)."""


class _Head(msgspec.Struct, gc=False):
    """What is read of every item to place the assistant side's (the rest of it skipped)."""

    type: Any = msgspec.UNSET
    role: Any = msgspec.UNSET


_decode_head = msgspec.json.Decoder(_Head).decode


class Unread(dict[str, Any]):
    """An item of the client's side (a message, a tool's output), read only as far as its type and
    role: it goes on as its bytes, ``raw``, and is read whole only for the conversation's digest."""

    __slots__ = ("raw",)
    raw: msgspec.Raw

    def again(self, raw: msgspec.Raw) -> Unread:
        """The same head over ``raw`` (the same item's bytes in a later body)."""
        unread = Unread(self)
        unread.raw = raw
        return unread


def read_item(raw: msgspec.Raw) -> Any:
    """An item read whole when the transform may change it (the assistant side's), else unread."""
    try:
        head = _decode_head(raw)
    except msgspec.ValidationError:  # no object: read whole (it is no item of a turn)
        return _whole(raw)
    kind, role = head.type, head.role
    if kind is msgspec.UNSET and role is not msgspec.UNSET:
        kind = "message"
    if isinstance(kind, str) and (kind in ASSISTANT_SIDE or (kind == "message" and role == "assistant")):
        try:
            return _decode_any(raw)
        except msgspec.ValidationError:
            return _whole(raw)
    unread = Unread()
    if head.type is not msgspec.UNSET:
        unread["type"] = head.type
    if role is not msgspec.UNSET:
        unread["role"] = role
    unread.raw = raw
    return unread


def _whole(raw: msgspec.Raw) -> Any:
    """An item read whole; where no decoder takes it (a number out of a double's range), an unread
    item that goes on as it came: of no kind, but a client's message (its role kept)."""
    try:
        return _decode_any(raw)
    except msgspec.ValidationError:
        unread = Unread()
        role = role_of(raw)
        if role is not None and role != "assistant":
            unread["role"] = role
        unread.raw = raw
        return unread


def written(item: Any) -> Any:
    """What an item of the transform's output is written as: an unread one, its bytes."""
    return item.raw if isinstance(item, Unread) else item


def kind_of(item: Any) -> str:
    """An item's type (a role message's: ``message``; ``""``: none)."""
    if not isinstance(item, dict):
        return ""
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"
    return kind if isinstance(kind, str) else ""
