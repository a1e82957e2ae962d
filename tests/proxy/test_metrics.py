"""What an operator reads of the gateway: requests by status and client key alias, open streams and how
streams ended, tokens by key from the upstream's usage, process metrics per worker, the key alias in
the access log, and one debug line per request on its translation. Under gunicorn with two workers
(every scrape of either worker answers for both), and in one process for the debug lines."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, get_args

import aiohttp
import msgspec
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from gateway_mw import ModelProfile
from gateway_mw.config import Surface
from gateway_mw.proxy import DEMO_CONFIG, load_settings
from gateway_mw.surfaces.registry import SURFACES

from .processes import gunicorn
from .support import records, samples, serving

USAGE = {
    "prompt_tokens": 10,
    "completion_tokens": 20,
    "total_tokens": 30,
    "completion_tokens_details": {"reasoning_tokens": 7},
}


def chunk(delta: dict[str, Any], **extra: Any) -> bytes:
    body = {"object": "chat.completion.chunk", "model": "qwen3-8b", "choices": [{"index": 0, "delta": delta}], **extra}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def chat(request: web.Request) -> web.StreamResponse:
    """A model server: ``qwen3-8b`` streams reasoning inline with its usage at the end; ``err`` is a
    500; ``drop`` fails mid-stream; ``slow`` and ``stall`` go on for longer than anyone waits."""
    model = (await request.json())["model"]
    if model == "err":
        return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=500)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(chunk({"role": "assistant", "content": "<think>2+2"}))
    if model == "drop":
        assert request.transport is not None
        request.transport.abort()
        return resp
    if model in ("slow", "stall"):
        for _ in range(3000):  # until the gateway lets go: longer than any test takes, on any machine
            await asyncio.sleep(0.1 if model == "slow" else 3600)
            await resp.write(chunk({"content": " and"}))
    await resp.write(chunk({"content": " is 4</think>It is 4."}))
    await resp.write(chunk({}, usage=None) + chunk({}, choices=[], usage=USAGE) + b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


async def models(request: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "qwen3-8b", "owned_by": "vllm"}]})


@contextlib.asynccontextmanager
async def upstream() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    # A model server stops generating for a client that has gone (as vLLM does): else a stalled stream's
    # handler holds the server's cleanup for its shutdown timeout (a minute).
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def ask(base: str, key: str | None, model: str = "qwen3-8b", path: str = "/v1/chat/completions") -> int:
    """One stream read to its end, on a connection of its own (either worker may take it)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
        body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "2+2?"}]}
        async with session.post(base + path, json=body, headers=headers) as resp:
            with contextlib.suppress(aiohttp.ClientPayloadError):
                await resp.read()
            return resp.status


async def scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session,
        session.get(base + "/metrics") as resp,
    ):
        return samples(await resp.text())


def family(got: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> dict[Any, float]:
    return {labels: value for (sample, labels), value in got.items() if sample == name}


def per_worker(metrics_dir: Path, tmp_path: Path) -> dict[str, float]:
    """Each worker's own forwarded requests, read from its file alone."""
    counts = {}
    for db in sorted(metrics_dir.glob("counter_*.db")):
        alone = tmp_path / f"{db.stem}-{time.monotonic_ns()}"
        alone.mkdir()
        shutil.copy(db, alone / db.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))
        got = samples(generate_latest(registry).decode())
        counts[db.stem] = sum(family(got, "gateway_proxy_requests_total").values())
    return counts


def key_label(key: str, **labels: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"key": key, **labels}.items()))


