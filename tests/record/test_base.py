"""What every backend shares, on a scripted backend: storage keys, failure as "no record" within the
timeout, one warning per interval, background writes and closing; and the ``reasoning_store`` spec."""

from __future__ import annotations

import asyncio
import doctest
import gc
import hashlib
import hmac
import logging
import time
from pathlib import Path

import pytest

import gateway_mw.record
from gateway_mw.credentials import scope_for
from gateway_mw.record import (
    DEFAULT_MAX_ENTRY_BYTES,
    SPEC_FORMS,
    MemoryRecord,
    SqliteRecord,
    open_record,
    storage_key,
)

from .support import ScriptedRecord, record_warnings, run_python

SECRET_KEY = "call_secret_1"
SECRET_SCOPE = b"scope-secret"


def test_storage_keys_are_digests_of_scope_and_key() -> None:
    key = storage_key(b"scope", "call_1")
    assert len(key) == 32 and key == storage_key(b"scope", "call_1")
    others = {
        storage_key(b"scope", "call_2"),
        storage_key(b"scope2", "call_1"),
        storage_key(b"", "call_1"),
        # The same bytes in a naive scope + b"\0" + key would collide: the scope's length tells them apart.
        storage_key(b"a\0", "b"),
        storage_key(b"a", "\0b"),
        storage_key(b"a", "\0\0b"),
        storage_key(b"a\0\0", "b"),
    }
    assert key not in others and len(others) == 7
    assert b"call_1" not in key and b"scope" not in key
    storage_key(b"", "\ud800")  # a lone surrogate, as JSON can spell one, is a key like any other
    # Stored keys outlive a process (SQLite, Redis): the formula is fixed.
    spelled = (5).to_bytes(8, "big") + b"scope" + b"call_1"
    assert key == hashlib.blake2b(spelled, digest_size=32, person=b"gateway_mw.rec1").digest()


def test_a_clients_scope_is_a_fixed_keyed_digest_of_its_distinct_keys() -> None:
    """A record outlives a process (SQLite, Redis), so a client's scope does too: the formula is
    fixed (HMAC-SHA256 of its distinct keys, sorted, one per line), each scope made alike however
    often, in any order."""
    expected = hmac.new(b"gateway_mw reasoning record scope", b"key-a\nkey-b", hashlib.sha256).digest()
    assert [scope_for(keys) for keys in (["key-b", "key-a"], ["key-a", "key-b", "key-a"])] == [expected] * 2
    assert scope_for(["key-a"]) != expected and scope_for([]) == b""


async def test_a_failing_backend_reads_as_empty_and_warns_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gateway_mw.record")
    record = ScriptedRecord(timeout=0.5, warn_interval=0.3)
    assert not record.degraded
    await record.put(SECRET_SCOPE, {SECRET_KEY: b"value-secret"})
    assert await record.get(SECRET_SCOPE, [SECRET_KEY]) == {SECRET_KEY: b"value-secret"}

    record.error = ConnectionError("connection refused by 127.0.0.1:1")
    for _ in range(3):
        assert await record.get(SECRET_SCOPE, [SECRET_KEY, "other"]) == {}
        await record.put(SECRET_SCOPE, {SECRET_KEY: b"value-secret-2"})  # dropped, not raised
    assert record.counts.backend_errors == 6 and record.degraded
    assert record.counts.misses == 6 and record.counts.hits == 1 and record.counts.written == 1
    warnings = record_warnings(caplog)
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert "scripted" in text and "ConnectionError: connection refused by 127.0.0.1:1" in text
    for secret in (SECRET_KEY, "value-secret", "scope-secret"):
        assert secret not in text

    await asyncio.sleep(0.35)  # the interval has passed: the next failure warns again, with the tally
    await record.get(SECRET_SCOPE, [SECRET_KEY])
    warnings = record_warnings(caplog)
    assert len(warnings) == 2 and "(5 more since the last warning)" in warnings[1].getMessage()

    record.error = None
    assert await record.get(SECRET_SCOPE, [SECRET_KEY]) == {SECRET_KEY: b"value-secret"}
    assert record.degraded  # reads work again; writes have not been tried since they failed
    await record.put(SECRET_SCOPE, {"another": b"v"})
    assert not record.degraded
    await record.get(SECRET_SCOPE, [SECRET_KEY])
    back = [r for r in caplog.records if r.levelno == logging.INFO and "answers again" in r.getMessage()]
    assert len(back) == 1 and len(record_warnings(caplog)) == 2


