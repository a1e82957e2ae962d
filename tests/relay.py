"""The handler behind the middleware in the tests of budgets the gateway enforces: a proxy as most
are written, relaying the upstream's stream read by read, so that the budget's cut (the client's
write failing) stops the upstream."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_REQUEST_BODY
from gateway_mw.stats import ThinkExtractStats

__all__ = ["Front", "Handler", "relay", "url_of"]

Upstream = TypeVar("Upstream")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def relay(
    session: aiohttp.ClientSession, base: str, *, whole: bool = False, seen: list[web.Request] | None = None
) -> Handler:
    """A handler sending each request, with the body the middleware hands over, to ``base`` and the
    same path; ``whole``: it reads the upstream's answer whole, then returns it; ``seen`` gets each
    request it is given."""

    async def forward(request: web.Request) -> web.StreamResponse:
        if seen is not None:
            seen.append(request)
        body = request.get(THINKEXTRACT_REQUEST_BODY) or await request.read()
        url = base + request.path
        if whole:
            async with session.post(url, data=body) as read:
                return web.Response(body=await read.read(), content_type=read.content_type)
        upstream = await session.post(url, data=body, headers={"Content-Type": "application/json"})
        complete = False
        try:
            resp = web.StreamResponse(status=upstream.status)
            resp.content_type = upstream.content_type
            await resp.prepare(request)
            async for piece in upstream.content.iter_any():
                await resp.write(piece)
            complete = True
            await resp.write_eof()
        except ConnectionResetError:
            pass  # the budget's cut (or a client gone): the upstream is closed below
        finally:
            if complete:
                upstream.release()
            else:
                upstream.close()  # the model stops generating
        return resp

    return forward


@dataclass
class Front(Generic[Upstream]):
    """The forwarding app with the middleware: its URL, the upstream it forwards to, its statistics,
    and the requests its handler was given (:func:`relay`'s ``seen``)."""

    url: str
    thinker: Upstream
    stats: ThinkExtractStats
    requests: list[web.Request] = field(default_factory=list)

    def client_gone(self) -> bool:
        """The first request's client is gone: its connection closed or closing."""
        transport = self.requests[0].transport if self.requests else None
        return transport is None or transport.is_closing()


def url_of(server: TestServer) -> str:
    """A test server's URL, without the closing slash: a request's path goes after it."""
    return str(server.make_url("")).rstrip("/")
