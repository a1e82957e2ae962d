"""Signals, as an operator sends them: SIGHUP reloads the client keys while streams go on; SIGTERM fails
``/readyz`` for ``drain_delay`` while the gateway serves on, then drains within its bound. Both as
``python -m gateway_mw`` and as gunicorn with two workers (the gateway's gunicorn configuration).

The open stream is held by a model server in this process until the test lets it end, so that it is
open across a reload or a drain however busy the machine; a drain ends with a second SIGTERM, once the
test has seen what it serves meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import openai
from aiohttp import web

from .processes import Running, children, gateway_mw, gunicorn

USER = [{"role": "user", "content": "What is 2+2?"}]
REASONING, ANSWER = "I add two and two.", "It is 4."
SERVER = {"THINK_EXTRACT_UPSTREAM_SERVER": "generic"}  # not asked: the held upstream answers chat alone


def chunk(content: str) -> bytes:
    delta = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}  # fmt: skip
    return b"data: " + json.dumps(delta).encode() + b"\n\n"


class HeldUpstream:
    """A model server whose streams send the reasoning, then hold until ``release`` is set, then the
    answer; a request without ``stream`` is answered at once."""

    def __init__(self) -> None:
        self.url = ""
        self.release = asyncio.Event()

    async def chat(self, request: web.Request) -> web.StreamResponse:
        text = f"<think>{REASONING}</think>{ANSWER}"
        if not (await request.json()).get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            return web.json_response(
                {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(chunk("<think>" + REASONING))
        await self.release.wait()
        await resp.write(chunk("</think>" + ANSWER) + b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


@contextlib.asynccontextmanager
async def held_upstream() -> AsyncIterator[HeldUpstream]:
    up = HeldUpstream()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", up.chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    up.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield up
    finally:
        up.release.set()
        await runner.cleanup()


async def status(base: str, path: str, key: str | None = None) -> int:
    """One request on a connection of its own (so that gunicorn's either worker may take it)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        if path.startswith("/v1/"):
            body = {"model": "demo", "messages": USER}
            async with session.post(base + path, json=body, headers=headers) as resp:
                await resp.read()
                return resp.status
        async with session.get(base + path, headers=headers) as resp:
            return resp.status


async def open_stream(
    base: str, key: str, up: HeldUpstream
) -> tuple[openai.AsyncOpenAI, asyncio.Task[tuple[str, str]]]:
    """A chat stream the upstream holds open, read to its end in a task; returns once its first chunk is in."""
    up.release = asyncio.Event()
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
    started = asyncio.Event()

    async def read() -> tuple[str, str]:
        reasoning, content = [], []
        stream = await client.chat.completions.create(model="demo-r1", messages=USER, stream=True)
        async for chunk in stream:
            started.set()
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is not None:
                reasoning.append((delta.model_extra or {}).get("reasoning_content") or "")
                content.append(delta.content or "")
        return "".join(reasoning), "".join(content)

    task = asyncio.create_task(read())
    await asyncio.wait_for(started.wait(), 60)
    return client, task


def keys(path: Path, *lines: str) -> None:
    path.write_text("# alias   key\n" + "".join(line + "\n" for line in lines))


async def reload_while_a_stream_runs(gw: Running, up: HeldUpstream, keyfile: Path, reloaded: int) -> None:
    """team-a's stream goes on across a reload that takes team-a's key away and gives team-b one; a
    key file that cannot be read then leaves team-b's key in place."""
    client, stream = await open_stream(gw.base, "sk-team-a", up)
    keys(keyfile, "team-b sk-team-b")
    gw.signal(signal.SIGHUP)
    await gw.until_logged(r"INFO gateway_mw\.proxy: SIGHUP: client keys reloaded: 1 key$", reloaded)
    for _ in range(6):  # fresh connections: every worker answers with the new keys
        assert (
            await status(gw.base, "/v1/chat/completions", "sk-team-a"),
            await status(gw.base, "/v1/chat/completions", "sk-team-b"),
        ) == (401, 200)
    assert not stream.done()
    up.release.set()
    assert await asyncio.wait_for(stream, 60) == (REASONING, ANSWER)  # the open stream ran to its end
    await client.close()

    keyfile.write_text("# nobody\n")
    gw.signal(signal.SIGHUP)
    message = f"SIGHUP: client keys not reloaded, the previous ones stay: client_keys_file: {keyfile} holds no key"
    await gw.until_logged(r"ERROR gateway_mw\.proxy: " + message.replace(".", r"\."), reloaded)
    assert await status(gw.base, "/v1/chat/completions", "sk-team-b") == 200


async def drain_while_a_stream_runs(gw: Running, up: HeldUpstream, probes: int, processes: list[int]) -> None:
    """SIGTERM: /readyz fails and /healthz does not, new requests are still served during the drain
    delay; a second SIGTERM to ``processes`` ends it; the open stream runs to its end, the process exits 0."""
    client, stream = await open_stream(gw.base, "sk-team-b", up)
    gw.signal(signal.SIGTERM)
    await gw.until_logged(r"INFO gateway_mw\.proxy: SIGTERM: /readyz fails", len(processes))  # each is draining
    during = [await status(gw.base, "/readyz") for _ in range(probes)]
    during += [await status(gw.base, "/healthz"), await status(gw.base, "/v1/chat/completions", "sk-team-b")]
    assert during == [503] * probes + [200, 200]
    for pid in processes:
        os.kill(pid, signal.SIGTERM)  # the drain's end, now: they stop listening, the open stream goes on
    assert not stream.done()
    up.release.set()
    assert await asyncio.wait_for(stream, 60) == (REASONING, ANSWER)
    await client.close()
    assert await gw.wait(60) == 0


async def test_gateway_mw_reloads_keys_on_sighup_and_drains_on_sigterm(tmp_path: Path) -> None:
    keyfile = tmp_path / "keys"
    keys(keyfile, "team-a sk-team-a")
    args = ["--client-keys-file", str(keyfile), "--drain-delay", "25", "--shutdown-timeout", "20"]
    async with held_upstream() as up, gateway_mw(tmp_path, SERVER, "--upstream", up.url, *args) as gw:
        await reload_while_a_stream_runs(gw, up, keyfile, reloaded=1)
        await drain_while_a_stream_runs(gw, up, probes=3, processes=[gw.process.pid])
        log = gw.text()
    assert "INFO gateway_mw.proxy: SIGTERM: /readyz fails for 25s while the gateway serves on; then it stops" in log
    assert "sk-team" not in log and "Traceback" not in log


async def test_gateway_mw_serves_on_for_the_drain_delay_after_sigterm(tmp_path: Path) -> None:
    async with gateway_mw(tmp_path, {}, "--pace", "0", "--drain-delay", "1") as gw:
        gw.signal(signal.SIGTERM)
        start = time.monotonic()
        assert await gw.wait(60) == 0
        assert time.monotonic() - start >= 1.0  # not before the delay (after it: as the machine allows)


async def test_gunicorn_workers_reload_keys_on_sighup_in_place_and_drain_on_sigterm(tmp_path: Path) -> None:
    keyfile = tmp_path / "keys"
    keys(keyfile, "team-a sk-team-a")
    env = SERVER | {
        "GATEWAY_CLIENT_KEYS_FILE": str(keyfile),
        "GATEWAY_DRAIN_DELAY": "25",
        "GATEWAY_SHUTDOWN_TIMEOUT": "20",
        "GATEWAY_HEADER_TIMEOUT": "1",
    }
    async with held_upstream() as up, gunicorn(tmp_path, env | {"GATEWAY_UPSTREAM": up.url}) as gw:
        workers = gw.workers
        # The gateway's connections, as gateway-mw's: one that sends no request head is closed.
        for _ in range(4):  # whichever worker accepts it
            reader, writer = await asyncio.open_connection("127.0.0.1", int(gw.base.rsplit(":", 1)[1]))
            start = time.monotonic()
            assert await asyncio.wait_for(reader.read(), 60) == b""  # else held for aiohttp's 75 s keep-alive
            assert time.monotonic() - start >= 0.8  # not before the timeout, timed from the accept a moment before
            writer.close()
        await reload_while_a_stream_runs(gw, up, keyfile, reloaded=2)  # once per worker
        assert children(gw.process.pid) == workers  # reloaded in place: the same two workers
        await drain_while_a_stream_runs(gw, up, probes=6, processes=workers)  # the master sends on only the first
        log = gw.lines()
    assert [line.split("] ", 3)[-1] for line in log if "Hang up" in line] == [
        "Hang up: the workers read their client keys again"
    ] * 2
    draining = [line for line in log if "SIGTERM: /readyz fails" in line]
    assert len(draining) == 2 and all(
        line.endswith("SIGTERM: /readyz fails for 25s while the worker serves on; then open requests get 20s")
        for line in draining
    )
    assert [line for line in log if ("[ERROR]" in line or " ERROR " in line) and "SIGHUP" not in line] == []
    assert not any("sk-team" in line or "Traceback" in line for line in log)
