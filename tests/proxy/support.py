"""What the gateway's tests share: the demo model's answers, an upstream scripted byte by byte and
requests sent as written, and the gateway served as ``gateway-mw`` serves it, with its log records
and metric samples read back."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import msgspec
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from examples import demo_model
from gateway_mw.proxy import DEMO_CONFIG, Settings
from gateway_mw.proxy.serving import make_runner

QUESTION = demo_model.QUESTION


def split(model: str) -> tuple[str, str]:
    """(reasoning, answer) the demo model writes for ``model``."""
    reasoning, _, answer = demo_model.model_text(model, QUESTION).removeprefix("<think>").partition("</think>")
    return reasoning, answer


USER: Any = [{"role": "user", "content": QUESTION}]


class RawUpstream:
    """An HTTP/1.1 server scripted byte by byte, recording what reaches it and when the proxy leaves."""

    def __init__(self, respond: Callable[[RawUpstream, asyncio.StreamWriter], Awaitable[None]]) -> None:
        self.respond = respond
        self.requests: list[tuple[str, list[tuple[str, str]], bytes]] = []
        self.closed = asyncio.Event()
        self.go = asyncio.Event()
        self.reader: asyncio.StreamReader | None = None
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> RawUpstream:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = [tuple(h.split(": ", 1)) for h in head[1:] if h]
            length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
            body = await reader.readexactly(length) if length else b""
            if any(k.lower() == "transfer-encoding" for k, _ in headers):
                while (size := int((await reader.readline()).strip(), 16)) > 0:
                    body += (await reader.readexactly(size + 2))[:-2]
                await reader.readline()
            self.requests.append((head[0], headers, body))  # type: ignore[arg-type]
            await self.respond(self, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed.set()
            writer.close()

    async def wait_closed_by_peer(self, writer: asyncio.StreamWriter, tick: bytes | None = None) -> None:
        """Until the proxy closes the connection; optionally writing ``tick`` every 20 ms."""
        assert self.reader is not None
        while True:
            try:
                if await asyncio.wait_for(self.reader.read(1), 0.02) == b"":
                    return
            except asyncio.TimeoutError:
                if tick is not None:
                    writer.write(tick)
                    await writer.drain()


async def until(check: Callable[[], object], seconds: float = 60.0) -> None:
    """Until ``check()`` is true. ``seconds`` bounds the wait, for a test that would otherwise hang: it
    says nothing of how fast the gateway is (a busy machine may take many times longer than an idle one)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not true within {seconds}s: {check}")
        await asyncio.sleep(0.02)


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse_chunk(content: str) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "logprobs": None, "finish_reason": None}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


async def raw_request(base: str, head: str, body: bytes = b"") -> bytes:
    """Send ``head`` (request line and headers, no final blank line) as written; the whole answer."""
    port = int(base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.replace("\n", "\r\n").encode() + b"\r\nConnection: close\r\n\r\n" + body)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 60)  # a bound for a hang, not a speed
    writer.close()
    return answer


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A port that refuses connections for as long as the block runs: bound and never listening,
    so that no server started meanwhile (on port 0) can be given it, as a freed port can."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


SCRIPTED = DEMO_CONFIG.replace(upstream_server="generic")
"""The demo's defaults with the upstream's server named: a scripted upstream answers only what a test
sends it (the gateway would ask it GET /v1/models first, to tell which server it is)."""


def settings(**changes: Any) -> Settings:
    if "upstream" in changes and "think_extract" not in changes:
        changes["think_extract"] = SCRIPTED
    return msgspec.structs.replace(Settings(pace=0.0, think_extract=DEMO_CONFIG), **changes)


@contextlib.asynccontextmanager
async def serving(s: Settings, app: web.Application | None = None) -> AsyncIterator[str]:
    """The gateway as ``gateway-mw`` serves it (access log and all), on a free port; its base URL."""
    runner = make_runner(s, app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def records(caplog: pytest.LogCaptureFixture, *loggers: str) -> list[tuple[str, int, str]]:
    return [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name in loggers]


def samples(exposition: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(exposition)
        for s in family.samples
        if not s.name.endswith("_created")
    }