async def test_a_store_whose_writes_fail_says_so_once_per_interval_not_once_per_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A read-only replica: every request's read works and its write fails. The log says it once in
    # the interval, not "failed" and "answers again" for every request.
    caplog.set_level(logging.INFO, logger="gateway_mw.record")
    record = ScriptedRecord(timeout=0.5, warn_interval=3600)
    record.write_error = ConnectionError("READONLY")
    for _ in range(20):
        await record.get(SECRET_SCOPE, [SECRET_KEY])
        await record.put(SECRET_SCOPE, {SECRET_KEY: b"value-secret"})
    assert record.degraded and record.counts.backend_errors == 20
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "gateway_mw.record"]
    assert lines == [("WARNING", "reasoning record (scripted) failed, going on without it: ConnectionError: READONLY")]
    record.write_error = None
    for _ in range(3):
        await record.put(SECRET_SCOPE, {SECRET_KEY: b"value-secret"})
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "gateway_mw.record"]
    assert lines[1:] == [("INFO", "reasoning record (scripted) answers again")] and not record.degraded


async def test_a_hanging_backend_holds_a_request_no_longer_than_the_timeout(caplog: pytest.LogCaptureFixture) -> None:
    record = ScriptedRecord(timeout=0.2, write_timeout=0.3, warn_interval=0)
    record.hang = True  # for an hour: an operation that ends at all was cut by its timeout
    started = time.monotonic()
    assert await asyncio.wait_for(record.get(b"", ["a", "b"]), 60) == {}
    assert time.monotonic() - started >= 0.2  # cut at the read's timeout, not before
    started = time.monotonic()
    await asyncio.wait_for(record.put(b"", {"a": b"x"}), 60)
    assert time.monotonic() - started >= 0.3  # and the write at its own
    assert record.counts.backend_errors == 2 and record.counts.written == 0
    assert [w.getMessage().rsplit(": ", 1)[1] for w in record_warnings(caplog)] == [
        "no answer within 0.2 s",
        "no answer within 0.3 s",
    ]


async def test_a_write_slower_than_a_read_may_be_is_kept() -> None:
    """A SQLite file's first write, a write lock another process holds, a machine under load: a write
    no request waits for is given its own, longer bound, and the next turn finds its entries."""
    record = ScriptedRecord(timeout=0.05)
    record.gate = asyncio.Event()
    assert record.put_soon(b"s", {"a": b"x"})
    await asyncio.sleep(0.2)  # four times what a read may take
    record.gate.set()
    await record.drain()
    assert record.counts.backend_errors == 0 and record.counts.written == 1
    assert await record.get(b"s", ["a"]) == {"a": b"x"}


async def test_a_backend_that_ignores_cancelling_holds_no_request_beyond_the_timeout() -> None:
    # Some client versions, cancelled mid-operation, go on for a while before they end: the request
    # must not wait for that.
    record = ScriptedRecord(timeout=0.2)
    record.stubborn = ends = asyncio.Event()  # once cancelled, it goes on until the test ends it
    problems: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: problems.append(context))
    assert await asyncio.wait_for(record.get(b"", ["a"]), 60) == {}  # answered while the operation goes on
    abandoned = set(record._abandoned)
    assert len(abandoned) == 1 and not any(task.done() for task in abandoned)
    closing = time.monotonic()
    await asyncio.wait_for(record.close(), 60)  # waits for it a moment (the timeout), not until it ends
    assert time.monotonic() - closing >= 0.15 and not any(task.done() for task in abandoned)
    ends.set()
    await asyncio.wait(abandoned)  # it has ended now, with its own error: read, not reported as unretrieved
    gc.collect()
    assert problems == [] and record.counts.backend_errors == 1


async def test_a_cancelled_caller_is_not_answered_as_a_miss() -> None:
    record = ScriptedRecord(timeout=5)
    record.hang = True
    task = asyncio.create_task(record.get(b"", ["a"]))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert record.counts.backend_errors == 0


async def test_keys_are_a_sequence_and_repeats_count_once() -> None:
    record = ScriptedRecord()
    with pytest.raises(TypeError):
        await record.get(b"", "call_1")
    await record.put(b"", {"a": b"1"})
    assert await record.get(b"", ["a", "a", "b", "b"]) == {"a": b"1"}
    assert (record.counts.hits, record.counts.misses) == (1, 1)
    assert await record.get(b"", []) == {} and (record.counts.hits, record.counts.misses) == (1, 1)


async def test_an_entry_over_the_cap_is_not_stored_and_is_counted() -> None:
    record = ScriptedRecord(max_entry_bytes=10)
    await record.put(b"", {"small": b"x" * 10, "big": b"x" * 11})
    assert await record.get(b"", ["small", "big"]) == {"small": b"x" * 10}
    assert (record.counts.written, record.counts.too_large) == (1, 1)


