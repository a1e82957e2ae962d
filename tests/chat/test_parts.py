"""Chat completions whose message content is a list of parts (non-stream): the text parts are
translated through one scanner, every other part stays where it was."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, setup

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
IMAGE = {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png", "detail": "low"}}


def completion(content: Any, **message: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1730000000,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content, **message}, "finish_reason": "stop"}
        ],
    }


async def through(aiohttp_server: ServerFactory, body: dict[str, Any]) -> Any:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(body)

    app = web.Application()
    setup(app, ThinkExtractConfig(chat_reasoning_field="reasoning_content"))  # one name: parts are the point
    app.router.add_post("/v1/chat/completions", handler)
    server = await aiohttp_server(app)
    async with aiohttp.ClientSession() as http, http.post(server.make_url("/v1/chat/completions"), json={}) as resp:
        return json.loads(await resp.read())


async def test_text_parts_are_translated_in_place(aiohttp_server: ServerFactory) -> None:
    parts = [{"type": "text", "text": "Look: <think>a cat"}, IMAGE, {"type": "text", "text": "</think>A cat."}]
    got = await through(aiohttp_server, completion(parts))
    # One channel: the block spans the image part; the answer after it re-enters content (rule 5).
    want = [{"type": "text", "text": "Look: "}, IMAGE, {"type": "text", "text": "\nA cat."}]
    assert got == completion(want, reasoning_content="a cat")


async def test_parts_without_tags_or_with_native_reasoning_pass_unchanged(aiohttp_server: ServerFactory) -> None:
    plain = completion([{"type": "text", "text": "no tags, <answer> is text"}, IMAGE])
    assert await through(aiohttp_server, plain) == plain
    native = completion([{"type": "text", "text": "<think>x</think>y"}], reasoning_content="upstream")
    assert await through(aiohttp_server, native) == native
