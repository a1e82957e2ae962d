"""The gateway's HTTP connections: aiohttp's, with what a server that faces clients it does not know
needs on top.

* A connection must send a complete request head within ``header_timeout`` seconds of opening, and
  each later request within ``header_timeout`` of its first byte, or it is closed: aiohttp keeps a
  connection that sends nothing, or half a head, until its keep-alive timeout (an hour by default;
  forever in aiohttp 3.14.0, which starts that timer only after a first response), so a few hundred
  of them exhaust the process's file descriptors. An idle keep-alive connection between two requests
  is left to aiohttp's keep-alive timeout, which a load balancer in front expects to be long.
* A request body that sends nothing for ``body_timeout`` seconds while the gateway waits for it is
  given up on: its readers get :class:`~gateway_mw.incoming.RequestBodyTimeout`, the request is
  answered 408 and the connection closed. aiohttp has no such bound: a body that stops half way holds
  its connection, and whatever was read of it, for as long as the client keeps the socket open.
* On shutdown, requests still open after ``shutdown_timeout`` are cancelled, so that the stop takes
  that long and not twice as long: aiohttp waits ``shutdown_timeout`` for them, then cancels only
  their request bodies and waits as long again for handlers that read no body any more (a stream
  being relayed), before it cancels them.
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
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_exceptions import BadHttpMethod, HttpProcessingError
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from ..incoming import RequestBodyTimeout

__all__ = ["AcceptErrors", "GatewayRunner"]

log = logging.getLogger("gateway_mw.proxy")


class _Connection(RequestHandler):
    """One client connection."""

    __slots__ = (
        "_body",
        "_body_at",
        "_body_timeout",
        "_body_timer",
        "_busy",
        "_head_timer",
        "_header_timeout",
        "_request_task",
    )

    def __init__(
        self, manager: web.Server, *, header_timeout: float | None, body_timeout: float | None, **kwargs: Any
    ) -> None:
        super().__init__(manager, **kwargs)
        self._header_timeout = header_timeout
        self._body_timeout = body_timeout
        self._body: StreamReader | None = None  # the body being received, while it is
        self._body_at = 0.0  # when its last bytes came
        self._body_timer: asyncio.TimerHandle | None = None
        self._head_timer: asyncio.TimerHandle | None = None
        self._busy = False  # from a complete request head to the end of its response
        self._request_task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._expect_head()

    def data_received(self, data: bytes) -> None:
        if data and not self._busy and self._head_timer is None:
            self._expect_head()  # the first bytes of a later request on a kept-alive connection
        super().data_received(data)
        if self._body is not None:
            self._body_at = self._loop.time()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._head_arrived()
        self._body_done()
        super().connection_lost(exc)

    def request_started(self, task: asyncio.Task[None], payload: StreamReader) -> None:
        """A complete request head was read: its handling starts, under ``task`` (the connection's)."""
        self._busy = True
        self._request_task = task
        self._head_arrived()
        if self._body_timeout is not None and not payload.is_eof():
            self._body = payload
            self._body_at = self._loop.time()
            self._body_timer = self._loop.call_later(self._body_timeout, self._body_late)

    def cancel_request(self) -> bool:
        """Cancel the request being handled, if one is; whether one was."""
        if not self._busy or self._request_task is None or self._request_task.done():
            return False
        self._request_task.cancel()  # and so the handler's task, which it awaits
        return True

    async def finish_response(
        self, request: BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        try:
            return await super().finish_response(request, resp, start_time)
        finally:
            self._busy = False
            self._body_done()

    def _expect_head(self) -> None:
        if self._header_timeout is not None:
            self._head_timer = asyncio.get_running_loop().call_later(self._header_timeout, self._head_late)

    def _head_arrived(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _body_done(self) -> None:
        self._body = None
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_late(self) -> None:
        """``body_timeout`` after the body's last bytes, unless more came meanwhile."""
        self._body_timer = None
        body = self._body
        if body is None or body.is_eof() or body.exception() is not None:
            self._body = None
            return
        now = self._loop.time()
        if self._reading_paused:  # the gateway is not reading (its buffer is full): the client is not silent
            self._body_at = now
        silent = now - self._body_at
        assert self._body_timeout is not None
        if silent < self._body_timeout:
            self._body_timer = self._loop.call_later(self._body_timeout - silent, self._body_late)
            return
        self._body = None
        log.debug("a request body stopped arriving: nothing for %gs", self._body_timeout)
        body.set_exception(RequestBodyTimeout(f"no bytes of the request body for {self._body_timeout:g}s"))

    def _head_late(self) -> None:
        self._head_timer = None
        if self._busy or self.transport is None:
            return
        peer = self.transport.get_extra_info("peername")
        log.debug(
            "a connection from %s closed: no complete request head within %gs", peer and peer[0], self._header_timeout
        )
        self.force_close()

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

    def __init__(self, plain: web.Server, header_timeout: float | None, body_timeout: float | None) -> None:
        self._app_request = plain.request_factory
        self._header_timeout = header_timeout
        self._body_timeout = body_timeout
        super().__init__(
            plain.request_handler,
            request_factory=self._request,
            handler_cancellation=plain.handler_cancellation,
            loop=asyncio.get_running_loop(),
            **plain._kwargs,  # the handler's arguments: the runner's, the application's handler_args
        )

    def __call__(self) -> RequestHandler:
        return _Connection(
            self, loop=self._loop, header_timeout=self._header_timeout, body_timeout=self._body_timeout, **self._kwargs
        )

    def _request(
        self,
        message: RawRequestMessage,
        payload: StreamReader,
        protocol: RequestHandler,
        writer: AbstractStreamWriter,
        task: asyncio.Task[None],
    ) -> BaseRequest:
        """aiohttp makes the request once its head is complete (a refused one included)."""
        if isinstance(protocol, _Connection):
            protocol.request_started(task, payload)
        return self._app_request(message, payload, protocol, writer, task)


_BACKSTOP = 5.0
"""Seconds aiohttp's wait for open requests goes on past the runner's ``shutdown_timeout``, for a
handler that does not end when cancelled."""


class GatewayRunner(web.AppRunner):
    """``web.AppRunner`` (same arguments) whose connections are the gateway's; ``header_timeout``:
    seconds for a request head (``None``: no bound, as aiohttp); ``shutdown_timeout``: how long open
    requests may go on once ``cleanup()`` starts, after which they are cancelled; ``body_timeout``:
    seconds a request body may send nothing while it is awaited (``None``: no bound, as aiohttp)."""

    def __init__(
        self,
        app: web.Application,
        *,
        header_timeout: float | None = None,
        body_timeout: float | None = None,
        shutdown_timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        # aiohttp's own wait is only a backstop, kept clear of this runner's deadline: the two firing in
        # one loop iteration leave aiohttp setting the result of a future its timeout just cancelled.
        super().__init__(app, shutdown_timeout=shutdown_timeout + _BACKSTOP, **kwargs)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.shutdown_timeout = shutdown_timeout
        self._deadline: asyncio.TimerHandle | None = None

    async def _make_server(self) -> web.Server:
        return _Server(await super()._make_server(), self.header_timeout, self.body_timeout)

    async def shutdown(self) -> None:
        """Called by ``cleanup()`` once the sites are closed, before it waits for open requests."""
        await super().shutdown()
        server = self.server
        if server is not None:
            # Scheduled before aiohttp's own wait starts, so it comes first.
            self._deadline = asyncio.get_running_loop().call_later(self.shutdown_timeout, self._cancel_open, server)

    async def cleanup(self) -> None:
        try:
            await super().cleanup()
        finally:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

    def _cancel_open(self, server: web.Server) -> None:
        cancelled = sum(conn.cancel_request() for conn in server.connections if isinstance(conn, _Connection))
        if cancelled:
            plural = "" if cancelled == 1 else "s"
            log.info("stopping: %d open request%s cancelled after %gs", cancelled, plural, self.shutdown_timeout)


class AcceptErrors:
    """An event loop exception handler: a failed ``accept()`` for want of file descriptors is one
    WARNING line per ``every`` seconds, without traceback; anything else goes to the loop's default.

    asyncio reports each failed accept with a traceback, up to the listen backlog of them at a time,
    and schedules as many retries a second later: thousands of lines while the process is out of
    descriptors, and, should the server stop meanwhile, a traceback for each retry that finds its
    listening socket closed (which only means there is nothing left to accept).
    """

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self._last: float | None = None
        self._missed = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = context.get("message", "")
        if isinstance(context.get("exception"), ValueError) and "._start_serving(" in message:
            return  # a retry of a listening socket closed since
        if message != "socket.accept() out of system resource":
            loop.default_exception_handler(context)
            return
        now = loop.time()
        if self._last is not None and now - self._last < self.every:
            self._missed += 1
            return
        exc = context.get("exception")
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        more = f" ({self._missed} more since the last line)" if self._missed else ""
        log.warning("cannot accept connections: %s%s; retrying every second", why, more)
        self._last, self._missed = now, 0
