"""What a conversation carries from one request to its next: its digest, and what its messages
were read as.

An agent's request is its previous one and a turn more, and the record's keys hold the digest of the
whole conversation (:class:`~.recall.Thread`): hashing every byte of it again on every request is most
of what the request side costs. So the hash states at the last few message boundaries of a digest are
kept, with what the messages were read as; a later request of the same scope, whose first messages are
proven the same by comparing those readings (each message's values as bytes: a comparison of memory,
about ten times faster than hashing it), goes on from the latest state it shares. Nothing is assumed:
a message that differs by a byte (a cache marker moved) is hashed, and so is everything after it.

The same proof lets a request take the rest of an earlier request's reading of the messages it shares
(each surface's: their roles, their reasoning, whether the transform leaves them as they are) instead
of reading them again: only the turns that are new are read.

The readings a state is kept with hold the request's body: the states are bounded by the bytes they
hold (least recently used first out) and by a few conversations per scope, and never leave their
scope (a state is looked up only by the scope that made it).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Generic, NamedTuple, TypeVar

__all__ = [
    "CARRIED_BYTES",
    "CHECKPOINTS",
    "READING_BYTES",
    "STATES",
    "ByScope",
    "CarriedStates",
    "Carry",
    "Facts",
    "shared_prefix",
]

_T = TypeVar("_T")

CARRIED_BYTES = 32 << 10
"""A body this large or larger has its conversation's digest carried to its next request; a smaller
one is hashed afresh in less time than keeping its states costs."""

READING_BYTES = 512
"""What one message's reading holds in memory besides its bytes (its fields, as counted in a kept state)."""

CHECKPOINTS = 8
"""The message boundaries nearest a conversation's end whose hash states are kept: a later request goes
on from one of them when it shares that much (an agent's shares all of it, or all but the message whose
cache marker moved)."""


class _Kept(NamedTuple):
    head: bytes
    proofs: Sequence[object]
    """What each message was read as: equal proofs spell equal messages."""
    states: dict[int, hashlib.blake2b]
    """The hash state after the first ``n`` messages, by ``n``."""


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
            while self._size > self.max_bytes:
                oldest = next(iter(self._scopes))
                out = self._scopes[oldest]
                self._size -= out.pop(0)[1]
                if not out:
                    del self._scopes[oldest]


class CarriedStates:
    """What conversations carry to their next request, by scope: their hash states, and their
    requests' readings (each bounded apart: at most ``max_bytes`` of request bodies held, at most
    ``per_scope`` conversations in a scope)."""

    def __init__(self, max_bytes: int = 64 << 20, per_scope: int = 4) -> None:
        self.kept: ByScope[_Kept] = ByScope(max_bytes, per_scope)
        self.readings: ByScope[tuple[object, Any]] = ByScope(max_bytes, per_scope)
        """Requests' readings, each with the surface that read it: what a later request of the
        scope takes of the messages it is proven to share with one, instead of reading them again."""

    @property
    def size(self) -> int:
        """The bytes the kept states hold (their requests' bodies, as counted when kept)."""
        return self.kept.size

    def resume(
        self, scope: bytes, head: bytes, proofs: Sequence[object], upto: int
    ) -> tuple[int, dict[int, hashlib.blake2b], object] | None:
        """The latest kept state of ``scope`` after at most ``upto`` messages whose head and messages
        are proven those of ``proofs``: ``(n, states, kept)``, the states after ``n`` messages and
        before (each only read: a state to go on from is copied) and the conversation they were kept
        with (for :meth:`keep` to replace), or ``None``."""
        best: tuple[int, _Kept] | None = None
        for one in self.kept.of(scope):
            if one.head != head:
                continue
            for n in sorted(one.states, reverse=True):
                if n <= upto and (best is None or n > best[0]) and _same_first(one.proofs, proofs, n):
                    best = (n, one)
                    break
        if best is None:
            return None
        n, one = best
        return n, {at: state for at, state in one.states.items() if at <= n}, one

    def keep(
        self,
        scope: bytes,
        head: bytes,
        proofs: Sequence[object],
        states: dict[int, hashlib.blake2b],
        size: int,
        replaced: object = None,
    ) -> None:
        """Keep ``states`` of a conversation of ``scope`` (``size``: the bytes its proofs hold), in place
        of the kept one it went on from (``replaced``, as :meth:`resume` gave it)."""
        if states:
            self.kept.put(scope, _Kept(head, proofs, states), size, replaced)


def _same_first(old: Sequence[object], new: Sequence[object], n: int) -> bool:
    """Whether the first ``n`` proofs of both are equal (compared in C: a list's equality)."""
    return len(old) >= n and len(new) >= n and old[:n] == new[:n]


class Carry(NamedTuple):
    """Where a request's conversation digest may go on from, and keep its states for the next."""

    states: CarriedStates
    scope: bytes
    size: int
    """The bytes a kept state of this request holds (its body, and its readings)."""


STATES = CarriedStates()
"""The process's conversations' hash states (each scope's its own)."""


class Facts:
    """What a reading learned of its messages (or items), by index, all under one set of settings
    (``how``: the plan and the fields read; learned again under others). A later request's reading
    that is proven to share its first messages with this one starts from what this one learned of
    them (:meth:`carried_from`). What is kept here holds no part of its body (no raw value: that
    would keep every earlier body of a conversation alive)."""

    __slots__ = ("_how", "_known")

    def __init__(self) -> None:
        self._how: object = None
        self._known: dict[int, Any] = {}

    def under(self, how: object) -> dict[int, Any]:
        """The facts learned under ``how``, by index (for the caller to read and add to)."""
        if self._how is not how and self._how != how:
            self._how, self._known = how, {}
        return self._known

    def carried_from(self, earlier: Facts, shared: int) -> None:
        """Start from what ``earlier`` learned of the first ``shared`` messages (proven the same)."""
        self._how = earlier._how
        self._known = {at: fact for at, fact in earlier._known.items() if at < shared}


def shared_prefix(old: Sequence[object], new: Sequence[object]) -> int:
    """How many first elements ``old`` and ``new`` share (equal, as their ``==`` says)."""
    n = min(len(old), len(new))
    if old[:n] == new[:n]:  # an agent's next request: all of the earlier one (compared in C)
        return n
    low, high = 0, n - 1  # the first n equal is true up to some n, false after: halved
    while low < high:
        mid = (low + high + 1) // 2
        if old[:mid] == new[:mid]:
            low = mid
        else:
            high = mid - 1
    return low
