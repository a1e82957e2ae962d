"""What every backend of the reasoning record shares: the protocol, the storage keys, the bounds on an
entry, the timeout, failure as "no record", the counters and writes in the background."""

from __future__ import annotations

import abc
import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_ENTRY_BYTES",
    "DEFAULT_MAX_PENDING_WRITES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TTL",
    "DEFAULT_WRITE_TIMEOUT",
    "WARN_INTERVAL",
    "ReasoningRecord",
    "RecordBase",
    "RecordCounts",
    "storage_key",
]

log = logging.getLogger("gateway_mw.record")

_T = TypeVar("_T")

DEFAULT_TTL = 24 * 3600.0
"""Seconds an entry lives after it was written: a long conversation with tool calls goes on for hours,
with pauses, and is often taken up again the next day."""
DEFAULT_MAX_ENTRIES = 10_000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_ENTRY_BYTES = 1024 * 1024
"""An entry over this is not stored (``counts.too_large``): one response's reasoning and text, far
above what a model writes in one turn, and small enough that one entry cannot crowd out the rest."""
DEFAULT_TIMEOUT = 0.1
"""Seconds a read may take before it counts as failed: what a request may be delayed by."""
DEFAULT_WRITE_TIMEOUT = 5.0
"""Seconds a write may take before it counts as failed (and its entries are lost). No request waits
for one (``put_soon`` writes in the background, a bounded number at once): a write that takes longer
than a read may (SQLite's first one creating its file, another process holding the write lock, a
machine under load) is still the next turn's reasoning."""
DEFAULT_MAX_PENDING_WRITES = 128
"""Writes in flight in the background (``put_soon``) beyond which new ones are dropped."""
WARN_INTERVAL = 60.0
"""At most one warning per backend in this many seconds while it fails."""

_PERSON = b"gateway_mw.rec1"  # BLAKE2b's personalisation: these digests are of this use, version 1
_MESSAGE_CHARS = 200


def storage_key(scope: bytes, key: str) -> bytes:
    """The 32-byte digest an entry is stored under: neither the scope nor the key appears in the store.

    The scope's length goes first, so that no (scope, key) pair spells another's input even when a
    scope holds a zero byte; lone surrogates (JSON can spell them) encode rather than fail."""
    return _keyer(scope)(key)


def _keyer(scope: bytes) -> Callable[[str], bytes]:
    """``storage_key`` for one scope: the scope hashed once, then copied per key (a third of the cost)."""
    scoped = hashlib.blake2b(len(scope).to_bytes(8, "big") + scope, digest_size=32, person=_PERSON)

    def key_of(key: str) -> bytes:
        digest = scoped.copy()
        digest.update(key.encode("utf-8", "surrogatepass"))
        return digest.digest()

    return key_of


@dataclass
class RecordCounts:
    """Counters of one record in one process. Entries are counted one by one, keys of ``get`` too."""

    written: int = 0
    """Entries stored."""
    too_large: int = 0
    """Entries not stored because they were over the per-entry cap."""
    evicted: int = 0
    """Entries removed before their time to keep the bounds (memory: least recently used first;
    SQLite: oldest first). Redis evicts on its own and is not counted."""
    hits: int = 0
    misses: int = 0
    backend_errors: int = 0
    """Reads and writes that failed or timed out, and were answered as if nothing was recorded."""
    dropped: int = 0
    """Entries ``put_soon`` dropped because too many writes were in flight, or the record was closing."""


class ReasoningRecord(Protocol):
    """Opaque entries, found again under the keys and in the scope they were written with.

    Nothing here raises for a failing backend or waits longer than its timeouts (one for reads, one for
    writes): a read answers ``{}`` and a write is dropped, counted in ``counts.backend_errors``."""

    counts: RecordCounts

    @property
    def degraded(self) -> bool:
        """True from a failed read or write until a read and a write have worked since (of each
        kind that failed)."""
        ...

    async def get(self, scope: bytes, keys: Sequence[str]) -> dict[str, bytes]:
        """The entries found for ``keys`` in ``scope`` (the ones not found are absent)."""
        ...

    async def put(self, scope: bytes, entries: Mapping[str, bytes]) -> None:
        """Store ``entries`` in ``scope``, each for the record's TTL."""
        ...

    def put_soon(self, scope: bytes, entries: Mapping[str, bytes]) -> bool:
        """``put`` in the background (the caller goes on at once); False when it was dropped."""
        ...

    async def drain(self) -> None:
        """Until the writes started by ``put_soon`` so far are done."""
        ...

    async def close(self) -> None:
        """Drain, then release the backend; afterwards reads find nothing and writes are dropped."""
        ...


