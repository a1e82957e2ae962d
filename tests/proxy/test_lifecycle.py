"""Signals, as an operator sends them: SIGHUP reloads the client keys while streams go on; SIGTERM fails
``/readyz`` for ``drain_delay`` while the gateway serves on, then drains within its bound. Both as
``python -m gateway_mw`` and as gunicorn with two workers (the gateway's gunicorn configuration)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import aiohttp
import openai

from gateway_mw.proxy.demo_model import QUESTION, model_text

from .processes import Running, children, gateway_mw, gunicorn

USER = [{"role": "user", "content": QUESTION}]
REASONING, _, ANSWER = model_text("demo-r1", QUESTION).partition("</think>")


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


async def open_stream(base: str, key: str) -> tuple[openai.AsyncOpenAI, asyncio.Task[tuple[str, str]]]:
    """A paced chat stream, read to its end in a task; returns once its first chunk is in."""
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
    await asyncio.wait_for(started.wait(), 10)
    return client, task


def keys(path: Path, *lines: str) -> None:
    path.write_text("# alias   key\n" + "".join(line + "\n" for line in lines))


async def reload_while_a_stream_runs(gw: Running, keyfile: Path, reloaded: int) -> None:
    """team-a's stream goes on across a reload that takes team-a's key away and gives team-b one; a
    key file that cannot be read then leaves team-b's key in place."""
    client, stream = await open_stream(gw.base, "sk-team-a")
    keys(keyfile, "team-b sk-team-b")
    gw.signal(signal.SIGHUP)
    await gw.until_logged(r"INFO gateway_mw\.proxy: SIGHUP: client keys reloaded: 1 key$", reloaded)
    for _ in range(6):  # fresh connections: every worker answers with the new keys
        assert (
            await status(gw.base, "/v1/chat/completions", "sk-team-a"),
            await status(gw.base, "/v1/chat/completions", "sk-team-b"),
        ) == (401, 200)
    assert not stream.done()
    assert await asyncio.wait_for(stream, 30) == (REASONING, ANSWER)  # the open stream ran to its end
    await client.close()

    keyfile.write_text("# nobody\n")
    gw.signal(signal.SIGHUP)
    message = f"SIGHUP: client keys not reloaded, the previous ones stay: client_keys_file: {keyfile} holds no key"
    await gw.until_logged(r"ERROR gateway_mw\.proxy: " + message.replace(".", r"\."), reloaded)
    assert await status(gw.base, "/v1/chat/completions", "sk-team-b") == 200


async def drain_while_a_stream_runs(gw: Running, drain: float, probes: int) -> float:
    """SIGTERM: at once /readyz fails and /healthz does not, new requests are still served for the
    drain delay, the open stream runs to its end, the process exits 0; how long that took."""
    client, stream = await open_stream(gw.base, "sk-team-b")
    gw.signal(signal.SIGTERM)
    start = time.monotonic()
    await asyncio.sleep(0.3)
    during = [await status(gw.base, "/readyz") for _ in range(probes)]
    during += [await status(gw.base, "/healthz"), await status(gw.base, "/v1/chat/completions", "sk-team-b")]
    assert time.monotonic() - start < drain  # all of that inside the delay
    assert during == [503] * probes + [200, 200]
    assert await asyncio.wait_for(stream, 30) == (REASONING, ANSWER)
    await client.close()
    assert await gw.wait(30) == 0
    return time.monotonic() - start


async def test_gateway_mw_reloads_keys_on_sighup_and_drains_on_sigterm(tmp_path: Path) -> None:
    keyfile = tmp_path / "keys"
    keys(keyfile, "team-a sk-team-a")
    args = ["--client-keys-file", str(keyfile), "--pace", "15", "--drain-delay", "2", "--shutdown-timeout", "20"]
    async with gateway_mw(tmp_path, {}, *args) as gw:
        await reload_while_a_stream_runs(gw, keyfile, reloaded=1)
        took = await drain_while_a_stream_runs(gw, drain=2.0, probes=3)
        log = gw.text()
    assert 2.0 <= took < 2.0 + 20
    assert "INFO gateway_mw.proxy: SIGTERM: /readyz fails for 2s while the gateway serves on; then it stops" in log
    assert "sk-team" not in log and "Traceback" not in log


async def test_gunicorn_workers_reload_keys_on_sighup_in_place_and_drain_on_sigterm(tmp_path: Path) -> None:
    keyfile = tmp_path / "keys"
    keys(keyfile, "team-a sk-team-a")
    env = {
        "GATEWAY_DEMO_MODEL": "true",
        "GATEWAY_PACE": "15",
        "GATEWAY_CLIENT_KEYS_FILE": str(keyfile),
        "GATEWAY_DRAIN_DELAY": "3",
        "GATEWAY_SHUTDOWN_TIMEOUT": "20",
        "GATEWAY_HEADER_TIMEOUT": "1",
    }
    async with gunicorn(tmp_path, env) as gw:
        workers = gw.workers
        # The gateway's connections, as gateway-mw's: one that sends no request head is closed.
        for _ in range(4):  # whichever worker accepts it
            reader, writer = await asyncio.open_connection("127.0.0.1", int(gw.base.rsplit(":", 1)[1]))
            start = time.monotonic()
            assert await asyncio.wait_for(reader.read(), 10) == b""
            assert 0.8 <= time.monotonic() - start < 3.0  # timed from the accept, a moment before
            writer.close()
        await reload_while_a_stream_runs(gw, keyfile, reloaded=2)  # once per worker
        assert children(gw.process.pid) == workers  # reloaded in place: the same two workers
        took = await drain_while_a_stream_runs(gw, drain=3.0, probes=6)
        log = gw.lines()
    assert 3.0 <= took < 3.0 + 20
    assert [line.split("] ", 3)[-1] for line in log if "Hang up" in line] == [
        "Hang up: the workers read their client keys again"
    ] * 2
    draining = [line for line in log if "SIGTERM: /readyz fails" in line]
    assert len(draining) == 2 and all(
        line.endswith("SIGTERM: /readyz fails for 3s while the worker serves on; then open requests get 20s")
        for line in draining
    )
    assert [line for line in log if ("[ERROR]" in line or " ERROR " in line) and "SIGHUP" not in line] == []
    assert not any("sk-team" in line or "Traceback" in line for line in log)
