"""End to end through examples/proxy.py: streams/s, events/s, added latency per event, peak RSS.

One upstream process streams chat completion chunks (a reasoning block, then the answer); a proxy
process forwards them, once with gateway_mw and once without (the same proxy, the same upstream, the
same client load); the client, in this process, runs 1, 100 and 1,000 concurrent streams. Per
concurrency and proxy, two phases:

* throughput: the upstream sends as fast as it can; streams/s and (upstream) events/s;
* latency: the same concurrency, each stream paced so that all of them together stay at
  ``PACED_EVENTS_PER_S``, below saturation. Each chunk's ``id`` carries the upstream's send time (a
  monotonic clock shared by the processes of one machine), so the client measures how long each event
  took through the proxy; the added latency is the difference between the two proxies.

Loopback only; every run is bounded in count and time. Peak RSS is the proxy process's ``VmHWM``
(Linux), a fresh process per row.

    python bench/proxy.py [--events 40] [--streams 400] [--timeout 120]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples import proxy
from gateway_mw import ThinkExtractConfig

WORDS = [" step", " by", " step", " the", " sum", " is", " four"]


def _chunk(content: str) -> bytes:
    body = {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion.chunk",
        "created": 1730000000,
        "model": "bench-model",
        "choices": [{"index": 0, "delta": {"content": content}, "logprobs": None, "finish_reason": None}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def _tokens(n: int) -> list[str]:
    half = max(n // 2, 2)
    reasoning = ["<think>" + WORDS[0]] + [WORDS[i % len(WORDS)] for i in range(1, half - 1)] + [" done</think>"]
    return reasoning + [WORDS[i % len(WORDS)] for i in range(n - len(reasoning))]


async def _completions(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    n, interval = int(body.get("n", 40)), float(body.get("interval", 0))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for token in _tokens(n):
        if interval:
            await asyncio.sleep(interval)
        await resp.write(_chunk(token))
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


def _serve(app_factory: Any, args: tuple[Any, ...], ports: Any) -> None:
    async def main() -> None:
        runner = web.AppRunner(app_factory(*args), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=2048).start()
        ports.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


def _upstream_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _completions)
    return app


def _proxy_app(upstream: str, middleware: bool) -> web.Application:
    settings = proxy.Settings(upstream=upstream, middleware=middleware, think_extract=ThinkExtractConfig())
    return proxy.build_app(settings)


def _start(app_factory: Any, *args: Any) -> tuple[multiprocessing.Process, int]:
    # spawn, not fork: a forked child starts with the parent's pages, and its peak RSS with them.
    ctx = multiprocessing.get_context("spawn")
    ports: Any = ctx.Queue()
    process = ctx.Process(target=_serve, args=(app_factory, args, ports), daemon=True)
    process.start()
    return process, int(ports.get(timeout=30))


def _peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


async def _one_stream(
    session: aiohttp.ClientSession, url: str, n: int, latencies: list[int], interval: float = 0.0
) -> int:
    events = 0
    body = {"model": "bench-model", "stream": True, "n": n, "interval": interval}
    async with session.post(url, json=body) as resp:
        async for line in resp.content:
            if line.startswith(b"data: {"):
                now = time.monotonic_ns()
                sent = int(line[line.index(b"chatcmpl-") + 9 : line.index(b'"', line.index(b"chatcmpl-"))])
                latencies.append(now - sent)
                events += 1
    return events


async def _streams(
    session: aiohttp.ClientSession, url: str, concurrency: int, streams: int, n: int, interval: float
) -> tuple[float, int, list[int]]:
    """``streams`` streams over ``concurrency`` workers: (seconds, events received, latencies)."""
    latencies: list[int] = []
    remaining = streams
    received = 0

    async def worker(i: int) -> None:
        nonlocal remaining, received
        await asyncio.sleep(interval * i / concurrency)  # paced streams start spread over one interval
        while remaining > 0:
            remaining -= 1
            received += await _one_stream(session, url, n, latencies, interval)

    start = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return time.perf_counter() - start, received, sorted(latencies)


PACED_EVENTS_PER_S = 1000
"""Aggregate upstream rate of the latency phase: below what the proxy sustains, so that latency is
the time an event spends in the proxy, not in a queue."""


async def _load(url: str, concurrency: int, streams: int, n: int, timeout: float) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
        await _one_stream(session, url, n, [])  # warm up
        # Throughput: the upstream sends as fast as it can.
        elapsed, received, _ = await asyncio.wait_for(_streams(session, url, concurrency, streams, n, 0.0), timeout)
        # Latency: the same concurrency, each stream paced so the total stays at PACED_EVENTS_PER_S.
        paced_n = min(n, 5) if concurrency >= 1000 else min(n, 20)
        interval = max(concurrency / PACED_EVENTS_PER_S, 0.001)
        paced_streams = concurrency * max(1, 100 // concurrency)
        run = _streams(session, url, concurrency, paced_streams, paced_n, interval)
        _, _, latencies = await asyncio.wait_for(run, timeout)
    return {
        "seconds": elapsed,
        "streams": streams,
        "upstream_events": streams * n,
        "client_events": received,
        "streams_per_s": streams / elapsed,
        "events_per_s": streams * n / elapsed,
        "paced_interval_ms": interval * 1000,
        "latency_samples": len(latencies),
        "latency_p50_ms": latencies[len(latencies) // 2] / 1e6,
        "latency_p99_ms": latencies[int(len(latencies) * 0.99)] / 1e6,
    }


def run(
    concurrency: tuple[int, ...] = (1, 100, 1000),
    events: int = 40,
    streams: int | None = None,
    timeout: float = 120.0,
) -> list[dict[str, Any]]:
    """One row per (concurrency, proxy): with gateway_mw (``middleware=True``) and without.

    ``streams`` per run (at least ``concurrency``) defaults to ``max(200, 2 * concurrency)``; each
    stream carries ``events`` upstream events (at most 20 at 1,000 concurrent streams, to keep that
    run short).
    """
    upstream_process, upstream_port = _start(_upstream_app)
    upstream = f"http://127.0.0.1:{upstream_port}"
    rows: list[dict[str, Any]] = []
    try:
        for c in concurrency:
            n = min(events, 20) if c >= 1000 else events
            total = max(streams, c) if streams is not None else max(200, 2 * c)
            for middleware in (False, True):
                process, port = _start(_proxy_app, upstream, middleware)
                try:
                    url = f"http://127.0.0.1:{port}/v1/chat/completions"
                    row = asyncio.run(_load(url, c, total, n, timeout))
                    row.update(
                        concurrency=c,
                        middleware=middleware,
                        events_per_stream=n,
                        peak_rss_mb=_peak_rss_mb(process.pid or 0),
                    )
                    rows.append(row)
                finally:
                    process.terminate()
                    process.join(10)
    finally:
        upstream_process.terminate()
        upstream_process.join(10)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per concurrency, the proxy without → with gateway_mw."""
    lines = [
        "| concurrent streams | streams/s without → with | events/s without → with "
        "| latency per event p50 / p99, without → with | added p50 / p99 | peak RSS without → with |",
        "|---|---|---|---|---|---|",
    ]
    for c in sorted({r["concurrency"] for r in rows}):
        bare = next(r for r in rows if r["concurrency"] == c and not r["middleware"])
        mw = next(r for r in rows if r["concurrency"] == c and r["middleware"])
        rss = (
            f"{bare['peak_rss_mb']:.0f} → {mw['peak_rss_mb']:.0f} MB"
            if bare["peak_rss_mb"] is not None and mw["peak_rss_mb"] is not None
            else "n/a"
        )
        lines.append(
            f"| {c:,} ({bare['events_per_stream']}-event streams) "
            f"| {bare['streams_per_s']:,.0f} → {mw['streams_per_s']:,.0f} "
            f"| {bare['events_per_s']:,.0f} → {mw['events_per_s']:,.0f} "
            f"| {bare['latency_p50_ms']:.2f} / {bare['latency_p99_ms']:.2f} → "
            f"{mw['latency_p50_ms']:.2f} / {mw['latency_p99_ms']:.2f} ms "
            f"| {mw['latency_p50_ms'] - bare['latency_p50_ms']:+.2f} / "
            f"{mw['latency_p99_ms'] - bare['latency_p99_ms']:+.2f} ms | {rss} |"
        )
    return "\n".join(lines)


