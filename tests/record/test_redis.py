"""The Redis record on a real redis-server on loopback: shared by two gateway processes' records, a TTL
on every key, no identifier in clear; the server stopped or hung mid-run reads as empty within the
timeout with one warning, and started again it is used again."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from gateway_mw.record.redis import KEY_PREFIX, MAX_CONNECTIONS, RedisRecord

from .support import RedisServer, record_warnings


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
    record = RedisRecord(redis_server.url, timeout=timeout)
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
    back = [r for r in caplog.records if "answers again" in r.getMessage()]
    assert len(back) == 2 and all(r.levelno == logging.INFO for r in back)


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
