"""The reasoning record's cost per request: a read and a write on each backend, next to a request
through a proxy measured in the same run.

One process, one event loop; wall time per operation (what a request waits for: SQLite's thread hop
and Redis's round trip are in it), median (min–max) of interleaved rounds, each round a fixed number
of operations one after another. The baseline is one non-streaming chat request through an aiohttp
proxy on loopback (upstream, proxy and client all in this process); a second reference is
``json.loads`` of a 200 KB body. Figures are also given as ratios to the baseline.

A read asks for 8 keys of which 4 are there (the identifiers of a conversation's history); a write
stores one response's entries: 3 keys (a tool-call id, an ``rs_`` id, a digest of the conversation)
of 8 KiB each. Redis is measured when ``redis-server`` and the ``redis`` client are installed: a
server of its own on a free loopback port, without persistence, stopped at the end.

    python bench/record.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from common import Spread, free_port, interleaved, wait_ready

from gateway_mw.record import MemoryRecord, RecordBase, SqliteRecord

ROUTE = "/v1/chat/completions"
ENTRY = bytes(range(256)) * 32  # 8 KiB: a turn's reasoning and the model's text
WRITE_KEYS = 3
READ_KEYS = 8
SCOPE = bytes(32)


def _request_body() -> bytes:
    """A conversation of 16 turns, ~4 KB."""
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "a sentence of the conversation " * 8}
        for i in range(16)
    ]
    return json.dumps({"model": "bench-model", "messages": messages}).encode()


def _completion_body() -> bytes:
    message = {"role": "assistant", "content": "the answer " * 100, "reasoning_content": "the reasoning " * 60}
    return json.dumps(
        {"id": "chatcmpl-1", "object": "chat.completion", "model": "bench-model", "choices": [{"message": message}]}
    ).encode()


def _json_body(size: int = 200_000) -> bytes:
    """A request body of about ``size`` bytes: a long conversation."""
    item = {"role": "assistant", "content": "words of an answer " * 20, "tool_calls": [{"id": "call_1", "n": 1}]}
    return json.dumps({"messages": [item] * (size // (len(json.dumps(item)) + 2))}).encode()


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


class Proxied:
    """An upstream, a proxy forwarding to it with its own ClientSession, and a client: the baseline."""

    async def start(self) -> None:
        completion = _completion_body()

        async def upstream(request: web.Request) -> web.Response:
            await request.read()
            return web.Response(body=completion, content_type="application/json")

        async def proxy(request: web.Request) -> web.Response:
            body = await request.read()
            async with self.forward.post(self.upstream_url + ROUTE, data=body, headers=request.headers) as resp:
                return web.Response(body=await resp.read(), status=resp.status, content_type=resp.content_type)

        up, down = web.Application(), web.Application()
        up.router.add_post(ROUTE, upstream)
        down.router.add_post(ROUTE, proxy)
        self.forward = aiohttp.ClientSession()
        self.client = aiohttp.ClientSession()
        self.body = _request_body()
        up_runner, self.upstream_url = await _serve(up)
        down_runner, self.proxy_url = await _serve(down)
        self.runners = [down_runner, up_runner]

    async def request(self) -> None:
        async with self.client.post(self.proxy_url + ROUTE, data=self.body) as resp:
            await resp.read()
            assert resp.status == 200

    async def stop(self) -> None:
        for session in ("client", "forward"):
            if hasattr(self, session):
                await getattr(self, session).close()
        for runner in getattr(self, "runners", []):
            await runner.cleanup()


@contextmanager
def redis_server(directory: Path) -> Iterator[str | None]:
    """The URL of a redis-server of this run's own, or None when it or the client is missing."""
    executable = shutil.which("redis-server")
    try:
        import redis  # noqa: F401 - only whether the client is installed
    except ImportError:
        executable = None
    if executable is None:
        yield None
        return
    port = free_port()
    server = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(directory), "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        asyncio.run(wait_ready(port))
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(10)


def _writes(n: int) -> list[dict[str, bytes]]:
    return [{f"{kind}_{i:024x}": ENTRY for kind in ("call", "rs", "conv")[:WRITE_KEYS]} for i in range(n)]


