"""What one large request costs the rest of the gateway: the longest time ``GET /healthz`` waits while
a large chat history (short messages, just under the 64 MiB cap) goes through ``gateway-mw``, and the
gateway process's peak memory, with the middleware and without it (plain forwarding), in one run.

Three rows: plain forwarding (``--no-middleware``), the middleware without the reasoning record (the
request transform alone), and the middleware as configured by default (the record's keys too).

The gateway runs as its own process (``python -m gateway_mw``) in front of an upstream in this one that
reads the body and answers a short JSON completion; a thread asks ``/healthz`` over and over on its own
connection while the large request is in flight, and keeps the longest wait. Peak memory is the
process's high-water mark (``VmHWM``, Linux), read after the request.

With ``--off-loop-bytes N`` the gateway runs with ``gateway_mw.incoming.OFF_LOOP_BYTES`` set to ``N``
(what decides whether a history is read in a worker thread), with ``--agent`` the history is an agent's
(``bench/history.py``: long tool results) instead of short turns.

    python bench/request_stall.py [--mib 60] [--surface chat] [--rounds 1] [--off-loop-bytes N] [--agent]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
from typing import Any

import aiohttp
from aiohttp import web
from common import free_port

PATHS = {
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "responses": "/v1/responses",
    "ollama": "/api/chat",
}
ANSWER = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "<think>r</think>done"}, "finish_reason": "stop"}
    ],
}


VARIANTS = {
    "plain forwarding": ["--no-middleware"],
    "middleware, no record": ["--set", "reasoning_store=off"],
    "middleware": [],
}
"""The gateway's flags for each row: the baseline, the request transform alone, and the defaults."""


def history(surface: str, size: int) -> bytes:
    """A history of short turns (a question; an answer with its reasoning inline) of about ``size`` bytes."""
    turns: list[dict[str, Any]] = []
    written = 0
    while written < size:
        i = len(turns) // 2
        turns.append({"role": "user", "content": f"question {i}: and then?"})
        turns.append({"role": "assistant", "content": f"<think>step {i} of it</think>answer {i}"})
        written += 2 * len(str(i)) + 122  # what the two of them take, compact
    key = "input" if surface == "responses" else "messages"
    doc: dict[str, Any] = {"model": "m", key: turns}
    if surface == "messages":
        doc["max_tokens"] = 16
    return json.dumps(doc, separators=(",", ":")).encode()


async def upstream(port: int, stop: asyncio.Event) -> None:
    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(ANSWER)

    app = web.Application(client_max_size=2**30)
    app.router.add_post("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    await stop.wait()
    await runner.cleanup()


def probe(port: int, done: threading.Event, waits: list[float]) -> None:
    """``GET /healthz`` back to back until ``done``: how long each took."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while not done.is_set():
        start = time.perf_counter()
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        waits.append(time.perf_counter() - start)
        time.sleep(0.001)
    conn.close()


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        found = re.search(r"VmHWM:\s+(\d+) kB", status.read())
    assert found is not None
    return int(found.group(1)) / 1024


async def one(
    surface: str, body: bytes, flags: list[str], up_port: int, off_loop: int | None = None
) -> tuple[float, float, float]:
    """(longest /healthz wait, s; the request's time, s; peak RSS, MiB) of one fresh gateway."""
    port = free_port()
    args = [sys.executable, "-m", "gateway_mw"]
    if off_loop is not None:
        args[1:] = ["-c", _WITH_OFF_LOOP % off_loop]
    args += ["--port", str(port), "--upstream", f"http://127.0.0.1:{up_port}"]
    args += ["--set", "upstream_server=vllm", "--log-level", "warning", "--no-access-log"]
    args += flags
    gateway = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert gateway.stdout is not None
        gateway.stdout.readline()  # the banner: listening
        done, waits = threading.Event(), list[float]()
        prober = threading.Thread(target=probe, args=(port, done, waits))
        async with aiohttp.ClientSession() as session:
            prober.start()
            start = time.perf_counter()
            async with session.post(
                f"http://127.0.0.1:{port}{PATHS[surface]}", data=body, headers={"Content-Type": "application/json"}
            ) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            took = time.perf_counter() - start
            await asyncio.sleep(0.5)  # the record's write after the answer, if any
            done.set()
            await asyncio.to_thread(prober.join)
        return max(waits), took, peak_rss_mib(gateway.pid)
    finally:
        gateway.terminate()
        gateway.wait(30)
        if gateway.stdout is not None:
            gateway.stdout.close()


_WITH_OFF_LOOP = (
    "import sys, gateway_mw.incoming as i; i.OFF_LOOP_BYTES = %d; "
    "from gateway_mw.__main__ import main; sys.exit(main())"
)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=float, default=60.0)
    parser.add_argument("--surface", choices=sorted(PATHS), default="chat")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--off-loop-bytes", type=int, default=None)
    parser.add_argument("--agent", action="store_true")
    opts = parser.parse_args()
    if opts.agent:
        from history import to_rewrite

        body = to_rewrite(opts.surface, int(opts.mib * 2**20))
    else:
        body = history(opts.surface, int(opts.mib * 2**20))
    up_port, stop = free_port(), asyncio.Event()
    server = asyncio.create_task(upstream(up_port, stop))
    await asyncio.sleep(0.2)
    shape = "an agent's history" if opts.agent else "a history of short turns"
    print(f"{opts.surface}: {shape}, {len(body) / 2**20:.1f} MiB; {os.cpu_count()} CPUs")
    print(f"{'':24} {'longest /healthz wait':>22} {'request':>9} {'peak RSS':>10}")
    try:
        for _ in range(opts.rounds):
            for name, flags in VARIANTS.items():
                stall, took, rss = await one(opts.surface, body, flags, up_port, opts.off_loop_bytes)
                print(f"{name:24} {stall * 1000:>19.0f} ms {took:>7.2f} s {rss:>6.0f} MiB", flush=True)
    finally:
        stop.set()
        await server


if __name__ == "__main__":
    asyncio.run(main())
