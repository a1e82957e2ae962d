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
from .carry import REQUEST_BYTES, CarriedStates, kept_role

__all__ = ["Passed", "read_on", "read_whole"]

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


def _said_of(message: dict[str, msgspec.Raw] | None) -> tuple[Any, msgspec.Raw]:
    """A message's role as a kept reading keeps it (short) and its content (as it came)."""
    return (None, _EMPTY) if message is None else (kept_role(_role(message)), message.get("content", _EMPTY))


class Passed:
    """What a body's reading keeps for the scope's next request: where its conversation's first and
    last messages stand in it, how many there are, and what the texts need of them (its latest user,
    system or developer message's content, its first message's role and content). No message's
    members are kept: a reading holds its body and the earlier bodies it goes on from, whatever the
    messages are."""

    __slots__ = ("body", "count", "first", "first_said", "last", "latest", "latest_content", "places", "surface")

    def __init__(
        self,
        surface: SurfaceControls,
        places: splice.Places,
        count: int,
        spans: tuple[tuple[int, int] | None, tuple[int, int] | None],
        latest: tuple[int, msgspec.Raw],
        first_said: tuple[Any, msgspec.Raw],
    ) -> None:
        self.surface = surface
        self.places = places
        self.body = places.body
        self.count = count
        self.first, self.last = spans
        self.latest, self.latest_content = latest
        """The index of its latest user, system or developer message (-1: none), and that one's content."""
        self.first_said = first_said

    def texts(self, fields: ControlFields) -> list[Any]:
        """The texts a switch may end, latest first, as :func:`~..controls.text.read_with_texts`
        gives them (``fields``: the body's, read with the reading)."""
        first_role, first_content = self.first_said
        contents = {self.latest: self.latest_content, 0: first_content}
        texts = conversation_texts(self.latest, first_role, contents.__getitem__)
        texts += [getattr(fields, member) for member in self.surface.texts_around]
        return [text for text in texts if text]

    def size(self) -> int:
        """The bytes it holds as it is counted: its body and the earlier bodies its values view."""
        return len(self.body) + self.places.retained + REQUEST_BYTES

    def continued_by(self, body: bytes, most: int | None) -> tuple[Passed, ControlFields] | None:
        """The reading of ``body`` and its fields, when it holds this one's messages byte for byte
        from its start: only the bytes before and after them decoded; ``None`` when it does not, or
        those bytes are over ``most``."""
        key = self.surface.conversation
        whole, _, decode_part = _READERS[key]
        decoded = tail.decoded(body, self.places, self.first, self.last, key, most, decode_part)
        if decoded is None:
            return None
        found, head, after = decoded
        added = getattr(after, key)
        if not isinstance(added, list) or not added or list(added[0]) != [tail.MARKER_KEY]:  # named again
            return None
        added = added[1:]
        fields = whole(*tail.fields(head, after))
        setattr(fields, key, added)  # (only the new messages: no reader of the fields looks at them)
        at = _latest(added, 0)
        latest = (self.latest, self.latest_content) if at < 0 else (self.count + at, _said_of(added[at])[1])
        last = found.places.of_object(added[-1]) if added else self.last
        count = self.count + len(added)
        return Passed(self.surface, found.places, count, (self.first, last), latest, self.first_said), fields


def _fresh(body: bytes, surface: SurfaceControls) -> tuple[Passed | None, ControlFields, list[Any]] | None:
    """``body`` read whole: its reading to keep (``None``: its conversation is no list of messages),
    its fields and its texts; ``None`` when it is not what this reading takes."""
    _, decode, _ = _READERS[surface.conversation]
    try:
        fields = decode(body)
    except UNREADABLE:
        return None
    conversation = getattr(fields, surface.conversation)
    if not isinstance(conversation, list) or not conversation:
        texts: list[Any] = [conversation] if isinstance(conversation, str) else []  # Responses' input string
        if not isinstance(conversation, str):
            texts = [getattr(fields, member) for member in surface.texts_alone]
        texts += [getattr(fields, member) for member in surface.texts_around]
        return None, fields, [text for text in texts if text]
    places = splice.Places(body)
    at = _latest(conversation, 0)
    latest = (at, _said_of(conversation[at] if at >= 0 else None)[1])
    spans = (places.of_object(conversation[0]), places.of_object(conversation[-1]))
    reading = Passed(surface, places, len(conversation), spans, latest, _said_of(conversation[0]))
    return reading, fields, reading.texts(fields)


def read_on(
    body: bytes, surface: SurfaceControls, carry: tuple[CarriedStates, bytes], most: int | None = None
) -> tuple[ControlFields, list[Any]] | None:
    """The control fields and the texts of ``body`` (a request of ``surface``), as
    :func:`~..controls.text.read_with_texts` gives them, read on from the scope's kept reading it
    continues (which its own reading replaces); ``None``: it continues none (``most``: none that leaves
    at most about this many bytes of it to read)."""
    states, scope = carry
    for kept in reversed(states.readings.of(scope)):
        side, earlier = kept
        if side is surface:
            read = earlier.continued_by(body, most)
            if read is not None:
                reading, fields = read
                if reading.last is not None:  # (one whose last message cannot be placed: the kept one stays)
                    states.readings.put(scope, (surface, reading), reading.size(), kept)
                return fields, reading.texts(fields)
    return None


def read_whole(
    body: bytes, surface: SurfaceControls, carry: tuple[CarriedStates, bytes]
) -> tuple[ControlFields, list[Any]] | None:
    """The same, ``body`` read whole, and its reading kept for the scope's next request."""
    read = _fresh(body, surface)
    if read is None:
        return read_with_texts(body, surface)
    reading, fields, texts = read
    if reading is not None and reading.first is not None and reading.last is not None:  # one to go on from
        states, scope = carry
        states.readings.put(scope, (surface, reading), reading.size())
    return fields, texts
