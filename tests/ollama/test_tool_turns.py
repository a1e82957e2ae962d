"""The way back in, as the ``ollama`` Python client sends it: Ollama reads an assistant turn's reasoning
from ``thinking`` (its chat templates render ``.Thinking``), so a ``thinking`` the client sends back
reaches Ollama as it would without the gateway.

A tool-call turn is one whether or not its calls carry ids: Ollama before 0.12.x wrote none, and the
``ollama`` Python client keeps none (its ``ToolCall`` has a ``function`` only), so every tool-call turn
it sends back has calls without ids. gpt-oss's plan keeps reasoning on tool-call turns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import ollama
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, setup

from .wire import body, ndjson

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}


async def what_ollama_receives(aiohttp_server: ServerFactory, model: str, gateway: bool) -> dict[str, Any]:
    """The assistant turn of a tool loop as Ollama receives it, with or without the gateway in front."""
    asked: list[dict[str, Any]] = []

    async def answer(request: web.Request) -> web.Response:
        asked.append(await request.json())
        return web.Response(body=ndjson([body("chat", model, "It is 18°C.")]), content_type="application/json")

    app = web.Application()
    if gateway:
        setup(app, ThinkExtractConfig(upstream_server="ollama"))
    app.router.add_post("/api/chat", answer)
    server = await aiohttp_server(app)
    client = ollama.AsyncClient(host=str(server.make_url("")))
    call = ollama.Message.ToolCall(function=ollama.Message.ToolCall.Function(name="get_weather", arguments={}))
    turn = ollama.Message(role="assistant", content="", thinking="I need the weather tool.", tool_calls=[call])
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        turn,
        {"role": "tool", "content": "18°C", "tool_name": "get_weather"},
    ]
    await client.chat(model=model, messages=messages, tools=[WEATHER], stream=False)
    [question] = asked
    message: dict[str, Any] = question["messages"][1]
    return message


async def test_a_gpt_oss_tool_call_turn_without_ids_keeps_its_thinking(aiohttp_server: ServerFactory) -> None:
    without = await what_ollama_receives(aiohttp_server, "gpt-oss:20b", gateway=False)
    assert without["thinking"] == "I need the weather tool."  # what the client sent
    assert await what_ollama_receives(aiohttp_server, "gpt-oss:20b", gateway=True) == without


async def test_a_model_of_no_known_family_keeps_its_thinking_in_thinking(aiohttp_server: ServerFactory) -> None:
    """Not moved into ``content`` as ``<think>`` tags: Ollama reads ``thinking`` whatever the model's name."""
    without = await what_ollama_receives(aiohttp_server, "my-assistant:latest", gateway=False)
    assert without["thinking"] == "I need the weather tool."
    assert await what_ollama_receives(aiohttp_server, "my-assistant:latest", gateway=True) == without
