"""The SQLite record as gunicorn workers use it: one file, several processes writing and reading at
once, within its bounds; a file only its owner can read, with no identifier in clear; a file it does
not own left alone; a locked file read as empty within the timeout; a forked worker."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from gateway_mw.record import PRUNE_FRACTION, SqliteRecord, open_record, storage_key

from .support import Clock, record_warnings, run_python, start_python

WRITER = """
import asyncio, json, sys
from gateway_mw.record import SqliteRecord

path, name, count, batch, max_entries = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])

async def main():
    # (timeouts no busy machine reaches: what is tested is the bound, not how fast the writes are)
    record = SqliteRecord(path, max_entries=max_entries, timeout=60, write_timeout=60)
    for start in range(0, count, batch):
        entries = {f"{name}-{i}": b"%s:%d" % (name.encode(), i) for i in range(start, start + batch)}
        await record.put(name.encode(), entries)
    await record.close()  # waits for the pruning in flight
    c = record.counts
    print(json.dumps({"written": c.written, "evicted": c.evicted, "errors": c.backend_errors}))

asyncio.run(main())
"""

READER = """
import asyncio, json, sys
from gateway_mw.record import SqliteRecord

path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

async def main():
    record = SqliteRecord(path, timeout=60)
    keys = [f"{name}-{i}" for i in range(count)]
    mine = await record.get(name.encode(), keys)
    elsewhere = await record.get(b"another scope", keys)
    await record.close()
    print(json.dumps({"found": {k: v.decode() for k, v in mine.items()}, "elsewhere": len(elsewhere)}))

asyncio.run(main())
"""


def rows(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        count, total = conn.execute("SELECT count(*), total(size) FROM record").fetchone()
    return count, int(total)


def test_one_process_writes_another_reads(tmp_path: Path) -> None:
    path = str(tmp_path / "shared" / "record.db")
    wrote = json.loads(run_python(WRITER, path, "alpha", "50", "5", "10000").stdout)
    assert wrote == {"written": 50, "evicted": 0, "errors": 0}
    read = json.loads(run_python(READER, path, "alpha", "50").stdout)
    assert read["found"] == {f"alpha-{i}": f"alpha:{i}" for i in range(50)}
    assert read["elsewhere"] == 0


def test_two_processes_writing_at_once_stay_within_bounds(tmp_path: Path) -> None:
    path = str(tmp_path / "record.db")
    max_entries, count, batch = 640, 3000, 5
    SqliteRecord(path)  # the file exists before both start, as after the first worker
    writers = [start_python(WRITER, path, name, str(count), str(batch), str(max_entries)) for name in ("a", "b")]
    results = []
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        results.append(json.loads(out))
    assert all(r["written"] == count and r["errors"] == 0 for r in results), results
    # Each process prunes once per 1/64 of the bound written; after its last pruning it wrote less
    # than that, so the file holds at most the bound plus that much per process.
    entries, _ = rows(tmp_path / "record.db")
    slack = 2 * (max_entries // PRUNE_FRACTION)
    assert max_entries - slack <= entries <= max_entries + slack, entries
    # Every write is either still there or was evicted by one of the two (expiry is a day away).
    evicted = sum(r["evicted"] for r in results)
    assert entries + evicted == 2 * count

    async def kept() -> dict[str, list[int]]:
        record = SqliteRecord(path, max_entries=max_entries)  # opening prunes to the bound exactly
        found = {}
        for name in "ab":
            keys = [f"{name}-{i}" for i in range(count)]
            found[name] = sorted(int(key.split("-")[1]) for key in await record.get(name.encode(), keys))
        await record.close()
        return found

    found = asyncio.run(kept())
    assert rows(tmp_path / "record.db")[0] == max_entries == len(found["a"]) + len(found["b"])
    for indexes in found.values():  # the oldest went first: each process's newest writes are what is left
        assert indexes == list(range(count - len(indexes), count))


async def test_bytes_are_bounded_and_the_oldest_go_first(tmp_path: Path) -> None:
    clock = Clock(time.time())
    record = SqliteRecord(tmp_path / "r.db", max_bytes=64 * 100, max_entries=10_000, clock=clock, timeout=60)
    for i in range(200):
        clock.advance(1)
        await record.put(b"s", {f"k{i}": bytes(100)})
    await record.prune()
    assert rows(tmp_path / "r.db") == (64, 6400)
    found = await record.get(b"s", [f"k{i}" for i in range(200)])
    assert sorted(found) == sorted(f"k{i}" for i in range(136, 200))
    assert record.counts.evicted == 136
    await record.close()


async def test_expired_rows_are_not_read_and_are_pruned(tmp_path: Path) -> None:
    clock = Clock(time.time())
    record = SqliteRecord(tmp_path / "r.db", ttl=100, clock=clock, timeout=60)
    await record.put(b"s", {"old": b"1"})
    clock.advance(60)
    await record.put(b"s", {"new": b"2"})
    clock.advance(40)  # "old" is exactly 100 s old: gone
    assert await record.get(b"s", ["old", "new"]) == {"new": b"2"}
    assert rows(tmp_path / "r.db")[0] == 2
    assert await record.prune() == 0  # expiry is not eviction
    assert rows(tmp_path / "r.db")[0] == 1
    await record.close()


async def test_the_file_is_its_owners_and_holds_no_identifier_in_clear(tmp_path: Path) -> None:
    directory = tmp_path / "new" / "dir"
    record = open_record(f"sqlite:{directory}/record.db", timeout=60)
    assert isinstance(record, SqliteRecord)
    await record.put(b"scope-secret-1", {"call_secret_abc": b"opaque entry bytes"})
    assert await record.get(b"scope-secret-1", ["call_secret_abc"]) == {"call_secret_abc": b"opaque entry bytes"}
    names = sorted(p.name for p in directory.iterdir())
    assert names == ["record.db", "record.db-shm", "record.db-wal"]  # open in WAL mode
    for name in names:
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    stored = b"".join((directory / name).read_bytes() for name in names)
    assert b"opaque entry bytes" in stored  # what the search below looks through does hold the entry
    assert storage_key(b"scope-secret-1", "call_secret_abc") in stored
    for secret in (b"call_secret_abc", b"scope-secret-1"):
        assert secret not in stored
    await record.close()


def test_an_existing_file_open_to_others_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "r.db"
    SqliteRecord(path)
    SqliteRecord(path)
    assert record_warnings(caplog) == []
    path.chmod(0o644)
    SqliteRecord(path)
    [warning] = record_warnings(caplog)
    assert "open to other users (mode 0644)" in warning.getMessage()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # the operator's choice, left as it is


def test_a_file_that_is_not_a_record_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
        conn.execute("INSERT INTO users VALUES ('someone')")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ValueError, match="holds something other than a reasoning record"):
        open_record(f"sqlite:{path}")
    assert path.read_bytes() == before
    (tmp_path / "text.db").write_text("not a database at all, but long enough to have a header of sorts")
    with pytest.raises(ValueError, match="cannot open sqlite:"):
        open_record(f"sqlite:{tmp_path}/text.db")
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="cannot open sqlite:"):
        open_record(f"sqlite:{tmp_path}/file/record.db")  # a parent that is a file


async def test_a_write_lock_held_elsewhere_drops_writes_within_the_timeout_and_reads_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway_mw.record")
    path = tmp_path / "r.db"
    timeout = 2.0  # the read below must be done before the write gives up: a margin for a busy machine
    record = SqliteRecord(path, timeout=timeout)
    await record.put(b"s", {"k": b"v"})
    # Another process's connection holds the write lock (a long write, a stuck worker).
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("DELETE FROM record WHERE 0")
    try:
        blocked = asyncio.create_task(record.put(b"s", {"k2": b"v2"}))
        await asyncio.sleep(0)  # the write has started
        assert await record.get(b"s", ["k"]) == {"k": b"v"}  # WAL: a read does not wait for the writer,
        assert not blocked.done()  # which still waits for the lock
        await asyncio.wait_for(blocked, 60)  # dropped at its timeout (a bound for a hang, not a speed)
        await asyncio.wait_for(record.put(b"s", {"k3": b"v3"}), 60)
        assert record.counts.backend_errors == 2 and record.counts.written == 1
        [warning] = record_warnings(caplog)
        text = warning.getMessage()
        assert "sqlite" in text and "k2" not in text and "v2" not in text
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # Each write waited for the lock no longer than its own timeout: none lands after the release.
    await record.put(b"s", {"k4": b"v4"})
    assert await record.get(b"s", ["k2", "k3", "k4"]) == {"k4": b"v4"}
    assert len(record_warnings(caplog)) == 1 and record.counts.backend_errors == 2
    assert any("answers again" in r.getMessage() for r in caplog.records)
    await record.close()


FORKED = """
import asyncio, os, sys
from gateway_mw.record import SqliteRecord

