"""The digest of a conversation carried from one request to its next.

An agent's request is its previous one and a turn more, and the record's keys hold the digest of the
whole conversation (:class:`~.recall.Thread`): hashing every byte of it again on every request is most
of what the request side costs. So the hash states at the last few message boundaries of a digest are
kept, with what the messages were read as; a later request of the same scope, whose first messages are
proven the same by comparing those readings (each message's values as bytes: a comparison of memory,
about ten times faster than hashing it), goes on from the latest state it shares. Nothing is assumed:
a message that differs by a byte (a cache marker moved) is hashed, and so is everything after it.

The readings a state is kept with hold the request's body: the states are bounded by the bytes they
hold (least recently used first out) and by a few conversations per scope, and never leave their
scope (a state is looked up only by the scope that made it).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["CARRIED_BYTES", "CHECKPOINTS", "READING_BYTES", "STATES", "Carry", "DigestStates"]

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
    size: int


class DigestStates:
    """Conversations' hash states, by scope: at most ``max_bytes`` of request bodies held, at most
    ``per_scope`` conversations in a scope."""

    def __init__(self, max_bytes: int = 64 << 20, per_scope: int = 4) -> None:
        self.max_bytes = max_bytes
        self.per_scope = per_scope
        self._scopes: OrderedDict[bytes, list[_Kept]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()  # a large request's digest is worked out in a worker thread

    @property
    def size(self) -> int:
        """The bytes the kept states hold (their requests' bodies, as counted when kept)."""
        return self._size

    def resume(
        self, scope: bytes, head: bytes, proofs: Sequence[object], upto: int
    ) -> tuple[int, dict[int, hashlib.blake2b], object] | None:
        """The latest kept state of ``scope`` after at most ``upto`` messages whose head and messages
        are proven those of ``proofs``: ``(n, states, kept)``, the states after ``n`` messages and
        before (each only read: a state to go on from is copied) and the conversation they were kept
        with (for :meth:`keep` to replace), or ``None``."""
        with self._lock:
            kept = list(self._scopes.get(scope, ()))
        best: tuple[int, _Kept] | None = None
        for one in kept:
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
        if not states or size > self.max_bytes:
            return
        new = _Kept(head, proofs, states, size)
        with self._lock:
            mine = self._scopes.pop(scope, [])
            kept = [one for one in mine if one is not replaced]
            self._size -= sum(one.size for one in mine) - sum(one.size for one in kept)
            kept.append(new)
            self._size += size
            while len(kept) > self.per_scope:
                self._size -= kept.pop(0).size
            self._scopes[scope] = kept
            while self._size > self.max_bytes:
                oldest = next(iter(self._scopes))
                out = self._scopes[oldest]
                self._size -= out.pop(0).size
                if not out:
                    del self._scopes[oldest]


def _same_first(old: Sequence[object], new: Sequence[object], n: int) -> bool:
    """Whether the first ``n`` proofs of both are equal (compared in C: a list's equality)."""
    return len(old) >= n and len(new) >= n and old[:n] == new[:n]


class Carry(NamedTuple):
    """Where a request's conversation digest may go on from, and keep its states for the next."""

    states: DigestStates
    scope: bytes
    size: int
    """The bytes a kept state of this request holds (its body, and its readings)."""


STATES = DigestStates()
"""The process's conversations' hash states (each scope's its own)."""
