"""The forwarding app in the tests of budgets the gateway enforces: the middleware on a handler
written as most proxies are, relaying the upstream's stream read by read, so that the budget's cut
(the client's write failing) stops the upstream (:func:`relay`), in front of an emulated upstream
(:class:`Fronts`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_REQUEST_BODY, ThinkExtractConfig, setup
from gateway_mw.stats import ThinkExtractStats

__all__ = ["Front", "Fronts", "Handler", "relay", "url_of"]

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


class Fronts:
    """Makes forwarding apps in front of upstreams on test servers (:meth:`make`); closes what they
    opened when left."""

    def __init__(self, serve: Callable[[web.Application], Awaitable[TestServer]]) -> None:
        self._serve = serve
        self._sessions: list[aiohttp.ClientSession] = []
        self._runners: list[web.AppRunner] = []

    async def __aenter__(self) -> Fronts:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for session in self._sessions:
            await session.close()
        for runner in self._runners:
            await runner.cleanup()

    async def make(
        self,
        thinker: Upstream,
        upstream: web.Application,
        config: ThinkExtractConfig,
        routes: Iterable[str],
        *,
        whole: bool = False,
        cancelling: bool = True,
        kind: type[Front[Any]] = Front,
        prepare: Callable[[web.Application], None] | None = None,
    ) -> Front[Upstream]:
        """The middleware set up with ``config`` on a :func:`relay` to ``upstream`` on ``routes``;
        ``cancelling``: the server cancels a handler whose client left, as the gateway does (else
        as aiohttp does by default); ``prepare`` is given the app before it is served."""
        back = await self._serve(upstream)
        session = aiohttp.ClientSession()
        self._sessions.append(session)
        app = web.Application()
        front: Front[Upstream] = kind("", thinker, setup(app, config))
        if prepare is not None:
            prepare(app)
        forward = relay(session, url_of(back), whole=whole, seen=front.requests)
        for route in routes:
            app.router.add_post(route, forward)
        if cancelling:
            front.url = url_of(await self._serve(app))
            return front
        runner = web.AppRunner(app, handler_cancellation=False)  # aiohttp's default
        self._runners.append(runner)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        front.url = f"http://{host}:{port}"
        return front
