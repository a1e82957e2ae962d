"""The request side's cost: agent histories of 200 KB and 1 MB on every surface, given back where the
upstream reads it, next to plain forwarding in the same run.

Each surface's history is an agent's (a tool call and its result each turn, the reasoning of every
turn sent back), in two states: ``unchanged`` (already as the upstream reads it: the gateway's own
output of the other) and ``rewrite`` (reasoning where the upstream does not read it: chat and Ollama
inline in ``<think>`` tags, messages in thinking blocks the gateway did not sign, Responses in
reasoning items without ``content``). Messages is in Claude Code's shape (a system prompt of blocks,
tool definitions, cache markers), Responses in Codex's (instructions, tools, ``include`` of encrypted
reasoning).

1. In process: the request transform (``transform_request``) next to ``json.loads`` of the same body,
   and what the record's entries of an answer that moved reasoning cost after the response
   (``record_entries``: the digest of the whole conversation, paid in the end-to-end run too; here
   with a read of the body, which the gateway shares with the transform). Then an agent's next
   request (two turns more), read afresh and with the reading its scope kept of the request before.
2. End to end: a proxy on loopback (``ClientSession`` → upstream → ``Response``) forwarding each
   history, with and without the middleware (the reasoning record in memory; the upstream answers
   with reasoning, so that the record is written), requests one after another, the two proxies in
   alternating rounds; wall time per request, median (min–max), and the ratios of wall time and of
   the process's CPU time (every thread's: a large body is read in worker threads). Each history is
   its own client's (its own API key: its own scope of the reasoning record and of what is carried),
   sent again and again, as an agent's next request repeats its last one and adds a turn: it takes
   what its previous request's reading learned (``history.carry``), where an earlier version read
   and hashed it all again; the in-process column ``record entries`` is the first request of a
   conversation, hashed whole.
3. The fixed cost of a small request: a one-turn chat request streamed back in 20 events, CPU time of
   the whole process (client, proxy, upstream) per request with and without the middleware.

With ``--server-named``, the proxy with the middleware is set up as the gateway is: an outer
middleware names the server behind the upstream on each request (``THINKEXTRACT_SERVER``), the
settings' ``upstream_server`` left to ``auto``.

Only the package's public API is used, so that the same script measures an earlier version.

    python bench/history.py [--rounds 7] [--quick] [--end-to-end [--server-named]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web
from common import Spread, free_port, interleaved, no_collection

from gateway_mw import THINKEXTRACT_SERVER, ThinkExtractConfig, setup
from gateway_mw.channels import Said
from gateway_mw.config import Surface
from gateway_mw.history import Request, record_entries, record_keys, transform_request

try:
    from gateway_mw.surfaces.registry import SURFACES

    def _side(surface: Surface) -> Any:
        return SURFACES[surface]
except ImportError:  # a version before the surface registry named the surface itself

    def _side(surface: Surface) -> Any:
        return surface


CONFIG = ThinkExtractConfig(upstream_server="vllm", messages_policy="unsigned")
MODEL = "qwen3-32b"
SIZES = {"200 KB": 200_000, "1 MB": 1_000_000}
TURN = 6_600  # bytes of one turn (its reasoning, its call, the call's result): 30 turns make 200 KB
ROUTES: dict[Surface, str] = {
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "responses": "/v1/responses",
    "ollama": "/api/chat",
}

_REASONING = "The user wants the weather, so I call the tool with the city they named and read its answer. "
_RESULT = "18°C, sunny, wind 10 km/h from the west; humidity 40 %; tomorrow rain in the afternoon. "
_TOOL = {
    "name": "weather",
    "description": "The weather of a city on a day. " * 20,
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "day": {"type": "integer"}}},
}


def _result(turn: int) -> str:
    return f"result {turn}: " + _RESULT * ((TURN - 600) // len(_RESULT))


def chat_history(turns: int, ollama: bool = False) -> bytes:
    """Chat completions (or Ollama's ``/api/chat``): each turn's reasoning inline, as the model wrote it."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You plan trips."},
        {"role": "user", "content": "Plan my week in Paris."},
    ]
    for turn in range(turns):
        call = {"name": "weather", "arguments": {"city": "Paris", "day": turn} if ollama else '{"city":"Paris"}'}
        tool_call: dict[str, Any] = {"function": call} if ollama else {"id": f"call_{turn}", "type": "function"}
        if not ollama:
            tool_call["function"] = call
        messages.append({"role": "assistant", "content": f"<think>{_REASONING * 3}</think>", "tool_calls": [tool_call]})
        tool: dict[str, Any] = {"role": "tool", "content": _result(turn)}
        if not ollama:
            tool["tool_call_id"] = f"call_{turn}"
        messages.append(tool)
    request: dict[str, Any] = {"model": MODEL, "messages": messages}
    if ollama:
        request["stream"] = False
    else:
        request["tools"] = [{"type": "function", "function": _TOOL}]
    return json.dumps(request).encode()


