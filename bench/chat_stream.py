"""Chat completions stream translation: events/s, and the end-to-end cost over loopback.

1. In process, bytes in → bytes out, next to a baseline that only splits the SSE stream into
   events and joins their bytes again:
   (a) a stream with no tags at all, (b) a stream where every event is rewritten.
2. End to end: an aiohttp upstream streams N chunks; a gateway process proxies it with and without
   the middleware; a client reads the whole stream. Prints the throughput ratio and the added time
   per event.

    python bench/chat_stream.py [--events 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import time
from collections.abc import Callable

import aiohttp
from aiohttp import web

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder


def chunk_bytes(content: str, i: int) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1730000000,
        "model": "bench-model",
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": {"content": content}, "logprobs": None, "finish_reason": None}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def plain_stream(n: int) -> bytes:
    words = ["The", " answer", " is", " four", " because", " two", " plus", " two", " is", " four."]
    return b"".join(chunk_bytes(words[i % len(words)], i) for i in range(n)) + b"data: [DONE]\n\n"


def reasoning_stream(n: int) -> bytes:
    """Every delta is inside or around a tag, so every event is rewritten."""
    parts = ["<think>step", " one", "</think>ans", "wer"]
    return b"".join(chunk_bytes(parts[i % len(parts)], i) for i in range(n)) + b"data: [DONE]\n\n"


def typical_stream(n: int) -> bytes:
    """A reasoning block of n/2 tokens, then an answer of n/2 tokens."""
    half = n // 2
    words = [" step", " by", " step", " the", " sum", " is", " four"]
    reasoning = ["<think>"] + [words[i % len(words)] for i in range(half - 2)] + ["</think>"]
    answer = [words[i % len(words)] for i in range(n - len(reasoning))]
    return b"".join(chunk_bytes(t, i) for i, t in enumerate(reasoning + answer)) + b"data: [DONE]\n\n"


def network_pieces(stream: bytes, size: int = 4096) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


def baseline(pieces: list[bytes]) -> bytes:
    decoder = SSEDecoder()
    out = [b"".join(e.raw for e in decoder.feed(p)) for p in pieces]
    return b"".join(out) + b"".join(e.raw for e in decoder.finish())


def translated(pieces: list[bytes]) -> bytes:
    pipeline = StreamPipeline("chat", ThinkExtractConfig())
    out = [pipeline.feed(p) for p in pieces]
    return b"".join(out) + pipeline.finish()


def best_of(fn: Callable[[list[bytes]], bytes], pieces: list[bytes], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(pieces)
        times.append(time.perf_counter() - start)
    return min(times)


def in_process(n: int) -> None:
    print(f"in process, {n:,} events, 4 KiB network pieces (best of 5)")
    for name, stream in (("(a) no tags", plain_stream(n)), ("(b) all rewritten", reasoning_stream(n))):
        pieces = network_pieces(stream)
        t_base = best_of(baseline, pieces)
        t_mw = best_of(translated, pieces)
        print(
            f"  {name:<18} translator {n / t_mw:>10,.0f} events/s   split+rejoin baseline {n / t_base:>10,.0f}"
            f" events/s   ratio {t_base / t_mw:.2f}"
        )


# -- end to end ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def run_upstream(port: int, n: int) -> None:
    # One event per write, as model servers send tokens.
    streams = {
        kind: [e.raw for e in SSEDecoder().feed(make(n))]
        for kind, make in (("plain", plain_stream), ("reasoning", reasoning_stream), ("typical", typical_stream))
    }

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in streams[request.query["kind"]]:
            await resp.write(piece)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def run_gateway(port: int, upstream_port: int, with_middleware: bool) -> None:
    async def proxy(request: web.Request) -> web.StreamResponse:
        session: aiohttp.ClientSession = request.app["session"]
        url = f"http://127.0.0.1:{upstream_port}/v1/chat/completions"
        async with session.post(url, params=request.query, data=b"{}") as up:
            resp = web.StreamResponse(headers={"Content-Type": up.headers["Content-Type"]})
            await resp.prepare(request)
            async for piece in up.content.iter_any():
                await resp.write(piece)
            await resp.write_eof()
            return resp

    async def on_startup(app: web.Application) -> None:
        app["session"] = aiohttp.ClientSession()

    async def on_cleanup(app: web.Application) -> None:
        await app["session"].close()

    app = web.Application()
    if with_middleware:
        setup(app, ThinkExtractConfig())
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_post("/v1/chat/completions", proxy)
    app.router.add_get("/cpu", cpu_seconds)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


async def cpu_seconds(request: web.Request) -> web.Response:
    """The gateway process's CPU time, so the client can charge each run its cost."""
    return web.Response(text=repr(time.process_time()))


async def read_all(port: int, kind: str) -> tuple[float, float]:
    """Wall time of one whole stream, and the gateway's CPU time spent on it."""
    async with aiohttp.ClientSession() as session:
        cpu_url = f"http://127.0.0.1:{port}/cpu"
        cpu_before = float(await (await session.get(cpu_url)).text())
        start = time.perf_counter()
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        async with session.post(url, params={"kind": kind}, data=b"{}") as resp:
            async for _ in resp.content.iter_any():
                pass
        wall = time.perf_counter() - start
        cpu = float(await (await session.get(cpu_url)).text()) - cpu_before
        return wall, cpu


async def wait_ready(port: int) -> None:
    for _ in range(200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def end_to_end(n: int, rounds: int = 5) -> None:
    up, plain, mw = free_port(), free_port(), free_port()
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=run_upstream, args=(up, n), daemon=True),
        ctx.Process(target=run_gateway, args=(plain, up, False), daemon=True),
        ctx.Process(target=run_gateway, args=(mw, up, True), daemon=True),
    ]
    for p in procs:
        p.start()
    try:

        async def measure(kind: str) -> tuple[str, tuple[float, float], tuple[float, float]]:
            await read_all(plain, kind)  # warm up both paths
            await read_all(mw, kind)
            runs_plain, runs_mw = [], []
            for _ in range(rounds):
                runs_plain.append(await read_all(plain, kind))
                runs_mw.append(await read_all(mw, kind))
            return kind, min(runs_plain), min(runs_mw)

        async def measure_all() -> list[tuple[str, tuple[float, float], tuple[float, float]]]:
            for port in (up, plain, mw):
                await wait_ready(port)
            return [await measure(kind) for kind in ("plain", "typical", "reasoning")]

        results = asyncio.run(measure_all())
    finally:
        for p in procs:
            p.terminate()
            p.join()
    print(f"end to end over loopback: upstream → proxy → client, {n:,} events, one per write (best of {rounds})")
    labels = {
        "plain": "(a) no tags",
        "typical": "(c) typical: a reasoning block, then the answer",
        "reasoning": "(b) every event rewritten",
    }
    for kind, (wall_plain, cpu_plain), (wall_mw, cpu_mw) in results:
        print(
            f"  {labels[kind]}\n"
            f"    throughput without {n / wall_plain:>8,.0f} events/s, with {n / wall_mw:>8,.0f} events/s:"
            f" ratio {wall_plain / wall_mw:.2f}\n"
            f"    gateway CPU per event without {cpu_plain / n * 1e6:.2f} µs, with {cpu_mw / n * 1e6:.2f} µs:"
            f" added {(cpu_mw - cpu_plain) / n * 1e6:.2f} µs"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    args = parser.parse_args()
    in_process(args.events)
    end_to_end(args.events)


if __name__ == "__main__":
    main()
