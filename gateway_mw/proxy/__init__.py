"""The gateway: a streaming reverse proxy with gateway_mw applied, as a program and as a library.

    gateway-mw --upstream http://127.0.0.1:8000  # a model server (vLLM, llama.cpp…)
    gateway-mw                                   # the embedded demo model behind it (a WARNING says so)
    gateway-mw --demo                            # one request per surface, side by side
    gunicorn -c python:gateway_mw.proxy.gunicorn_conf -w 4   # several workers (GATEWAY_UPSTREAM set)

The routes it forwards (by default the API surfaces, ``GET /v1/models`` and Ollama's native chat and
generate) go to the upstream with their method, path, query, headers (minus hop-by-hop ones) and body,
streamed both ways; the middleware translates the answers on the way out. ``GET /healthz`` (liveness),
``GET /readyz`` (readiness: fails from SIGTERM on) and ``GET /metrics`` (Prometheus text) are the
gateway's own. SIGHUP reloads the client keys.

It needs the ``gateway`` extra (``pip install 'gateway_mw[gateway]'``: prometheus-client, gunicorn);
imported without it, it says so.

Modules: :mod:`.settings` (the settings' layering), :mod:`.schema` (the settings struct),
:mod:`.cli` (the flags), :mod:`.keys` (client keys read), :mod:`.routes` (the routes
forwarded), :mod:`.forwarding` (the proxy), :mod:`.heads` (the head fields passed on and added, the
paths refused), :mod:`.errors` (the gateway's own answers), :mod:`.auth` (client keys and their aliases),
:mod:`.usage` (token counts from the answers), :mod:`.notes` (what is noted of a request),
:mod:`.modelinfo` (what an Ollama upstream says of a model, for the reasoning controls),
:mod:`.metrics`, :mod:`.app` (the aiohttp application), :mod:`.connections` (the runner: request
head timeout, refused requests, a bounded stop), :mod:`.logsafe` (what log lines may carry of a
request), :mod:`.serving` (banner, signals, ``main``), :mod:`.worker` and :mod:`.gunicorn_conf`
(gunicorn), :mod:`.demo` (``--demo``), :mod:`.demo_model`.
"""

from __future__ import annotations

from ..extras import GATEWAY_EXTRA, MissingExtra

try:  # the first module the gateway needs that the library does not
    import prometheus_client  # noqa: F401
except ModuleNotFoundError as missing:
    raise MissingExtra(
        f"the gateway (gateway_mw.proxy, gateway-mw) needs {missing.name}, which is not installed: {GATEWAY_EXTRA}",
        name=missing.name,
    ) from None

from ..stats import ThinkExtractStats
from .app import PROXY, app_factory, build_app
from .errors import error_response
from .forwarding import Proxy, UpstreamDropped
from .heads import HOP_BY_HOP
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
