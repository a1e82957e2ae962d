"""A model that writes <think> inline, the middleware in front of it, and a client reading both ways.

    python examples/quickstart.py

Starts an aiohttp app on a free loopback port whose handler streams chat completion chunks with
inline reasoning, asks it once with ``X-Think-Extract: off`` (what the model wrote) and once normally
(what clients get), and prints both.
"""

from __future__ import annotations

import asyncio
import json

import aiohttp
from aiohttp import web

from gateway_mw import ThinkExtractConfig, setup

TOKENS = ["<think>", "The user wants", " 2+2.", " That is 4.", "</think>", "2 + 2", " = **4**."]


async def completions(request: web.Request) -> web.StreamResponse:
    """Stands in for vLLM, SGLang, llama.cpp…: one chunk per token, reasoning inline."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for token in TOKENS:
        chunk = {
            "id": "chatcmpl-demo",
            "object": "chat.completion.chunk",
            "created": 1730000000,
            "model": "demo",
            "choices": [{"index": 0, "delta": {"content": token}, "logprobs": None, "finish_reason": None}],
        }
        await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await asyncio.sleep(0.05)
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


async def show(session: aiohttp.ClientSession, url: str, title: str, headers: dict[str, str]) -> None:
    print(f"--- {title}")
    async with session.post(url, json={"model": "demo", "stream": True}, headers=headers) as resp:
        async for line in resp.content:
            if line.startswith(b"data: {"):
                delta = json.loads(line[6:])["choices"][0]["delta"]
                print("   ", json.dumps(delta))


async def main() -> None:
    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    url = f"http://{host}:{port}/v1/chat/completions"
    async with aiohttp.ClientSession() as session:
        await show(session, url, "what the model wrote (X-Think-Extract: off)", {"X-Think-Extract": "off"})
        await show(session, url, "what clients get", {})
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