def _reads(n: int) -> list[list[str]]:
    """Each read: 4 keys written before the run, 4 never written."""
    return [[f"call_{(i + j) % n:024x}" for j in range(READ_KEYS // 2)] + [f"absent_{i}_{j}" for j in range(4)]
            for i in range(n)]  # fmt: skip


def run(rounds: int = 7, quick: bool = False) -> dict[str, Any]:
    ops = 100 if quick else 1000
    loop = asyncio.new_event_loop()
    results: dict[str, Any] = {"ops": ops, "redis": None}
    with tempfile.TemporaryDirectory() as tmp, redis_server(Path(tmp)) as redis_url:
        proxied = Proxied()
        records: dict[str, RecordBase] = {
            "memory": MemoryRecord(max_entries=100_000, max_bytes=1 << 30),
            "sqlite": SqliteRecord(Path(tmp) / "record.db", max_entries=100_000, max_bytes=1 << 30, timeout=5),
        }
        if redis_url is not None:
            from gateway_mw.record.redis import RedisRecord

            records["redis"] = RedisRecord(redis_url, timeout=5)
            results["redis"] = redis_url
        try:
            loop.run_until_complete(proxied.start())
            times = _measure(loop, proxied, records, rounds, ops)
        finally:
            for record in records.values():
                loop.run_until_complete(record.close())
            loop.run_until_complete(proxied.stop())
            loop.close()
    for name, record in records.items():
        assert record.counts.backend_errors == 0, (name, record.counts)
        assert record.counts.hits == record.counts.misses, (name, record.counts)  # 4 of 8 found, always
    base = times["baseline"]
    for name, values in times.items():
        results[name] = {
            "us": Spread.of([v * 1e6 for v in values]),
            "ratio": Spread.of([v / b for v, b in zip(values, base, strict=True)]),
        }
    return results


def _measure(
    loop: asyncio.AbstractEventLoop, proxied: Proxied, records: dict[str, RecordBase], rounds: int, ops: int
) -> dict[str, list[float]]:
    """Seconds per operation of each variant, one value per round."""
    writes, reads = _writes(ops), _reads(ops)
    for record in records.values():  # what the reads find
        for entries in writes:
            loop.run_until_complete(record.put(SCOPE, entries))
    body = _json_body()

    def timed(op: Callable[[int], Awaitable[object]]) -> Callable[[], float]:
        async def batch() -> float:
            start = time.perf_counter()
            for i in range(ops):
                await op(i)
            return (time.perf_counter() - start) / ops

        return lambda: loop.run_until_complete(batch())

    def parse() -> float:
        start = time.perf_counter()
        for _ in range(ops // 10):
            json.loads(body)
        return (time.perf_counter() - start) / (ops // 10)

    variants: dict[str, Callable[[], float]] = {
        "baseline": timed(lambda i: proxied.request()),
        "json": parse,
    }
    for name, record in records.items():
        variants[f"{name} get"] = timed(lambda i, r=record: r.get(SCOPE, reads[i]))
        variants[f"{name} put"] = timed(lambda i, r=record: r.put(SCOPE, writes[i]))
    return interleaved(variants, rounds)


LABELS = {
    "baseline": "a chat request through an aiohttp proxy (the baseline)",
    "json": "`json.loads` of a 200 KB body",
    "memory get": f"memory: read {READ_KEYS} keys, 4 found",
    "memory put": f"memory: write {WRITE_KEYS} entries of 8 KiB",
    "sqlite get": f"SQLite: read {READ_KEYS} keys, 4 found",
    "sqlite put": f"SQLite: write {WRITE_KEYS} entries of 8 KiB",
    "redis get": f"Redis on loopback: read {READ_KEYS} keys, 4 found",
    "redis put": f"Redis on loopback: write {WRITE_KEYS} entries of 8 KiB",
}


def table(rounds: int = 7, quick: bool = False) -> str:
    result = run(rounds, quick)
    lines = [
        f"One process, one event loop, wall time per operation, median (min–max) of {rounds} interleaved rounds"
        f" of {result['ops']:,} operations each; the ratio is to the proxied request of the same round:",
        "",
        "| operation | per operation | ratio to the baseline |",
        "|---|---|---|",
    ]
    lines += [
        f"| {label} | {result[name]['us'].fmt()} µs | {result[name]['ratio'].fmt('.3f')} |"
        for name, label in LABELS.items()
        if name in result
    ]
    if result["redis"] is None:
        lines += ["", "Redis not measured in this run: `redis-server` or the `redis` client is not installed."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(table(2 if args.quick else max(3, args.rounds), args.quick))


if __name__ == "__main__":
    main()
