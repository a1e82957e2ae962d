"""The Redis record on a real redis-server on loopback: shared by two gateway processes' records, a TTL
on every key, no identifier in clear; the server stopped or hung mid-run reads as empty within the
timeout with one warning, and started again it is used again."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from gateway_mw.record import storage_key
from gateway_mw.record.redis import KEY_PREFIX, MAX_CONNECTIONS, RedisRecord

from .support import RedisServer, free_port, record_warnings


def raw_client(server: RedisServer):  # type: ignore[no-untyped-def]
    import redis

    return redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)


async def test_two_processes_share_entries_and_every_key_expires(redis_server: RedisServer) -> None:
    first, second = RedisRecord(redis_server.url, ttl=3600), RedisRecord(redis_server.url, ttl=3600)
    try:
        await first.put(b"scope-secret-1", {"call_secret_a": b"entry a", "rs_secret_b": b"entry b"})
        first.put_soon(b"scope-secret-2", {"call_secret_a": b"other scope"})
        await first.drain()
        assert await second.get(b"scope-secret-1", ["call_secret_a", "rs_secret_b", "call_x"]) == {
            "call_secret_a": b"entry a",
            "rs_secret_b": b"entry b",
        }
        assert await second.get(b"scope-secret-2", ["call_secret_a", "rs_secret_b"]) == {
            "call_secret_a": b"other scope"
        }
        assert (second.counts.hits, second.counts.misses) == (3, 2) and first.counts.written == 3
    finally:
        await first.close()
        await second.close()
    with raw_client(redis_server) as raw:
        keys = list(raw.scan_iter(count=1000))
        assert len(keys) == 3
        for key in keys:
            assert key.startswith(KEY_PREFIX) and len(key) == len(KEY_PREFIX) + 32
            assert b"secret" not in key
            assert 3600_000 - 60_000 < raw.pttl(key) <= 3600_000  # a TTL on every key, the record's
        assert sorted(raw.mget(keys)) == [b"entry a", b"entry b", b"other scope"]


async def test_a_server_that_stops_or_hangs_reads_as_empty_within_the_timeout(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway_mw.record")
    timeout = 0.2
    record = RedisRecord(redis_server.url, timeout=timeout, write_timeout=timeout)
    try:
        await record.put(b"s", {"k": b"v"})
        assert await record.get(b"s", ["k"]) == {"k": b"v"}

        redis_server.stop()  # refused at once
        assert await record.get(b"s", ["k"]) == {}
        await record.put(b"s", {"k2": b"v2"})  # dropped, not raised
        assert record.counts.backend_errors == 2

        redis_server.start()  # again, on the same port, empty: nothing was saved
        assert await record.get(b"s", ["k"]) == {}
        await record.put(b"s", {"k3": b"v3"})
        assert await record.get(b"s", ["k3"]) == {"k3": b"v3"}
        assert record.counts.backend_errors == 2

        redis_server.pause()  # accepts nothing and answers nothing: only the timeout ends a wait
        try:
            for _ in range(2):
                started = time.monotonic()
                assert await asyncio.wait_for(record.get(b"s", ["k3"]), 60) == {}  # else it would wait for ever
                assert time.monotonic() - started >= 0.8 * timeout  # ended by the timeout
            record.put_soon(b"s", {"k4": b"v4"})
            await record.drain()
        finally:
            redis_server.resume()
        assert record.counts.backend_errors == 5
        assert await record.get(b"s", ["k3"]) == {"k3": b"v3"}
    finally:
        await record.close()

    warnings = record_warnings(caplog)
    assert len(warnings) == 1  # one in the interval, however many failures
    text = warnings[0].getMessage()
    assert f"redis 127.0.0.1:{redis_server.port}/0" in text and "ConnectionError" in text
    # One line says it answers again after the warning; the second outage, within the interval, is
    # counted for the next warning and its end is not announced either.
    back = [r for r in caplog.records if "answers again" in r.getMessage()]
    assert len(back) == 1 and back[0].levelno == logging.INFO


async def test_a_restart_between_two_requests_costs_no_error(redis_server: RedisServer) -> None:
    record = RedisRecord(redis_server.url, timeout=0.5)
    try:
        await record.put(b"s", {"k": b"v"})  # its connection now idle in the pool
        redis_server.stop()
        redis_server.start()
        await record.put(b"s", {"k2": b"v2"})  # the dead connection found, and the write retried once
        assert await record.get(b"s", ["k", "k2"]) == {"k2": b"v2"}
        assert record.counts.backend_errors == 0
    finally:
        await record.close()


async def test_a_server_down_at_start_only_means_misses(redis_server: RedisServer) -> None:
    redis_server.stop()
    record = RedisRecord(redis_server.url, timeout=0.2)
    try:
        assert await record.get(b"s", ["k"]) == {}
        redis_server.start()
        await record.put(b"s", {"k": b"v"})
        assert await record.get(b"s", ["k"]) == {"k": b"v"}
        assert record.counts.backend_errors == 1
    finally:
        await record.close()


async def test_many_reads_at_once_share_the_pool(redis_server: RedisServer) -> None:
    # More reads at once than the pool has connections: they wait for one, none fails. (The timeout is
    # generous: this is about the pool, and 64 new connections take a while on a loaded machine.)
    record = RedisRecord(redis_server.url, timeout=10)
    try:
        await record.put(b"s", {f"k{i}": b"v%d" % i for i in range(10)})
        results = await asyncio.gather(*(record.get(b"s", [f"k{i % 10}"]) for i in range(300)))
        assert results == [{f"k{i % 10}": b"v%d" % (i % 10)} for i in range(300)]
        assert record.counts.backend_errors == 0
        with raw_client(redis_server) as raw:
            assert 1 < len(raw.client_list()) - 1 <= MAX_CONNECTIONS  # the record's, less this one
    finally:
        await record.close()


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every line logged, with its arguments, as one text."""
    return "\n".join(f"{r.name} {r.levelname} {r.getMessage()}" for r in caplog.records)


