"""The record in this process's memory: bounded in entries and bytes, least recently used out first."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

from .base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_ENTRY_BYTES,
    DEFAULT_MAX_PENDING_WRITES,
    DEFAULT_TIMEOUT,
    DEFAULT_TTL,
    DEFAULT_WRITE_TIMEOUT,
    WARN_INTERVAL,
    RecordBase,
    check_positive,
)

__all__ = ["MemoryRecord"]


class MemoryRecord(RecordBase):
    """Entries in two ordered dicts over the same keys: one in order of use (for eviction), one in order
    of writing, which is also the order of expiry since every entry lives for the same TTL. Every
    operation is O(1) per key (amortised for expiry) and runs without suspending, so it needs no lock
    within one event loop and no timeout. Not shared between threads or processes."""

    kind = "memory"
    _waits = False

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        max_pending_writes: int = DEFAULT_MAX_PENDING_WRITES,
        warn_interval: float = WARN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            ttl=ttl,
            max_entry_bytes=max_entry_bytes,
            timeout=timeout,
            write_timeout=write_timeout,
            max_pending_writes=max_pending_writes,
            warn_interval=warn_interval,
        )
        check_positive("max_entries", max_entries)
        check_positive("max_bytes", max_bytes)
        self.max_entries = int(max_entries)
        self.max_bytes = int(max_bytes)
        self.max_entry_bytes = min(self.max_entry_bytes, self.max_bytes)  # so a stored entry always fits
        self._clock = clock
        self._by_use: OrderedDict[bytes, tuple[float, bytes]] = OrderedDict()
        self._by_age: OrderedDict[bytes, None] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._by_use)

    @property
    def stored_bytes(self) -> int:
        """The bytes of the values held (what ``max_bytes`` bounds)."""
        return self._bytes

    def put_soon(self, scope: bytes, entries: Mapping[str, bytes]) -> bool:
        # Nothing to wait for: stored now, without a task.
        if self._closing:
            self.counts.dropped += len(entries)
            return False
        items = self._items(scope, entries)
        if items:
            self._store_now(items)
            self.counts.written += len(items)
        return True

    async def _fetch(self, skeys: list[bytes]) -> list[bytes | None]:
        self._expire(self._clock())
        found: list[bytes | None] = []
        for skey in skeys:
            entry = self._by_use.get(skey)
            if entry is None:
                found.append(None)
            else:
                self._by_use.move_to_end(skey)
                found.append(entry[1])
        return found

    async def _store(self, items: list[tuple[bytes, bytes]]) -> None:
        self._store_now(items)

    async def _close(self) -> None:
        self._by_use.clear()
        self._by_age.clear()
        self._bytes = 0

    def _store_now(self, items: list[tuple[bytes, bytes]]) -> None:
        now = self._clock()
        self._expire(now)
        expires = now + self.ttl
        for skey, value in items:
            old = self._by_use.pop(skey, None)
            if old is not None:
                self._bytes -= len(old[1])
                del self._by_age[skey]
            self._by_use[skey] = (expires, value)
            self._by_age[skey] = None
            self._bytes += len(value)
            # The entry just written is last in use and fits alone (max_entry_bytes <= max_bytes).
            while len(self._by_use) > self.max_entries or self._bytes > self.max_bytes:
                victim, (_, gone) = self._by_use.popitem(last=False)
                del self._by_age[victim]
                self._bytes -= len(gone)
                self.counts.evicted += 1

    def _expire(self, now: float) -> None:
        by_age, by_use = self._by_age, self._by_use
        while by_age:
            skey = next(iter(by_age))
            expires, value = by_use[skey]
            if expires > now:
                return
            del by_age[skey]
            del by_use[skey]
            self._bytes -= len(value)
