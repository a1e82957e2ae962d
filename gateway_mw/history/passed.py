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

from typing import Any, NamedTuple

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


Message = dict[str, msgspec.Raw]


def _latest(messages: list[Message], stop: int) -> int:
    """The index of the latest user, system or developer message before ``stop`` (-1: none)."""
    return next((at for at in range(stop - 1, -1, -1) if _role(messages[at]) in SPEAKERS), -1)


def _content(message: Message) -> msgspec.Raw:
    return message.get("content", _EMPTY)


class _End(NamedTuple):
    """Where a reading's first ``number`` messages end, and what the texts need of them."""

    number: int
    stop: int | None
    """Where message ``number - 1`` ends in the body (``None``: not proven)."""
    latest: int
    """The index of the latest user, system or developer message among them (-1: none)."""
    content: msgspec.Raw
    """That message's content (empty: none)."""


def _end(messages: list[Message], upto: int, before: _End, stop: int | None) -> _End:
    """The end after the first ``upto`` of ``messages`` (the last of them ending at ``stop``), which
    follow the messages ``before`` ends (their latest looked for among them first)."""
    at = _latest(messages, upto)
    latest = (before.latest, before.content) if at < 0 else (before.number + at, _content(messages[at]))
    return _End(before.number + upto, stop, *latest)


def _ends(messages: list[Message], before: _End, body: bytes, last: tuple[int, int] | None) -> tuple[_End, ...]:
    """The ends after ``messages`` (at least one; the last of them at ``last`` in ``body``), which
    follow the messages ``before`` ends: after all of them, and after all but the last (``before``
    itself when they are one)."""
    after = _end(messages, len(messages), before, None if last is None else last[1])
    if len(messages) == 1:
        return (after, before) if before.number else (after,)
    stop = None if last is None else _ended_before(body, last[0])
    if after.latest < after.number - 1:  # the latest is not the last: the same one for all but the last
        return after, after._replace(number=after.number - 1, stop=stop)
    return after, _end(messages, len(messages) - 1, before, stop)


def _ended_before(body: bytes, start: int) -> int | None:
    """Where the message before the one that starts at ``start`` ends: at the ``}`` before the comma
    between them (``None``: no such bytes there)."""
    comma = splice.before(body, start)
    if comma < 0 or body[comma] != 0x2C:  # ','
        return None
    brace = splice.before(body, comma)
    return brace + 1 if brace >= 0 and body[brace] == 0x7D else None  # '}'


_NONE = _End(0, None, -1, _EMPTY)


