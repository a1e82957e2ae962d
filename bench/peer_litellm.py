"""A peer on the same stream: LiteLLM's streaming client path, next to the gateway with the middleware.

One process, one event loop, the same upstream (chat chunks of 4-character deltas, one event per
write), 8 concurrent streams, rounds alternating between:

* the proxying gateway without the middleware, read by a plain aiohttp client;
* the same gateway with the middleware;
* ``litellm.acompletion(..., stream=True)`` reading the upstream directly (no gateway at all).

Each round's CPU time covers everything in the process (upstream included, the same for all), so
per-event figures compare like with like. LiteLLM does not split ``<think>`` on this path; the
comparison is of the cost of carrying a stream, not of what is done to it. Needs the ``bench``
extra (``pip install -e '.[bench]'``); skipped when LiteLLM is not installed.

    python bench/peer_litellm.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

import aiohttp
from aiohttp import web
from chat_stream import ROUTE, gateway_app, read_streams, start, stream_events
from common import Spread

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch anything at import


def available() -> bool:
    try:
        import litellm  # noqa: F401
    except ImportError:
        return False
    return True


def _upstream(events: dict[str, list[bytes]]) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        kind = request.match_info.get("kind") or request.query["kind"]
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in events[kind]:
            await resp.write(piece)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post(ROUTE, handler)
    app.router.add_post("/{kind}" + ROUTE, handler)
    return app


def run(streams: int = 8, events: int = 4000, rounds: int = 5) -> list[dict[str, Any]]:
    import litellm

    litellm.telemetry = False

    async def main() -> list[dict[str, Any]]:
        kinds = ["reasoning", "plain"]
        up_runner, up_port = await start(_upstream({k: stream_events(k, events) for k in kinds}))
        plain_runner, plain_port = await start(gateway_app(up_port, False))
        mw_runner, mw_port = await start(gateway_app(up_port, True))
        rows: list[dict[str, Any]] = []

        async def via_litellm(kind: str) -> None:
            async def one() -> None:
                response = await litellm.acompletion(
                    model="openai/bench-model",
                    api_base=f"http://127.0.0.1:{up_port}/{kind}/v1",
                    api_key="unused",
                    messages=[{"role": "user", "content": "hi"}],
                    stream=True,
                )
                async for _ in response:
                    pass

            await asyncio.gather(*(one() for _ in range(streams)))

        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
                variants = {
                    "gateway without the middleware": lambda kind: read_streams(session, plain_port, kind, streams),
                    "gateway with the middleware": lambda kind: read_streams(session, mw_port, kind, streams),
                    "LiteLLM acompletion (no gateway)": via_litellm,
                }
                for kind in kinds:
                    for variant in variants.values():
                        await variant(kind)  # warm up
                    cpu: dict[str, list[float]] = {name: [] for name in variants}
                    for _ in range(rounds):
                        for name, variant in variants.items():
                            t0 = time.process_time()
                            await variant(kind)
                            cpu[name].append((time.process_time() - t0) / (streams * events) * 1e6)
                    rows += [
                        {"stream": kind, "variant": name, "cpu_us": Spread.of(values)} for name, values in cpu.items()
                    ]
        finally:
            for runner in (mw_runner, plain_runner, up_runner):
                await runner.cleanup()
        return rows

    return asyncio.run(main())


def table(rounds: int = 5, events: int = 4000) -> str:
    labels = {"reasoning": "(b) all inside one reasoning block", "plain": "(a) no tags"}
    lines = [
        f"One process, 8 streams × {events:,} events, CPU per event of the whole process (upstream included),"
        f" median (min–max) of {rounds} alternating rounds:",
        "",
        "| stream | path | CPU per event |",
        "|---|---|---|",
    ]
    lines += [
        f"| {labels[row['stream']]} | {row['variant']} | {row['cpu_us'].fmt()} µs |" for row in run(8, events, rounds)
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", type=int, default=4000)
    args = parser.parse_args()
    if not available():
        print("LiteLLM is not installed: pip install -e '.[bench]'")
        return
    print(table(args.rounds, args.events))


if __name__ == "__main__":
    main()