def messages_history(turns: int) -> bytes:
    """Claude Code's shape: system blocks and tools with cache markers, thinking blocks sent back with
    the signature they came with (here none the gateway made)."""
    cached = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Plan my week in Paris."}]},
    ]
    for turn in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": _REASONING * 3, "signature": f"EqQBCkYIBxgCKkD{turn}"},
                    {"type": "text", "text": "Let me look that up."},
                    {"type": "tool_use", "id": f"toolu_{turn}", "name": "weather", "input": {"city": "Paris"}},
                ],
            }
        )
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": _result(turn)}
        if turn == turns - 1:
            result["cache_control"] = cached
        messages.append({"role": "user", "content": [result]})
    tool = {"name": _TOOL["name"], "description": _TOOL["description"], "input_schema": _TOOL["parameters"]}
    request = {
        "model": MODEL,
        "max_tokens": 32000,
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {"type": "text", "text": "You plan trips. " * 200, "cache_control": cached},
        ],
        "tools": [tool],
        "metadata": {"user_id": "user_0123456789abcdef"},
        "thinking": {"type": "enabled", "budget_tokens": 31999},
        "stream": False,
        "messages": messages,
    }
    return json.dumps(request).encode()


def responses_history(turns: int) -> bytes:
    """Codex's shape: instructions, tools, encrypted reasoning asked for, reasoning items with a summary."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Plan my week in Paris."}]}
    ]
    for turn in range(turns):
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{turn:024x}",
                "summary": [{"type": "summary_text", "text": _REASONING * 3}],
                "encrypted_content": None,
            }
        )
        items.append(
            {"type": "function_call", "name": "weather", "arguments": '{"city":"Paris"}', "call_id": f"call_{turn}"}
        )
        items.append({"type": "function_call_output", "call_id": f"call_{turn}", "output": _result(turn)})
    request = {
        "model": MODEL,
        "instructions": "You are Codex, a coding agent. " * 300,
        "input": items,
        "tools": [{"type": "function", **_TOOL, "strict": False}],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "stream": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0b9f5c1e-7d35-4c1e-9d1a-3f0e6c2b8a71",
    }
    return json.dumps(request).encode()


def to_rewrite(surface: Surface, size: int) -> bytes:
    """An agent's history of about ``size`` bytes on ``surface``, its reasoning where the upstream does not read it."""
    turns = max(1, size // TURN)
    if surface == "messages":
        return messages_history(turns)
    if surface == "responses":
        return responses_history(turns)
    return chat_history(turns, ollama=surface == "ollama")


def _states(surface: Surface, body: bytes) -> bytes:
    """``body`` as the gateway gives it to the upstream, spelled as a client spells what it got back."""
    rewritten = transform_request(_side(surface), body, CONFIG)
    assert rewritten is not None, f"{surface}: nothing to rewrite"
    unchanged = json.dumps(json.loads(rewritten)).encode()  # spelled alike whatever version wrote it
    assert transform_request(_side(surface), unchanged, CONFIG) is None, f"{surface}: rewritten again"
    return unchanged


def histories(more: int = 0) -> dict[tuple[Surface, str, str], bytes]:
    """Each surface's history by size, ``rewrite`` and ``unchanged`` (the gateway's output of it:
    what the upstream reads, which the gateway leaves alone); with ``more``, that many turns longer
    (an agent's next request: the same turns, then its new ones)."""
    out: dict[tuple[Surface, str, str], bytes] = {}
    for surface in ROUTES:
        for size_name, size in SIZES.items():
            body = to_rewrite(surface, size + more * TURN)
            out[surface, size_name, "unchanged"] = _states(surface, body)
            out[surface, size_name, "rewrite"] = body
    return out


def _per_call(fn: Callable[[], object], n: int) -> float:
    with no_collection():
        start = time.process_time()
        for _ in range(n):
            fn()
        return (time.process_time() - start) / n


def in_process(bodies: dict[tuple[Surface, str, str], bytes], rounds: int, quick: bool) -> str:
    out = [
        f"In process, CPU ms per request, median (min–max) of {rounds} interleaved rounds:",
        "",
        "| surface | history | body | `json.loads` | request transform | ratio | record entries |",
        "|---|---|---|---|---|---|---|",
    ]
    for (surface, size_name, state), body in bodies.items():
        n = max(2, (3 if quick else 20) * 200_000 // len(body))
        times = interleaved(
            {
                "loads": lambda body=body, n=n: _per_call(lambda: json.loads(body), n),
                "transform": lambda surface=surface, body=body, n=n: _per_call(
                    lambda: transform_request(_side(surface), body, CONFIG), n
                ),
                "entries": lambda surface=surface, body=body, n=n: _per_call(
                    lambda: record_entries(_side(surface), body, [Said(original=_THOUGHT)], CONFIG), n
                ),
            },
            rounds,
        )
        ratio = Spread.of([t / b for t, b in zip(times["transform"], times["loads"], strict=True)])
        out.append(
            f"| {surface} | {size_name}, {state} | {len(body) / 1000:.0f} KB"
            f" | {Spread.of(times['loads']).fmt(scale=1e3)} ms"
            f" | {Spread.of(times['transform']).fmt(scale=1e3)} ms | {ratio.fmt()}"
            f" | {Spread.of(times['entries']).fmt(scale=1e3)} ms |"
        )
    return "\n".join(out)


# -- end to end -----------------------------------------------------------------------------------

_THOUGHT = "<think>It is sunny in Paris.</think>It is sunny."
ANSWERS: dict[Surface, dict[str, Any]] = {
    "chat": {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": _THOUGHT}, "finish_reason": "stop"}],
    },
    "messages": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": _THOUGHT}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
    "responses": {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": MODEL,
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": _THOUGHT, "annotations": []}],
            }
        ],
    },
    "ollama": {
        "model": MODEL,
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": _THOUGHT},
        "done": True,
        "done_reason": "stop",
    },
}
"""Each surface's answer, its reasoning inline: the middleware moves it, and the record keeps it."""