class Passed:
    """What a body's reading keeps for the scope's next request: where its conversation's first
    message stands in it, where its messages end (all of them, and all but the last: Claude Code
    moves its cache marker from the last to the new last), what the texts need of them (the latest
    user, system or developer message's content, the first message's role and content). No message's
    members are kept: a reading holds its body and the earlier bodies it goes on from, whatever the
    messages are."""

    __slots__ = ("body", "ends", "first", "first_said", "last", "places", "surface")

    def __init__(
        self,
        surface: SurfaceControls,
        places: splice.Places,
        first: tuple[int, int] | None,
        first_said: tuple[Any, msgspec.Raw],
        ends: tuple[_End, ...],
        last: tuple[int, int] | None,
    ) -> None:
        self.surface = surface
        self.places = places
        self.body = places.body
        self.first = first
        self.first_said = first_said
        """The first message's role (kept short) and content."""
        self.ends = ends
        """Where all its messages end, then (when known) all but the last."""
        self.last = last
        """Where its last message stands (``None``: not proven)."""

    @property
    def kept(self) -> bool:
        """Whether a later body may go on from it (its first message, and where one of its ends is, proven)."""
        return self.first is not None and any(end.stop is not None for end in self.ends)

    def texts(self, fields: ControlFields) -> list[Any]:
        """The texts a switch may end, latest first, as :func:`~..controls.text.read_with_texts`
        gives them (``fields``: the body's, read with the reading)."""
        first_role, first_content = self.first_said
        end = self.ends[0]
        contents = {end.latest: end.content, 0: first_content}  # (the same content where the latest is the first)
        texts = conversation_texts(end.latest, first_role, contents.__getitem__)
        texts += [getattr(fields, member) for member in self.surface.texts_around]
        return [text for text in texts if text]

    def size(self) -> int:
        """The bytes it holds as it is counted: its body and the earlier bodies its values view."""
        return len(self.body) + self.places.retained + REQUEST_BYTES

    def holds(self, body: bytes) -> int:
        """How many of this one's messages ``body`` holds byte for byte from its start, as far as one
        of its ends tells (all of them, or all but the last; 0: neither)."""
        for end in self.ends:
            if end.stop is not None and body.startswith(memoryview(self.body)[: end.stop]):
                return end.number
        return 0

    def continued_by(self, body: bytes, most: int | None, shorter: bool) -> tuple[Passed, ControlFields] | None:
        """The reading of ``body`` and its fields, when it holds this one's messages byte for byte
        from its start (``shorter``: all but the last, the last one changed): only the bytes before
        and after them decoded; ``None`` when it does not, or those bytes are over ``most``."""
        if shorter:
            if len(self.ends) < 2 or self._holds_last(body):  # (then it went on from all, or cannot)
                return None
            shared = self.ends[1]
        else:
            shared = self.ends[0]
        key = self.surface.conversation
        whole, _, decode_part = _READERS[key]
        through = None if shared.stop is None else (shared.stop, shared.stop)  # (parts reads where it ends)
        decoded = tail.decoded(body, self.places, self.first, through, key, most, decode_part)
        if decoded is None:
            return None
        found, head, after = decoded
        added = getattr(after, key)
        if not isinstance(added, list) or not added or list(added[0]) != [tail.MARKER_KEY]:  # named again
            return None
        added = added[1:]
        fields = whole(*tail.fields(head, after))
        setattr(fields, key, added)  # (only the new messages: no reader of the fields looks at them)
        if added:
            last = found.places.of_object(added[-1])
            ends = _ends(added, shared, body, last)
        else:  # the same messages (or all but the last): the ends it shares
            last, ends = (None, (shared,)) if shorter else (self.last, self.ends)
        return Passed(self.surface, found.places, self.first, self.first_said, ends, last), fields

    def _holds_last(self, body: bytes) -> bool:
        """Whether ``body`` holds this one's last message where it stands here (one comparison of that
        message's bytes): a body that does, and did not go on from all of them, differs before it, or
        has too many bytes to read on, and goes on from fewer neither (but for the bytes between the
        last two messages spaced otherwise in as many bytes: then it is read whole)."""
        last = self.last
        return last is not None and body.startswith(memoryview(self.body)[last[0] : last[1]], last[0])


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
        if isinstance(conversation, str):  # Responses' input as one user message
            texts: list[Any] = [conversation]
        else:
            texts = [getattr(fields, member) for member in surface.texts_alone]
        texts += [getattr(fields, member) for member in surface.texts_around]
        return None, fields, [text for text in texts if text]
    places = splice.Places(body)
    first_said = (kept_role(_role(conversation[0])), _content(conversation[0]))
    last = places.of_object(conversation[-1])
    ends = _ends(conversation, _NONE, body, last)
    reading = Passed(surface, places, places.of_object(conversation[0]), first_said, ends, last)
    return reading, fields, reading.texts(fields)


def read_on(
    body: bytes, surface: SurfaceControls, carry: tuple[CarriedStates, bytes], most: int | None = None
) -> tuple[ControlFields, list[Any]] | None:
    """The control fields and the texts of ``body`` (a request of ``surface``), as
    :func:`~..controls.text.read_with_texts` gives them, read on from the scope's kept reading it
    continues (which its own reading replaces); ``None``: it continues none (``most``: none that leaves
    at most about this many bytes of it to read)."""
    states, scope = carry
    mine = [kept for kept in reversed(states.readings.of(scope)) if kept[0] is surface]
    for shorter in (False, True):  # the reading it goes on from with all its messages first, latest first
        for kept in mine:
            read = kept[1].continued_by(body, most, shorter)
            if read is not None:
                reading, fields = read
                if reading.kept:  # (one whose ends cannot be placed: the earlier one stays)
                    states.readings.put(scope, (surface, reading), reading.size(), kept)
                return fields, reading.texts(fields)
    return None


def read_whole(
    body: bytes, surface: SurfaceControls, carry: tuple[CarriedStates, bytes]
) -> tuple[ControlFields, list[Any]] | None:
    """The same, ``body`` read whole, and its reading kept for the scope's next request: in place of
    the kept reading whose messages it holds (all, or all but the last) when it could not go on from
    it (the chain of bodies it would view too long, or too many bytes of its own to read on the loop)."""
    read = _fresh(body, surface)
    if read is None:
        return read_with_texts(body, surface)
    reading, fields, texts = read
    if reading is not None and reading.kept:
        states, scope = carry
        mine = [(kept[1].holds(body), kept) for kept in reversed(states.readings.of(scope)) if kept[0] is surface]
        held, replaced = max(mine, key=lambda one: one[0], default=(0, None))  # (the latest of those that hold most)
        states.readings.put(scope, (surface, reading), reading.size(), replaced if held else None)
    return fields, texts