async def test_two_gunicorn_workers_count_by_status_key_outcome_and_tokens(tmp_path: Path) -> None:
    keyfile = tmp_path / "keys"
    keyfile.write_text("# alias key\nteam-a sk-aaaa-1\nteam-b sk-bbbb-2\n")
    metrics_dir = tmp_path / "metrics"
    async with upstream() as up:
        env = {
            "GATEWAY_UPSTREAM": up,
            "GATEWAY_CLIENT_KEYS_FILE": str(keyfile),
            "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        }
        async with gunicorn(tmp_path, env) as gw:
            # Waves of team-a's streams until both workers have served some (the kernel picks).
            n = 0
            for _ in range(200):  # until both have: a busy machine may leave one worker idle for long
                statuses = await asyncio.gather(*(ask(gw.base, "sk-aaaa-1") for _ in range(6)))
                assert statuses == [200] * 6
                n += 6
                served = per_worker(metrics_dir, tmp_path)
                if len(served) == 2 and all(count > 0 for count in served.values()):
                    break
            assert [await ask(gw.base, "sk-bbbb-2", model) for model in ("qwen3-8b", "err", "drop")] == [200, 500, 200]
            assert (await ask(gw.base, None), await ask(gw.base, "sk-aaaa-1", path="/v1/files")) == (401, 404)

            # A stream open now is seen by a scrape of either worker; a client that leaves ends it.
            session = aiohttp.ClientSession()
            slow = await session.post(
                gw.base + "/v1/chat/completions",
                json={"model": "slow", "stream": True},
                headers={"Authorization": "Bearer sk-aaaa-1"},
            )
            await slow.content.readuntil(b"\n\n")
            opened = [family(await scrape(gw.base), "gateway_proxy_open_streams") for _ in range(4)]
            slow.close()
            await session.close()
            gone = ("gateway_proxy_streams_total", (("outcome", "client_gone"), ("surface", "chat")))
            for _ in range(600):  # a bound for a hang, not a speed
                if (await scrape(gw.base)).get(gone):
                    break
                await asyncio.sleep(0.1)
            final = [await scrape(gw.base) for _ in range(4)]
            workers = gw.workers
            # aiohttp writes a request's access line after its handler returns, which for the stream
            # whose client left may come after the counter a scrape already shows.
            for _ in range(600):  # a bound for a hang, not a speed
                log = gw.text()
                if sum('"POST /v1/chat/completions' in line for line in log.splitlines()) >= n + 5:
                    break
                await asyncio.sleep(0.1)
    assert opened == [{(("surface", "chat"),): 1.0}] * 4
    for got in final:
        assert family(got, "gateway_proxy_requests_total") == {
            key_label("team-a", status="200", surface="chat"): n + 1,
            key_label("team-b", status="200", surface="chat"): 2,
            key_label("team-b", status="500", surface="chat"): 1,
            key_label("-", status="401", surface="chat"): 1,
            key_label("team-a", status="404", surface="other"): 1,
        }
        assert family(got, "gateway_proxy_streams_total") == {
            (("outcome", "completed"), ("surface", "chat")): n + 1,
            (("outcome", "upstream_dropped"), ("surface", "chat")): 1,
            (("outcome", "client_gone"), ("surface", "chat")): 1,
        }
        assert family(got, "gateway_proxy_open_streams") == {(("surface", "chat"),): 0.0}
        assert family(got, "gateway_proxy_tokens_total") == {
            key_label("team-a", kind="prompt", surface="chat"): 10 * n,
            key_label("team-a", kind="completion", surface="chat"): 20 * n,
            key_label("team-a", kind="reasoning", surface="chat"): 7 * n,
            key_label("team-b", kind="prompt", surface="chat"): 10,
            key_label("team-b", kind="completion", surface="chat"): 20,
            key_label("team-b", kind="reasoning", surface="chat"): 7,
        }
        for name in ("process_resident_memory_bytes", "process_open_fds", "process_cpu_seconds_total"):
            per_pid = family(got, name)
            assert {dict(labels)["pid"] for labels in per_pid} == {str(pid) for pid in workers}, name
            # A worker's values are its last sample (every few seconds, or its own scrape): CPU time
            # counted in clock ticks may still be 0 there for a worker forked moments before.
            floor = 0 if name == "process_cpu_seconds_total" else 1
            assert all(value >= floor for value in per_pid.values()), (name, per_pid)
            assert max(per_pid.values()) > 0, (name, per_pid)  # the worker that answered sampled just now
    access = [line for line in log.splitlines() if '"POST /v1/chat/completions' in line or "/v1/files" in line]
    assert sorted(line.rsplit(" ", 1)[1] for line in access) == sorted(
        ["key=team-a"] * (n + 2) + ["key=team-b"] * 3 + ["key=-"]
    )
    assert "sk-aaaa" not in log and "sk-bbbb" not in log
    assert "Traceback" not in log


async def test_one_debug_line_per_request_says_whether_and_how_it_was_translated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway_mw.proxy")
    keyfile = tmp_path / "keys"
    keyfile.write_text("team-a sk-aaaa-1\n")
    async with upstream() as up:
        # The read timeout ends the stalled stream; the others, written at once, must not meet it even
        # on a busy machine: seconds, not a fraction.
        s, _ = load_settings(["--upstream", up, "--client-keys-file", str(keyfile), "--read-timeout", "2"], {})
        config = DEMO_CONFIG.replace(
            upstream_server="vllm", profiles=(ModelProfile(match="qwen3*", trim_reasoning_tail=False),)
        )
        s = msgspec.structs.replace(s, think_extract=config)
        async with serving(s) as base, aiohttp.ClientSession() as session:
            headers = {"Authorization": "Bearer sk-aaaa-1"}
            for rid, method, path, body, extra in [
                ("d-1", "POST", "/v1/chat/completions", {"model": "qwen3-8b", "stream": True}, {}),
                (
                    "d-2",
                    "POST",
                    "/v1/chat/completions",
                    {"model": "qwen3-8b", "stream": True},
                    {"X-Think-Extract": "off"},
                ),
                ("d-3", "POST", "/v1/chat/completions", {"model": "err"}, {}),
                ("d-4", "POST", "/v1/chat/completions", {"model": "stall", "stream": True}, {}),
                ("d-5", "GET", "/v1/files", None, {}),
                ("d-6", "POST", "/v1/responses", {"model": "x"}, {"Authorization": "Bearer nope"}),
            ]:
                async with session.request(
                    method, base + path, json=body, headers={**headers, "X-Request-Id": rid, **extra}
                ) as resp:
                    with contextlib.suppress(aiohttp.ClientPayloadError):
                        await resp.read()
    lines = [message for _, level, message in records(caplog, "gateway_mw.proxy") if level == logging.DEBUG]
    tokens = "tokens prompt=10 completion=20 reasoning=7"
    qwen = "model 'qwen3-8b', family preset 'Qwen3 hybrid', profile 'qwen3*'"
    assert lines == [
        f"request d-1: POST /v1/chat/completions: 200, key team-a, {qwen}, stream completed, {tokens}; "
        "chat: translated, reasoning into chat_reasoning_field=both",
        f"request d-2: POST /v1/chat/completions: 200, key team-a, {qwen}, stream completed, {tokens}; "
        "chat: passed through (client_off): the client sent X-Think-Extract: off",
        "request d-3: POST /v1/chat/completions: 500, key team-a; "
        "chat: passed through (status): the upstream's status is not a success",
        f"request d-4: POST /v1/chat/completions: 200, key team-a, {qwen}, stream timed_out; "
        "chat: translated, reasoning into chat_reasoning_field=both",
        "request d-5: GET /v1/files: 404, key team-a: refused, not forwarded",
        "request d-6: POST /v1/responses: 401, key -: refused, not forwarded",
    ]
    assert not any("sk-aaaa" in record.getMessage() for record in caplog.records)


async def answer_any(request: web.Request) -> web.Response:
    """A model server of every surface: a non-stream answer with reasoning inline, on any route."""
    return web.json_response({"model": "m", "message": {"role": "assistant", "content": "<think>a</think>b"}})


async def test_the_debug_line_says_how_every_surface_translates(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway_mw.proxy")
    app = web.Application()
    app.router.add_post("/{tail:.*}", answer_any)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        upstream_url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        flags = ["--upstream", upstream_url, "--forward-routes", "* /**", "--messages-policy", "unsigned"]
        s, _ = load_settings(flags, {})
        config = s.think_extract
        how = {  # every surface the code knows must say how it translates (a new one fails here)
            "chat": f"reasoning into chat_reasoning_field={config.chat_reasoning_field}",
            "messages": f"reasoning into thinking blocks ({config.messages_policy})",
            "responses": "reasoning into reasoning items",
            "ollama": "reasoning into thinking",
        }
        paths = {surface: next(p for p, s in config.routes.items() if s == surface) for surface in get_args(Surface)}
        async with serving(s) as base, aiohttp.ClientSession() as session:
            for surface, path in paths.items():
                headers = {"X-Request-Id": f"s-{surface}"}
                async with session.post(base + path, json={"model": "m"}, headers=headers) as resp:
                    assert resp.status == 200
                    await resp.read()
    finally:
        await runner.cleanup()
    lines = [message for _, level, message in records(caplog, "gateway_mw.proxy") if level == logging.DEBUG]
    assert lines == [
        f"request s-{surface}: POST {path}: 200, key -, model 'm', no family preset; "
        f"{surface}: translated, {how[surface]}"
        for surface, path in paths.items()
    ]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("content_type", sorted(SURFACES["ollama"].stream_types))
async def test_a_stream_in_any_type_a_surface_streams_in_is_relayed_as_a_stream(
    caplog: pytest.LogCaptureFixture, content_type: str
) -> None:
    """The gateway counts as a stream every answer the middleware translates as one (Ollama's lines as
    ``application/ndjson`` too): its debug line says how the stream ended."""

    async def answer_lines(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": content_type})
        await resp.prepare(request)
        for content, done in (("<think>a</think>", False), ("b", False), ("", True)):
            line = {"model": "m", "message": {"role": "assistant", "content": content}, "done": done}
            await resp.write(json.dumps(line).encode() + b"\n")
        await resp.write_eof()
        return resp

    caplog.set_level(logging.DEBUG, logger="gateway_mw.proxy")
    app = web.Application()
    app.router.add_post("/api/chat", answer_lines)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        s, _ = load_settings(["--upstream", f"http://127.0.0.1:{runner.addresses[0][1]}"], {})
        headers = {"X-Request-Id": "l"}
        async with (
            serving(s) as base,
            aiohttp.ClientSession() as session,
            session.post(base + "/api/chat", json={"model": "m"}, headers=headers) as r,
        ):
            assert r.status == 200
            await r.read()
    finally:
        await runner.cleanup()
    lines = [message for _, level, message in records(caplog, "gateway_mw.proxy") if level == logging.DEBUG]
    assert lines == [
        "request l: POST /api/chat: 200, key -, model 'm', no family preset, stream completed; "
        "ollama: translated, reasoning into thinking"
    ]


async def answer_with_own_reasoning(request: web.Request) -> web.StreamResponse:
    """Ollama with its own parser: a thinking line, then the answer."""
    lines = [
        {"model": "qwen3:8b", "message": {"role": "assistant", "content": "", "thinking": "a"}, "done": False},
        {"model": "qwen3:8b", "message": {"role": "assistant", "content": "b"}, "done": False},
        {"model": "qwen3:8b", "message": {"role": "assistant", "content": ""}, "done": True},
    ]
    if (await request.json()).get("stream") is False:
        return web.json_response({**lines[2], "message": {"role": "assistant", "content": "b", "thinking": "a"}})
    resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await resp.prepare(request)
    await resp.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    await resp.write_eof()
    return resp


async def test_the_debug_line_says_the_upstreams_own_reasoning_was_passed_on(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway_mw.proxy")
    app = web.Application()
    app.router.add_post("/api/chat", answer_with_own_reasoning)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        s, _ = load_settings(["--upstream", f"http://127.0.0.1:{runner.addresses[0][1]}"], {})
        async with serving(s) as base, aiohttp.ClientSession() as session:
            for streamed in (True, False):
                body = {"model": "qwen3:8b", "stream": streamed}
                async with session.post(base + "/api/chat", json=body, headers={"X-Request-Id": f"n-{streamed}"}) as r:
                    assert r.status == 200
                    await r.read()
    finally:
        await runner.cleanup()
    lines = [message for _, level, message in records(caplog, "gateway_mw.proxy") if level == logging.DEBUG]
    qwen = "model 'qwen3:8b', family preset 'Qwen3 hybrid'"
    assert lines == [
        f"request n-True: POST /api/chat: 200, key -, {qwen}, stream completed; "
        "ollama: the upstream's own reasoning passed on",
        f"request n-False: POST /api/chat: 200, key -, {qwen}; ollama: the upstream's own reasoning passed on",
    ]
