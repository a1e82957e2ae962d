"""A request that says ``"think": false``: Ollama renders the template with the reasoning already closed
and answers with text only, no ``thinking`` and no tags. For a model whose family preset opens every
answer inside reasoning (DeepSeek-R1's ``start_with_reasoning``), that text is still the answer."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import ollama
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.pipeline import StreamPipeline

from .wire import body, ndjson, respond_lines, stream

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "deepseek-r1:8b"
ANSWER = ["The answer", " is 4."]


async def ollama_without_thinking(aiohttp_server: ServerFactory, asked: list[dict[str, Any]]) -> str:
    """Ollama for a thinking model asked with ``think: false``: the answer alone (server/routes.go
    builds no thinking parser then), as one body or a line per piece."""

    async def answer(request: web.Request) -> web.StreamResponse:
        question = await request.json()
        asked.append(question)
        kind = "chat" if request.path == "/api/chat" else "generate"
        if question.get("stream") is False:
            return web.Response(body=ndjson([body(kind, MODEL, "".join(ANSWER))]), content_type="application/json")
        return await respond_lines(request, stream(kind, MODEL, ANSWER))

    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/api/chat", answer)
    app.router.add_post("/api/generate", answer)
    server = await aiohttp_server(app)
    return str(server.make_url(""))


@pytest.mark.parametrize("stream_it", [True, False])
async def test_think_false_on_chat_keeps_the_answer_in_content(aiohttp_server: ServerFactory, stream_it: bool) -> None:
    asked: list[dict[str, Any]] = []
    client = ollama.AsyncClient(host=await ollama_without_thinking(aiohttp_server, asked))
    question = [{"role": "user", "content": "2+2?"}]
    if stream_it:
        parts = [p async for p in await client.chat(model=MODEL, messages=question, think=False, stream=True)]
    else:
        parts = [await client.chat(model=MODEL, messages=question, think=False, stream=False)]
    assert [q["think"] for q in asked] == [False]
    assert ["".join(p.message.thinking or "" for p in parts), "".join(p.message.content for p in parts)] == [
        "",
        "The answer is 4.",
    ]


@pytest.mark.parametrize("stream_it", [True, False])
async def test_think_false_on_generate_keeps_the_answer_in_response(
    aiohttp_server: ServerFactory, stream_it: bool
) -> None:
    asked: list[dict[str, Any]] = []
    client = ollama.AsyncClient(host=await ollama_without_thinking(aiohttp_server, asked))
    if stream_it:
        parts = [p async for p in await client.generate(model=MODEL, prompt="2+2?", think=False, stream=True)]
    else:
        parts = [await client.generate(model=MODEL, prompt="2+2?", think=False, stream=False)]
    assert [q["think"] for q in asked] == [False]
    assert ["".join(p.thinking or "" for p in parts), "".join(p.response for p in parts)] == ["", "The answer is 4."]


@pytest.mark.parametrize("kind", ["chat", "generate"])
def test_an_r1_answer_with_empty_reasoning_is_the_answer(kind: str) -> None:
    """Ollama's own parser eats ``<think>\\n\\n</think>`` and writes no ``thinking`` line: what
    follows is the answer, passed on as it came (the model writes its open tag on this surface)."""
    upstream = stream(kind, MODEL, ANSWER)
    pipeline = StreamPipeline("ollama", ThinkExtractConfig(), None)
    assert pipeline.feed(upstream) + pipeline.finish() == upstream


@pytest.mark.parametrize("kind", ["chat", "generate"])
def test_tags_the_r1_model_writes_are_still_read(kind: str) -> None:
    pipeline = StreamPipeline("ollama", ThinkExtractConfig(), None)
    out = pipeline.feed(stream(kind, MODEL, ["<think>Add.</think>", "4"])) + pipeline.finish()
    lines = [json.loads(line) for line in out.splitlines()]
    field = (lambda line: line["message"]) if kind == "chat" else (lambda line: line)
    key = "content" if kind == "chat" else "response"
    assert [(field(line)[key], field(line).get("thinking")) for line in lines] == [
        ("", "Add."),
        ("4", None),
        ("", None),
    ]
