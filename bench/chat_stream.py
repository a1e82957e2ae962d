"""Chat completions streams through the middleware: the cost per event, three ways.

1. In process, bytes in → bytes out in 4 KiB pieces, against a baseline that only splits the SSE
   stream into events and joins their bytes again (the least an SSE-aware middleware does).
2. End to end in one process and one event loop: an upstream writing one event per write, a
   proxying gateway (``ClientSession`` → ``StreamResponse``) with and without the middleware, and
   a client, 8 concurrent streams; rounds alternate between the two gateways.
3. Gateway-bound, three processes: the gateway's own CPU time per event, with and without the
   middleware, while enough concurrent streams keep it busy.

Streams: (a) no tags, (b) every delta inside one reasoning block, (c) a reasoning block then the
answer, (d) a tag every few events. Each has 4-character deltas, as tokens come.

    python bench/chat_stream.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web
from common import Spread, cpu_time, free_port, interleaved, pieces_of, split_and_rejoin, wait_ready

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.pipeline import StreamPipeline

ROUTE = "/v1/chat/completions"
WORDS = [" step", " by", " step", " the", " sum", " is", " four", " then"]
LABELS = {
    "plain": "(a) no tags",
    "reasoning": "(b) all inside one reasoning block",
    "typical": "(c) reasoning block, then the answer",
    "tagged": "(d) a tag every 4 events",
}


def event(content: str | None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1730000000,
        "model": "bench-model",
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def stream_events(kind: str, n: int) -> list[bytes]:
    words = [WORDS[i % len(WORDS)] for i in range(n - 2)]
    if kind == "plain":
        texts = ["The", *words]
    elif kind == "reasoning":
        texts = ["<think>", *words]
    elif kind == "typical":
        half = len(words) // 2
        texts = ["<think>", *words[:half], "</think>", *words[half:]]
    else:
        cycle = ["<think>a", " bc", "d</think>", "e f"]
        texts = [cycle[i % 4] for i in range(n - 1)]
    return [event(t) for t in texts[:-1]] + [event(None, "stop"), b"data: [DONE]\n\n"]


# -- 1. in process --------------------------------------------------------------------------------


def translate(pieces: list[bytes]) -> bytes:
    pipeline = StreamPipeline("chat", ThinkExtractConfig())
    out = [pipeline.feed(p) for p in pieces]
    return b"".join(out) + pipeline.finish()


def in_process(events: int = 20_000, rounds: int = 7) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for kind in LABELS:
        pieces = pieces_of(b"".join(stream_events(kind, events)))
        times = interleaved(
            {
                "baseline": lambda p=pieces: cpu_time(lambda: split_and_rejoin(p)),
                "middleware": lambda p=pieces: cpu_time(lambda: translate(p)),
            },
            rounds,
        )
        added = [(m - b) / events for b, m in zip(times["baseline"], times["middleware"], strict=True)]
        ratio = [b / m for b, m in zip(times["baseline"], times["middleware"], strict=True)]
        rows.append(
            {
                "stream": LABELS[kind],
                "baseline_us": Spread.of([t / events for t in times["baseline"]]),
                "middleware_us": Spread.of([t / events for t in times["middleware"]]),
                "added_us": Spread.of(added),
                "ratio": Spread.of(ratio),
            }
        )
    return rows


# -- 2. end to end, one process ---------------------------------------------------------------------


def upstream_app(events: dict[str, list[bytes]]) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in events[request.query["kind"]]:  # one event per write, as model servers send tokens
            await resp.write(piece)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post(ROUTE, handler)
    return app


def gateway_app(upstream_port: int, with_middleware: bool) -> web.Application:
    async def proxy(request: web.Request) -> web.StreamResponse:
        session: aiohttp.ClientSession = request.app["session"]
        url = f"http://127.0.0.1:{upstream_port}{ROUTE}"
        async with session.post(url, params=request.query, data=b"{}") as up:
            resp = web.StreamResponse(headers={"Content-Type": up.headers["Content-Type"]})
            await resp.prepare(request)
            async for piece in up.content.iter_any():
                await resp.write(piece)
            await resp.write_eof()
            return resp

    async def cpu(request: web.Request) -> web.Response:
        return web.Response(text=repr(time.process_time()))

    async def on_startup(app: web.Application) -> None:
        app["session"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def on_cleanup(app: web.Application) -> None:
        await app["session"].close()

    app = web.Application()
    if with_middleware:
        setup(app, ThinkExtractConfig())
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_post(ROUTE, proxy)
    app.router.add_get("/cpu", cpu)
    return app


async def start(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


async def read_streams(session: aiohttp.ClientSession, port: int, kind: str, streams: int) -> int:
    async def one() -> int:
        received = 0
        async with session.post(f"http://127.0.0.1:{port}{ROUTE}", params={"kind": kind}, data=b"{}") as resp:
            async for piece in resp.content.iter_any():
                received += len(piece)
        return received

    return sum(await asyncio.gather(*(one() for _ in range(streams))))


def one_process(streams: int = 8, events: int = 4000, rounds: int = 7) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        kinds = ["reasoning", "plain"]
        up_runner, up_port = await start(upstream_app({k: stream_events(k, events) for k in kinds}))
        plain_runner, plain_port = await start(gateway_app(up_port, False))
        mw_runner, mw_port = await start(gateway_app(up_port, True))
        rows: list[dict[str, Any]] = []
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
                for kind in kinds:
                    await read_streams(session, plain_port, kind, streams)  # warm up both
                    await read_streams(session, mw_port, kind, streams)
                    walls: dict[str, list[float]] = {"without": [], "with": []}
                    for _ in range(rounds):
                        for name, port in (("without", plain_port), ("with", mw_port)):
                            t0 = time.perf_counter()
                            await read_streams(session, port, kind, streams)
                            walls[name].append(time.perf_counter() - t0)
                    total = streams * events
                    rows.append(
                        {
                            "stream": LABELS[kind],
                            "without_eps": Spread.of([total / w for w in walls["without"]]),
                            "with_eps": Spread.of([total / w for w in walls["with"]]),
                            "ratio": Spread.of([a / b for a, b in zip(walls["without"], walls["with"], strict=True)]),
                        }
                    )
        finally:
            for runner in (mw_runner, plain_runner, up_runner):
                await runner.cleanup()
        return rows

    return asyncio.run(main())


# -- 3. gateway-bound, separate processes -------------------------------------------------------------


def _serve(app_factory: Callable[..., web.Application], port: int, *args: object) -> None:
    web.run_app(app_factory(*args), host="127.0.0.1", port=port, print=None, access_log=None)


def _upstream_for(kinds: list[str], events: int) -> web.Application:
    return upstream_app({k: stream_events(k, events) for k in kinds})


def gateway_bound(streams: int = 32, events: int = 2000, rounds: int = 5) -> list[dict[str, Any]]:
    kinds = ["plain", "reasoning", "typical"]
    up, plain, mw = free_port(), free_port(), free_port()
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_serve, args=(_upstream_for, up, kinds, events), daemon=True),
        ctx.Process(target=_serve, args=(gateway_app, plain, up, False), daemon=True),
        ctx.Process(target=_serve, args=(gateway_app, mw, up, True), daemon=True),
    ]
    for p in procs:
        p.start()

    async def measure() -> list[dict[str, Any]]:
        for port in (up, plain, mw):
            await wait_ready(port)
        rows: list[dict[str, Any]] = []
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def gateway_cpu(port: int) -> float:
                return float(await (await session.get(f"http://127.0.0.1:{port}/cpu")).text())

            for kind in kinds:
                await read_streams(session, plain, kind, streams)
                await read_streams(session, mw, kind, streams)
                cpu: dict[str, list[float]] = {"without": [], "with": []}
                for _ in range(rounds):
                    for name, port in (("without", plain), ("with", mw)):
                        before = await gateway_cpu(port)
                        await read_streams(session, port, kind, streams)
                        cpu[name].append((await gateway_cpu(port) - before) / (streams * events) * 1e6)
                rows.append(
                    {
                        "stream": LABELS[kind],
                        "without_us": Spread.of(cpu["without"]),
                        "with_us": Spread.of(cpu["with"]),
                        "added_us": Spread.of([b - a for a, b in zip(cpu["without"], cpu["with"], strict=True)]),
                    }
                )
        return rows

    try:
        return asyncio.run(measure())
    finally:
        for p in procs:
            p.terminate()
            p.join()


# -- tables -------------------------------------------------------------------------------------------


def tables(rounds: int, quick: bool = False) -> str:
    events, e2e_events, bound_events = (2000, 500, 200) if quick else (20_000, 4000, 2000)
    out = [
        f"In process, {events:,} events in 4 KiB pieces, CPU time, median (min–max) of {rounds} interleaved rounds:",
        "",
        "| stream | split+rejoin baseline | with the middleware | added per event | throughput ratio |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| {row['stream']} | {row['baseline_us'].fmt(scale=1e6)} µs"
        f" | {row['middleware_us'].fmt(scale=1e6)} µs | {row['added_us'].fmt(scale=1e6)} µs"
        f" | {row['ratio'].fmt()} |"
        for row in in_process(events, rounds)
    ]
    out += [
        "",
        f"End to end in one process, 8 streams × {e2e_events:,} events, median (min–max) of {rounds} alternating"
        " rounds:",
        "",
        "| stream | without the middleware | with | ratio |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {row['stream']} | {row['without_eps'].fmt(',.0f')} events/s"
        f" | {row['with_eps'].fmt(',.0f')} events/s | {row['ratio'].fmt()} |"
        for row in one_process(8, e2e_events, rounds)
    ]
    out += [
        "",
        f"Gateway-bound, three processes, 32 concurrent streams × {bound_events:,} events: the gateway's CPU per event,"
        f" median (min–max) of {rounds} alternating rounds:",
        "",
        "| stream | without the middleware | with | added |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {row['stream']} | {row['without_us'].fmt()} µs | {row['with_us'].fmt()} µs | {row['added_us'].fmt()} µs |"
        for row in gateway_bound(32, bound_events, rounds)
    ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    print(tables(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
