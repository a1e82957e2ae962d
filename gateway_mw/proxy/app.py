"""The gateway as an aiohttp application: client keys, gateway_mw, health, metrics, forwarding."""

from __future__ import annotations

import logging
import os
import shlex
import sys
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

from ..middleware import THINKEXTRACT_RECORD, THINKEXTRACT_SERVER, THINKEXTRACT_STATS, setup
from .forwarding import REQUEST_ID_HEADER, Proxy, UpstreamDropped, error_response, request_id
from .logsafe import GatewayAccessLogger, request_line
from .metrics import CONTENT_TYPE, Counters, GatewayMetrics
from .settings import Settings, load_settings

__all__ = ["PROXY", "app_factory", "build_app", "gateway_middleware", "healthz", "metrics"]

log = logging.getLogger("gateway_mw.proxy")

PROXY = web.AppKey("PROXY", Proxy)

_FORWARD, _METRICS = "forward", "metrics"


async def healthz(request: web.Request) -> web.Response:
    """Liveness and readiness of this worker; it does not call the upstream and needs no key."""
    return web.json_response({"status": "ok"})


async def metrics(request: web.Request) -> web.Response:
    body = request.app[PROXY].metrics.exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


def _unauthorized(proxy: Proxy, request: web.Request, route: str | None) -> web.Response:
    proxy.counters.client_auth_failures += 1
    surface = proxy.settings.think_extract.surface_for_path(request.path) if route == _FORWARD else None
    if proxy.keys.presented(request):
        message = "the API key is not valid for this gateway"
    else:
        message = "an API key is required: send Authorization: Bearer KEY or x-api-key: KEY"
    log.info("request %s: %s refused: %s", request_id(request), request_line(request), message)
    resp = error_response(surface, 401, "invalid_api_key", message)
    resp.headers["WWW-Authenticate"] = 'Bearer realm="gateway-mw"'
    resp.headers[REQUEST_ID_HEADER] = request_id(request)
    return resp


@web.middleware
async def gateway_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Outermost: client keys before anything else; an upstream that failed mid-answer cuts the
    client with one WARNING line; the metrics follow each request."""
    proxy = request.app[PROXY]
    route = request.match_info.route.name
    try:
        guarded = route == _FORWARD or (route == _METRICS and proxy.settings.metrics_key)
        if guarded and not proxy.keys.allows(request):
            return _unauthorized(proxy, request, route)
        if route == _FORWARD and proxy.settings.think_extract.surface_for_path(request.path) is not None:
            request[THINKEXTRACT_SERVER] = proxy.upstream_server()  # where replayed reasoning goes
        try:
            response = await handler(request)
        except UpstreamDropped as exc:
            log.warning("request %s: %s: %s", request_id(request), request_line(request), exc)
            transport = request.transport
            if transport is not None:
                transport.close()  # what was written goes out, then the connection ends without the stream's end
            return exc.response  # aiohttp's write_eof then fails quietly on the closed connection
        if route == _FORWARD and not response.prepared:  # the gateway's own answers (502, 504, 400)
            response.headers.setdefault(REQUEST_ID_HEADER, request_id(request))
        return response
    finally:
        proxy.metrics.sync()


def build_app(settings: Settings) -> web.Application:
    """The gateway as an aiohttp application: gateway_mw, health, metrics, and the forwarding route."""
    # handler_args reach aiohttp's connection handler under any runner, gunicorn's worker included.
    app = web.Application(middlewares=[gateway_middleware], handler_args={"access_log_class": GatewayAccessLogger})
    if settings.middleware:
        setup(app, settings.think_extract)
    counters = Counters()
    metrics_ = GatewayMetrics(app.get(THINKEXTRACT_STATS), counters, app.get(THINKEXTRACT_RECORD))
    proxy = app[PROXY] = Proxy(settings, metrics_)
    app.cleanup_ctx.append(proxy.context)
    app.router.add_get("/healthz", healthz, name="healthz")
    app.router.add_get("/metrics", metrics, name=_METRICS)
    app.router.add_route("*", settings.prefix + "{tail:.*}", proxy.forward, name=_FORWARD)
    return app


def app_factory() -> web.Application:
    """For ``gunicorn 'gateway_mw.proxy:app_factory()' --worker-class aiohttp.GunicornWebWorker``.

    Settings come from ``GATEWAY_*`` / ``THINK_EXTRACT_*`` variables and ``GATEWAY_CONFIG``; gunicorn's
    ``--bind`` decides where it listens. A bad setting stops the worker from booting.
    """
    settings, _ = load_settings([])
    from .serving import configure_logging

    configure_logging(settings)
    workers = gunicorn_workers(sys.argv[1:], os.environ)
    if workers > 1 and settings.middleware and settings.think_extract.reasoning_store == "memory":
        log.warning(
            "%d workers each keep a reasoning record of their own (reasoning_store=memory): a client's next "
            "turn that reaches another worker finds none; set reasoning_store to sqlite:PATH (one host) or "
            "redis://HOST:PORT/DB (several)",
            workers,
        )
    return build_app(settings)


def gunicorn_workers(argv: list[str], environ: Mapping[str, str]) -> int:
    """How many workers gunicorn runs, from its command line, ``GUNICORN_CMD_ARGS`` and
    ``WEB_CONCURRENCY`` (its own order); 1 when none says."""
    args = [*shlex.split(environ.get("GUNICORN_CMD_ARGS", "")), *argv]  # the command line wins: last
    found: str | None = environ.get("WEB_CONCURRENCY")
    for i, arg in enumerate(args):
        if arg in ("-w", "--workers") and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith("--workers="):
            found = arg.partition("=")[2]
        elif arg.startswith("-w") and len(arg) > 2:
            found = arg[2:]
    try:
        return max(1, int(found)) if found is not None else 1
    except ValueError:
        return 1
