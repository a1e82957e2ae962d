"""The gateway's way back in: it asks the upstream what server it is (``GET /v1/models``), and a client's
second turn reaches that server with the reasoning where it reads it, the body forwarded with its own
length."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway_mw import ThinkExtractConfig, proxy
from gateway_mw.proxy.detect import server_from_models

from . import servers

# What each server answers to GET /v1/models (the fields that tell them apart), from their sources.
MODELS = {
    "vllm": {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "object": "model", "owned_by": "vllm", "root": "x"}]},
    "sglang": {"object": "list", "data": [{"id": "qwen3-8b", "object": "model", "owned_by": "sglang"}]},
    "llamacpp": {
        "models": [{"name": "m.gguf", "model": "m.gguf"}],
        "object": "list",
        "data": [{"id": "m.gguf", "object": "model", "created": 1, "owned_by": "llamacpp", "meta": {}}],
    },
    "ollama": {"object": "list", "data": [{"id": "qwen3:8b", "object": "model", "created": 1, "owned_by": "library"}]},
    "openai": {"object": "list", "data": [{"id": "gpt-5", "object": "model", "created": 1, "owned_by": "system"}]},
    "anthropic": {"data": [{"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude"}], "has_more": False},
}


@pytest.mark.parametrize("server", list(MODELS))
def test_each_server_is_told_by_its_models(server: str) -> None:
    assert server_from_models(json.dumps(MODELS[server]).encode()) == server


@pytest.mark.parametrize("body", [b"not json", b"{}", b'{"data":[{"id":"m","owned_by":"acme"}]}', b'{"data":[]}'])
def test_anything_else_is_generic(body: bytes) -> None:
    assert server_from_models(body) == "generic"


class Upstream:
    """A server that says it is ``server`` and records the chat requests it gets."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.posts: list[tuple[dict[str, Any], str | None, int]] = []
        self.asked = 0

    async def models(self, request: web.Request) -> web.Response:
        self.asked += 1
        return web.json_response(MODELS[self.server])

    async def chat(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.posts.append((json.loads(raw), request.headers.get("Content-Length"), len(raw)))
        message = {"role": "assistant", "content": "<think>It is sunny.</think>Sunny."}
        return web.json_response({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                                  "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})  # fmt: skip


@pytest.fixture
async def gateway(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, Upstream]]:
    up = Upstream(request.param)
    app = web.Application()
    app.router.add_get("/v1/models", up.models)
    app.router.add_post("/v1/chat/completions", up.chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    upstream = f"http://127.0.0.1:{runner.addresses[0][1]}"
    settings = proxy.Settings(upstream=upstream, think_extract=ThinkExtractConfig())
    gw = web.AppRunner(proxy.build_app(settings), access_log=None)
    await gw.setup()
    gw_site = web.TCPSite(gw, "127.0.0.1", 0)
    await gw_site.start()
    try:
        yield f"http://127.0.0.1:{gw.addresses[0][1]}", up
    finally:
        await gw.cleanup()
        await runner.cleanup()


HISTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "reasoning_content": "I need the weather tool.",
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
]  # fmt: skip


@pytest.mark.parametrize("gateway", ["vllm", "sglang", "llamacpp", "ollama"], indirect=True)
@pytest.mark.parametrize("model", ["qwen3-8b", "llama-3.1-8b"])
async def test_the_second_turn_reaches_the_server_where_it_reads(
    gateway: tuple[str, Upstream], model: str, caplog: pytest.LogCaptureFixture
) -> None:
    base, up = gateway
    caplog.set_level(logging.INFO, "gateway_mw.proxy")
    for _ in range(3000):  # it asks in the background, from the start (a bound for a hang, not a speed)
        if f"is {up.server}" in caplog.text:
            break
        await asyncio.sleep(0.02)
    async with aiohttp.ClientSession() as session:
        body = {"model": model, "messages": HISTORY}
        async with session.post(base + "/v1/chat/completions", json=body) as resp:
            answer = await resp.json()
    assert answer["choices"][0]["message"] == {
        "role": "assistant",
        "content": "Sunny.",
        "reasoning_content": "It is sunny.",
        "reasoning": "It is sunny.",
    }
    ((sent, length, size),) = up.posts
    assert (length, up.asked) == (str(size), 1)  # the rewritten body with its own length; asked once
    (seen,) = servers.chat(up.server, sent)
    assert "I need the weather tool." in seen
    assistant = sent["messages"][1]
    if model == "qwen3-8b":  # its template reads the field
        field = "reasoning" if up.server in ("vllm", "ollama") else "reasoning_content"
        assert {k: v for k, v in assistant.items() if k != "tool_calls"} == {
            "role": "assistant", "content": None, field: "I need the weather tool."
        }  # fmt: skip
    else:  # a model of no known family: inline, as without a gateway
        assert assistant["content"] == "<think>I need the weather tool.</think>"
        assert "reasoning_content" not in assistant
