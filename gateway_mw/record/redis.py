"""The record in Redis, shared by every gateway process that reaches the server (the ``redis`` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from .base import (
    DEFAULT_MAX_ENTRY_BYTES,
    DEFAULT_MAX_PENDING_WRITES,
    DEFAULT_TIMEOUT,
    DEFAULT_TTL,
    DEFAULT_WRITE_TIMEOUT,
    WARN_INTERVAL,
    RecordBase,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["KEY_PREFIX", "MAX_CONNECTIONS", "RedisRecord"]

KEY_PREFIX = b"gateway_mw:record:"
"""Every key this record writes: the prefix, then the 32-byte storage key."""
MAX_CONNECTIONS = 64
"""Connections per process; a read or write that finds none free waits for one up to its timeout."""
INSTALL_HINT = "pip install 'gateway_mw[redis]'"
_REFUSALS = {
    "ReadOnlyError": "the server is a read-only replica",
    "OutOfMemoryError": "the server is full (maxmemory reached, and its policy evicts nothing)",
    "AuthenticationError": "the server refused the password, or wants one",
    "NoPermissionError": "the server's ACL refuses the command",
    "BusyLoadingError": "the server is loading its data",
}
"""What a warning says of the server's refusals, by the client's class for them: never the message,
which quotes a pipeline's failing command (its key and entry)."""


class RedisRecord(RecordBase):
    """``SET key value PX ttl`` for each entry, all of one write in one pipelined round trip; ``MGET``
    for a read. Every key carries the TTL, so Redis expires entries itself; its own ``maxmemory`` and
    eviction policy bound it (``max_entries`` and ``max_bytes`` do not apply here).

    Connections are made on first use, so a server that is down at start only means misses until it
    is up. A broken connection is retried once at once (a server restart, an idle connection closed),
    all within the operation's timeout."""

    kind = "redis"

    def __init__(
        self,
        url: str,
        *,
        ttl: float = DEFAULT_TTL,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        max_pending_writes: int = DEFAULT_MAX_PENDING_WRITES,
        warn_interval: float = WARN_INTERVAL,
    ) -> None:
        super().__init__(
            ttl=ttl,
            max_entry_bytes=max_entry_bytes,
            timeout=timeout,
            write_timeout=write_timeout,
            max_pending_writes=max_pending_writes,
            warn_interval=warn_interval,
        )
        try:  # an optional dependency: the rest of the package works without it
            from redis.asyncio import BlockingConnectionPool, Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
            from redis.exceptions import ConnectionError as RedisConnectionError
            from redis.exceptions import ResponseError
        except ImportError:
            raise ValueError(f"reasoning record: a redis:// store needs the redis client: {INSTALL_HINT}") from None
        try:
            path = urlsplit(url).path
        except ValueError as exc:  # an address it cannot split (a bracket left open)
            raise ValueError(f"reasoning record: not a usable Redis URL: {exc}") from None
        if url.startswith(("redis://", "rediss://")) and path not in ("", "/") and not path[1:].isdigit():
            # the client would take database 0 for it, silently
            raise ValueError(f"reasoning record: a Redis URL ends in /DB, a database number; got {path!r}")
        try:
            pool = BlockingConnectionPool.from_url(
                url,
                max_connections=MAX_CONNECTIONS,
                # The longer of the two: a read is given up on at its own timeout all the same.
                timeout=max(self.timeout, self.write_timeout),
                socket_timeout=max(self.timeout, self.write_timeout),
                socket_connect_timeout=max(self.timeout, self.write_timeout),
                retry=Retry(NoBackoff(), 1),
                retry_on_error=[RedisConnectionError],  # what redis 5 retries only when told (6 by default)
            )
        except (ValueError, TypeError) as exc:
            # The parser's messages name the part at fault, never the password.
            raise ValueError(f"reasoning record: not a usable Redis URL: {exc}") from None
        if pool.connection_kwargs.get("decode_responses"):  # a URL's query can ask for it
            raise ValueError("reasoning record: entries are bytes; drop decode_responses from the Redis URL")
        self._refused = ResponseError
        self._client: Redis = Redis.from_pool(pool)
        self._ttl_ms = max(1, round(self.ttl * 1000))
        where = pool.connection_kwargs
        if "path" in where:
            self._where = f"unix:{where['path']}?db={where.get('db', 0)}"
        else:
            self._where = f"{where.get('host', 'localhost')}:{where.get('port', 6379)}/{where.get('db', 0)}"

    @property
    def label(self) -> str:
        return f"redis {self._where}"

    def _reason(self, exc: BaseException) -> str:
        name = type(exc).__name__
        if name in _REFUSALS:
            return f"{name}: {_REFUSALS[name]}"
        message = str(exc)
        if isinstance(exc, self._refused):
            # "Command # 1 (SET <key> <entry> PX …) of pipeline caused error: MISCONF …": its code only
            code = getattr(exc, "status_code", None) or message.rpartition("caused error: ")[2].split(" ", 1)[0]
            return f"{name}: {code}" if isinstance(code, str) and code.isalpha() and code.isupper() else name
        if "Command # " in message or "pipeline" in message:
            return name  # a command quoted: none of it is logged
        return super()._reason(exc)

    async def _fetch(self, skeys: list[bytes]) -> list[bytes | None]:
        # bytes: the client does not decode responses (refused in the URL)
        values = await self._client.mget([KEY_PREFIX + skey for skey in skeys])
        return cast("list[bytes | None]", values)

    async def _store(self, items: list[tuple[bytes, bytes]]) -> None:
        async with self._client.pipeline(transaction=False) as pipe:
            for skey, value in items:
                pipe.set(KEY_PREFIX + skey, value, px=self._ttl_ms)
            await pipe.execute()

    async def _close(self) -> None:
        await self._client.aclose()
