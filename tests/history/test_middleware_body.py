"""The middleware makes the rewritten request body what the handler reads, whichever way it reads
it, over real HTTP; a body it cannot or need not change reaches the handler as the same bytes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_REQUEST_BODY, THINKEXTRACT_STATS, ThinkExtractConfig, setup

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

HISTORY = {
    "model": "llama-3.1-8b",
    "messages": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "It is 4.", "reasoning_content": "2+2 is 4."},
        {"role": "user", "content": "And 3+3?"},
    ],
}
INLINE = {
    **HISTORY,
    "messages": [
        HISTORY["messages"][0],
        {"role": "assistant", "content": "<think>2+2 is 4.</think>It is 4."},
        HISTORY["messages"][2],
    ],
}
WAYS = ["read", "text", "json", "content", "iter_any", "content_after_outer"]


async def serve(aiohttp_server: ServerFactory, way: str, **config: Any) -> tuple[str, list[Any], Any]:
    seen: list[Any] = []

    async def handler(request: web.Request) -> web.Response:
        if way == "read":
            body = await request.read()
        elif way == "text":
            body = (await request.text()).encode()
        elif way == "json":
            body = json.dumps(await request.json()).encode()
        elif way == "iter_any":
            body = b"".join([piece async for piece in request.content.iter_any()])
        else:
            body = await request.content.read()
        seen.append((body, request.get(THINKEXTRACT_REQUEST_BODY)))
        return web.json_response({"ok": True})

    @web.middleware
    async def outer(request: web.Request, handler: Any) -> web.StreamResponse:
        assert request.content is not None  # aiohttp caches the stream it returns
        return await handler(request)

    app = web.Application(middlewares=[outer] if way == "content_after_outer" else [])
    stats = setup(app, ThinkExtractConfig(**config))
    app.router.add_post("/v1/chat/completions", handler)
    server = await aiohttp_server(app)
    return str(server.make_url("/v1/chat/completions")), seen, stats


@pytest.mark.parametrize("way", WAYS)
async def test_the_handler_reads_the_rewritten_body_whatever_way_it_reads(
    aiohttp_server: ServerFactory, way: str
) -> None:
    url, seen, stats = await serve(aiohttp_server, way)
    async with aiohttp.ClientSession() as session, session.post(url, json=HISTORY) as resp:
        assert resp.status == 200
    ((body, recorded),) = seen
    assert json.loads(body) == INLINE  # a model of no known family: the reasoning inline, as the model wrote it
    assert json.loads(recorded) == INLINE
    assert stats.surface("chat").history == {"rewritten": 1}


@pytest.mark.parametrize(
    ("raw", "headers", "config", "outcome"),
    [
        (json.dumps(INLINE).encode(), {}, {}, "unchanged"),  # already in the upstream's form
        (b'{"model": "m", "messages": [not json', {}, {}, "unchanged"),
        (json.dumps(HISTORY).encode(), {"X-Think-Extract": "off"}, {}, None),
        (json.dumps(HISTORY).encode(), {}, {"history_reasoning": "pass"}, "pass"),
        (json.dumps(HISTORY).encode(), {}, {"max_body_bytes": 64}, "too_large"),
    ],
    ids=["unchanged", "not-json", "client-off", "pass", "too-large"],
)
async def test_a_body_left_alone_reaches_the_handler_as_it_came(
    aiohttp_server: ServerFactory, raw: bytes, headers: dict[str, str], config: dict[str, Any], outcome: str | None
) -> None:
    url, seen, stats = await serve(aiohttp_server, "read", **config)
    headers = {"Content-Type": "application/json", **headers}
    async with aiohttp.ClientSession() as session, session.post(url, data=raw, headers=headers) as resp:
        assert resp.status == 200
    assert seen == [(raw, None)]
    assert stats.surface("chat").history == ({outcome: 1} if outcome is not None else {})


async def test_a_chunked_body_streams_on_unread(aiohttp_server: ServerFactory) -> None:
    url, seen, stats = await serve(aiohttp_server, "read")
    raw = json.dumps(HISTORY).encode()

    async def pieces() -> Any:
        yield raw[:10]
        yield raw[10:]

    async with aiohttp.ClientSession() as session, session.post(url, data=pieces()) as resp:
        assert resp.status == 200
    assert seen == [(raw, None)]
    assert stats.surface("chat").history == {"chunked": 1}


async def test_the_statistics_count_what_the_way_back_in_did(aiohttp_client: Any) -> None:
    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({})

    app = web.Application()
    stats = setup(app, ThinkExtractConfig(max_body_bytes=1000))
    app.router.add_post("/v1/chat/completions", handler)
    client = await aiohttp_client(app)
    for body in (HISTORY, INLINE, {**HISTORY, "pad": "x" * 2000}):
        assert (await client.post("/v1/chat/completions", json=body)).status == 200
    assert app[THINKEXTRACT_STATS] is stats
    assert stats.surface("chat").history == {"rewritten": 1, "unchanged": 1, "too_large": 1}