async def test_background_writes_are_held_bounded_and_awaited_on_close() -> None:
    record = ScriptedRecord(max_pending_writes=4, timeout=60)
    record.gate = asyncio.Event()
    accepted = [record.put_soon(b"", {f"k{i}": b"v", f"j{i}": b"w"}) for i in range(6)]
    assert accepted == [True] * 4 + [False] * 2
    assert record.counts.dropped == 4  # entries, two per dropped write
    gc.collect()  # the record holds its tasks: none is lost to the collector
    record.gate.set()
    await record.drain()
    assert record.counts.written == 8 and len(record.data) == 8
    assert await record.get(b"", ["k3", "k4"]) == {"k3": b"v"}

    record.gate = asyncio.Event()
    assert record.put_soon(b"", {"late": b"v"})
    closing = asyncio.create_task(record.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # close waits for the write in flight
    assert not record.put_soon(b"", {"after": b"v"})  # nothing new once closing
    record.gate.set()
    await closing
    assert record.closed and record.data.keys() >= {storage_key(b"", "late")}
    assert storage_key(b"", "after") not in record.data
    assert await record.get(b"", ["late"]) == {}  # closed: nothing is read any more
    await record.put(b"", {"later": b"v"})
    assert record.counts.dropped == 4 + 1 + 1 and record.counts.written == 9


async def test_a_write_keeps_the_entries_as_they_were_when_scheduled() -> None:
    record = ScriptedRecord()
    entries = {"a": b"1"}
    record.put_soon(b"", entries)
    entries["a"] = b"2"
    entries["b"] = b"3"
    await record.drain()
    assert await record.get(b"", ["a", "b"]) == {"a": b"1"}


def test_open_record_forms(tmp_path: Path) -> None:
    assert open_record("off") is None
    assert isinstance(open_record(), MemoryRecord) and isinstance(open_record(" memory "), MemoryRecord)
    record = open_record(f"sqlite:{tmp_path}/a/record.db", max_entries=5, ttl=60, timeout=0.3)
    assert isinstance(record, SqliteRecord) and record.max_entries == 5 and record.timeout == 0.3
    for spec in ("", "mem", "redis", "postgres://h/0", "sqlite", "Memory"):
        with pytest.raises(ValueError, match="reasoning_store must be") as raised:
            open_record(spec)
        assert SPEC_FORMS in str(raised.value)
    for spec in ("sqlite:", "sqlite::memory:", "sqlite://relative.db"):
        with pytest.raises(ValueError, match="sqlite:PATH takes a file path"):
            open_record(spec)
    with pytest.raises(ValueError) as raised:
        open_record("http://user:hunter2@host/0")
    assert "hunter2" not in str(raised.value) and "***@host" in str(raised.value)
    for bad in ({"ttl": 0}, {"max_entries": 0}, {"max_bytes": -1}, {"timeout": float("nan")}, {"max_entry_bytes": 0}):
        with pytest.raises(ValueError, match="must be > 0"):
            open_record("memory", **bad)  # type: ignore[arg-type]
    assert DEFAULT_MAX_ENTRY_BYTES == 1 << 20


def test_open_record_redis_forms() -> None:
    pytest.importorskip("redis")
    from gateway_mw.record.redis import RedisRecord

    for spec, label in (
        ("redis://127.0.0.1:6380/2", "redis 127.0.0.1:6380/2"),
        ("redis://:hunter2@127.0.0.1", "redis 127.0.0.1:6379/0"),
        ("rediss://127.0.0.1:6390/0", "redis 127.0.0.1:6390/0"),
        ("unix:///run/redis.sock?db=3", "redis unix:/run/redis.sock?db=3"),
    ):
        record = open_record(spec)
        assert isinstance(record, RedisRecord) and record.label == label  # no connection made yet
    for spec in ("redis://h/abc", "redis://h:port/0", "redis://h/0?decode_responses=true"):
        with pytest.raises(ValueError, match="reasoning record: "):
            open_record(spec)


def test_the_record_imports_without_aiohttp_or_redis() -> None:
    code = """
import sys
sys.modules["aiohttp"] = None  # an import of either now fails
sys.modules["redis"] = None
import gateway_mw.record, gateway_mw.record.memory, gateway_mw.record.sqlite, gateway_mw.record.redis
from gateway_mw.record import MemoryRecord, open_record
assert isinstance(open_record("memory"), MemoryRecord)
try:
    open_record("redis://127.0.0.1:6379/0")
except ValueError as exc:
    print(exc)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("aiohttp", "redis") and sys.modules[m] is not None))
"""
    error, loaded = run_python(code).stdout.strip().splitlines()
    assert "pip install 'gateway_mw[redis]'" in error
    assert loaded == "[]"


def test_the_package_docstring_example_runs() -> None:
    result = doctest.testmod(gateway_mw.record)
    assert result.attempted >= 3 and result.failed == 0
