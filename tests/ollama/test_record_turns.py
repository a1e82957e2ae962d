"""A tool-call turn without ids (older Ollama writes none; the ``ollama`` client keeps none) is keyed in
the reasoning record by the conversation up to it: two answers to the same question that call other
tools are other turns, and one never gets the other's reasoning back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import ollama
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_RECORD, ThinkExtractConfig, setup

from .wire import body, ndjson

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "qwen3:8b"
QUESTION = [{"role": "user", "content": "Plan my day in Paris."}]
ANSWERS = {  # what the model wrote, and the tool it called, in each of two conversations
    "get_weather": "<think>Rain decides everything: the weather first.</think>",
    "get_events": "<think>Start from what is on today.</think>",
}


async def test_a_tool_call_turn_without_ids_gets_its_own_reasoning_back(aiohttp_server: ServerFactory) -> None:
    asked: list[dict[str, Any]] = []
    answers = iter(ANSWERS.items())

    async def answer(request: web.Request) -> web.Response:
        asked.append(await request.json())
        tool, written = next(answers, ("", "Done."))
        calls = {"tool_calls": [{"function": {"index": 0, "name": tool, "arguments": {}}}]} if tool else {}
        return web.Response(body=ndjson([body("chat", MODEL, written, **calls)]), content_type="application/json")

    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/api/chat", answer)
    client = ollama.AsyncClient(host=str((await aiohttp_server(app)).make_url("")))
    first = await client.chat(model=MODEL, messages=QUESTION, stream=False)
    await client.chat(model=MODEL, messages=QUESTION, stream=False)  # another conversation, the same question
    await app[THINKEXTRACT_RECORD].drain()
    kept = ollama.Message(role="assistant", content=first.message.content, tool_calls=first.message.tool_calls)
    replay = [*QUESTION, kept, {"role": "tool", "content": "rain", "tool_name": "get_weather"}]
    await client.chat(model=MODEL, messages=replay, stream=False)
    assert asked[2]["messages"][1].get("thinking") == "Rain decides everything: the weather first."
