"""The reasoning controls' read of a body whose history goes on as it came (``history_reasoning
= "pass"``), carried to its scope's next request.

Such a body is read for its control fields and the texts a switch may end
(:func:`~..controls.text.read_with_texts`), which skips every byte of its history: about as much
work as forwarding it. An agent's next request is its previous one and a turn more, so a reading is
kept by scope, and a later body that holds its messages byte for byte from its start is read only
before and after them (:mod:`.tail`), as the history side reads it:

```text
kept:   {"model": "m", "messages": [m0 … m40], "stream": true}   latest user message: m0
next:   {"model": "m", "messages": [m0 … m40, m41, m42], "stream": true}
read:   {"model": "m", "messages": null}  and  {"messages":[MARKER, m41, m42], "stream": true}
```

The new messages are looked at for a later user, system or developer message; where there is none,
the kept reading's latest stands. A body this reading cannot read (a message that is no object, a
lone surrogate escape) is read by the reference, and not kept.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..controls.fields import ControlFields
from ..controls.side import SurfaceControls
from ..controls.text import SPEAKERS, conversation_texts, read_with_texts
from ..rawjson import UNREADABLE
from . import splice, tail
from .carry import CARRIED_BYTES, REQUEST_BYTES, CarriedStates

__all__ = ["MESSAGE_BYTES", "Passed", "read_passed"]

MESSAGE_BYTES = 640
"""What one message of a kept reading holds besides its bytes, as it is counted: its object of raw
members (a dict and a raw value a member; measured at 250–450 bytes on Python 3.11, more than they
take on 3.12)."""

_EMPTY = msgspec.Raw()
_decode_any = msgspec.json.Decoder().decode


class _Messages(ControlFields, gc=False):
    """The control fields, each message's members as they came, and the surface's text members."""

    messages: list[dict[str, msgspec.Raw]] | None = None
    system: msgspec.Raw = msgspec.Raw()
    prompt: msgspec.Raw = msgspec.Raw()


class _MessagesPart(_Messages, gc=False):
    """What is read before or after the shared messages (the model unset where it is not named, so
    that the later one named wins)."""

    model: Any = msgspec.UNSET


class _Input(ControlFields, gc=False):
    """The control fields, Responses' input (its items' members as they came, or one string) and its
    instructions."""

    input: list[dict[str, msgspec.Raw]] | str | None = None
    instructions: msgspec.Raw = msgspec.Raw()


class _InputPart(_Input, gc=False):
    model: Any = msgspec.UNSET


_READERS: dict[str, tuple[type[ControlFields], Any, Any]] = {
    "messages": (_Messages, msgspec.json.Decoder(_Messages).decode, msgspec.json.Decoder(_MessagesPart).decode),
    "input": (_Input, msgspec.json.Decoder(_Input).decode, msgspec.json.Decoder(_InputPart).decode),
}


def _role(message: dict[str, msgspec.Raw]) -> Any:
    """A message's role as the reference reads it (``None``: none, or a value no decoder takes)."""
    role = message.get("role")
    if not role:
        return None
    try:
        return _decode_any(role)
    except UNREADABLE:  # a number out of a double's range
        return None


def _latest(messages: list[dict[str, msgspec.Raw]], start: int) -> int:
    """The index of the latest user, system or developer message from ``start`` on (-1: none)."""
    return next((at for at in range(len(messages) - 1, start - 1, -1) if _role(messages[at]) in SPEAKERS), -1)


