"""What a conversation carries from one request to its next: what its messages were read as, and
its digest.

An agent's request is its previous one and a turn more. Reading every earlier message again (its
role, its reasoning, whether the transform leaves it as it is) and hashing it again for the record's
keys (:class:`~.recall.Thread`) on every request was most of what the request side cost. So each
request's reading is kept, by scope; a later request of the scope proven to share its first messages
with one (each message's values compared as bytes: a comparison of memory, about ten times faster
than hashing it) takes what that reading learned of them (:class:`Facts`) and goes on from the hash
state its thread kept after them. Nothing is assumed: a message that differs by a byte (a cache marker
moved) is read and hashed again, and so is everything after it.

A kept reading holds its request's body: the readings are bounded by the bytes they hold (least
recently used first out) and by a few conversations per scope, and never leave their scope (one is
looked up only by the scope that made it). What a reading takes from another holds no part of that
one's body, which would keep every body of a conversation alive — but on chat, Ollama and messages,
whose next request holding the earlier one's messages byte for byte is read only after them
(``continued_by``, :mod:`.tail`): it takes those messages as they were first read, and the body they
were read from stays alive with them (one a conversation, counted), until such a request is read
whole again.
"""

from __future__ import annotations

import operator
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar

__all__ = [
    "CARRIED_BYTES",
    "CHECKPOINTS",
    "OTHER_ROLE",
    "READING_BYTES",
    "REQUEST_BYTES",
    "ROLE_CHARS",
    "STATES",
    "UNBOUNDED",
    "Asked",
    "ByScope",
    "CarriedStates",
    "Facts",
    "Known",
    "Sizes",
    "asked_before",
    "decoded_bytes",
    "held",
    "kept_role",
    "latest_index",
    "shared_prefix",
]

_T = TypeVar("_T")

CARRIED_BYTES = 32 << 10
"""A body this large or larger has its reading kept for its scope's next request; a smaller one is
read afresh in less time than keeping it costs."""

READING_BYTES = 1024
"""What one message's reading holds in memory besides its bytes and what was decoded of it, as a kept
reading is counted: its fields and its digest's share (what was learned of it, an assistant message's
decoded content, is counted as it is, :func:`held`: a character takes up to four bytes there, and a
transform's split of it holds it again); more than they take (measured in ``docs/performance.md``)."""

REQUEST_BYTES = 8192
"""What a kept reading holds besides its messages', as it is counted: its digest's kept states (at
most :data:`CHECKPOINTS`, about 380 bytes each), its thread and the objects of its request's read
(their sizes differ between Python versions: twice what 3.11 takes)."""

CHECKPOINTS = 8
"""The message boundaries nearest a conversation's end whose hash states are kept: a later request goes
on from one of them when it shares that much (an agent's shares all of it, or all but the message whose
cache marker moved)."""


