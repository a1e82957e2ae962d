"""The request side's cost: a 200 KB agent history (30 turns of reasoning written inline, a tool call
and its result each) given back where the upstream reads it, next to plain forwarding in the same run.

1. In process, per request and surface: the request transform (``transform_request``) next to
   ``json.loads`` of the same body, the least a gateway that looks at the request does.
2. End to end, chat completions: a proxy on loopback (``ClientSession`` → upstream → ``Response``)
   forwarding the 200 KB request, with and without the middleware (request side on, the reasoning
   record in memory), requests one after another; wall time per request, median (min–max) of
   interleaved rounds, and the ratio.

    python bench/history.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import aiohttp
from aiohttp import web
from common import Spread, free_port, interleaved, no_collection

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.config import Surface
from gateway_mw.history import transform_request
from gateway_mw.surfaces.registry import SURFACES

ROUTE = "/v1/chat/completions"
CONFIG = ThinkExtractConfig(upstream_server="vllm")
TURNS = 30
SIZE = 200_000

_REASONING = "The user wants the weather, so I call the tool with the city they named and read its answer. "
_RESULT = "18°C, sunny, wind 10 km/h from the west; humidity 40 %; tomorrow rain in the afternoon. "


def _result(turn: int) -> str:
    """A tool result, long enough that 30 turns make about 200 KB."""
    return f"result {turn}: " + _RESULT * max(1, (SIZE // TURNS - 600) // len(_RESULT))


def chat_history(ollama: bool = False) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Plan my week in Paris."}]
    for turn in range(TURNS):
        call = {"name": "weather", "arguments": {"city": "Paris", "day": turn} if ollama else '{"city":"Paris"}'}
        tool_call: dict[str, Any] = {"function": call} if ollama else {"id": f"call_{turn}", "type": "function"}
        if not ollama:
            tool_call["function"] = call
        messages.append({"role": "assistant", "content": f"<think>{_REASONING * 3}</think>", "tool_calls": [tool_call]})
        tool: dict[str, Any] = {"role": "tool", "content": _result(turn)}
        if not ollama:
            tool["tool_call_id"] = f"call_{turn}"
        messages.append(tool)
    return json.dumps({"model": "qwen3-32b", "messages": messages}).encode()


def messages_history() -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Plan my week in Paris."}]
    for turn in range(TURNS):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": _REASONING * 3, "signature": ""},
                    {"type": "tool_use", "id": f"toolu_{turn}", "name": "weather", "input": {"city": "Paris"}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": _result(turn)}],
            }
        )
    return json.dumps({"model": "qwen3-32b", "max_tokens": 1024, "messages": messages}).encode()


def responses_history() -> bytes:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Plan my week in Paris."}]
    for turn in range(TURNS):
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{turn}",
                "summary": [{"type": "summary_text", "text": _REASONING * 3}],
            }
        )
        items.append(
            {"type": "function_call", "call_id": f"call_{turn}", "name": "weather", "arguments": '{"city":"Paris"}'}
        )
        items.append({"type": "function_call_output", "call_id": f"call_{turn}", "output": _result(turn)})
    return json.dumps({"model": "qwen3-32b", "input": items}).encode()


HISTORIES: dict[Surface, bytes] = {
    "chat": chat_history(),
    "messages": messages_history(),
    "responses": responses_history(),
    "ollama": chat_history(ollama=True),
}


def _per_call(fn: Any, n: int) -> float:
    with no_collection():
        start = time.process_time()
        for _ in range(n):
            fn()
        return (time.process_time() - start) / n


def in_process(rounds: int, quick: bool) -> str:
    n = 5 if quick else 30
    out = [
        f"In process, one request of each surface's ~200 KB history ({TURNS} turns, a tool call each), CPU ms per"
        f" request, median (min–max) of {rounds} interleaved rounds of {n}:",
        "",
        "| surface | body | `json.loads` | request transform | ratio |",
        "|---|---|---|---|---|",
    ]
    for surface, body in HISTORIES.items():
        times = interleaved(
            {
                "loads": lambda body=body: _per_call(lambda: json.loads(body), n),
                "transform": lambda surface=surface, body=body: _per_call(
                    lambda: transform_request(SURFACES[surface], body, CONFIG), n
                ),
            },
            rounds,
        )
        ratio = Spread.of([t / b for t, b in zip(times["transform"], times["loads"], strict=True)])
        out.append(
            f"| {surface} | {len(body) / 1000:.0f} KB | {Spread.of(times['loads']).fmt(scale=1e3)} ms"
            f" | {Spread.of(times['transform']).fmt(scale=1e3)} ms | {ratio.fmt()} |"
        )
    return "\n".join(out)


async def _serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


def _gateway(upstream: int, with_middleware: bool) -> web.Application:
    async def forward(request: web.Request) -> web.Response:
        session: aiohttp.ClientSession = request.app["session"]
        body = await request.read()
        headers = {"Content-Type": "application/json"}
        async with session.post(f"http://127.0.0.1:{upstream}{ROUTE}", data=body, headers=headers) as up:
            return web.Response(body=await up.read(), content_type="application/json")

    async def on_startup(app: web.Application) -> None:
        app["session"] = aiohttp.ClientSession()

    async def on_cleanup(app: web.Application) -> None:
        await app["session"].close()

    app = web.Application(client_max_size=8 << 20)
    if with_middleware:
        setup(app, CONFIG)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_post(ROUTE, forward)
    return app


async def _end_to_end(rounds: int, n: int) -> dict[str, Spread]:
    answer = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "model": "qwen3-32b",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "It is sunny."}}],
        }
    ).encode()

    async def upstream(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=answer, content_type="application/json")

    up_app = web.Application(client_max_size=8 << 20)
    up_app.router.add_post(ROUTE, upstream)
    runners = []
    runner, up_port = await _serve(up_app)
    runners.append(runner)
    ports = {}
    for name, on in (("plain", False), ("middleware", True)):
        runner, ports[name] = await _serve(_gateway(up_port, on))
        runners.append(runner)
    body = HISTORIES["chat"]
    times: dict[str, list[float]] = {"plain": [], "middleware": []}
    async with aiohttp.ClientSession() as session:

        async def batch(port: int) -> float:
            start = time.perf_counter()
            for _ in range(n):
                async with session.post(f"http://127.0.0.1:{port}{ROUTE}", data=body) as resp:
                    await resp.read()
            return (time.perf_counter() - start) / n

        await batch(ports["plain"])
        await batch(ports["middleware"])
        for r in range(rounds):
            order = ("plain", "middleware") if r % 2 == 0 else ("middleware", "plain")
            for name in order:
                times[name].append(await batch(ports[name]))
    for runner in runners:
        await runner.cleanup()
    return {
        "plain": Spread.of(times["plain"]),
        "middleware": Spread.of(times["middleware"]),
        "ratio": Spread.of([m / p for m, p in zip(times["middleware"], times["plain"], strict=True)]),
    }


def end_to_end(rounds: int, quick: bool) -> str:
    n = 10 if quick else 50
    r = asyncio.run(_end_to_end(rounds, n))
    return "\n".join(
        [
            f"End to end, chat completions, the {len(HISTORIES['chat']) / 1000:.0f} KB history through a proxy on"
            f" loopback, one request at a time, wall ms per request, median (min–max) of {rounds} interleaved"
            f" rounds of {n}:",
            "",
            "| plain forwarding | with the middleware (request side, memory record) | ratio |",
            "|---|---|---|",
            f"| {r['plain'].fmt(scale=1e3)} ms | {r['middleware'].fmt(scale=1e3)} ms | {r['ratio'].fmt()} |",
        ]
    )


def tables(rounds: int, quick: bool = False) -> str:
    return in_process(rounds, quick) + "\n\n" + end_to_end(rounds, quick)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(tables(2 if args.quick else args.rounds, args.quick))


if __name__ == "__main__":
    main()
