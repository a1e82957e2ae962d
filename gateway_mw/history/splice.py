"""A request body with some values of its history replaced, made by copying the bytes around them:
nothing is decoded again and nothing that stays is encoded again (its spacing included).

msgspec reads a :class:`msgspec.Raw` value as a view into the bytes it decodes, not a copy, so a raw
value's place in its body is the distance between the two buffers, which the buffer protocol gives
(``PyObject_GetBuffer``). A value that is no such view (a copy, or a Python without that call) has
no place, and the caller encodes the body whole instead, as it did before this module.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ..rawjson import Obj, encode

__all__ = [
    "ELEMENT_BYTES",
    "ITEM_BYTES",
    "OBJECT_BYTES",
    "SEGMENT_BYTES",
    "Places",
    "before",
    "elements_written",
    "objects_written",
    "replaced",
    "spliced",
]


class _Buffer(ctypes.Structure):
    """CPython's ``Py_buffer`` (the stable ABI's), of which only ``buf`` and ``len`` are read."""

    _fields_ = (
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    )


def _buffer_calls() -> tuple[Any, Any] | None:
    api = getattr(ctypes, "pythonapi", None)  # CPython's own functions; absent elsewhere
    if api is None:
        return None
    get, release = api.PyObject_GetBuffer, api.PyBuffer_Release
    get.argtypes = (ctypes.py_object, ctypes.POINTER(_Buffer), ctypes.c_int)
    get.restype = ctypes.c_int
    release.argtypes = (ctypes.POINTER(_Buffer),)
    release.restype = None
    return get, release


_CALLS = _buffer_calls()


def _bytes_offset() -> int | None:
    """Where a ``bytes`` object's characters stand from the object itself, in this interpreter
    (proven on one; ``None``: not where CPython puts them, or no buffer call to prove it with)."""
    probe = b"where"
    offset = bytes.__basicsize__ - 1
    return offset if _CALLS is not None and _viewed(probe) == id(probe) + offset else None


def _address(value: object) -> int | None:
    """Where the bytes of ``value`` (a bytes-like object) start in memory: a body's from the object
    itself, a raw value's asked of the buffer protocol."""
    if type(value) is bytes and _BYTES_OFFSET is not None:
        return id(value) + _BYTES_OFFSET
    return _viewed(value)


def _viewed(value: object) -> int | None:
    """Where the buffer of ``value`` starts (a view of its own for each call: readings are read in
    worker threads, and a kept one by several at once)."""
    if _CALLS is None:
        return None
    get, release = _CALLS
    view = _Buffer()
    ref = ctypes.byref(view)
    if get(value, ref, 0) != 0:  # pragma: no cover - every value asked is bytes-like
        return None
    at: int | None = view.buf
    release(ref)
    return at


_BYTES_OFFSET = _bytes_offset()

ELEMENT_BYTES = 2048
"""A raw element replaced in place (its place asked of the buffer protocol: about 1 µs) costs what
decoding and encoding about this many bytes of its body whole costs: a body with fewer bytes than
this per element to replace is encoded whole instead (a history of many short turns). Decided by the
body alone, whatever places an earlier request's reading gave: a request writes the same bytes
whether its reading was carried or not."""

OBJECT_BYTES = 4096
"""The same for an object placed from its members' values (two places asked: about 3.5 µs)."""

ITEM_BYTES = 4096
"""The same for a Responses item placed and spelled on its own (about 4 µs, its encoding included;
a later request that shares it takes its bytes)."""

_decode_top = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_elements = msgspec.json.Decoder(list[msgspec.Raw]).decode

_SPACE = frozenset(b" \t\r\n")

SEGMENTS = 64
"""The most buffers a reading's values view (a conversation's first body and each later one's tail):
a longer chain of continuing readings is started again by reading a body whole."""

_EMPTY_BYTES = sys.getsizeof(b"")  # what a bytes object holds besides its characters

SEGMENT_BYTES = 512
"""What one more buffer a reading's values view holds besides that buffer, as a kept reading is
counted: its entry among the segments and its base (a few tuples and integers: about 250 bytes on
Python 3.11)."""


