"""The memory record against a plain model of it: bounds in entries and bytes, TTL on a clock moved
by hand, least recently used out first, and every counter, after every step of random runs."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gateway_mw.record import MemoryRecord, RecordCounts, storage_key

from ..hypothesis_examples import examples
from .support import Clock

TTL = 100.0
MAX_ENTRIES = 4
MAX_BYTES = 24
MAX_ENTRY_BYTES = 10

scopes = st.sampled_from([b"", b"a", b"b\0"])
keys = st.sampled_from(["k1", "k2", "k3", "k4", "k5", "k6", "\0"])
values = st.binary(max_size=MAX_ENTRY_BYTES + 2)  # some over the per-entry cap


@dataclass
class Entry:
    value: bytes
    expires: float
    used: int


class Model:
    """What the memory record should hold, the slow and obvious way: scan for expired entries, evict
    the entry used longest ago while over a bound."""

    def __init__(self) -> None:
        self.entries: dict[tuple[bytes, str], Entry] = {}
        self.counts = RecordCounts()
        self.tick = 0

    def _use(self) -> int:
        self.tick += 1
        return self.tick

    def _expire(self, now: float) -> None:
        for where in [w for w, e in self.entries.items() if e.expires <= now]:
            del self.entries[where]

    def put(self, now: float, scope: bytes, entries: dict[str, bytes]) -> None:
        fitting = {key: value for key, value in entries.items() if len(value) <= MAX_ENTRY_BYTES}
        self.counts.too_large += len(entries) - len(fitting)
        if not fitting:  # nothing to store, nothing done
            return
        self._expire(now)
        for key, value in fitting.items():
            self.entries[(scope, key)] = Entry(value, now + TTL, self._use())
            self.counts.written += 1
            while len(self.entries) > MAX_ENTRIES or self.bytes() > MAX_BYTES:
                del self.entries[min(self.entries, key=lambda w: self.entries[w].used)]
                self.counts.evicted += 1

    def get(self, now: float, scope: bytes, wanted: list[str]) -> dict[str, bytes]:
        if not wanted:  # nothing asked, nothing done
            return {}
        self._expire(now)
        found = {}
        for key in dict.fromkeys(wanted):
            entry = self.entries.get((scope, key))
            if entry is None:
                self.counts.misses += 1
            else:
                entry.used = self._use()
                found[key] = entry.value
                self.counts.hits += 1
        return found

    def bytes(self) -> int:
        return sum(len(e.value) for e in self.entries.values())


class MemoryRecordMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.record = MemoryRecord(
            ttl=TTL, max_entries=MAX_ENTRIES, max_bytes=MAX_BYTES, max_entry_bytes=MAX_ENTRY_BYTES, clock=self.clock
        )
        self.model = Model()
        self.loop = asyncio.new_event_loop()

    @rule(scope=scopes, entries=st.dictionaries(keys, values, max_size=3))
    def put(self, scope: bytes, entries: dict[str, bytes]) -> None:
        self.loop.run_until_complete(self.record.put(scope, entries))
        self.model.put(self.clock.now, scope, entries)

    @rule(scope=scopes, entries=st.dictionaries(keys, values, max_size=3))
    def put_soon(self, scope: bytes, entries: dict[str, bytes]) -> None:
        assert self.record.put_soon(scope, entries)  # stored at once: nothing to wait for in memory
        self.model.put(self.clock.now, scope, entries)

    @rule(scope=scopes, wanted=st.lists(keys, max_size=5))
    def get(self, scope: bytes, wanted: list[str]) -> None:
        got = self.loop.run_until_complete(self.record.get(scope, wanted))
        assert got == self.model.get(self.clock.now, scope, wanted)

    @rule(seconds=st.sampled_from([0.0, 1.0, 30.0, TTL - 1, TTL, TTL + 1]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @precondition(lambda self: self.model.entries)
    @rule(data=st.data())
    def get_one_that_is_there(self, data: st.DataObject) -> None:
        # Hits are rare among random keys: this one asks for an entry the model holds.
        scope, key = data.draw(st.sampled_from(sorted(self.model.entries)))
        self.get(scope, [key])

    @invariant()
    def same_as_the_model(self) -> None:
        # The whole structure: the same entries, in the same order of use, the same bytes and counts.
        by_use = sorted(self.model.entries.items(), key=lambda item: item[1].used)
        assert list(self.record._by_use) == [storage_key(scope, key) for (scope, key), _ in by_use]
        assert [v for _, v in self.record._by_use.values()] == [entry.value for _, entry in by_use]
        assert self.record.stored_bytes == self.model.bytes()
        assert self.record.counts == self.model.counts

    @invariant()
    def within_bounds(self) -> None:
        assert len(self.record) <= MAX_ENTRIES and self.record.stored_bytes <= MAX_BYTES

    def teardown(self) -> None:
        self.loop.close()


MemoryRecordMachine.TestCase.settings = settings(max_examples=examples(200), stateful_step_count=30, deadline=None)
TestMemoryRecord = MemoryRecordMachine.TestCase


def test_the_machine_reaches_every_bound() -> None:
    """The runs above are only worth something if they evict, expire and refuse: one scripted run that
    must do each, checked against the model the same way."""
    machine = MemoryRecordMachine()
    try:
        for i in range(6):
            machine.put(b"a", {f"k{i}": b"12345"})  # 5 bytes each: the fifth is over 24 bytes
        machine.get(b"a", ["k0", "k1", "k2", "k3", "k4", "k5"])
        machine.put(b"a", {"big": b"x" * (MAX_ENTRY_BYTES + 1)})
        machine.advance(TTL)
        machine.get(b"a", ["k5"])
        machine.same_as_the_model()
        counts = machine.record.counts
        assert counts.evicted == 2 and counts.too_large == 1 and counts.hits == 4 and counts.misses == 3
        assert len(machine.record) == 0 and machine.record.stored_bytes == 0
    finally:
        machine.teardown()


async def test_least_recently_used_goes_first() -> None:
    record = MemoryRecord(max_entries=3, max_bytes=1000)
    await record.put(b"", {"a": b"1", "b": b"2", "c": b"3"})
    await record.get(b"", ["a"])  # now b is the least recently used
    await record.put(b"", {"d": b"4"})
    assert await record.get(b"", ["a", "b", "c", "d"]) == {"a": b"1", "c": b"3", "d": b"4"}
    assert record.counts.evicted == 1
