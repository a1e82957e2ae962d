"""The gateway's HTTP connections: aiohttp's, with what a server that faces clients it does not know
needs on top.

* A request that aiohttp's parser refuses is answered with a plain ``400: Bad Request`` and logged
  in one line without what it sent: aiohttp's own answer and log quote the offending bytes, and a
  header line with one bad byte is the whole header, key included.

aiohttp builds its ``Server`` (the protocol factory of each listening socket) itself and has no hook
for the protocol class, so :class:`GatewayRunner` rebuilds the application's ``Server`` as a
:class:`_Server` with the arguments aiohttp gave it, and that one makes :class:`_Connection` s.
"""

from __future__ import annotations

import asyncio
import logging
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod, HttpProcessingError
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

__all__ = ["GatewayRunner"]

log = logging.getLogger("gateway_mw.proxy")


class _Connection(RequestHandler):
    """One client connection."""

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if not isinstance(exc, HttpProcessingError) or not 400 <= status < 500:
            return super().handle_error(request, status, exc, message)
        # A first line that is no HTTP at all is what scanners and TLS clients send: aiohttp's level.
        level = logging.DEBUG if isinstance(exc, BadHttpMethod) else logging.INFO
        log.log(
            level,
            "a request from %s refused: %d %s; what it sent is not logged",
            request.remote,
            status,
            type(exc).__name__,
        )
        resp = web.Response(status=status, text=f"{status}: {HTTPStatus(status).phrase}")
        resp.force_close()
        return resp


class _Server(web.Server):
    """The application's aiohttp ``Server``, whose connections are :class:`_Connection` s."""

    def __init__(self, plain: web.Server) -> None:
        super().__init__(
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=asyncio.get_running_loop(),
            **plain._kwargs,  # the handler's arguments: the runner's, the application's handler_args
        )

    def __call__(self) -> RequestHandler:
        return _Connection(self, loop=self._loop, **self._kwargs)


class GatewayRunner(web.AppRunner):
    """``web.AppRunner`` (same arguments) whose connections are the gateway's."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)

    async def _make_server(self) -> web.Server:
        return _Server(await super()._make_server())