def _brief(exc: BaseException) -> str:
    """An error's type and message for a warning, cut short. Backends' messages name the operation or
    the address, never the keys or values they were given."""
    text = " ".join(str(exc).split())
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) and not text:
        text = "timed out"
    if len(text) > _MESSAGE_CHARS:
        text = text[:_MESSAGE_CHARS] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class RecordBase(abc.ABC):
    """A backend supplies ``_fetch``, ``_store`` and ``_close`` on storage keys; this class derives the
    keys, applies the per-entry cap and the timeout, turns failures into "no record", counts, warns and
    runs background writes."""

    kind: ClassVar[str]
    """The backend's name in logs."""
    _waits: ClassVar[bool] = True
    """Whether the backend's operations can block (and so run under the timeout)."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        max_pending_writes: int = DEFAULT_MAX_PENDING_WRITES,
        warn_interval: float = WARN_INTERVAL,
    ) -> None:
        check_positive("ttl", ttl)
        check_positive("max_entry_bytes", max_entry_bytes)
        check_positive("timeout", timeout)
        check_positive("write_timeout", write_timeout)
        check_positive("max_pending_writes", max_pending_writes)
        if not warn_interval >= 0:
            raise ValueError(f"warn_interval must be >= 0, got {warn_interval!r}")
        self.ttl = float(ttl)
        self.max_entry_bytes = int(max_entry_bytes)
        self.timeout = float(timeout)
        """Seconds a read may take (a request waits for it)."""
        self.write_timeout = float(write_timeout)
        """Seconds a write may take (in the background)."""
        self.max_pending_writes = int(max_pending_writes)
        self.warn_interval = float(warn_interval)
        self.counts = RecordCounts()
        self._pending: set[asyncio.Future[None]] = set()
        self._abandoned: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._closed = False
        self._failing: set[str] = set()  # the kinds of operation ("read", "write") failing now
        self._warned = False  # a warning went out that no "answers again" has followed yet
        self._warned_at = -math.inf
        self._unreported = 0

    @property
    def label(self) -> str:
        """What logs call this record: the backend and where it is, never a credential."""
        return self.kind

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"

    @property
    def degraded(self) -> bool:
        return bool(self._failing)

    # What a backend supplies.

    @abc.abstractmethod
    async def _fetch(self, skeys: list[bytes]) -> list[bytes | None]:
        """The live value stored under each storage key, or None, in order."""

    @abc.abstractmethod
    async def _store(self, items: list[tuple[bytes, bytes]]) -> None:
        """Store each (storage key, value) for ``ttl`` seconds, replacing what was there."""

    async def _close(self) -> None:  # noqa: B027 - a backend with nothing to release keeps this
        """Release connections and threads."""

    # The protocol.

    async def get(self, scope: bytes, keys: Sequence[str]) -> dict[str, bytes]:
        if isinstance(keys, str):  # a str is a Sequence[str] too: one key was meant
            raise TypeError("keys must be a sequence of keys, not one str")
        key_of = _keyer(scope)
        wanted = {key_of(key): key for key in dict.fromkeys(keys)}
        if not wanted:
            return {}
        if self._closed:
            self.counts.misses += len(wanted)
            return {}
        try:
            values = await self._bounded(self._fetch(list(wanted)), self.timeout)
        except Exception as exc:  # any failure of the backend is "nothing recorded"
            self._failed("read", exc)
            self.counts.misses += len(wanted)
            return {}
        self._succeeded("read")
        found = {key: value for key, value in zip(wanted.values(), values, strict=True) if value is not None}
        self.counts.hits += len(found)
        self.counts.misses += len(wanted) - len(found)
        return found

    async def put(self, scope: bytes, entries: Mapping[str, bytes]) -> None:
        if self._closed:
            self.counts.dropped += len(entries)
            return
        items = self._items(scope, entries)
        if not items:
            return
        try:
            await self._bounded(self._store(items), self.write_timeout)
        except Exception as exc:  # any failure of the backend drops the write
            self._failed("write", exc)
            return
        self._succeeded("write")
        self.counts.written += len(items)
        self._stored(items)

    def put_soon(self, scope: bytes, entries: Mapping[str, bytes]) -> bool:
        if not entries:
            return True
        if self._closing or len(self._pending) >= self.max_pending_writes:
            self.counts.dropped += len(entries)
            return False
        self._spawn(self.put(scope, dict(entries)))  # a copy: the caller may reuse its mapping
        return True

    async def drain(self) -> None:
        # A finished write may start another task (SQLite's pruning): a few rounds see those too.
        for _ in range(4):
            if not self._pending:
                return
            await asyncio.gather(*self._pending, return_exceptions=True)

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        try:
            await self.drain()
            if self._abandoned:  # operations given up on, cancelled: a moment to end before the backend goes
                await asyncio.wait(self._abandoned, timeout=self.timeout)
        finally:
            self._closed = True
            try:
                await self._close()
            except Exception as exc:
                self._failed("close", exc)

    # Shared machinery.

    def _items(self, scope: bytes, entries: Mapping[str, bytes]) -> list[tuple[bytes, bytes]]:
        """The entries under their storage keys, less those over the per-entry cap (counted)."""
        key_of = _keyer(scope)
        items = []
        for key, value in entries.items():
            if len(value) > self.max_entry_bytes:
                self.counts.too_large += 1
            else:
                items.append((key_of(key), value))
        return items

    def _stored(self, items: list[tuple[bytes, bytes]]) -> None:  # noqa: B027 - most backends have none
        """Called after a successful write, for backends with upkeep to schedule."""

    async def _bounded(self, operation: Coroutine[Any, Any, _T], timeout: float) -> _T:
        """``operation``'s result, or TimeoutError once ``timeout`` has passed. Not ``wait_for``: that
        waits on for a cancelled operation to end, and a client that does not end promptly when
        cancelled would hold the request up beyond the timeout."""
        if not self._waits:
            return await operation
        task = asyncio.get_running_loop().create_task(operation)
        try:
            done, _ = await asyncio.wait((task,), timeout=timeout)
        except asyncio.CancelledError:  # the caller was cancelled: so is the operation
            task.cancel()
            self._abandon(task)
            raise
        if done:
            return task.result()
        task.cancel()
        self._abandon(task)
        raise TimeoutError(f"no answer within {timeout:g} s")

    def _abandon(self, task: asyncio.Task[Any]) -> None:
        """Hold a cancelled operation until it has ended, and read its outcome so that nothing is
        reported about it; ``close`` waits a little for such operations."""
        self._abandoned.add(task)
        task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[Any]) -> None:
        self._abandoned.discard(task)
        if not task.cancelled():
            task.exception()

    def _spawn(self, operation: Coroutine[Any, Any, None]) -> None:
        """Run ``operation`` as a task this record holds (a task nobody references can be collected
        mid-flight) until it is done."""
        task = asyncio.get_running_loop().create_task(operation)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _failed(self, kind: str, exc: BaseException) -> None:
        """A ``kind`` of operation failed: counted, and warned of at most once per interval."""
        self.counts.backend_errors += 1
        self._failing.add(kind)
        now = time.monotonic()
        if now - self._warned_at < self.warn_interval:
            self._unreported += 1
            return
        more = f" ({self._unreported} more since the last warning)" if self._unreported else ""
        log.warning("reasoning record (%s) failed, going on without it: %s%s", self.label, self._reason(exc), more)
        self._warned_at = now
        self._unreported = 0
        self._warned = True

    def _succeeded(self, kind: str) -> None:
        """A ``kind`` of operation worked: once every kind that failed has, and a warning went out,
        one line says so (a store whose writes fail and reads work says nothing per request)."""
        self._failing.discard(kind)
        if self._warned and not self._failing:
            self._warned = False
            log.info("reasoning record (%s) answers again", self.label)

    def _reason(self, exc: BaseException) -> str:
        """What a warning says of a failure: its type and a short reason, never a key or a value."""
        return _brief(exc)


def check_positive(name: str, value: float) -> None:
    if not value > 0:  # also refuses NaN
        raise ValueError(f"{name} must be > 0, got {value!r}")
