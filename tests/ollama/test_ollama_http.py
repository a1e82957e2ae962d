"""Ollama's native API through the middleware, read by the real ``ollama`` Python client (its pydantic
models, strict): ``/api/chat`` and ``/api/generate``, streamed (NDJSON, cut anywhere) and not. The
reasoning the model wrote inline arrives in ``thinking``, the answer clean, the final line's metrics
kept; Ollama's own ``thinking`` wins."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import ollama
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.scanner import CONTENT, extract

from ..hypothesis_examples import examples
from .wire import METRICS, body, stream

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

REASONING = "The user asks for 2+2. Adding: 4. Check <b>tags</b> & [brackets] stay."
ANSWER = "It is **4**. Use `<think>` literally in code."
TEXT = f"<think>{REASONING}</think>{ANSWER}"
PIECES = [TEXT[i : i + 5] for i in range(0, len(TEXT), 5)]
QUESTION = [{"role": "user", "content": "What is 2+2?"}]


def model_server(
    config: ThinkExtractConfig, pieces: list[str] = PIECES, cuts: list[int] | None = None, **extra: Any
) -> web.Application:
    """A model server answering in Ollama's format, inline tags in its text, behind the middleware."""

    async def answer(request: web.Request) -> web.StreamResponse:
        req = await request.json()
        kind = "chat" if request.path.endswith("/chat") else "generate"
        if req.get("stream", True) is False:
            return web.json_response(body(kind, req["model"], "".join(pieces), **extra))
        data = stream(kind, req["model"], pieces, **extra)
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        points = [0, *sorted({c % len(data) for c in cuts or []}), len(data)]
        for a, b in itertools.pairwise(points):
            if b > a:
                await resp.write(data[a:b])
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, config)
    app.router.add_post("/api/chat", answer)
    app.router.add_post("/api/generate", answer)
    return app


async def serve(aiohttp_server: ServerFactory, config: ThinkExtractConfig | None = None, **kw: Any) -> str:
    server = await aiohttp_server(model_server(config or ThinkExtractConfig(), **kw))
    return str(server.make_url(""))


async def chat(host: str, model: str = "m", stream: bool = True) -> tuple[str, str, Any]:
    """(thinking, content, the last response) as the client reads them."""
    client = ollama.AsyncClient(host=host)
    if not stream:
        r = await client.chat(model=model, messages=QUESTION, stream=False)
        return r.message.thinking or "", r.message.content or "", r
    thinking, content, last = [], [], None
    async for part in await client.chat(model=model, messages=QUESTION, stream=True):
        thinking.append(part.message.thinking or "")
        content.append(part.message.content or "")
        last = part
    return "".join(thinking), "".join(content), last


async def generate(host: str, model: str = "m", stream: bool = True) -> tuple[str, str, Any]:
    client = ollama.AsyncClient(host=host)
    if not stream:
        r = await client.generate(model=model, prompt="What is 2+2?", stream=False)
        return r.thinking or "", r.response or "", r
    thinking, response, last = [], [], None
    async for part in await client.generate(model=model, prompt="What is 2+2?", stream=True):
        thinking.append(part.thinking or "")
        response.append(part.response or "")
        last = part
    return "".join(thinking), "".join(response), last


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize("ask", [chat, generate], ids=["chat", "generate"])
async def test_the_reasoning_arrives_in_thinking(aiohttp_server: ServerFactory, ask: Any, stream: bool) -> None:
    host = await serve(aiohttp_server)
    thinking, answer, last = await ask(host, stream=stream)
    assert (thinking, answer) == (REASONING, ANSWER)
    assert last.done is True and last.done_reason == "stop"
    assert {k: getattr(last, k) for k in METRICS} == METRICS  # the final line keeps its metrics


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    text=st.lists(st.sampled_from(["<think>", "</think>", "<thi", "nk>", "a", " b", "é🙂", "\n", "ok."]), max_size=10),
    size=st.integers(1, 7),
    cuts=st.lists(st.integers(0, 5000), max_size=6),
)
async def test_any_chunking_gives_the_client_what_extract_gives(
    aiohttp_server: ServerFactory, text: list[str], size: int, cuts: list[int]
) -> None:
    """Stream = non-stream, whatever the lines and the network cuts: what the client joins equals the
    non-stream form of the whole text."""
    whole = "".join(text)
    pieces = [whole[i : i + size] for i in range(0, len(whole), size)] or [""]
    config = ThinkExtractConfig(separator="")
    host = await serve(aiohttp_server, config, pieces=pieces, cuts=cuts)
    segments = extract(whole, config)
    expected = (
        "".join(s.text for s in segments if s.kind != CONTENT),
        "".join(s.text for s in segments if s.kind == CONTENT),
    )
    thinking, answer, last = await chat(host)
    assert (thinking, answer) == expected
    assert last.done is True
    assert (await chat(host, stream=False))[:2] == expected


async def test_ollamas_own_thinking_wins(aiohttp_server: ServerFactory) -> None:
    pieces = ["It is ", "<think>not reasoning</think>", "4."]
    host = await serve(aiohttp_server, pieces=pieces, thinking="I add.")
    thinking, answer, _ = await chat(host)
    assert (thinking, answer) == ("I add." * len(pieces), "".join(pieces))
    assert (await chat(host, stream=False))[:2] == ("I add.", "".join(pieces))


async def test_an_r1_answer_starts_outside_reasoning_and_its_tags_are_read(aiohttp_server: ServerFactory) -> None:
    """Ollama's templates inject no open tag the model does not write (a prompt that ends in one is
    Ollama's own parser's business): DeepSeek-R1's preset does not start inside reasoning here, and
    the tags the model writes are read."""
    tagged = f"<think>{REASONING}</think>{ANSWER}"
    host = await serve(aiohttp_server, pieces=[tagged[i : i + 3] for i in range(0, len(tagged), 3)])
    assert (await chat(host, model="deepseek-r1:8b"))[:2] == (REASONING, ANSWER)
    assert (await chat(host, model="deepseek-r1:8b", stream=False))[:2] == (REASONING, ANSWER)
    untagged = f"{REASONING}</think>{ANSWER}"
    host = await serve(aiohttp_server, pieces=[untagged[i : i + 3] for i in range(0, len(untagged), 3)])
    assert (await chat(host, model="deepseek-r1:8b"))[:2] == ("", untagged)


async def test_off_for_ollama_leaves_it_alone(aiohttp_server: ServerFactory) -> None:
    host = await serve(aiohttp_server, ThinkExtractConfig(ollama_enabled=False))
    assert (await chat(host))[:2] == ("", TEXT)


async def test_a_line_it_cannot_read_goes_on_after_what_was_held(aiohttp_server: ServerFactory) -> None:
    lines = stream("chat", "m", ["<think>Two", " plus", " two</thi"]).split(b"\n")
    broken = b"\n".join([*lines[:3], b"{not json", *lines[3:]])

    async def answer(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        await resp.write(broken)
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/api/chat", answer)
    server = await aiohttp_server(app)
    request = {"model": "m", "messages": QUESTION}
    async with aiohttp.ClientSession() as session, session.post(server.make_url("/api/chat"), json=request) as resp:
        out = (await resp.read()).split(b"\n")
    decoded = [json.loads(line) if line.startswith(b'{"') else line for line in out if line]
    assert [
        d if isinstance(d, bytes) else (d["message"].get("thinking"), d["message"]["content"]) for d in decoded
    ] == [
        ("Two", ""),
        (" plus", ""),
        (" two", ""),
        ("</thi", ""),  # held as a possible close tag: it goes first, as reasoning
        b"{not json",
        (None, ""),
    ]
