"""A reasoning budget the gateway enforces, on the real ``llama-server``: the tiny model under a grammar
that thinks long (60 to 80 words) where it thinks, then answers. Through the middleware, a budget of N
gives the client N reasoning events and then an answer; the run prints what it cost (the reasoning
events, the wall time with and without the budget, the continuation's prompt tokens)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_REQUEST_BODY, ThinkExtractConfig, setup
from gateway_mw.stats import ThinkExtractStats

from .conftest import LLAMA_CPP_PYTHON, cache_root, free_port, offline_env, require
from .llama import CHAT_TEMPLATE, WORDS, build_gguf

LONG = r"""
root   ::= think? answer
think  ::= "<think>" word (" " word){60,80} "</think>"
answer ::= " " word (" " word){2,4}
word   ::= "alpha" | "beta" | "gamma" | "delta"
"""
BUDGET = 8


class Thinking:
    """``llama-server`` serving the tiny model under :data:`LONG` (a server of its own: the suite's
    shared one forces a short reasoning on every request)."""

    def __init__(self, binary: Path, workdir: Path) -> None:
        model, grammar = workdir / "tiny.gguf", workdir / "long.gbnf"
        build_gguf(model)
        grammar.write_text(LONG)
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        cmd = [
            str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
            "--grammar-file", str(grammar), "--reasoning-format", "none", "--jinja", "--chat-template", CHAT_TEMPLATE,
            "--ctx-size", "8192", "--parallel", "1", "--threads", "2", "--seed", "0", "--temp", "1.0",
            "--n-predict", "256", "--no-webui", "--offline",
        ]  # fmt: skip
        self.log = (workdir / "llama-server.log").open("w")
        self.process = subprocess.Popen(cmd, env=offline_env(), stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(600):  # a bound for a hang, not a speed: it answers when it is up
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("llama-server did not start:\n" + (workdir / "llama-server.log").read_text()[-4000:])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
def thinker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Thinking]:
    binary = Path(
        os.environ.get("GATEWAY_MW_LLAMA_SERVER")
        or cache_root() / "llama-server" / LLAMA_CPP_PYTHON / "bin" / "llama-server"
    )
    require(binary.exists(), f"llama-server is not built ({binary} is missing): run .ci/clients-llama-server")
    server = Thinking(binary, tmp_path_factory.mktemp("budget"))
    yield server
    server.stop()


@pytest.fixture
async def front(
    thinker: Thinking, aiohttp_server: Callable[[web.Application], Awaitable[TestServer]]
) -> AsyncIterator[tuple[str, ThinkExtractStats]]:
    async with aiohttp.ClientSession() as session:

        async def forward(request: web.Request) -> web.StreamResponse:
            body = request.get(THINKEXTRACT_REQUEST_BODY) or await request.read()
            upstream = await session.post(thinker.base + request.path, data=body)
            complete = False
            try:
                resp = web.StreamResponse(status=upstream.status)
                resp.content_type = upstream.content_type
                await resp.prepare(request)
                async for piece in upstream.content.iter_any():
                    await resp.write(piece)
                complete = True
                await resp.write_eof()
            except ConnectionResetError:
                pass
            finally:
                upstream.release() if complete else upstream.close()
            return resp

        app = web.Application()
        config = ThinkExtractConfig(upstream_server="llamacpp", reasoning_budget_enforcement="gateway")
        stats = setup(app, config, record="off")
        app.router.add_post("/v1/chat/completions", forward)
        yield str((await aiohttp_server(app)).make_url("")).rstrip("/"), stats


async def answer(url: str, question: str, budget: int | None) -> tuple[list[dict[str, Any]], float]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": question}], "stream": True}
    body["stream_options"] = {"include_usage": True}
    if budget is not None:
        body["reasoning"] = {"max_tokens": budget}
    start = time.perf_counter()
    async with aiohttp.ClientSession() as session, session.post(url + "/v1/chat/completions", json=body) as resp:
        raw = await resp.read()
    took = time.perf_counter() - start
    blocks = raw.decode().split("\n\n")[:-1]
    assert blocks[-1] == "data: [DONE]" and sum(b == "data: [DONE]" for b in blocks) == 1
    return [json.loads(b[len("data: ") :]) for b in blocks[:-1]], took


def texts(chunks: list[dict[str, Any]], name: str) -> list[str]:
    return [c["choices"][0]["delta"][name] for c in chunks if c["choices"] and c["choices"][0]["delta"].get(name)]


async def test_a_budget_on_the_real_server(front: tuple[str, ThinkExtractStats]) -> None:
    url, stats = front
    for k in range(100):  # a question the tiny model thinks on, under the server's seed (it may not)
        question = f"Question number {k}."
        free, free_took = await answer(url, question, None)
        free_reasoning = texts(free, "reasoning_content")
        if free_reasoning:
            break
    assert len(free_reasoning) > BUDGET  # where it thinks, it thinks long (the grammar)
    cut, cut_took = await answer(url, question, BUDGET)
    cut_reasoning = texts(cut, "reasoning_content")
    assert cut_reasoning == free_reasoning[:BUDGET]  # the same model, seed and prompt: the same start
    words = "".join(texts(cut, "content")).split()
    assert 3 <= len(words) <= 5 and set(words) <= set(WORDS)  # an answer after the closing tag
    assert len({(c["id"], c["created"]) for c in cut}) == 1
    assert stats.surface("chat").budgets == {"continued": 1}
    usage_free, usage_cut = free[-1]["usage"], cut[-1]["usage"]
    print(
        f"\nreasoning events: {len(free_reasoning)} without a budget, {len(cut_reasoning)} with {BUDGET};"
        f" wall time {free_took * 1000:.0f} ms without, {cut_took * 1000:.0f} ms with;"
        f" prompt tokens {usage_free['prompt_tokens']} (the request),"
        f" {usage_cut['prompt_tokens']} (the continuation); completion tokens"
        f" {usage_free['completion_tokens']} without, {usage_cut['completion_tokens']} (the continuation)"
    )
