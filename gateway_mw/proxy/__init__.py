"""The gateway: a streaming reverse proxy with gateway_mw applied, as a program and as a library.

    gateway-mw                                   # an embedded demo model behind it
    gateway-mw --upstream http://127.0.0.1:8000  # a real model server (vLLM, llama.cpp…)
    gateway-mw --demo                            # one request per surface, side by side
    gunicorn 'gateway_mw.proxy:app_factory()' --worker-class aiohttp.GunicornWebWorker -w 4

Every request under the prefix (default ``/v1/``) goes to the upstream with its method, path, query,
headers (minus hop-by-hop ones) and body, streamed both ways; the middleware translates the answers
on the way out. ``GET /healthz`` and ``GET /metrics`` (Prometheus text) are served by the gateway.

Modules: :mod:`.settings` (the settings struct and its layering), :mod:`.forwarding` (the proxy),
:mod:`.auth` (client keys), :mod:`.metrics`, :mod:`.app` (the aiohttp application),
:mod:`.connections` (the runner: request head timeout, refused requests, a bounded stop),
:mod:`.logsafe` (what log lines may carry of a request), :mod:`.serving` (banner, signals, ``main``),
:mod:`.demo` (``--demo``), :mod:`.demo_model`.
"""

from __future__ import annotations

from ..stats import ThinkExtractStats
from .app import PROXY, app_factory, build_app
from .forwarding import HOP_BY_HOP, Proxy, UpstreamDropped, error_response
from .metrics import Counters, GatewayMetrics
from .serving import banner, main, serve
from .settings import DEMO_CONFIG, TE_FIELDS, Settings, SettingsError, load_settings

__all__ = [
    "DEMO_CONFIG",
    "HOP_BY_HOP",
    "PROXY",
    "TE_FIELDS",
    "Counters",
    "GatewayMetrics",
    "Proxy",
    "Settings",
    "SettingsError",
    "ThinkExtractStats",
    "UpstreamDropped",
    "app_factory",
    "banner",
    "build_app",
    "error_response",
    "load_settings",
    "main",
    "serve",
]
