"""An Ollama server over loopback for the gateway's questions of it: ``/api/show`` and ``/api/version``
answered in Ollama's shapes (``api/types.go`` ``ShowResponse``, ``server/routes.go``), every call
counted, an answer held until a test lets it go; ``/v1/models`` as Ollama lists its own models and
``/api/chat`` recording what reaches it."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

THINKING = {"qwen3:8b": ["completion", "tools", "thinking"], "deepseek-r1:8b": ["completion", "thinking"]}
"""The models the server has, and their capabilities."""
NOT_THINKING = {"llama3.2:3b": ["completion", "tools"], "gemma3:4b": ["completion", "vision"]}


class FakeOllama:
    def __init__(self, version: Any = "0.12.4") -> None:
        self.version = version
        self.models: dict[str, list[str]] = {**THINKING, **NOT_THINKING}
        self.shows: Counter[str] = Counter()
        self.versions = 0
        self.headers: list[dict[str, str]] = []
        """The head fields of every /api/show and /api/version call."""
        self.chats: list[dict[str, Any]] = []
        self.release = asyncio.Event()
        self.release.set()
        self.show_status = 200
        self.never_answer = False
        self.url = ""

    async def show(self, request: web.Request) -> web.StreamResponse:
        self.headers.append(dict(request.headers))
        model = (await request.json()).get("model", "")
        self.shows[model] += 1
        await self.release.wait()
        if self.never_answer:
            await asyncio.Event().wait()
        if self.show_status != 200:
            return web.json_response({"error": "boom"}, status=self.show_status)
        if model not in self.models:
            return web.json_response({"error": f"model '{model}' not found"}, status=404)
        return web.json_response(
            {
                "license": "MIT",
                "modelfile": "FROM x",
                "template": "{{ .Prompt }}",
                "details": {"format": "gguf", "family": "qwen3"},
                "model_info": {"general.architecture": "qwen3"},
                "capabilities": self.models[model],
                "modified_at": "2025-10-01T00:00:00Z",
            }
        )

    async def version_(self, request: web.Request) -> web.Response:
        self.headers.append(dict(request.headers))
        self.versions += 1
        await self.release.wait()
        return web.json_response({"version": self.version})

    async def list_models(self, request: web.Request) -> web.Response:
        data = [{"id": m, "object": "model", "created": 1, "owned_by": "library"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.chats.append(body)
        return web.json_response(
            {
                "model": body["model"],
                "created_at": "2025-10-01T00:00:00Z",
                "message": {"role": "assistant", "content": "4"},
                "done": True,
                "done_reason": "stop",
            }
        )


@contextlib.asynccontextmanager
async def fake_ollama(version: Any = "0.12.4") -> AsyncIterator[FakeOllama]:
    fake = FakeOllama(version)
    app = web.Application()
    app.router.add_post("/api/show", fake.show)
    app.router.add_get("/api/version", fake.version_)
    app.router.add_get("/v1/models", fake.list_models)
    app.router.add_post("/api/chat", fake.chat)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        fake.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        yield fake
    finally:
        fake.release.set()
        await runner.cleanup()
