"""The reasoning record: what the gateway moved out of a response, found again by the identifiers the
client echoes in its next request.

Entries are opaque bytes, stored under a digest of (scope, key) so that neither appears in the store,
for a TTL, within bounds; a failing store reads as empty and never fails or holds up a request.

>>> import asyncio
>>> from gateway_mw.record import open_record
>>> async def demo() -> dict[str, bytes]:
...     record = open_record("memory")
...     await record.put(b"client-a", {"call_1": b"entry"})
...     found = await record.get(b"client-a", ["call_1", "call_2"])
...     await record.close()
...     return found
>>> asyncio.run(demo())
{'call_1': b'entry'}

Backends: ``memory`` (this process), ``sqlite:PATH`` (the processes of one host), ``redis://`` (any
number of hosts; needs the ``redis`` extra, imported only then). This package imports without aiohttp.
"""

from __future__ import annotations

import re

from .base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_ENTRY_BYTES,
    DEFAULT_MAX_PENDING_WRITES,
    DEFAULT_TIMEOUT,
    DEFAULT_TTL,
    DEFAULT_WRITE_TIMEOUT,
    WARN_INTERVAL,
    ReasoningRecord,
    RecordBase,
    RecordCounts,
    storage_key,
)
from .memory import MemoryRecord
from .sqlite import PRUNE_FRACTION, SqliteRecord

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_ENTRY_BYTES",
    "DEFAULT_MAX_PENDING_WRITES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TTL",
    "DEFAULT_WRITE_TIMEOUT",
    "PRUNE_FRACTION",
    "SPEC_FORMS",
    "WARN_INTERVAL",
    "MemoryRecord",
    "ReasoningRecord",
    "RecordBase",
    "RecordCounts",
    "SqliteRecord",
    "open_record",
    "storage_key",
]

SPEC_FORMS = "'memory', 'off', 'sqlite:PATH' or 'redis://HOST:PORT/DB' (also rediss://… and unix://PATH)"
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_USERINFO = re.compile(r"(?<=://)[^/@]*@")


def open_record(
    spec: str = "memory",
    *,
    ttl: float = DEFAULT_TTL,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    timeout: float = DEFAULT_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
) -> ReasoningRecord | None:
    """The record the setting ``reasoning_store`` names, or None for ``off``.

    ``max_entries`` and ``max_bytes`` bound the memory record (per process) and the SQLite file (all
    its processes together); Redis is bounded by its own ``maxmemory``. Raises ValueError for a spec
    of no known form, a bad value, a SQLite file that cannot be opened or holds something else, and a
    Redis URL when the ``redis`` extra is not installed."""
    form = spec.strip()
    if form == "off":
        return None
    if form == "memory":
        return MemoryRecord(
            ttl=ttl,
            max_entries=max_entries,
            max_bytes=max_bytes,
            max_entry_bytes=max_entry_bytes,
            timeout=timeout,
            write_timeout=write_timeout,
        )
    if form.startswith("sqlite:"):
        path = form[len("sqlite:") :]
        if not path or path == ":memory:" or (path.startswith("//") and not path.startswith("///")):
            raise ValueError(
                f"reasoning_store {form!r}: sqlite:PATH takes a file path (sqlite:/var/lib/gateway/record.db,"
                " sqlite:record.db); for a record in this process only, use 'memory'"
            )
        return SqliteRecord(
            path,
            ttl=ttl,
            max_entries=max_entries,
            max_bytes=max_bytes,
            max_entry_bytes=max_entry_bytes,
            timeout=timeout,
            write_timeout=write_timeout,
        )
    if form.startswith(_REDIS_SCHEMES):
        from .redis import RedisRecord  # imports the redis client, an optional dependency

        return RedisRecord(form, ttl=ttl, max_entry_bytes=max_entry_bytes, timeout=timeout, write_timeout=write_timeout)
    raise ValueError(f"reasoning_store must be {SPEC_FORMS}; got {_USERINFO.sub('***@', form)!r}")
