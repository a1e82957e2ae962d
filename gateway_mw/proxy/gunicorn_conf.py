"""gunicorn settings for the gateway, read from the gateway's own:

    gunicorn -c python:gateway_mw.proxy.gunicorn_conf            # WEB_CONCURRENCY (or -w) workers

* The settings (``GATEWAY_*``, ``THINK_EXTRACT_*``, ``GATEWAY_CONFIG``) are checked once, in the master,
  before any worker starts: a bad one is one line on stderr and exit status 2. An upstream, or
  ``GATEWAY_DEMO_MODEL=true``, is required.
* It listens on ``GATEWAY_HOST``:``GATEWAY_PORT``, with :class:`.worker.GatewayWorker` workers and the
  gateway's access log format (``GATEWAY_ACCESS_LOG=false``: none); ``graceful_timeout`` covers
  ``drain_delay`` and ``shutdown_timeout``; idle client connections are kept 75 s, as aiohttp does
  (gunicorn's 2 s would cut the pooled connections of a load balancer in front).
* With ``PROMETHEUS_MULTIPROC_DIR``, the metrics files of a previous run are removed at start, and a
  worker's live gauges (open streams, process metrics) when it exits.
* SIGHUP to the master is sent on to the workers, which read their client keys again in place: open
  streams go on, and a key file that cannot be read leaves the keys as they were. (gunicorn's own
  SIGHUP would start new workers, and stop gunicorn altogether if they could not start.)

Flags given to gunicorn override these, as with any configuration file.
"""

from __future__ import annotations

import contextlib
import glob
import math
import os
import signal
import sys
from typing import Any

from .logs import ACCESS_LOG_FORMAT
from .settings import Settings, SettingsError, load_settings, require_upstream

__all__ = [
    "access_log_format",
    "accesslog",
    "bind",
    "child_exit",
    "errorlog",
    "graceful_timeout",
    "keepalive",
    "loglevel",
    "on_starting",
    "worker_class",
    "wsgi_app",
]


def _settings() -> Settings:
    try:
        settings, _ = load_settings([])
        require_upstream(settings)
    except SettingsError as exc:
        print(f"gateway-mw: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    return settings


_SETTINGS = _settings()
_HOST = f"[{_SETTINGS.host}]" if ":" in _SETTINGS.host else _SETTINGS.host

wsgi_app = "gateway_mw.proxy:app_factory()"
worker_class = "gateway_mw.proxy.worker.GatewayWorker"
bind = [f"{_HOST}:{_SETTINGS.port}"]
# From SIGTERM: the drain delay, the open requests' time, and a margin for the rest of the stop.
graceful_timeout = math.ceil(_SETTINGS.drain_delay + _SETTINGS.shutdown_timeout) + 5
keepalive = 75
accesslog = "-" if _SETTINGS.access_log else None
access_log_format = ACCESS_LOG_FORMAT
errorlog = "-"
loglevel = _SETTINGS.log_level


def _metrics_files(pattern: str) -> list[str]:
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return glob.glob(os.path.join(path, pattern)) if path else []


def on_starting(server: Any) -> None:
    """In the master, before the first worker: an empty metrics directory, and SIGHUP sent on."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path:
        os.makedirs(path, exist_ok=True)
        for name in _metrics_files("*.db"):  # only prometheus-client's files: the directory may hold others
            os.remove(name)
    reload = server.handle_hup

    def handle_hup() -> None:
        from .worker import GatewayWorker

        if not issubclass(server.cfg.worker_class, GatewayWorker):
            reload()  # another worker class would die of SIGHUP: gunicorn's own reload, then
            return
        server.log.info("Hang up: the workers read their client keys again")
        for pid in list(server.WORKERS):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGHUP)

    server.handle_hup = handle_hup  # the arbiter looks its signal handlers up by name


def child_exit(server: Any, worker: Any) -> None:
    """A worker is gone: its live gauges (open streams, process metrics) go with it."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid, path)  # type: ignore[no-untyped-call]
