"""docs/budgets.md shows a budget on Ollama's ``/api/chat`` as wire: the client's request, what Ollama
streams for it, the continuation the gateway asks for, Ollama's answer to it, and what the client
gets. Each is what the gateway does, over loopback, byte for byte."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_REQUEST_BODY, ThinkExtractConfig, setup
from gateway_mw.controls import ModelInfo
from gateway_mw.incoming import THINKEXTRACT_MODEL_INFO

DOC = Path(__file__).resolve().parents[2] / "docs" / "budgets.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
ServerFactory = Callable[[web.Application], Awaitable[TestServer]]


def ollama_blocks() -> list[bytes]:
    text = DOC.read_text()
    section = text[text.index("## Ollama's native API") : text.index("### `/api/generate`")]
    return [m.group(2).encode() for m in FENCE.finditer(section)]


async def test_the_ollama_example_is_what_the_gateway_does(aiohttp_server: ServerFactory) -> None:
    asked, first, continuation, answer, got = ollama_blocks()
    bodies: list[bytes] = []

    async def ollama(request: web.Request) -> web.StreamResponse:
        bodies.append(await request.read())
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        for line in (first if len(bodies) == 1 else answer).splitlines(keepends=True):
            await resp.write(line)
        await resp.write_eof()
        return resp

    back = web.Application()
    back.router.add_post("/api/chat", ollama)
    upstream = await aiohttp_server(back)
    app = web.Application()
    setup(app, ThinkExtractConfig(upstream_server="ollama", reasoning_store="off", reasoning_control="budget:2"))

    async def model_info(model: str) -> ModelInfo:
        return ModelInfo(thinking=True, version=(0, 12, 4))

    app[THINKEXTRACT_MODEL_INFO] = model_info

    async with aiohttp.ClientSession() as session:

        async def forward(request: web.Request) -> web.StreamResponse:
            body = request.get(THINKEXTRACT_REQUEST_BODY) or await request.read()
            resp = web.StreamResponse()
            async with session.post(upstream.make_url("/api/chat"), data=body) as read:
                resp.content_type = read.content_type
                await resp.prepare(request)
                async for piece in read.content.iter_any():
                    await resp.write(piece)
            await resp.write_eof()
            return resp

        app.router.add_post("/api/chat", forward)
        front = await aiohttp_server(app)
        async with session.post(front.make_url("/api/chat"), data=asked.strip()) as resp:
            assert resp.content_type == "application/x-ndjson"
            assert await resp.read() == got
    assert bodies == [asked.strip()[:-1] + b',"think":true}', continuation.strip()]
