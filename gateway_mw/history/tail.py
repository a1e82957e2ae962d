"""A body that holds an earlier body's first history elements byte for byte (an agent's next
request), read only where it differs: the bytes before its list, and those after the shared
elements, each made a small document of its own for the surface's decoder.

```text
earlier:  {"model": "m", "messages": [m0, m1, … m40], "tools": [...]}
next:     {"model": "m", "messages": [m0, m1, … m40, m41, m42], "tools": [...]}
head:     {"model": "m", "messages": null}
tail:     {"messages":[MARKER, m41, m42], "tools": [...]}   (after the bytes equal up to m40's end)
```

The head is the same in each of a conversation's requests after its first (each holds the one
before it from its start): the second request decodes it, and every later one takes that decode,
and the buffer it views, from the reading it goes on from (:attr:`~.splice.Places.head_read`).

The tail is read after :data:`MARKER`, a message of one member no client can name (random in each
process): a body that names its list again after the shared elements has another first element, and
is read whole. The elements taken from the earlier reading are views into the buffers they were
first read from; the new reading's :class:`~.splice.Places` knows where each of those buffers stands
in the new body (its segments), so that a changed element is still written in place.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import msgspec

from ..rawjson import UNREADABLE
from .carry import UNBOUNDED, decoded_bytes
from .splice import Places, before

_T = TypeVar("_T", bound=msgspec.Struct)

__all__ = ["MARKER", "MARKER_KEY", "Parts", "decoded", "fields", "parts"]

MARKER_KEY = os.urandom(12).hex()
MARKER = b'{"' + MARKER_KEY.encode() + b'":0}'

PART_BYTES = 1 << 20
"""A longer part is not read on its own: the body is read whole (in two passes where a surface does),
so that no one decoder call holds Python's lock for long."""


class Parts(NamedTuple):
    """The documents to decode of a continuing body, and where its values will stand."""

    head: bytes
    """The members before the list, the list itself ``null``."""
    tail: bytes
    """The list, :data:`MARKER` then the elements after the shared ones, and the members after it."""
    places: Places
    """Where the new reading's values stand in the new body, whichever buffer they view."""


def parts(
    body: bytes,
    earlier: Places,
    first: tuple[int, int] | None,
    last: tuple[int, int] | None,
    key: str,
    most: int | None = None,
) -> Parts | None:
    """The parts of ``body`` when it holds the earlier body's elements from the first (``first``: its
    span there) to ``last`` byte for byte, from its start; ``None`` when it does not, or when it is
    better read whole (a part over :data:`PART_BYTES`, both over ``most`` bytes, a chain over
    :data:`~.splice.SEGMENTS` or holding a body's worth twice)."""
    if first is None or last is None:
        return None
    end, old = last[1], earlier.body
    opening = before(old, first[0])
    if opening < 0 or old[opening] != 0x5B or opening > PART_BYTES or len(body) - end > PART_BYTES:  # '['
        return None
    if most is not None and opening + len(body) - end > most:  # what is decoded: all but the shared elements
        return None
    if len(body) <= end or not body.startswith(memoryview(old)[:end]):  # the comparison last: the costliest
        return None
    head = _earlier_head(earlier, opening)
    if head is None:
        head = body[:opening] + b"null}"
    start = b'{"' + key.encode() + b'":[' + MARKER
    tail = start + body[end:]
    # Up to where the shared elements end, the earlier reading's buffers stand where they did.
    places = Places.continuing(body, earlier, end, head, opening, tail, end - len(start))
    return None if places is None else Parts(head, tail, places)


def decoded(
    body: bytes,
    earlier: Places,
    first: tuple[int, int] | None,
    last: tuple[int, int] | None,
    key: str,
    most: int | None,
    decode: Callable[[bytes], _T],
) -> tuple[Parts, _T, _T] | None:
    """The :func:`parts` of ``body``, with its head and its tail decoded (``None``: no parts, or one
    is not what ``decode`` reads)."""
    found = parts(body, earlier, first, last, key, most)
    if found is None:
        return None
    read = earlier.head_read  # the earlier's head, when this one's is its buffer (:func:`parts`)
    try:
        if read is None or read[0] is not decode or found.head is not earlier.segments[-2][0]:
            head = decode(found.head)
            read = (decode, head, _decoded_bytes(head))
        if read[2] < UNBOUNDED:  # (a model no client names, say: not kept, read again each time)
            found.places.head_read = read
        return found, read[1], decode(found.tail)
    except UNREADABLE:
        return None


def _decoded_bytes(head: msgspec.Struct) -> int:
    """What the values of ``head`` that are no raw value hold (its model's name: the rest views its
    buffer, counted with it)."""
    unset, raw = msgspec.UNSET, msgspec.Raw
    values = msgspec.structs.astuple(head)
    return decoded_bytes(value for value in values if value is not unset and type(value) is not raw)


def _earlier_head(earlier: Places, opening: int) -> bytes | None:
    """The buffer ``earlier`` read its head from, when it holds the bytes before its list up to
    ``opening`` (then the same as a body holding ``earlier``'s beyond that: its head is this one)."""
    if not earlier.segments:  # a body read whole: no head of its own
        return None
    head, _, until = earlier.segments[-2]
    return head if until == opening else None


def fields(head: msgspec.Struct, tail: msgspec.Struct) -> list[Any]:
    """The values of the fields of ``head`` (read before the list) and ``tail`` (after it), structs of
    one type, in its order, as a reader of the whole body takes them: the later one written. A field
    absent from the tail is its default there (the very object: no value read is it); one absent
    from both, ``None`` where that default is unset."""
    kind = type(tail)
    defaults = _DEFAULTS.get(kind)
    if defaults is None:
        defaults = _DEFAULTS[kind] = tuple(field.default for field in msgspec.structs.fields(kind))
    unset, astuple = msgspec.UNSET, msgspec.structs.astuple
    return [
        (None if first is unset else first) if then is default else then
        for first, then, default in zip(astuple(head), astuple(tail), defaults, strict=True)
    ]


_DEFAULTS: dict[type, tuple[object, ...]] = {}
"""Each part's type's default values, by field (a field absent from a part is its default)."""