record = SqliteRecord(sys.argv[1], timeout=60)
async def parent():
    await record.put(b"s", {"before": b"1"})
    return await record.get(b"s", ["before"])
assert asyncio.run(parent()) == {"before": b"1"}  # the parent's threads and connections now exist

pid = os.fork()
if pid == 0:
    async def child():
        await record.put(b"s", {"child": b"2"})
        return await record.get(b"s", ["before", "child"])
    found = asyncio.run(child())
    os._exit(0 if found == {"before": b"1", "child": b"2"} and record.counts.backend_errors == 0 else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert asyncio.run(record.get(b"s", ["child"])) == {"child": b"2"}
print("ok")
"""


def test_a_forked_worker_uses_its_own_threads(tmp_path: Path) -> None:
    # As under gunicorn --preload: the record made (and used) in the parent, then forked.
    assert run_python(FORKED, str(tmp_path / "r.db")).stdout.strip() == "ok"


def test_a_record_another_worker_makes_while_the_file_is_checked_is_its_own(tmp_path: Path) -> None:
    """Workers starting together: another one may make the record between two reads of the check (a
    new file seen with the record's version but without its table was refused as someone else's)."""
    path = tmp_path / "fresh.db"
    statements: list[str] = []
    made: list[SqliteRecord] = []

    def another_worker_before_a_second_read(statement: str) -> None:
        if statement.startswith("--"):  # a part of the statement before (the pragma function)
            return
        statements.append(statement)
        if len(statements) == 2:
            made.append(SqliteRecord(str(path)))

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.set_trace_callback(another_worker_before_a_second_read)
        owned = SqliteRecord._check_owned(conn)
    finally:
        conn.close()
        for record in made:
            asyncio.run(record.close())
    assert (owned, len(statements)) == (True, 1)  # one snapshot: the file as it was, still empty


def test_two_workers_opening_a_new_file_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "fresh.db")
    opened = [start_python(READER, path, "x", "1") for _ in range(4)]
    for process in opened:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert json.loads(out) == {"found": {}, "elsewhere": 0}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