class Places:
    """Where raw values read from ``body`` stand in it, and the places found of its history's
    elements, by index (:attr:`known`): a later chat request's reading takes those of the messages
    it shares with this one, where its body is proven to hold them in the same places
    (:meth:`carried_from`: a comparison of memory, which costs less than placing each message from
    its members again; a raw element is placed in about 1 µs, less than the proof costs it)."""

    __slots__ = ("_at", "_bases", "_buffers", "_reach", "body", "head_read", "known", "segments")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.known: dict[int, tuple[int, int]] = {}
        self.segments: tuple[tuple[bytes, int, int], ...] = ()
        """Other buffers its raw values may view (a body this one continues, and what was read of
        its tail), each with where it stands in this body and how much of it does: ``(buffer,
        delta, end)``, a value at ``i`` in the buffer (``i < end``) is at ``i + delta`` here."""
        self._at = _address(body)
        self._bases: tuple[tuple[int | None, int, int], ...] = ()  # the segments' buffers, by address
        self._buffers = 0  # the bytes of the segments' buffers
        self._reach = 0  # how far this body holds the one it continues byte for byte
        self.head_read: tuple[Callable[[bytes], Any], Any, int] | None = None
        """What its head segment (the bytes before its list) was read as, by which decoder, and the
        bytes its decoded values hold besides that buffer: a later body whose head is the same buffer
        takes it (:func:`~.tail.decoded`)."""

    @classmethod
    def continuing(
        cls, body: bytes, earlier: Places, end: int, head: bytes, opening: int, tail: bytes, delta: int
    ) -> Places | None:
        """The places of ``body``, which holds ``earlier``'s bytes up to ``end`` (the end of its last
        element) and is read as ``head`` (the bytes before its list, up to ``opening``) and ``tail``
        (the rest, the element at ``i`` there at ``i + delta`` here); ``None`` when its values would
        view more than :data:`SEGMENTS` buffers, or hold a body's worth twice.

        Its segments are ``earlier``'s, each clipped at ``end``, then ``head`` and ``tail``.
        ``earlier``'s own head is left out: this body's values are read from its own, and none of
        the elements it shares views one. Only the last needs clipping where the shared bytes reach
        as far as ``earlier``'s did (an agent's next request): each one before was clipped where
        the request it came with ended.
        """
        if earlier.segments:  # the first body, the tails read since, its head, its tail
            *kept, (old_head, _, _), (last, last_delta, until) = earlier.segments
            *kept_bases, _, (last_base, _, _) = earlier._bases
            buffers = earlier._buffers - len(old_head)
        else:
            kept, kept_bases, buffers = [], [], len(earlier.body)
            last, last_delta, until, last_base = earlier.body, 0, end, earlier._at
        buffers += len(head) + len(tail)
        if len(kept) + 3 > SEGMENTS or buffers > 2 * len(body):
            return None
        if end < earlier._reach:  # fewer elements shared than the earlier request shared (a rewind)
            kept = [(one, at, min(until_one, end - at)) for one, at, until_one in kept]
            kept_bases = [(base, at, min(until_one, end - at)) for base, at, until_one in kept_bases]
        clipped = min(until, end - last_delta)
        places = cls(body)
        places.segments = (*kept, (last, last_delta, clipped), (head, 0, opening), (tail, delta, len(tail)))
        new = ((last_base, last_delta, clipped), (_address(head), 0, opening), (_address(tail), delta, len(tail)))
        places._bases = (*kept_bases, *new)
        places._buffers = buffers
        places._reach = end
        return places

    @property
    def retained(self) -> int:
        """The bytes the other buffers its values view hold (kept alive by them), and what places
        them (:data:`SEGMENT_BYTES` each)."""
        head = 0 if self.head_read is None else self.head_read[2]
        return self._buffers + len(self.segments) * (_EMPTY_BYTES + SEGMENT_BYTES) + head

    def carried_from(self, earlier: Places, shared: int, place: Callable[[int], tuple[int, int] | None]) -> None:
        """Take the places ``earlier`` found of the first ``shared`` elements, where this body holds
        them too: its bytes up to the last of them are ``earlier``'s (one comparison of memory), and
        the last of them, placed here (``place``), is where it was there (so that the list read here
        is the one read there: a body with the list twice is read at its last)."""
        known = {at: span for at, span in earlier.known.items() if at < shared}
        if not known:
            return
        last = max(known)
        if self.body.startswith(memoryview(earlier.body)[: known[last][1]]) and place(last) == known[last]:
            self.known.update(known)

    def element(self, at: int, raw: msgspec.Raw) -> tuple[int, int] | None:
        """The span of element ``at`` of the history, read as ``raw`` (known, or found and kept)."""
        span = self.known.get(at)
        if span is None:
            span = self.of(raw)
            if span is not None:
                self.known[at] = span
        return span

    def element_object(self, at: int, fields: dict[str, msgspec.Raw]) -> tuple[int, int] | None:
        """The span of element ``at`` of the history, an object read as ``fields`` (:meth:`of_object`)."""
        span = self.known.get(at)
        if span is None:
            span = self.of_object(fields)
            if span is not None:
                self.known[at] = span
        return span

    def of(self, raw: msgspec.Raw) -> tuple[int, int] | None:
        """The span ``[start, end)`` of ``raw`` in the body (``None``: it is not a view into it, nor
        into one of its segments where that stands in it)."""
        if self._at is None:
            return None
        at = _address(raw)
        if at is None:
            return None
        start = at - self._at
        if start >= 0 and start + len(raw) <= len(self.body):
            return start, start + len(raw)
        for base, delta, end in self._bases:
            if base is not None and at - base >= 0 and at - base + len(raw) <= end:
                return at - base + delta, at - base + delta + len(raw)
        return None

    def of_object(self, fields: dict[str, msgspec.Raw]) -> tuple[int, int] | None:
        """The span of the JSON object ``fields`` was read from (one level, each value raw): from
        the ``{`` before its first member to the ``}`` after its last. ``None`` when that cannot be
        proven from the bytes: a member's key spelled with escapes, or the first or last member read
        not the first or last written (a duplicate key keeps its last value, in its first place)."""
        if not fields:
            return None
        keys = iter(fields)
        key = next(keys)
        first = self.of(fields[key])
        last = first if len(fields) == 1 else self.of(fields[next(reversed(fields))])
        if first is None or last is None:
            return None
        body, space = self.body, _SPACE
        at = first[0] - 1
        while at >= 0 and body[at] in space:
            at -= 1
        if at < 0 or body[at] != 0x3A:  # ':'
            return None
        at -= 1
        while at >= 0 and body[at] in space:
            at -= 1
        spelled = _spelled(key)
        at -= len(spelled)
        if at < 0 or not body.startswith(spelled, at + 1):
            return None
        while at >= 0 and body[at] in space:
            at -= 1
        end = last[1]
        while end < len(body) and body[end] in space:
            end += 1
        if at < 0 or body[at] != 0x7B or end >= len(body) or body[end] != 0x7D:  # '{', '}'
            return None
        start = at
        return start, end + 1


