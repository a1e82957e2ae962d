"""The reasoning record between gateway processes, with real parts: two ``gateway-mw`` processes share a
``redis-server`` (replicas behind a load balancer) or a SQLite file (the workers of one host). A client
that drops the reasoning sends its first turn through one and its second through the other: the
upstream sees the reasoning again. A client with another key finds none of it. Redis stopped: requests
are still answered, and the failures are counted in ``/metrics``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from .support import RedisServer

WRITTEN = "<think>I need the weather first.</think>Let me look."
CALL = {"id": "call_q9Zr4", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
QUESTION = [{"role": "user", "content": "Weather in Paris?"}]


class Upstream:
    """A model server that calls the tool, then answers; it records every request body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        first = not any(m["role"] == "tool" for m in body["messages"])
        message: dict[str, Any] = {"role": "assistant", "content": WRITTEN if first else "It is sunny."}
        if first:
            message["tool_calls"] = [CALL]
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if first else "stop"}
        return web.json_response(
            {"id": "c", "object": "chat.completion", "created": 1, "model": body["model"], "choices": [choice]}
        )


@contextlib.asynccontextmanager
async def upstream() -> AsyncIterator[tuple[str, Upstream]]:
    up = Upstream()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", up.chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", up
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def gateway(upstream_url: str, store: str, tmp_path: Path) -> Iterator[str]:
    """``python -m gateway_mw`` in front of ``upstream_url`` with the record in ``store``; its base URL. It
    stops at once when done (no drain delay)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THINK_EXTRACT_", "GATEWAY_"))}
    env |= {"THINK_EXTRACT_REASONING_STORE": store, "THINK_EXTRACT_UPSTREAM_SERVER": "generic", "CK": "key-a key-b"}
    cmd = [sys.executable, "-m", "gateway_mw", "--port", "0", "--drain-delay", "0", "--upstream", upstream_url]
    cmd += ["--client-keys-env", "CK"]
    process = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:\d+", process.stdout.readline())
        assert found, "the gateway did not start"
        yield found.group(0)
    finally:
        process.terminate()
        process.wait(15)


async def turn(session: aiohttp.ClientSession, base: str, key: str, messages: list[Any]) -> dict[str, Any]:
    body = {"model": "llama-3.1-8b", "messages": messages, "tools": TOOLS}
    async with session.post(f"{base}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}) as r:
        assert r.status == 200
        answer: dict[str, Any] = (await r.json())["choices"][0]["message"]
        return answer


async def tool_loop(first: str, second: str, key: str = "key-a", second_key: str | None = None) -> list[Any]:
    """Turn one through ``first``, turn two (without the reasoning, as LangChain sends it) through
    ``second``; the assistant message of turn two as ``second``'s upstream received it."""
    async with aiohttp.ClientSession() as session:
        writes = await writes_ended(first)
        answer = await turn(session, first, key, QUESTION)
        assert answer["reasoning_content"] == "I need the weather first."
        replay = [*QUESTION, {"role": "assistant", "content": answer["content"], "tool_calls": answer["tool_calls"]},
                  {"role": "tool", "tool_call_id": CALL["id"], "content": "sunny"}]  # fmt: skip
        # The first gateway writes after the response, in the background: until it has (or has failed to).
        deadline = time.monotonic() + 60  # a bound for a hang, not a speed
        while await writes_ended(first) == writes:
            assert time.monotonic() < deadline, "the first gateway wrote nothing"
            await asyncio.sleep(0.05)
        await turn(session, second, second_key or key, replay)
    return replay


async def writes_ended(base: str) -> float:
    """The writes ``base``'s record has done or given up on, so far."""
    got = await metrics(base)
    return got["gateway_mw_record_written_total"] + got["gateway_mw_record_backend_errors_total"]


async def metrics(base: str) -> dict[str, float]:
    async with aiohttp.ClientSession() as session, session.get(f"{base}/metrics") as r:
        text = await r.text()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(gateway_mw_record_\w+_total) (\S+)$", text, re.M)}


@pytest.mark.parametrize("backend", [pytest.param("redis", marks=pytest.mark.redis), "sqlite"])
async def test_two_gateways_share_the_record(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = request.getfixturevalue("redis_server").url if backend == "redis" else f"sqlite:{tmp_path / 'record.db'}"
    async with upstream() as (url, up):
        with gateway(url, store, tmp_path) as a, gateway(url, store, tmp_path) as b:
            await tool_loop(a, b)
            assert up.bodies[1]["messages"][1] == {"role": "assistant", "content": WRITTEN, "tool_calls": [CALL]}
            await tool_loop(a, b, "key-a", "key-b")  # the same tool call id, replayed with another key
            assert up.bodies[3]["messages"][1] == {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL]}
            assert (await metrics(b))["gateway_mw_record_hits_total"] == 1


async def test_redis_stopped_the_requests_are_still_answered(redis_server: RedisServer, tmp_path: Path) -> None:
    async with upstream() as (url, up):
        with gateway(url, redis_server.url, tmp_path) as a:
            await tool_loop(a, a)
            before = await metrics(a)
            redis_server.stop()
            await tool_loop(a, a)  # every turn answered; the record reads as empty
            assert up.bodies[3]["messages"][1] == {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL]}
            after = await metrics(a)
    assert before["gateway_mw_record_backend_errors_total"] == 0
    assert after["gateway_mw_record_backend_errors_total"] > 0
    assert json.dumps(up.bodies[1]["messages"][1]) == json.dumps(
        {"role": "assistant", "content": WRITTEN, "tool_calls": [CALL]}
    )


@pytest.mark.parametrize(
    ("argv", "environ", "workers"),
    [
        (["app:f()", "-w", "4"], {}, 4),
        (["app:f()", "--workers=3"], {}, 3),
        (["app:f()", "-w2"], {}, 2),
        (["app:f()"], {"WEB_CONCURRENCY": "5"}, 5),
        (["app:f()", "-w", "2"], {"GUNICORN_CMD_ARGS": "--workers 6"}, 2),  # the command line wins
        (["app:f()"], {"GUNICORN_CMD_ARGS": "--workers 6"}, 6),
        (["app:f()"], {}, 1),
    ],
)
def test_the_workers_gunicorn_runs(argv: list[str], environ: dict[str, str], workers: int) -> None:
    from gateway_mw.proxy.app import gunicorn_workers

    assert gunicorn_workers(argv, environ) == workers


@pytest.mark.parametrize(("store", "warned"), [("memory", True), ("sqlite", False), ("off", False)])
def test_several_workers_with_a_record_in_memory_are_warned_of(
    store: str, warned: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from gateway_mw.proxy import app_factory

    for name in [n for n in os.environ if n.startswith(("GATEWAY_", "THINK_EXTRACT_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(sys, "argv", ["gunicorn", "gateway_mw.proxy:app_factory()", "-w", "2"])
    monkeypatch.setenv("GATEWAY_UPSTREAM", "http://127.0.0.1:9")
    monkeypatch.setenv("THINK_EXTRACT_REASONING_STORE", store if store != "sqlite" else f"sqlite:{tmp_path / 'r.db'}")
    app_factory()
    lines = [
        r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "reasoning record" in r.getMessage()
    ]
    assert lines == (
        [
            "2 workers each keep a reasoning record of their own (reasoning_store=memory): a client's next turn that "
            "reaches another worker finds none; set reasoning_store to sqlite:PATH (one host) or redis://HOST:PORT/DB "
            "(several)"
        ]
        if warned
        else []
    )