class ByScope(Generic[_T]):
    """Things kept for later requests of their scope: at most ``max_bytes`` in all (the scope used
    least recently out first) and ``per_scope`` in one scope (its oldest out first). Safe across the
    worker threads a large request is read in."""

    def __init__(self, max_bytes: int, per_scope: int) -> None:
        self.max_bytes = max_bytes
        self.per_scope = per_scope
        self._scopes: OrderedDict[bytes, list[tuple[_T, int]]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The bytes the kept things hold, as counted when kept."""
        return self._size

    def of(self, scope: bytes) -> list[_T]:
        """What ``scope`` keeps, oldest first (a copy: a later :meth:`put` leaves it alone)."""
        with self._lock:
            return [one for one, _ in self._scopes.get(scope, ())]

    def put(self, scope: bytes, one: _T, size: int, replaced: object = None) -> None:
        """Keep ``one`` (``size``: the bytes it holds) in ``scope``, in place of ``replaced`` (kept
        before, and gone on from)."""
        if size > self.max_bytes:
            return
        with self._lock:
            mine = self._scopes.pop(scope, [])
            kept = [entry for entry in mine if entry[0] is not replaced]
            self._size -= sum(size for _, size in mine) - sum(size for _, size in kept)
            kept.append((one, size))
            self._size += size
            while len(kept) > self.per_scope:
                self._size -= kept.pop(0)[1]
            self._scopes[scope] = kept
            self._evict()

    def recount(self, scope: bytes, one: _T, size: int) -> None:
        """Count ``one``, kept in ``scope`` (unless it is gone since), at ``size`` bytes: what it holds
        now that more of it was read."""
        with self._lock:
            mine = self._scopes.get(scope, [])
            at = next((at for at, entry in enumerate(mine) if entry[0] is one), None)
            if at is None:
                return
            self._size -= mine[at][1]
            if size > self.max_bytes:  # more than may be kept at all
                del mine[at]
                if not mine:
                    del self._scopes[scope]
                return
            mine[at] = (one, size)
            self._size += size
            self._evict()

    def _evict(self) -> None:
        """The oldest things out until the rest are within the bound (the lock held)."""
        while self._size > self.max_bytes:
            oldest = next(iter(self._scopes))
            out = self._scopes[oldest]
            self._size -= out.pop(0)[1]
            if not out:
                del self._scopes[oldest]


class CarriedStates:
    """What conversations carry to their next request, by scope: their requests' readings (at most
    ``max_bytes`` of request bodies held, at most ``per_scope`` conversations in a scope: an agent and
    the subagents it runs at once under one API key, each its own conversation)."""

    def __init__(self, max_bytes: int = 64 << 20, per_scope: int = 8) -> None:
        self.readings: ByScope[tuple[object, Any]] = ByScope(max_bytes, per_scope)
        """Requests' readings, each with the surface that read it: what a later request of the
        scope takes of the messages it is proven to share with one, instead of reading them again."""

    @property
    def size(self) -> int:
        """The bytes the kept readings hold (their requests' bodies, as counted when kept)."""
        return self.readings.size


STATES = CarriedStates()
"""The process's conversations' readings (each scope's its own)."""


class Known(dict[int, Any]):
    """Facts by index (what a reading learned of its messages) that know what they hold
    (:meth:`held`): each fact is measured (:func:`held`) when the total is first asked for after it
    was put in, so that a reading kept for the next request, counted on every request, walks only what
    it learned anew. A fact is added or replaced (``known[at] = fact``), never removed, and the total
    asked for, by the request whose reading learned it; any request may copy them (:meth:`upto`)."""

    __slots__ = ("_measured", "_new", "_top", "_total")

    def __init__(self) -> None:
        super().__init__()
        self._measured: dict[int, tuple[object, int]] = {}
        """Each index's fact as it was measured, and its measure (the fact held: no other object can
        take its identity)."""
        self._new: list[int] = []
        """The indices put in since the total was last asked for."""
        self._top = -1
        """The highest index put in (none: -1)."""
        self._total = 0

    def __setitem__(self, at: int, fact: Any) -> None:
        self._new.append(at)  # first: a copy made meanwhile (:meth:`upto`) finds the fact measured or new
        if at > self._top:
            self._top = at
        super().__setitem__(at, fact)

    def held(self) -> int:
        """The bytes the facts hold: the sum of their measures."""
        new = self._new
        if new:
            count = len(new)  # those put in until now; any put in meanwhile wait for the next total
            measured, total = self._measured, self._total
            for at in new[:count]:
                fact = self[at]
                before = measured.get(at)
                if before is None or before[0] is not fact:
                    size = held((fact,))
                    total += size - (0 if before is None else before[1])
                    measured[at] = (fact, size)
            self._total = total
            del new[:count]  # last: until then a copy (:meth:`upto`) finds them pending, and measures them
        return self._total

    def since(self, first: int) -> Iterable[tuple[int, Any]]:
        """The facts at ``first`` and after, by index (none to walk when every index is below it:
        an agent's next request that holds no message after those left as they came)."""
        if first > self._top:
            return ()
        if first <= 0:
            return self.items()
        return [(at, fact) for at, fact in self.items() if at >= first]

    def upto(self, shared: int) -> Known:
        """The facts at the indices below ``shared`` (all of them, in an agent's next request), with
        the measures made of those very facts."""
        pending = bool(self._new)
        every = Known()
        dict.update(every, self)  # in one step: the request that learned them may still be adding to them
        measured, total, top = self._measured.copy(), self._total, self._top
        if top < shared and not pending and not self._new and len(measured) == len(every):
            # An agent's next request: all of them, each measured, none put in meanwhile (a fact replaced
            # and measured again between the two copies keeps its new measure: one fact's difference;
            # the highest index read after the copy is at least the copy's).
            every._measured, every._total, every._top = measured, total, top
            return every
        facts = {at: fact for at, fact in every.items() if at < shared}
        copy = Known()
        dict.update(copy, facts)
        copy._top = max(facts, default=-1)
        copy._measured = {at: one for at, one in measured.items() if at in facts}
        copy._total = sum(size for _, size in copy._measured.values())
        copy._new = list(facts)  # measured again where the measure is not of the fact copied
        return copy


class Facts:
    """What a reading learned of its messages (or items), by index, all under one set of settings
    (``how``: the plan and the fields read; learned again under others). A later request's reading
    that is proven to share its first messages with this one starts from what this one learned of
    them (:meth:`carried_from`). What is kept here holds no part of its body (no raw value: that
    would keep every earlier body of a conversation alive)."""

    __slots__ = ("_how", "_known")

    def __init__(self) -> None:
        self._how: object = None
        self._known: Known | None = None  # (none learned yet: most readings take an earlier one's)

    def under(self, how: object) -> Known:
        """The facts learned under ``how``, by index (for the caller to read and to add or replace
        a fact in; never to remove one)."""
        if self._known is None or (self._how is not how and self._how != how):
            self._how, self._known = how, Known()
        return self._known

    def held(self) -> int:
        """The bytes what was learned holds (:meth:`Known.held`)."""
        return 0 if self._known is None else self._known.held()

    def carried_from(self, earlier: Facts, shared: int) -> None:
        """Start from what ``earlier`` learned of the first ``shared`` messages (proven the same)."""
        self._how = earlier._how
        self._known = None if earlier._known is None else earlier._known.upto(shared)


class Sizes:
    """What a list's decoded values hold (:func:`held`), by position, each value measured once: a later
    request's reading takes the measures of the values it takes from an earlier one, and measures only
    the values it read itself (an agent's long history is not walked again on every request)."""

    __slots__ = ("_known", "_last", "_whole")

    def __init__(self) -> None:
        self._known: dict[int, tuple[object, int]] = {}
        self._last: tuple[list[object], int] | None = None
        """The values last measured, and their total."""
        self._whole: tuple[Sequence[object], int] | None = None
        """The list last measured by :meth:`of_whole`, and its total."""

    def of_whole(self, values: Sequence[object]) -> int:
        """:meth:`of` a list made whole, never changed in place (a reading's items): the same list
        again holds what it held, known at once (a request's reading is counted when kept, and again
        once the record's entries have read more of it)."""
        whole = self._whole
        if whole is None or whole[0] is not values:
            whole = self._whole = (values, self.of(values))
        return whole[1]

    def of(self, values: Sequence[object]) -> int:
        """The bytes ``values`` hold: a value not measured yet at its position (or put there in place
        of the one measured) is measured now. The same values as last time are known at once: their
        identities compared in one step (each is held here, so that no other object can have taken
        its identity)."""
        now = list(values)
        known, total, start = self._known, 0, 0
        last = self._last
        if last is not None:  # the values measured last time, and maybe more after them
            n = len(last[0])
            if n <= len(now) and all(map(operator.is_, now, last[0])):
                total, start = last[1], n
        for at in range(start, len(now)):
            value = now[at]
            measured = known.get(at)
            if measured is None or measured[0] is not value:
                measured = known[at] = (value, held((value,)))
            total += measured[1]
        self._last = (now, total)
        return total

    def carried_from(self, earlier: Sizes, values: Sequence[object], shared: int, same: bool = False) -> None:
        """Take the measures ``earlier`` made at the first ``shared`` positions, where ``values`` holds
        the same values (or equal ones, read from the same bytes; ``same``: its very values, which
        every measure ``earlier`` made then stands for as it is)."""
        measured = earlier._known.copy()  # in one step: its request may be counting it again (recount)
        last = earlier._last
        if same:  # (its positions are those of its list: all below ``shared``, the length of that list)
            self._known, self._last = measured, last  # measured at these very values: known at once
            return
        self._known = known = {at: (values[at], size) for at, (_, size) in measured.items() if at < shared}
        # Known at once next time, as the first of the values then (its first positions' measures).
        if list(known) == list(range(len(known))):
            self._last = ([value for value, _ in known.values()], sum(s for _, s in known.values()))
        else:
            self._last = None


ROLE_CHARS = 64
"""A role longer than this is no role any server knows: a reading keeps :data:`OTHER_ROLE` for it."""

OTHER_ROLE = "other"
"""A message's role as a reading keeps it when it is no string of a role's length (a list, an object,
a long string): it is none of the roles a surface reads, and it holds nothing the bound must count."""


def kept_role(role: Any) -> Any:
    """``role`` as a reading keeps it (``None``, a string of a role's length, or :data:`OTHER_ROLE`)."""
    if role is None or (type(role) is str and len(role) <= ROLE_CHARS):
        return role
    return OTHER_ROLE


DECODED_ITEMS = 64
"""The most strings a decoded field (Responses' ``include``) holds in a reading that is kept."""

UNBOUNDED = 1 << 62
"""What a reading that must not be kept is counted at: more than any bound."""


_STRINGS = {str}  # the types of the values a short list of names holds


def decoded_bytes(values: Iterable[object]) -> int:
    """The bytes decoded values of a body's fields hold (its model's name, Responses' ``include``:
    every other field a raw value, its body's bytes); :data:`UNBOUNDED` when one is no string nor a
    short list of strings (no client writes one so: such a reading is not kept, nor walked to be
    measured)."""
    size = 0
    for value in values:
        if value is None:
            continue
        if type(value) is str:
            size += sys.getsizeof(value)
        elif type(value) is list and len(value) <= DECODED_ITEMS and {*map(type, value)} <= _STRINGS:
            size += sys.getsizeof(value) + sum(map(sys.getsizeof, value))  # (what :func:`held` counts)
        else:
            return UNBOUNDED
    return size


def held(values: Iterable[object]) -> int:
    """The bytes decoded ``values`` hold: each object's own size (a string's characters included), in
    the lists, tuples and dicts they are made of (walked without recursion: JSON nests deep). An
    object reached twice is counted twice: more than it holds, never less."""
    getsizeof = sys.getsizeof
    size = 0
    stack: list[Iterable[object]] = [values]
    while stack:
        for value in stack.pop():
            size += getsizeof(value)
            if type(value) is str:  # nearly every value: nothing in it to walk
                continue
            if isinstance(value, dict):
                stack.append(value)
                stack.append(value.values())
            elif isinstance(value, list | tuple):
                stack.append(value)
    return size


def latest_index(values: Sequence[object], wanted: tuple[object, ...]) -> int:
    """The index of the last of ``values`` equal to one of ``wanted`` (-1: none), looked for from the
    end in C: in an agent's chat history the latest user message may stand before every other."""
    backwards, nearest = values[::-1], len(values)
    for one in wanted:
        try:
            nearest = backwards.index(one, 0, nearest)
        except ValueError:  # none, or none nearer the end than one found already
            continue
    return len(values) - 1 - nearest


def shared_prefix(old: Sequence[object], new: Sequence[object]) -> int:
    """How many first elements ``old`` and ``new`` share (equal, as their ``==`` says)."""
    n = min(len(old), len(new))
    if old[:n] == new[:n]:  # an agent's next request: all of the earlier one (compared in C)
        return n
    if old[: n - 1] == new[: n - 1]:  # Claude Code's: all but the message its cache marker left
        return n - 1
    for at, (before, now) in enumerate(zip(old, new, strict=False)):  # the shorter one bounds it
        if before != now:
            return at
    return n


Asked = tuple[object, int, list[int]]
"""Of a reading's first ``n`` messages, the assistant ones that carry no reasoning (the record is asked
for them), read under ``how`` (the settings that decide it): ``(how, n, indices)``."""


def asked_before(asked: Asked | None, how: object) -> tuple[int, list[int]]:
    """How many first messages the record's keys were worked out of already, and which of those carry
    no reasoning: known from the earlier request a reading goes on from (``asked``), read under ``how``."""
    if asked is None or asked[0] != how:
        return 0, []
    return asked[1], list(asked[2])