def report(quick: bool = False) -> str:
    """For ``bench/report.py``: the table, from a shorter run when ``quick``."""
    rows = run(events=20, streams=100) if quick else run()
    note = (
        f"Same upstream and client load through the proxy without and with gateway_mw; latency measured "
        f"with the streams paced to {PACED_EVENTS_PER_S:,} events/s in total; client, proxy and upstream "
        "share the machine."
    )
    return table(rows) + "\n\n" + note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=40, help="upstream events per stream (≤20 at 1,000 streams)")
    parser.add_argument("--streams", type=int, default=None, help="streams per run (default max(200, 2×concurrency))")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--timeout", type=float, default=120.0, help="bound on each run, seconds")
    args = parser.parse_args()
    rows = run(tuple(args.concurrency), args.events, args.streams, args.timeout)
    header = (
        f"{'streams':>8} {'proxy':<13} {'streams/s':>10} {'events/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'peak RSS':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        rss = f"{row['peak_rss_mb']:.0f} MB" if row["peak_rss_mb"] is not None else "n/a"
        print(
            f"{row['concurrency']:>8} {'gateway_mw' if row['middleware'] else 'bare':<13} "
            f"{row['streams_per_s']:>10,.0f} {row['events_per_s']:>10,.0f} "
            f"{row['latency_p50_ms']:>8.2f} {row['latency_p99_ms']:>8.2f} {rss:>9}"
        )
    print()
    for c in sorted({r["concurrency"] for r in rows}):
        bare = next(r for r in rows if r["concurrency"] == c and not r["middleware"])
        mw = next(r for r in rows if r["concurrency"] == c and r["middleware"])
        p50 = mw["latency_p50_ms"] - bare["latency_p50_ms"]
        p99 = mw["latency_p99_ms"] - bare["latency_p99_ms"]
        ratio = mw["events_per_s"] / bare["events_per_s"]
        print(
            f"{c:>5} concurrent: throughput ×{ratio:.2f}, added latency per event p50 {p50:+.2f} ms, p99 {p99:+.2f} ms"
        )
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