class Passed:
    """One body's control fields and its conversation as read (each message's members raw), kept for
    the scope's next request."""

    __slots__ = ("body", "fields", "latest", "places", "surface")

    def __init__(self, surface: SurfaceControls, body: bytes, fields: ControlFields, latest: int) -> None:
        self.surface = surface
        self.body = body
        self.fields = fields
        self.latest = latest
        """The index of its latest user, system or developer message (-1: none)."""
        self.places = splice.Places(body)

    @property
    def conversation(self) -> Any:
        conversation: Any = getattr(self.fields, self.surface.conversation)
        return conversation

    def texts(self) -> list[Any]:
        """The texts a switch may end, latest first, as :func:`~..controls.text.read_with_texts` gives them."""
        conversation, fields, surface = self.conversation, self.fields, self.surface
        if isinstance(conversation, str):  # Responses' input as one user message
            texts: list[Any] = [conversation]
        elif conversation:
            texts = conversation_texts(
                self.latest, _role(conversation[0]), lambda at: conversation[at].get("content", _EMPTY)
            )
        else:
            texts = [getattr(fields, member) for member in surface.texts_alone]
        texts += [getattr(fields, member) for member in surface.texts_around]
        return [text for text in texts if text]

    def continued_by(self, body: bytes, most: int | None) -> Passed | None:
        """The reading of ``body`` when it holds this one's messages byte for byte from its start:
        only the bytes before and after them decoded; ``None`` when it does not, or those bytes are
        over ``most``."""
        conversation, key = self.conversation, self.surface.conversation
        if not isinstance(conversation, list) or not conversation:
            return None
        places, count = self.places, len(conversation)
        first = places.element_object(0, conversation[0])
        last = places.element_object(count - 1, conversation[-1])
        whole, _, decode_part = _READERS[key]
        decoded = tail.decoded(body, places, first, last, key, most, decode_part)
        if decoded is None:
            return None
        found, head, after = decoded
        added = getattr(after, key)
        if not isinstance(added, list) or not added or list(added[0]) != [tail.MARKER_KEY]:  # named again
            return None
        fields = whole(*tail.fields(head, after))
        messages = conversation + added[1:]
        setattr(fields, key, messages)
        latest = _latest(messages, count)
        reading = Passed(self.surface, body, fields, self.latest if latest < 0 else latest)
        reading.places = found.places
        reading.places.known.update(places.known)
        return reading

    def size(self) -> int:
        """The bytes it holds as it is counted: its body, the earlier bodies its messages view, and
        each message's members."""
        conversation = self.conversation
        count = len(conversation) if isinstance(conversation, list) else 0
        return len(self.body) + self.places.retained + REQUEST_BYTES + MESSAGE_BYTES * count


def _fresh(body: bytes, surface: SurfaceControls) -> Passed | None:
    """``body`` read whole in a form that can be kept (``None``: one it does not take)."""
    _, decode, _ = _READERS[surface.conversation]
    try:
        fields = decode(body)
    except UNREADABLE:
        return None
    conversation = getattr(fields, surface.conversation)
    latest = _latest(conversation, 0) if isinstance(conversation, list) else -1
    return Passed(surface, body, fields, latest)


def read_passed(
    body: bytes, surface: SurfaceControls, carry: tuple[CarriedStates, bytes] | None, most: int | None = None
) -> tuple[ControlFields, list[Any]] | None:
    """The control fields and the texts of ``body`` (a request of ``surface``), as
    :func:`~..controls.text.read_with_texts` gives them: with ``carry``, read on from the scope's
    kept reading it continues and kept in its place (a body of :data:`~.carry.CARRIED_BYTES` or
    more). ``most``: read only when it continues one, leaving at most about this many bytes of its
    own to read (``None`` returned otherwise, as for a body that is no JSON object)."""
    if carry is None or len(body) < CARRIED_BYTES:
        return None if most is not None else read_with_texts(body, surface)
    states, scope = carry
    reading, replaced = None, None
    for kept in reversed(states.readings.of(scope)):
        side, earlier = kept
        if side is surface:
            reading = earlier.continued_by(body, most)
            if reading is not None:
                replaced = kept
                break
    if reading is None and most is not None:
        return None
    if reading is None:
        reading = _fresh(body, surface)
    if reading is None:
        return read_with_texts(body, surface)
    conversation = reading.conversation
    if isinstance(conversation, list) and conversation:  # one that a later body may continue
        states.readings.put(scope, (surface, reading), reading.size(), replaced)
    return reading.fields, reading.texts()
