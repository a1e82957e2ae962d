"""What every backend must do alike: entries come back in the scope they were written in and no other,
under their key only, for their TTL; too large is refused; background writes land; closed reads empty."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway_mw.record import MemoryRecord, RecordBase, SqliteRecord

BACKENDS = ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)]
Make = Callable[..., RecordBase]


@pytest.fixture(params=BACKENDS)
async def make(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Make]:
    """Records of one backend, as many as a test wants (those of SQLite and Redis share their store,
    as two gateway processes would); all closed at the end."""
    made: list[RecordBase] = []

    def new(**options: Any) -> RecordBase:
        options.setdefault("timeout", 60.0)  # these tests are about behaviour, not speed: a busy disk is slow
        record: RecordBase
        if request.param == "memory":
            record = MemoryRecord(**options)
        elif request.param == "sqlite":
            record = SqliteRecord(tmp_path / "record.db", **options)
        else:
            from gateway_mw.record.redis import RedisRecord

            record = RedisRecord(request.getfixturevalue("redis_server").url, **options)
        made.append(record)
        return record

    yield new
    for record in made:
        await record.close()


async def test_an_entry_is_found_in_its_scope_only(make: Make) -> None:
    writer = make()
    await writer.put(b"client-a", {"call_1": b"a's entry", "rs_1": b"a's other"})
    await writer.put(b"client-b", {"call_1": b"b's entry"})
    await writer.put(b"", {"call_1": b"no key checked"})
    reader = make()  # the memory record is its own reader: one process
    if isinstance(writer, MemoryRecord):
        reader = writer
    assert await reader.get(b"client-a", ["call_1", "rs_1"]) == {"call_1": b"a's entry", "rs_1": b"a's other"}
    assert await reader.get(b"client-b", ["call_1", "rs_1"]) == {"call_1": b"b's entry"}
    assert await reader.get(b"", ["call_1", "rs_1"]) == {"call_1": b"no key checked"}
    assert await reader.get(b"client-c", ["call_1", "rs_1"]) == {}
    assert await reader.get(b"client-a\0", ["call_1"]) == {}  # a scope that extends another is another
    assert (reader.counts.hits, reader.counts.misses) == (4, 5)
    assert writer.counts.written == 4


async def test_a_second_write_replaces_the_first(make: Make) -> None:
    record = make()
    await record.put(b"s", {"k": b"first"})
    await record.put(b"s", {"k": b"second"})
    assert await record.get(b"s", ["k"]) == {"k": b"second"}


async def test_entries_over_the_cap_are_refused(make: Make) -> None:
    record = make(max_entry_bytes=1000)
    await record.put(b"s", {"fits": b"x" * 1000, "over": b"x" * 1001})
    assert await record.get(b"s", ["fits", "over"]) == {"fits": b"x" * 1000}
    assert (record.counts.written, record.counts.too_large) == (1, 1)


async def test_an_entry_lives_for_the_ttl(make: Make) -> None:
    record = make(ttl=0.5)
    await record.put(b"s", {"k": b"v"})
    assert await record.get(b"s", ["k"]) == {"k": b"v"}
    await asyncio.sleep(0.7)
    assert await record.get(b"s", ["k"]) == {}


async def test_background_writes_land_and_close_awaits_them(make: Make) -> None:
    record = make()
    for i in range(20):
        assert record.put_soon(b"s", {f"k{i}": b"v%d" % i})
    await record.drain()
    found = await record.get(b"s", [f"k{i}" for i in range(20)])
    assert found == {f"k{i}": b"v%d" % i for i in range(20)}
    record.put_soon(b"s", {"last": b"v"})
    await record.close()
    assert record.counts.written == 21 and record.counts.backend_errors == 0
    assert await record.get(b"s", ["k0"]) == {}  # closed
    check = make()
    if not isinstance(record, MemoryRecord):  # the write in flight at close reached the store
        assert await check.get(b"s", ["last"]) == {"last": b"v"}


async def test_values_are_kept_byte_for_byte(make: Make) -> None:
    record = make()
    values = {"empty": b"", "zeros": b"\0" * 100, "all": bytes(range(256)) * 4}
    await record.put(b"s", values)
    assert await record.get(b"s", list(values)) == values
