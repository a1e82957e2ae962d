"""gunicorn's worker for the gateway: aiohttp's, with the gateway's connections and lifecycle.

    gunicorn -c python:gateway_mw.proxy.gunicorn_conf      # sets this worker class, and the rest
    gunicorn 'gateway_mw.proxy:app_factory()' --worker-class gateway_mw.proxy.worker.GatewayWorker

Over ``aiohttp.GunicornWebWorker`` it adds what ``gateway-mw`` does alone:

* the gateway's connections (:mod:`.connections`): ``header_timeout``, a plain 400 without the bytes
  for a request the parser refuses, and a stop bounded by ``shutdown_timeout``;
* SIGTERM fails ``/readyz`` for ``drain_delay`` seconds while the worker serves on, then it stops
  listening and open requests get the rest of gunicorn's ``graceful_timeout`` (at most
  ``shutdown_timeout``); SIGINT and SIGQUIT stop at once, as a second SIGTERM does;
* SIGHUP reads the client keys again, in place: open streams go on. (gunicorn's own SIGHUP to the
  master replaces the workers; :mod:`.gunicorn_conf` makes it send SIGHUP to them instead.)
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from types import FrameType
from typing import Any

from aiohttp import web
from aiohttp.worker import GunicornWebWorker

from .app import PROXY
from .connections import AcceptErrors, GatewayRunner
from .forwarding import Proxy
from .settings import SettingsError

__all__ = ["GatewayWorker"]

log = logging.getLogger("gateway_mw.proxy")

_HEARTBEAT = 1.0  # seconds between two signs of life to the master, stopping included


class GatewayWorker(GunicornWebWorker):
    """``aiohttp.GunicornWebWorker`` with the gateway's connections, drain and key reload."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._proxy: Proxy | None = None
        self._term_seen = False

    def load_wsgi(self) -> None:
        super().load_wsgi()
        app = getattr(self, "wsgi", None)
        if isinstance(app, web.Application) and PROXY in app:
            self._proxy = app[PROXY]

    def _bounds(self, proxy: Proxy) -> tuple[float, float]:
        """``drain_delay`` and ``shutdown_timeout``, held inside gunicorn's ``graceful_timeout``
        (from SIGTERM on, gunicorn kills a worker that is still there then)."""
        graceful = float(self.cfg.graceful_timeout)
        drain = min(proxy.settings.drain_delay, graceful / 2)
        return drain, max(0.1, min(proxy.settings.shutdown_timeout, graceful * 0.95 - drain))

    async def _run(self) -> None:
        proxy = self._proxy
        if proxy is not None:
            app: web.Application = getattr(self, "wsgi")  # noqa: B009  # gunicorn sets it, untyped
            _, shutdown = self._bounds(proxy)
            access_log = self.log.access_log if self.cfg.accesslog else None
            fmt = self._get_valid_log_format(self.cfg.access_log_format)

            async def runner() -> web.AppRunner:
                # aiohttp's worker serves the runner a coroutine function returns, as it would its own.
                return GatewayRunner(
                    app,
                    logger=self.log,
                    keepalive_timeout=self.cfg.keepalive,
                    access_log=access_log,
                    access_log_format=fmt,
                    shutdown_timeout=shutdown,
                    header_timeout=proxy.settings.header_timeout,
                    body_timeout=proxy.settings.read_timeout,
                )

            self.wsgi = runner
            self.loop.set_exception_handler(AcceptErrors())
        # The master kills a worker silent for its timeout: a stop that waits for streams is not silence.
        heartbeat = self.loop.create_task(self._heartbeat())
        try:
            await super()._run()
        finally:
            heartbeat.cancel()

    async def _heartbeat(self) -> None:
        while True:
            self.notify()
            await asyncio.sleep(_HEARTBEAT)

    def init_signals(self) -> None:
        super().init_signals()
        self.loop.add_signal_handler(signal.SIGHUP, self.handle_hup)

    def handle_hup(self) -> None:
        """SIGHUP: the client keys, read again; open requests go on."""
        if self._proxy is None:
            return
        try:
            count = self._proxy.reload_keys(os.environ)
        except SettingsError as exc:
            log.error("SIGHUP: client keys not reloaded, the previous ones stay: %s", exc)
        else:
            log.info("SIGHUP: client keys reloaded: %d key%s", count, "" if count == 1 else "s")

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """SIGTERM: readiness fails first, serving goes on for ``drain_delay``; a second one stops now."""
        proxy = self._proxy
        if proxy is None or self._term_seen:
            self._stop_serving()
            return
        self._term_seen = True
        proxy.draining = True
        drain, shutdown = self._bounds(proxy)
        log.info(
            "SIGTERM: /readyz fails for %gs while the worker serves on; then open requests get %gs", drain, shutdown
        )
        self.loop.call_later(drain, self._stop_serving)

    def handle_quit(self, sig: int, frame: FrameType | None) -> None:
        if self._proxy is not None:
            self._proxy.draining = True
        super().handle_quit(sig, frame)

    def _stop_serving(self) -> None:
        self.alive = False
        self._notify_waiter_done()  # the serving loop sees it now, not at its next second
