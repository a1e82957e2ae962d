"""The gateway's token counter (``THINKEXTRACT_TOKEN_COUNTER``): its upstream's ``/tokenize``, in
each server's spelling (vLLM, SGLang, llama-server as ``tests/controls/servers.py`` emulates them),
with the gateway's upstream key; asked of no other server; bounded in the text it sends, the answer
it reads, the asks under way and their time, every failure "not counted". Through the gateway, a
non-stream answer's usage gets the count, and the debug line says which count it is."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway_mw.proxy import PROXY, build_app, tokenize
from gateway_mw.proxy.schema import Secret
from gateway_mw.proxy.tokenize import UpstreamTokenizer, tokens_of
from gateway_mw.tokencount import THINKEXTRACT_TOKEN_COUNTER

from ..controls.servers import add_tokenize, toy_tokens
from .support import SCRIPTED, records, refused_port, serving, settings, until

TEXT = "Two plus two, carried over: four."
TOKENS = len(toy_tokens(TEXT, False))


@pytest.mark.parametrize(
    ("body", "tokens"),
    [
        (b'{"count": 7, "max_model_len": 4096, "tokens": [1, 2], "token_strs": null}', 7),  # vLLM: its count
        (b'{"tokens": [5, 6, 7], "count": 3, "max_model_len": 4096}', 3),  # SGLang
        (b'{"tokens": [5, 6, 7, 8]}', 4),  # llama-server: no count, its list
        (b'{"tokens": []}', 0),
        (b'{"count": true, "tokens": [1]}', 1),  # a count that is no number: the list
        (b'{"count": -1}', None),
        (b'{"tokens": "1 2"}', None),
        (b'{"error": "no"}', None),
        (b"[1, 2]", None),
        (b"not json", None),
    ],
)
def test_the_count_in_an_answer(body: bytes, tokens: int | None) -> None:
    assert tokens_of(body) == tokens


class Upstream:
    """An emulated server's ``/tokenize`` (``server``'s spelling), or one answering ``hold``-ing."""

    def __init__(self, server: str) -> None:
        self.asked: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.app = web.Application()
        add_tokenize(self.app, server, self.asked)

        @web.middleware
        async def note(request: web.Request, handler: Any) -> web.StreamResponse:
            self.headers.append(dict(request.headers))
            response: web.StreamResponse = await handler(request)
            return response

        self.app.middlewares.append(note)


@contextlib.asynccontextmanager
async def running(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def counting(url: str, server: str, **options: Any) -> AsyncIterator[UpstreamTokenizer]:
    async with aiohttp.ClientSession() as session:
        yield UpstreamTokenizer(session, url, {"Authorization": "Bearer sk-upstream-1"}, lambda: server, **options)


@pytest.mark.parametrize(
    ("server", "asked"),
    [
        ("vllm", {"model": "qwen3", "prompt": TEXT, "add_special_tokens": False}),
        ("sglang", {"model": "qwen3", "prompt": TEXT, "add_special_tokens": False}),
        ("llamacpp", {"content": TEXT, "add_special": False}),
    ],
)
async def test_each_server_is_asked_in_its_spelling_with_the_gateways_key(server: str, asked: dict[str, Any]) -> None:
    upstream = Upstream(server)
    async with running(upstream.app) as url, counting(url, server) as count:
        assert await count("qwen3", TEXT) == TOKENS  # no BOS: the servers add one when asked to
    assert upstream.asked == [asked]
    assert upstream.headers[0]["Authorization"] == "Bearer sk-upstream-1"
    assert upstream.headers[0]["Content-Type"] == "application/json"


async def test_a_model_not_known_is_not_sent() -> None:
    upstream = Upstream("vllm")
    async with running(upstream.app) as url, counting(url, "vllm") as count:
        assert await count(None, TEXT) == TOKENS
    assert upstream.asked == [{"prompt": TEXT, "add_special_tokens": False}]


@pytest.mark.parametrize("server", ["ollama", "openai", "anthropic", "generic"])
async def test_a_server_without_a_tokenizer_is_not_asked(server: str) -> None:
    upstream = Upstream("vllm")
    async with running(upstream.app) as url, counting(url, server) as count:
        assert await count("qwen3", TEXT) is None
    assert upstream.asked == []


async def test_a_text_over_the_bound_is_not_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    upstream = Upstream("llamacpp")
    sent = json.dumps({"content": TEXT, "add_special": False}, separators=(",", ":"))
    monkeypatch.setattr(tokenize, "TEXT_BYTES", len(sent))
    async with running(upstream.app) as url, counting(url, "llamacpp") as count:
        assert await count(None, TEXT) == TOKENS  # at the bound: sent
        assert await count(None, TEXT + "!") is None
    assert len(upstream.asked) == 1


async def test_an_answer_over_the_bound_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    upstream = Upstream("llamacpp")
    monkeypatch.setattr(tokenize, "ANSWER_BYTES", 16)
    async with running(upstream.app) as url, counting(url, "llamacpp") as count:
        assert await count(None, "a") == 1  # {"tokens":[99]}: 15 bytes
        assert await count(None, TEXT) is None
    assert len(upstream.asked) == 2


@pytest.mark.parametrize("status", [400, 404, 500])
async def test_a_refusal_is_not_counted(status: int) -> None:
    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"count": 3}, status=status)

    app = web.Application()
    app.router.add_post("/tokenize", refuse)
    async with running(app) as url, counting(url, "vllm") as count:
        assert await count("qwen3", TEXT) is None


async def test_an_upstream_that_cannot_be_reached_is_not_counted() -> None:
    with refused_port() as port:
        async with counting(f"http://127.0.0.1:{port}", "sglang") as count:
            assert await count("qwen3", TEXT) is None


async def test_an_upstream_that_never_answers_is_not_counted() -> None:
    answer = asyncio.Event()

    async def silent(request: web.Request) -> web.Response:
        await answer.wait()  # not before the ask has given up
        return web.json_response({"count": 3})

    app = web.Application()
    app.router.add_post("/tokenize", silent)
    async with running(app) as url, counting(url, "vllm", timeout=0.05) as count:
        assert await count("qwen3", TEXT) is None
        answer.set()


async def test_at_most_so_many_asks_are_under_way() -> None:
    release, under_way, most = asyncio.Event(), [0], [0]

    async def held(request: web.Request) -> web.Response:
        under_way[0] += 1
        most[0] = max(most[0], under_way[0])
        await release.wait()
        under_way[0] -= 1
        return web.json_response({"tokens": [1, 2]})

    app = web.Application()
    app.router.add_post("/tokenize", held)
    async with running(app) as url, counting(url, "llamacpp", at_once=2, timeout=60) as count:
        asks = [asyncio.create_task(count(None, TEXT)) for _ in range(5)]
        await until(lambda: under_way[0] == 2)
        release.set()
        assert await asyncio.gather(*asks) == [2] * 5
    assert most[0] == 2


# -- the packaged gateway ------------------------------------------------------------------------------

REASONING_BODY = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1730000000, "model": "qwen3",
    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                 "message": {"role": "assistant", "content": f"<think>{TEXT}</think>It is 4."}}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 20, "total_tokens": 32},
}  # fmt: skip


def model_server(server: str) -> Upstream:
    """``server`` with its ``/tokenize`` and a chat endpoint answering :data:`REASONING_BODY`."""
    upstream = Upstream(server)

    async def chat(request: web.Request) -> web.Response:
        return web.json_response(REASONING_BODY)

    upstream.app.router.add_post("/v1/chat/completions", chat)
    return upstream


async def test_the_gateway_fills_a_bodys_usage_from_its_upstreams_tokenizer(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway_mw.proxy")
    upstream = model_server("sglang")
    async with running(upstream.app) as url:
        s = settings(
            upstream=url, upstream_key=Secret("sk-upstream-2"), think_extract=SCRIPTED.replace(upstream_server="sglang")
        )
        app = build_app(s)
        assert app[THINKEXTRACT_TOKEN_COUNTER] == app[PROXY].count_tokens
        async with serving(s, app) as base, aiohttp.ClientSession() as session:
            body = {"model": "qwen3", "messages": [{"role": "user", "content": "2+2?"}]}
            async with session.post(base + "/v1/chat/completions", json=body, headers={"X-Request-Id": "t-1"}) as resp:
                out = await resp.json()
    assert resp.status == 200
    assert out["usage"] == {**REASONING_BODY["usage"], "completion_tokens_details": {"reasoning_tokens": TOKENS}}
    assert out["choices"][0]["message"]["reasoning_content"] == TEXT
    assert upstream.asked == [{"model": "qwen3", "prompt": TEXT, "add_special_tokens": False}]
    assert upstream.headers[-1]["Authorization"] == "Bearer sk-upstream-2"
    lines = [m for _, level, m in records(caplog, "gateway_mw.proxy") if level == logging.DEBUG and "t-1" in m]
    assert len(lines) == 1
    assert f"reasoning tokens {TOKENS} in the usage (the gateway's count, by the upstream's /tokenize)" in lines[0]
    assert TEXT not in lines[0] and "sk-upstream" not in lines[0]


def chunk(**delta: Any) -> bytes:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "qwen3",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}  # fmt: skip
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def test_a_streams_count_is_of_its_events_and_the_debug_line_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway_mw.proxy")
    upstream = Upstream("vllm")
    usage = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    last = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "qwen3", "choices": [], "usage": usage}
    stream = [chunk(content=t) for t in ("<think>", "Two", " plus", "</think>", "4")]
    stream += [b"data: " + json.dumps(last).encode() + b"\n\n", b"data: [DONE]\n\n"]

    async def chat(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in stream:
            await resp.write(piece)
        await resp.write_eof()
        return resp

    upstream.app.router.add_post("/v1/chat/completions", chat)
    async with running(upstream.app) as url:
        s = settings(upstream=url, think_extract=SCRIPTED.replace(upstream_server="vllm"))
        async with serving(s) as base, aiohttp.ClientSession() as session:
            body = {"model": "qwen3", "messages": [], "stream": True}
            async with session.post(base + "/v1/chat/completions", json=body, headers={"X-Request-Id": "t-2"}) as resp:
                out = await resp.read()
    events = [json.loads(e[6:]) for e in out.split(b"\n\n") if e.startswith(b"data: {")]
    assert events[-1]["usage"] == {**usage, "completion_tokens_details": {"reasoning_tokens": 2}}
    assert upstream.asked == []  # a stream is counted by its events: no one is asked
    lines = [m for _, level, m in records(caplog, "gateway_mw.proxy") if level == logging.DEBUG and "t-2" in m]
    assert len(lines) == 1
    assert "reasoning tokens 2 in the usage (the gateway's count of reasoning events)" in lines[0]


async def test_the_gateway_asks_once_the_upstream_said_which_server_it_is() -> None:
    upstream = model_server("llamacpp")

    async def models(request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": "tiny", "object": "model", "owned_by": "llamacpp"}]}
        )

    upstream.app.router.add_get("/v1/models", models)
    async with running(upstream.app) as url:
        s = settings(upstream=url, think_extract=SCRIPTED.replace(upstream_server="auto"))
        app = build_app(s)
        async with serving(s, app):
            await until(lambda: app[PROXY].server is not None)
            assert await app[THINKEXTRACT_TOKEN_COUNTER]("tiny", TEXT) == TOKENS
    assert upstream.asked == [{"content": TEXT, "add_special": False}]


async def test_the_demo_model_is_not_asked() -> None:
    s = settings()
    app = build_app(s)
    async with serving(s, app):
        assert await app[THINKEXTRACT_TOKEN_COUNTER]("demo", TEXT) is None


def test_a_gateway_without_the_middleware_sets_no_counter() -> None:
    assert THINKEXTRACT_TOKEN_COUNTER not in build_app(settings(middleware=False))
