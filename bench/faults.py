"""Hostile inputs: the gateway's peak memory and CPU time, with and without the middleware.

A gateway process proxies an upstream (``ClientSession`` → ``StreamResponse``, copying what it
reads in pieces of a given size) to a client that reads and discards. Each scenario runs in a fresh
gateway process, once with the middleware and once without, so that its peak RSS is its own.

    python bench/faults.py [--scale 1.0]

Scenarios (sizes times ``--scale``):
  * an unterminated 300 MB line (the upstream never ends its event);
  * one complete 100 MB delta, then a normal chunk;
  * one 8 MB event in a ``\\r\\n`` stream, handed on in 1,460-byte pieces;
  * a 60 MB non-stream JSON body (reasoning then answer), under the 64 MiB body cap;
  * a 70 MB one, over the cap: sent on untranslated as it comes.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import resource
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from common import free_port, wait_ready

from gateway_mw import ThinkExtractConfig, setup

MB = 1024 * 1024
ROUTE = "/v1/chat/completions"
HEAD = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":'


@dataclass
class Scenario:
    name: str
    content_type: str
    piece: int  # how the gateway copies the upstream: pieces of this many bytes
    body: Callable[[float], AsyncIterator[bytes]]


async def _repeat(prefix: bytes, filler: bytes, size: int, suffix: bytes, piece: int) -> AsyncIterator[bytes]:
    yield prefix
    block = filler * (piece // len(filler))
    sent = 0
    while sent < size:
        out = block[: size - sent]
        sent += len(out)
        yield out
    if suffix:
        yield suffix


def unterminated(scale: float) -> AsyncIterator[bytes]:
    return _repeat(HEAD + b'{"content":"', b"x", int(300 * MB * scale), b"", 64 * 1024)


def giant_delta(scale: float) -> AsyncIterator[bytes]:
    tail = b'"}}]}\n\n' + HEAD + b'{"content":"<think>r</think>a"}}]}\n\ndata: [DONE]\n\n'
    return _repeat(HEAD + b'{"content":"', b"y", int(100 * MB * scale), tail, 64 * 1024)


def crlf_event(scale: float) -> AsyncIterator[bytes]:
    tail = b'"}}]}\r\n\r\ndata: [DONE]\r\n\r\n'
    return _repeat(HEAD + b'{"content":"<think>', b"z", int(8 * MB * scale), tail, 1460)


def json_body(scale: float, total_mb: int = 60) -> AsyncIterator[bytes]:
    half = int(total_mb / 2 * MB * scale)
    head = b'{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
    head += b'"message":{"role":"assistant","content":"<think>'
    tail = b'"},"finish_reason":"stop"}]}'

    async def body() -> AsyncIterator[bytes]:
        async for piece in _repeat(head, b"r", half, b"</think>", 64 * 1024):
            yield piece
        async for piece in _repeat(b"", b"a", half, tail, 64 * 1024):
            yield piece

    return body()


SCENARIOS = [
    Scenario("unterminated 300 MB line", "text/event-stream", 64 * 1024, unterminated),
    Scenario("complete 100 MB delta", "text/event-stream", 64 * 1024, giant_delta),
    Scenario("8 MB \\r\\n event in 1,460-byte pieces", "text/event-stream", 1460, crlf_event),
    Scenario("60 MB JSON body", "application/json", 64 * 1024, json_body),
    Scenario("70 MB JSON body (over the 64 MiB cap)", "application/json", 64 * 1024, lambda s: json_body(s, 70)),
]


def peak_rss() -> int:
    """This process's peak resident memory, in bytes: VmHWM, which starts afresh at exec (ru_maxrss
    keeps the peak of the process that spawned it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_gateway(port: int, upstream: int, piece: int, with_middleware: bool) -> None:
    async def proxy(request: web.Request) -> web.StreamResponse:
        session: aiohttp.ClientSession = request.app["session"]
        async with session.post(f"http://127.0.0.1:{upstream}{ROUTE}", data=b"{}") as up:
            resp = web.StreamResponse(headers={"Content-Type": up.headers["Content-Type"]})
            await resp.prepare(request)
            async for chunk in up.content.iter_chunked(piece):
                await resp.write(chunk)
            await resp.write_eof()
            return resp

    async def usage(request: web.Request) -> web.Response:
        return web.json_response({"peak_rss": peak_rss(), "cpu": time.process_time()})

    async def on_startup(app: web.Application) -> None:
        app["session"] = aiohttp.ClientSession()

    async def on_cleanup(app: web.Application) -> None:
        await app["session"].close()

    app = web.Application()
    if with_middleware:
        setup(app, ThinkExtractConfig())
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_post(ROUTE, proxy)
    app.router.add_get("/usage", usage)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


async def measure(scenario: Scenario, scale: float, with_middleware: bool) -> tuple[int, int, float, int]:
    """(idle RSS, peak RSS, CPU seconds, bytes the client received) of one gateway run."""

    async def upstream_handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": scenario.content_type})
        await resp.prepare(request)
        async for piece in scenario.body(scale):
            await resp.write(piece)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post(ROUTE, upstream_handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    up_port = free_port()
    await web.TCPSite(runner, "127.0.0.1", up_port).start()
    port = free_port()
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=run_gateway, args=(port, up_port, scenario.piece, with_middleware), daemon=True)
    proc.start()
    try:
        await wait_ready(port)
        async with aiohttp.ClientSession() as session:
            before = await (await session.get(f"http://127.0.0.1:{port}/usage")).json()
            received = 0
            async with session.post(f"http://127.0.0.1:{port}{ROUTE}", data=b"{}") as resp:
                async for chunk in resp.content.iter_any():
                    received += len(chunk)
            after = await (await session.get(f"http://127.0.0.1:{port}/usage")).json()
    finally:
        proc.terminate()
        proc.join()
        await runner.cleanup()
    return before["peak_rss"], after["peak_rss"], after["cpu"] - before["cpu"], received


def run(scale: float = 1.0) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for scenario in SCENARIOS:
        without = asyncio.run(measure(scenario, scale, False))
        with_mw = asyncio.run(measure(scenario, scale, True))
        rows.append(
            {
                "scenario": scenario.name if scale == 1 else f"{scenario.name}, sizes × {scale:g}",
                "peak_without_mb": max(0, without[1] - without[0]) / MB,
                "peak_with_mb": max(0, with_mw[1] - with_mw[0]) / MB,
                "cpu_without_s": without[2],
                "cpu_with_s": with_mw[2],
                "bytes_equal": without[3] == with_mw[3] or scenario.content_type == "application/json",
            }
        )
    return rows


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| input | peak RSS over idle, without → with | gateway CPU, without → with |",
        "|---|---|---|",
    ]
    lines += [
        f"| {row['scenario']} | {row['peak_without_mb']:.0f} → {row['peak_with_mb']:.0f} MB"
        f" | {row['cpu_without_s']:.2f} → {row['cpu_with_s']:.2f} s |"
        for row in rows
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every input size")
    args = parser.parse_args()
    print(table(run(args.scale)))


if __name__ == "__main__":
    main()
