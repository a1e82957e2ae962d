"""A recording pass-through between the gateway and a real server: every request body it forwards is kept,
so a test reads exactly what the server received; the answer comes back as the server sent it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from .scripted import AppThread, Recorded

# Hop-by-hop and framing headers: the pass-through frames its own requests and answers.
_DROP = frozenset({"host", "content-length", "transfer-encoding", "connection", "keep-alive"})
SESSION = web.AppKey("session", aiohttp.ClientSession)


@dataclass
class Recorder:
    target: str
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    _server: AppThread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def posts(self, suffix: str) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith(suffix)]

    async def forward(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        if request.method == "POST":
            self.requests.append(Recorded(request.path, json.loads(raw)))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP}
        session = request.app[SESSION]
        async with session.request(request.method, self.target + request.path_qs, data=raw, headers=headers) as up:
            response = web.StreamResponse(
                status=up.status, headers={k: v for k, v in up.headers.items() if k.lower() not in _DROP}
            )
            await response.prepare(request)
            try:
                async for chunk in up.content.iter_any():
                    await response.write(chunk)
            except ConnectionResetError:  # the gateway stopped reading (a budget's cut): so does the server
                up.close()
                return response
            await response.write_eof()
            return response

    def start(self) -> None:
        async def open_session(app: web.Application) -> None:
            app[SESSION] = aiohttp.ClientSession(auto_decompress=False)

        async def close_session(app: web.Application) -> None:
            await app[SESSION].close()

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.on_startup.append(open_session)
        app.on_cleanup.append(close_session)
        app.router.add_route("*", "/{tail:.*}", self.forward)
        self._server = AppThread(app, "recorder")
        self.port = self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