_SPELLED: dict[str, bytes] = {}


def _spelled(key: str) -> bytes:
    """A member's key as JSON writes it without escapes (the few keys a history has, kept)."""
    spelled = _SPELLED.get(key)
    if spelled is None:
        spelled = msgspec.json.encode(key)
        if len(_SPELLED) < 256:
            _SPELLED[key] = spelled
    return spelled


def before(body: bytes, start: int) -> int:
    """Where the last byte before ``start`` that is no JSON space stands (``-1``: none)."""
    return _back(body, start - 1)


def _back(body: bytes, at: int) -> int:
    """The last position at or before ``at`` that holds no JSON space (``-1``: none)."""
    while at >= 0 and body[at] in _SPACE:
        at -= 1
    return at


def _forward(body: bytes, at: int) -> int:
    """The first position at or after ``at`` that holds no JSON space."""
    while at < len(body) and body[at] in _SPACE:
        at += 1
    return at


def spliced(body: bytes, edits: Iterable[tuple[int, int, bytes]]) -> bytes:
    """``body`` with each span ``[start, end)`` of ``edits`` (in order, none overlapping) replaced
    by its bytes; every other byte copied once, as it is."""
    view = memoryview(body)
    pieces: list[bytes | memoryview] = []
    done = 0
    for start, end, new in edits:
        pieces.append(view[done:start])
        pieces.append(new)
        done = end
    pieces.append(view[done:])
    return b"".join(pieces)


