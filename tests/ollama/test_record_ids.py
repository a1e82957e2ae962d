"""Ollama gives every tool call an id (``call_…``, server/routes.go), and the ``ollama`` Python client
drops it (its ``ToolCall`` has a ``function`` only): a turn it sends back has calls without ids. A client
that keeps only the answer and the tool calls of a turn whose reasoning the gateway moved still has that
reasoning reach Ollama, as it did when the reasoning stayed inline without the gateway."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import ollama
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_RECORD, ThinkExtractConfig, setup

from .wire import body, ndjson, stream

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "qwen3:8b"
WRITTEN = "<think>The user wants the weather; I call the tool.</think>"
CALL = {"id": "call_p4x2k9", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
async def test_a_turn_sent_back_by_the_ollama_client_without_its_ids_gets_its_reasoning_back(
    aiohttp_server: ServerFactory, streamed: bool
) -> None:
    asked: list[dict[str, Any]] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        asked.append(await request.json())
        if asked[-1].get("stream") is False:
            return web.Response(
                body=ndjson([body("chat", MODEL, WRITTEN, tool_calls=[CALL])]), content_type="application/json"
            )
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        lines = stream("chat", MODEL, [WRITTEN[:20], WRITTEN[20:]]).splitlines(keepends=True)
        lines.insert(-1, stream("chat", MODEL, [""], tool_calls=[CALL]).splitlines(keepends=True)[0])
        await resp.write(b"".join(lines))
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/api/chat", answer)
    client = ollama.AsyncClient(host=str((await aiohttp_server(app)).make_url("")))
    question = [{"role": "user", "content": "Weather in Paris?"}]
    if streamed:
        parts = [p async for p in await client.chat(model=MODEL, messages=question, tools=[WEATHER], stream=True)]
    else:
        parts = [await client.chat(model=MODEL, messages=question, tools=[WEATHER], stream=False)]
    calls = [c for p in parts for c in p.message.tool_calls or []]
    kept = ollama.Message(role="assistant", content="".join(p.message.content for p in parts), tool_calls=calls)
    await app[THINKEXTRACT_RECORD].drain()
    replay = [*question, kept, {"role": "tool", "content": "18°C", "tool_name": "get_weather"}]
    await client.chat(model=MODEL, messages=replay, tools=[WEATHER], stream=False)
    assert asked[1]["messages"][1].get("thinking") == "The user wants the weather; I call the tool."
