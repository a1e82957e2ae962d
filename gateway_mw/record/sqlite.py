"""The record in a SQLite file, shared by the processes of one host (gunicorn workers)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

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
    log,
)

__all__ = ["PRUNE_FRACTION", "SqliteRecord"]

_T = TypeVar("_T")

PRUNE_FRACTION = 64
"""Each process prunes after writing 1/64 of a bound (entries or bytes) since its last pruning: the
pruning's full count is paid once per that many writes, and the file stays within its bounds plus
1/64 of them per writing process."""
_SCHEMA_VERSION = 1
_TABLES = {"record", "record_age"}
_OPEN_TIMEOUT = 5.0  # workers starting together queue for the lock that switches the file to WAL
_IN_CHUNK = 500  # bound parameters per statement, below SQLite's smallest limit (999)
_JOURNAL_LIMIT = 64 * 1024 * 1024  # the WAL file is cut back to this after a checkpoint
_LOCK_SHARE = 0.8  # of the time left to an operation, what it may spend waiting for a lock


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction that takes the file's write lock at once (waiting up to the busy timeout)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _switch_to_wal(conn: sqlite3.Connection) -> str:
    """``PRAGMA journal_mode=WAL``, tried again while another process holds the new file's lock:
    SQLite answers "locked" at once there, without waiting its busy timeout (workers starting together)."""
    deadline = time.monotonic() + _OPEN_TIMEOUT
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class SqliteRecord(RecordBase):
    """One table: the storage key, the value, its expiry (wall-clock time, as processes and restarts
    share it) and its size, with an index on (expires, size) so that pruning reads the index alone.

    Work runs off the event loop in two threads per process, each with its own connection: reads on
    one, writes and pruning on the other, so that a read never queues behind a write (WAL lets them
    run side by side). Bounds are kept by pruning in the background: expired rows, then the oldest
    beyond ``max_entries`` or ``max_bytes``, once per 1/``PRUNE_FRACTION`` of a bound written."""

    kind = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl: float = DEFAULT_TTL,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        max_pending_writes: int = DEFAULT_MAX_PENDING_WRITES,
        warn_interval: float = WARN_INTERVAL,
        clock: Callable[[], float] = time.time,
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
        self.path = os.path.abspath(os.fspath(path))
        self.max_entries = int(max_entries)
        self.max_bytes = int(max_bytes)
        self.max_entry_bytes = min(self.max_entry_bytes, self.max_bytes)  # a stored entry always fits
        self._clock = clock
        self._prune_entries = max(1, self.max_entries // PRUNE_FRACTION)
        self._prune_bytes = max(1, self.max_bytes // PRUNE_FRACTION)
        self._since_prune = (0, 0)
        self._pruning = False
        self._pid = os.getpid()
        self._executors: dict[str, ThreadPoolExecutor] = {}
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        try:
            self._setup()
        except (OSError, sqlite3.Error) as exc:
            raise ValueError(f"reasoning record: cannot open sqlite:{self.path}: {exc}") from exc

    @property
    def label(self) -> str:
        return f"sqlite {self.path}"

    def _setup(self) -> None:
        """Create the directory (0700) and the file (0600: it holds model reasoning) when absent, switch
        it to WAL, create the table or check that it is this record's, and prune it once."""
        directory = os.path.dirname(self.path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        mode = stat.S_IMODE(os.stat(self.path).st_mode)
        if mode & 0o077:  # an existing file: its mode is the operator's to set, but worth a word
            log.warning("reasoning record file %s is open to other users (mode %04o)", self.path, mode)
        conn = sqlite3.connect(self.path, timeout=_OPEN_TIMEOUT, isolation_level=None)
        try:
            self._check_owned(conn)  # before anything is written: the path may be a mistake
            journal = _switch_to_wal(conn)
            if journal.lower() != "wal":
                raise sqlite3.OperationalError(f"the file cannot use WAL (journal_mode stays {journal})")
            with _transaction(conn):
                if self._check_owned(conn):  # again under the write lock: another worker may have been first
                    conn.execute(
                        "CREATE TABLE record (key BLOB PRIMARY KEY, value BLOB NOT NULL,"
                        " expires REAL NOT NULL, size INTEGER NOT NULL)"
                    )
                    conn.execute("CREATE INDEX record_age ON record (expires, size)")
                    conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            self.counts.evicted += self._prune_rows(conn, self._clock())
        finally:
            conn.close()

    @staticmethod
    def _check_owned(conn: sqlite3.Connection) -> bool:
        """True for an empty file, False for this record's; raises for anything else."""
        # One statement, so one snapshot: another worker may create the record between two reads.
        listed, version = conn.execute(
            "SELECT (SELECT group_concat(name, char(31)) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'),"
            " (SELECT user_version FROM pragma_user_version)"
        ).fetchone()
        names = set(listed.split("\x1f")) if listed else set()
        if not names and version == 0:
            return True
        if names != _TABLES or version != _SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"the file holds something other than a reasoning record of this version"
                f" (tables {sorted(names)}, user_version {version}); give a new path"
            )
        return False

    # The backend's operations, on the event loop.

    async def _fetch(self, skeys: list[bytes]) -> list[bytes | None]:
        deadline = time.monotonic() + self.timeout
        return await self._run("read", self._read_rows, skeys, self._clock(), deadline)

    async def _store(self, items: list[tuple[bytes, bytes]]) -> None:
        deadline = time.monotonic() + self.write_timeout
        await self._run("write", self._write_rows, items, self._clock() + self.ttl, deadline)

    def _stored(self, items: list[tuple[bytes, bytes]]) -> None:
        entries, size = self._since_prune
        self._since_prune = (entries + len(items), size + sum(len(value) for _, value in items))
        self._prune_when_due()

    def _prune_when_due(self) -> None:
        """One pruning at a time per process; writes during one count towards the next."""
        entries, size = self._since_prune
        if (entries >= self._prune_entries or size >= self._prune_bytes) and not self._pruning and not self._closed:
            self._pruning = True
            self._since_prune = (0, 0)
            self._spawn(self._prune())

    async def prune(self) -> int:
        """Prune now: expired rows, then the oldest beyond the bounds (their number is returned). It
        also happens on its own, in the background, as writes add up; this one raises what fails."""
        evicted = await self._run("write", self._prune_now)
        self.counts.evicted += evicted
        return evicted

    async def _prune(self) -> None:
        # Not under the timeout: it runs after the writes, in the background, bounded by the file's size.
        try:
            evicted = await self._run("write", self._prune_now)
        except Exception as exc:
            self._failed("write", exc)
        else:
            self.counts.evicted += evicted
        finally:
            self._pruning = False
        self._prune_when_due()

    async def _close(self) -> None:
        executors, self._executors = self._executors, {}
        with self._lock:
            connections, self._connections = self._connections, []

        def release() -> None:
            for executor in executors.values():
                executor.shutdown(wait=True)
            for conn in connections:
                conn.close()

        await asyncio.to_thread(release)

    # In the worker threads.

    async def _run(self, which: str, job: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._executor(which), job, *args)

    def _executor(self, which: str) -> ThreadPoolExecutor:
        if os.getpid() != self._pid:
            # A forked child (gunicorn --preload) has none of its parent's threads, and must not use
            # the parent's connections: it starts its own, and leaves the parent's alone.
            self._pid = os.getpid()
            self._executors = {}
            self._local = threading.local()
            self._connections = []
            self._lock = threading.Lock()
        executor = self._executors.get(which)
        if executor is None:
            executor = ThreadPoolExecutor(1, thread_name_prefix=f"gateway_mw-record-{which}")
            self._executors[which] = executor
        return executor

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # Closed at close() from another thread, after this thread has stopped.
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA synchronous = NORMAL")  # in WAL: durable but for the last commits on power loss
            conn.execute(f"PRAGMA journal_size_limit = {_JOURNAL_LIMIT}")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _within(self, deadline: float | None) -> sqlite3.Connection:
        """This thread's connection, waiting for a lock only until shortly before ``deadline``, when the
        event loop stops waiting: a job given up on neither starts late nor lands after it was counted
        as failed (SQLite's last try for a lock comes at the end of its wait, hence the margin)."""
        conn = self._connection()
        if deadline is None:
            wait = max(self.write_timeout, _OPEN_TIMEOUT)
        else:
            wait = (deadline - time.monotonic()) * _LOCK_SHARE
            if wait <= 0:
                raise TimeoutError("no time left when its turn came")
        conn.execute(f"PRAGMA busy_timeout = {max(1, int(wait * 1000))}")
        return conn

    def _read_rows(self, skeys: list[bytes], now: float, deadline: float) -> list[bytes | None]:
        conn = self._within(deadline)
        found: dict[bytes, bytes] = {}
        for start in range(0, len(skeys), _IN_CHUNK):
            chunk = skeys[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT key, value FROM record WHERE key IN ({marks}) AND expires > ?", (*chunk, now))
            found.update(rows.fetchall())
        return [found.get(skey) for skey in skeys]

    def _write_rows(self, items: list[tuple[bytes, bytes]], expires: float, deadline: float) -> None:
        conn = self._within(deadline)
        with _transaction(conn):
            conn.executemany(
                "INSERT OR REPLACE INTO record (key, value, expires, size) VALUES (?, ?, ?, ?)",
                [(skey, value, expires, len(value)) for skey, value in items],
            )

    def _prune_now(self) -> int:
        return self._prune_rows(self._within(None), self._clock())

    def _prune_rows(self, conn: sqlite3.Connection, now: float) -> int:
        """Delete the expired rows, then the oldest beyond the bounds; the number of the latter."""
        with _transaction(conn):
            conn.execute("DELETE FROM record WHERE expires <= ?", (now,))
            count, total = conn.execute("SELECT count(*), total(size) FROM record").fetchone()
            over_entries, over_bytes = count - self.max_entries, total - self.max_bytes
            if over_entries <= 0 and over_bytes <= 0:
                return 0
            victims: list[tuple[int]] = []
            oldest = conn.execute("SELECT rowid, size FROM record ORDER BY expires")
            for rowid, size in oldest:  # stops once within bounds: at most `count` rows
                victims.append((rowid,))
                over_entries -= 1
                over_bytes -= size
                if over_entries <= 0 and over_bytes <= 0:
                    break
            oldest.close()
            conn.executemany("DELETE FROM record WHERE rowid = ?", victims)
        return len(victims)