def replaced(places: Places, raws: Sequence[msgspec.Raw], changed: Mapping[int, bytes | None]) -> bytes | None:
    """The body of ``places`` with the elements of its history (``raws``, in order) changed: each at
    an index of ``changed`` replaced by the bytes there, or left out with a separator (``None``);
    ``None`` when one of them has no place in it (see :class:`Places`). The rest of the list keeps
    its spacing."""
    body = places.body
    spans = {}
    for at in changed:
        span = places.element(at, raws[at])
        if span is None:
            return None
        spans[at] = span
    edits = [(*spans[at], new) for at, new in changed.items() if new is not None]
    last = len(raws) - 1
    for first, end in _runs(sorted(at for at, new in changed.items() if new is None)):
        if end < last:  # up to where the next element starts: its separator goes too
            cut = (spans[first][0], _after_separator(body, spans[end][1]))
        elif first > 0:  # the list's last ones: from the separator before them
            cut = (_separator_before(body, spans[first][0]), spans[end][1])
        else:  # all of them
            cut = (spans[first][0], spans[end][1])
        if min(cut) < 0:
            return None
        edits.append((*cut, b""))
    edits.sort(key=lambda edit: edit[0])
    return spliced(body, edits)


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive ``indices`` (sorted), each as its first and last."""
    runs: list[tuple[int, int]] = []
    for at in indices:
        if runs and runs[-1][1] == at - 1:
            runs[-1] = (runs[-1][0], at)
        else:
            runs.append((at, at))
    return runs


def _after_separator(body: bytes, end: int) -> int:
    """Where the element after the one that ends at ``end`` starts, past the comma and spaces
    (``-1``: no comma there)."""
    at = _forward(body, end)
    return _forward(body, at + 1) if at < len(body) and body[at] == 0x2C else -1  # ','


def _separator_before(body: bytes, start: int) -> int:
    """Where the comma before the element that starts at ``start`` stands (``-1``: none)."""
    at = _back(body, start - 1)
    return at if at >= 0 and body[at] == 0x2C else -1


def objects_written(
    places: Places, key: str, objects: Sequence[dict[str, msgspec.Raw]], changed: Mapping[int, bytes]
) -> bytes:
    """The body of ``places`` with the objects of its list ``key`` (read as ``objects``, one level)
    at the indices of ``changed`` replaced by the bytes there: in place (:meth:`Places.of_object`)
    where that is proven and costs less than encoding the body again (:data:`OBJECT_BYTES`); else
    encoded again, every value but those as its raw bytes."""
    body = places.body
    if len(changed) * OBJECT_BYTES <= len(body):
        edits = [(span, changed[at]) for at in sorted(changed) if (span := places.element_object(at, objects[at]))]
        if len(edits) == len(changed):
            return spliced(body, [(*span, new) for span, new in edits])
    return _encoded(body, key, _decode_elements(_decode_top(body)[key]), changed)


def elements_written(places: Places, key: str, raws: Sequence[msgspec.Raw], changed: Mapping[int, bytes]) -> bytes:
    """The same for a list read as raw elements (:data:`ELEMENT_BYTES`)."""
    if len(changed) * ELEMENT_BYTES <= len(places.body):
        out = replaced(places, raws, changed)
        if out is not None:
            return out
    return _encoded(places.body, key, raws, changed)


def _encoded(body: bytes, key: str, raws: Sequence[msgspec.Raw], changed: Mapping[int, bytes]) -> bytes:
    doc: Obj = _decode_top(body)
    doc[key] = [msgspec.Raw(changed[at]) if at in changed else raw for at, raw in enumerate(raws)]
    out: bytes = encode(doc)
    return out