def assert_nothing_secret(text: str, scope: bytes, key: str, entry: bytes) -> None:
    skey = storage_key(scope, key)
    for secret in (entry.decode(), key, scope.decode(), "gateway_mw:record:", repr(KEY_PREFIX + skey)[2:40]):
        assert secret not in text
    for piece in (skey[:8], skey[8:16]):  # the raw key bytes, however they were turned into text
        assert piece.decode("latin-1") not in text and piece.hex() not in text and repr(piece)[2:-1] not in text


@pytest.mark.parametrize("refusal", ["replica", "full"])
async def test_a_refused_write_is_logged_without_its_entry_or_key(
    redis_server: RedisServer, refusal: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with raw_client(redis_server) as raw:
        if refusal == "replica":  # of a primary that is not there: read-only, as a replica is by default
            raw.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))
        else:
            raw.config_set("maxmemory-policy", "noeviction")
            raw.config_set("maxmemory", "1")
    record = RedisRecord(redis_server.url, timeout=2)
    entry = b'{"reasoning":"the secret plan of alice","original":"<think>the secret plan</think>ok"}'
    try:
        await record.put(b"scope-of-alice", {"call:alice-secret-id": entry})
        assert await record.get(b"scope-of-alice", ["call:alice-secret-id"]) == {}
    finally:
        await record.close()
    [warning] = record_warnings(caplog)
    said = (
        "ReadOnlyError: the server is a read-only replica"
        if refusal == "replica"
        else "OutOfMemoryError: the server is full"
    )
    assert said in warning.getMessage()
    assert_nothing_secret(logged(caplog), b"scope-of-alice", "call:alice-secret-id", entry)


class RefusingRedis:
    """A server that speaks Redis's protocol and refuses every write as a read-only replica does (a
    fake of the server, so that the client's own handling of a pipeline's error is what is tested)."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        return f"redis://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/0"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readline()
                if not head:
                    return
                args = []
                for _ in range(int(head[1:])):
                    size = int((await reader.readline())[1:])
                    args.append((await reader.readexactly(size + 2))[:-2])
                command = args[0].upper()
                if command == b"HELLO":  # the client's newer versions ask for RESP3
                    writer.write(b"%%1\r\n$5\r\nproto\r\n:%s\r\n" % args[1])
                elif command == b"SET":
                    writer.write(b"-READONLY You can't write against a read only replica.\r\n")
                elif command == b"MGET":
                    writer.write(b"*%d\r\n" % (len(args) - 1) + b"$-1\r\n" * (len(args) - 1))
                else:
                    writer.write(b"+OK\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


async def test_a_refused_write_is_logged_without_its_entry_or_key_by_a_fake_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    entry = b'{"reasoning":"the secret plan of alice"}'
    async with RefusingRedis() as url:
        record = RedisRecord(url, timeout=2)
        try:
            await record.put(b"scope-of-alice", {"call:alice-secret-id": entry, "call:other": b"another secret"})
        finally:
            await record.close()
    [warning] = record_warnings(caplog)
    assert "ReadOnlyError: the server is a read-only replica" in warning.getMessage()
    assert record.counts.backend_errors == 1
    assert_nothing_secret(logged(caplog), b"scope-of-alice", "call:alice-secret-id", entry)
    assert "another secret" not in logged(caplog)