_SMALL_ROUTE = "/v1/small/chat/completions"
_SMALL = json.dumps({"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "Weather in Paris?"}]})
_EVENTS = (
    b"".join(
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"content":"word%d "},"finish_reason":null}]}\n\n' % i
        for i in range(20)
    )
    + b"data: [DONE]\n\n"
)


async def _serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


def _upstream() -> web.Application:
    async def answer(request: web.Request) -> web.Response:
        await request.read()
        surface = next(s for s, route in ROUTES.items() if route == request.path)
        return web.Response(body=json.dumps(ANSWERS[surface]).encode(), content_type="application/json")

    async def stream(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(_EVENTS)
        await resp.write_eof()
        return resp

    app = web.Application(client_max_size=8 << 20)
    for route in ROUTES.values():
        app.router.add_post(route, answer)
    app.router.add_post(_SMALL_ROUTE, stream)
    return app


@web.middleware
async def _names_the_server(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
    request[THINKEXTRACT_SERVER] = CONFIG.upstream_server  # as the gateway names the server it found
    response: web.StreamResponse = await handler(request)
    return response


def _gateway(
    upstream: int, with_middleware: bool, server_named: bool = False, history_passed: bool = False
) -> web.Application:
    async def forward(request: web.Request) -> web.StreamResponse:
        session: aiohttp.ClientSession = request.app["session"]
        body = await request.read()
        headers = {"Content-Type": "application/json"}
        async with session.post(f"http://127.0.0.1:{upstream}{request.path}", data=body, headers=headers) as up:
            if up.content_type != "text/event-stream":
                return web.Response(body=await up.read(), content_type="application/json")
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            async for piece in up.content.iter_any():
                await resp.write(piece)
            await resp.write_eof()
            return resp

    async def on_startup(app: web.Application) -> None:
        app["session"] = aiohttp.ClientSession()

    async def on_cleanup(app: web.Application) -> None:
        await app["session"].close()

    app = web.Application(client_max_size=8 << 20)
    if with_middleware and server_named:
        app.middlewares.append(_names_the_server)
        setup(app, CONFIG.replace(upstream_server="auto"))
    elif with_middleware:  # (``history_passed``: the history goes on as it came, the controls alone read)
        setup(app, CONFIG.replace(history_reasoning="pass") if history_passed else CONFIG)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    for route in (*ROUTES.values(), _SMALL_ROUTE):
        app.router.add_post(route, forward)
    return app


Runs = dict[str, dict[str, list[tuple[float, float]]]]


async def _end_to_end(requests: dict[str, tuple[str, bytes, int]], rounds: int, server_named: bool) -> Runs:
    """For each named request (route, body, requests per batch): (wall, CPU) seconds per request of
    each batch, plain and with the middleware, the two in alternating order round by round."""
    runners = []
    runner, up_port = await _serve(_upstream())
    runners.append(runner)
    ports = {}
    for name, on in (("plain", False), ("middleware", True)):
        runner, ports[name] = await _serve(_gateway(up_port, on, server_named))
        runners.append(runner)
    times: Runs = {name: {"plain": [], "middleware": []} for name in requests}
    async with aiohttp.ClientSession() as session:

        async def batch(port: int, route: str, body: bytes, n: int, key: str) -> tuple[float, float]:
            wall, cpu = time.perf_counter(), time.process_time()
            headers = {"Authorization": f"Bearer {key}"}  # each history its own client: its own scope
            for _ in range(n):
                async with session.post(f"http://127.0.0.1:{port}{route}", data=body, headers=headers) as resp:
                    assert resp.status == 200, await resp.text()
                    await resp.read()
            return (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n

        for name, (route, body, _) in requests.items():  # warm both, every route
            await batch(ports["plain"], route, body, 1, name)
            await batch(ports["middleware"], route, body, 1, name)
        for r in range(rounds):
            for name, (route, body, n) in requests.items():
                order = ("plain", "middleware") if r % 2 == 0 else ("middleware", "plain")
                for proxy in order:
                    times[name][proxy].append(await batch(ports[proxy], route, body, n, name))
    for runner in runners:
        await runner.cleanup()
    return times


def end_to_end(
    bodies: dict[tuple[Surface, str, str], bytes], rounds: int, quick: bool, server_named: bool = False
) -> str:
    requests = {
        f"{surface}|{size}|{state}": (ROUTES[surface], body, max(2, (4 if quick else 20) * 200_000 // len(body)))
        for (surface, size, state), body in bodies.items()
    }
    requests["small"] = (_SMALL_ROUTE, _SMALL.encode(), 20 if quick else 200)
    times = asyncio.run(_end_to_end(requests, rounds, server_named))
    out = [
        "End to end through a proxy on loopback, one request at a time; wall ms per request, median"
        f" (min–max) of {rounds} rounds alternating the proxy without and with the middleware (request side,"
        " memory record), and the ratio of the whole process's CPU time (client, proxy, upstream):",
        "",
        "| surface | history | body | plain forwarding | with the middleware | ratio | ratio of CPU time |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (_, body, _) in requests.items():
        if name == "small":
            continue
        surface, size, state = name.split("|")
        plain, middleware = (times[name][p] for p in ("plain", "middleware"))
        ratio = Spread.of([m[0] / p[0] for m, p in zip(middleware, plain, strict=True)])
        cpu = Spread.of([m[1] / p[1] for m, p in zip(middleware, plain, strict=True)])
        out.append(
            f"| {surface} | {size}, {state} | {len(body) / 1000:.0f} KB"
            f" | {Spread.of([p[0] for p in plain]).fmt(scale=1e3)} ms"
            f" | {Spread.of([m[0] for m in middleware]).fmt(scale=1e3)} ms | {ratio.fmt()} | {cpu.fmt()} |"
        )
    plain, middleware = (times["small"][p] for p in ("plain", "middleware"))
    added = Spread.of([(m[1] - p[1]) for m, p in zip(middleware, plain, strict=True)])
    out += [
        "",
        "The fixed cost of a small request (one user message, the answer streamed in 20 events): CPU µs of the"
        " whole process (client, proxy, upstream) per request, median (min–max) of the same rounds:",
        "",
        "| plain forwarding | with the middleware | added by the middleware |",
        "|---|---|---|",
        f"| {Spread.of([p[1] for p in plain]).fmt('.0f', 1e6)} µs"
        f" | {Spread.of([m[1] for m in middleware]).fmt('.0f', 1e6)} µs | {added.fmt('.0f', 1e6)} µs |",
    ]
    return "\n".join(out)


def next_request(bodies: dict[tuple[Surface, str, str], bytes], rounds: int, quick: bool) -> str:
    """An agent's next request (two turns more), read with the reading the scope kept of the one
    before (``history.carry``) and afresh: keys, transform and the record's entries of each."""
    try:
        from gateway_mw.history.carry import CarriedStates
    except ImportError:
        return "Not measured: this version keeps no reading for a scope's next request."
    later = histories(more=2)
    said = [Said(original=_THOUGHT)]
    out = [
        "An agent's next request (the history two turns longer; on messages Claude Code's cache marker moved"
        " from the last message to the new last one), in process: the record's keys, the transform and the"
        " record's entries of it, read afresh, read with the reading its scope kept of the request before, and"
        " read with nothing kept yet and kept for the next (a conversation's first request in a process: what"
        " is kept is measured);"
        f" CPU ms per request, median (min–max) of {rounds} interleaved rounds:",
        "",
        "| surface | history | body | read afresh | with the earlier reading | ratio |"
        " nothing kept yet (kept for the next) | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, earlier in bodies.items():
        surface, size_name, state = key
        side, body = _side(surface), later[key]
        states = CarriedStates()
        first = Request(side, earlier, (states, b"scope"))
        record_keys(side, first, CONFIG)
        first.keep(transform_request(side, first, CONFIG))
        record_entries(side, first, said, CONFIG)

        def told(carry: Any, side: Any = side, body: bytes = body, kept: bool = False) -> None:
            request = Request(side, body, carry)
            record_keys(side, request, CONFIG)
            rewritten = transform_request(side, request, CONFIG)
            if kept:  # as the middleware does with a request it keeps the reading of
                request.keep(rewritten)
            record_entries(side, request, said, CONFIG)
            if kept:
                request.recount()

        n = max(2, (3 if quick else 20) * 200_000 // len(body))
        times = interleaved(
            {
                "afresh": lambda n=n, told=told: _per_call(lambda: told(None), n),
                "carried": lambda n=n, told=told, states=states: _per_call(lambda: told((states, b"scope")), n),
                "first": lambda n=n, told=told: _per_call(lambda: told((CarriedStates(), b"scope"), kept=True), n),
            },
            rounds,
        )
        ratio = Spread.of([c / a for c, a in zip(times["carried"], times["afresh"], strict=True)])
        first = Spread.of([f / a for f, a in zip(times["first"], times["afresh"], strict=True)])
        out.append(
            f"| {surface} | {size_name}, {state} | {len(body) / 1000:.0f} KB"
            f" | {Spread.of(times['afresh']).fmt(scale=1e3)} ms | {Spread.of(times['carried']).fmt(scale=1e3)} ms"
            f" | {ratio.fmt()} | {Spread.of(times['first']).fmt(scale=1e3)} ms | {first.fmt()} |"
        )
    return "\n".join(out)


def tables(rounds: int, quick: bool = False) -> str:
    bodies = histories()
    return "\n\n".join(
        (in_process(bodies, rounds, quick), next_request(bodies, rounds, quick), end_to_end(bodies, rounds, quick))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--end-to-end", action="store_true", help="only the end-to-end tables")
    parser.add_argument(
        "--server-named", action="store_true", help="end to end, an outer middleware naming the server (as the gateway)"
    )
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    if args.end_to_end:
        print(end_to_end(histories(), rounds, args.quick, args.server_named))
    else:
        print(tables(rounds, args.quick))


if __name__ == "__main__":
    main()
