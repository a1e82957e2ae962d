"""The gateway as an aiohttp application: client keys, the routes it forwards, gateway_mw, health,
readiness, metrics, forwarding."""

from __future__ import annotations

import functools
import logging
import os
import shlex
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import NoReturn

from aiohttp import hdrs, web
from multidict import CIMultiDict

from ..controls import Controlled
from ..credentials import scope_for
from ..exchange import THINKEXTRACT_BUDGET
from ..families import family_for
from ..incoming import CLIENT_GONE, THINKEXTRACT_CONTROLS, THINKEXTRACT_SCOPE
from ..middleware import (
    THINK_EXTRACT_HEADER,
    THINKEXTRACT_MODEL_INFO,
    THINKEXTRACT_RECORD,
    THINKEXTRACT_SERVER,
    THINKEXTRACT_STATS,
    setup,
)
from ..surfaces.registry import SURFACES
from ..tokencount import THINKEXTRACT_REASONING_TOKENS, THINKEXTRACT_TOKEN_COUNTER
from . import demo_model
from .errors import body_timed_out, error_response, error_shape
from .forwarding import Proxy, UpstreamDropped
from .heads import REQUEST_ID_HEADER, path_refusal, request_id
from .logs import configure_logging, warn_demo
from .logsafe import GatewayAccessLogger, printable, request_line
from .metrics import CONTENT_TYPE, Counters, GatewayMetrics
from .notes import NotedStats, RequestNote, current_note, note_of
from .refusal import refuse
from .settings import Settings, SettingsError, load_settings, require_upstream

__all__ = ["PROXY", "app_factory", "build_app", "gateway_middleware", "healthz", "metrics", "readyz"]

log = logging.getLogger("gateway_mw.proxy")

PROXY = web.AppKey("PROXY", Proxy)

_FORWARD, _METRICS = "forward", "metrics"

_WHY_PASSED = {
    "disabled": "the surface is off in the configuration",
    "client_off": "the client sent X-Think-Extract: off",
    "status": "the upstream's status is not a success",
    "empty": "the answer has no body (204)",
    "partial": "the answer is a byte range (206)",
    "content_encoding": "the body is compressed",
    "content_type": "the body is neither JSON nor an event stream",
    "too_large": "the body is over max_body_bytes",
    "http10_length": "an HTTP/1.0 client and a stream with a length",
    "file": "the handler sent a file",
}


async def healthz(request: web.Request) -> web.Response:
    """Liveness of this worker: it answers while the process serves. It does not call the upstream
    and needs no key."""
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """Readiness: 503 from SIGTERM on (the gateway still serves for ``drain_delay``, so that load
    balancers stop sending it requests before it stops listening). No upstream call, no key."""
    if request.app[PROXY].draining:
        return web.json_response({"status": "draining"}, status=503)
    return web.json_response({"status": "ready"})


async def metrics(request: web.Request) -> web.Response:
    body = request.app[PROXY].metrics.exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


def _unauthorized(proxy: Proxy, request: web.Request, route: str | None) -> web.Response:
    proxy.counters.client_auth_failures += 1
    surface = error_shape(proxy.settings, request.path) if route == _FORWARD else None
    if proxy.keys.presented(request):
        message = "the API key is not valid for this gateway"
    else:
        message = "an API key is required: send Authorization: Bearer KEY or x-api-key: KEY"
    log.info("request %s: %s refused: %s", request_id(request), request_line(request), message)
    resp = error_response(surface, 401, "invalid_api_key", message)
    resp.headers["WWW-Authenticate"] = 'Bearer realm="gateway-mw"'
    resp.headers[REQUEST_ID_HEADER] = request_id(request)
    return resp


def _not_forwarded(proxy: Proxy, request: web.Request, allowed: tuple[str, ...]) -> web.Response:
    surface = error_shape(proxy.settings, request.path)
    if allowed:
        resp = error_response(surface, 405, "method_not_allowed", "this method is not allowed on this route")
        resp.headers[hdrs.ALLOW] = ", ".join(allowed)
    else:
        resp = error_response(surface, 404, "not_found", "this route is not served by the gateway")
    resp.headers[REQUEST_ID_HEADER] = request_id(request)
    return resp


def _without_client_off(request: web.Request) -> web.Request:
    headers = CIMultiDict(request.headers)
    headers.popall(THINK_EXTRACT_HEADER, None)
    return request.clone(headers=headers)


@web.middleware
async def gateway_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Outermost: client keys before anything else, then the forwarded routes; an upstream that failed
    mid-answer cuts the client with one WARNING line; the metrics follow each request."""
    proxy = request.app[PROXY]
    route = request.match_info.route.name
    if route != _FORWARD:
        try:
            if route == _METRICS and proxy.settings.metrics_key and not proxy.keys.allows(request):
                return _unauthorized(proxy, request, route)
            own = await handler(request)
            if proxy.draining and not own.prepared:
                own.force_close()
            return own
        finally:
            proxy.metrics.sync()
    note = note_of(request)  # before any clone of the request, which then shares it
    context = current_note()
    token = context.set(note)
    response: web.StreamResponse | None = None
    status = 500
    try:
        if proxy.keys:
            matched = proxy.keys.match(request)
            if matched is None:
                response = _unauthorized(proxy, request, route)
                return response
            note.alias, key = matched
            request[THINKEXTRACT_SCOPE] = scope_for([key])  # the accepted key's, whatever else is presented
        refusal = path_refusal(request.rel_url.raw_path)  # a path that could leave its route: 400 first
        if refusal is not None:
            response = error_response(error_shape(proxy.settings, request.path), 400, "invalid_request", refusal)
            response.headers[REQUEST_ID_HEADER] = request_id(request)
            return response
        allowed = proxy.routes.check(request.method, request.path)
        if allowed is not None:
            response = _not_forwarded(proxy, request, allowed)
            return response
        if not proxy.settings.allow_client_off and THINK_EXTRACT_HEADER in request.headers:
            request = _without_client_off(request)
        request[THINKEXTRACT_SERVER] = proxy.upstream_server()
        try:
            response = await handler(request)
        except UpstreamDropped as exc:
            log.warning("request %s: %s: %s", request_id(request), request_line(request), exc)
            transport = request.transport
            if transport is not None:
                transport.close()  # what was written goes out, then the connection ends without the stream's end
            response = exc.response
            return response  # aiohttp's write_eof then fails quietly on the closed connection
        except web.HTTPRequestTimeout:  # the middleware's read of a body that stopped arriving
            response = body_timed_out(request, error_shape(proxy.settings, request.path))
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        if response.status == CLIENT_GONE and not note.client_gone:  # the middleware found the client gone
            proxy.client_left(request, "its body")
        if not response.prepared:  # the gateway's own answers (502, 504, 400)
            response.headers.setdefault(REQUEST_ID_HEADER, request_id(request))
            if proxy.draining:
                response.force_close()
        return response
    finally:
        context.reset(token)
        if response is not None:
            status = response.status
        elif note.status is not None:
            status = note.status
        elif note.client_gone:
            status = 499  # nginx's "client closed request": no answer was sent
        label = proxy.settings.think_extract.surface_for_path(request.path) or "other"
        proxy.metrics.requests.labels(surface=label, status=str(status), key=note.alias).inc()
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "request %s: %s: %s", request_id(request), request_line(request), _story(proxy, request, note, status)
            )
        proxy.metrics.sync()


def _story(proxy: Proxy, request: web.Request, note: RequestNote, status: int) -> str:
    """The per-request debug line: whether the answer was translated, and how, or why not."""
    settings = proxy.settings
    config = settings.think_extract
    surface = config.surface_for_path(request.path)
    parts = [f"{status}, key {note.alias}"]
    if status in (400, 401, 404, 405) and note.status is None:
        return f"{parts[0]}: refused, not forwarded"
    if note.model is not None:
        family = family_for(note.model) if config.families else None
        profile = next((p.match for p in config.profiles if p.matches(note.model)), None)
        parts.append(f"model '{printable(note.model)}'")  # the upstream's text: one line, whatever it holds
        parts.append(f"family preset {family.name!r}" if family is not None else "no family preset")
        if profile is not None:
            parts.append(f"profile {profile!r}")
    if note.outcome is not None:
        parts.append(f"stream {note.outcome}")
    if note.usage:
        parts.append("tokens " + " ".join(f"{kind}={n}" for kind, n in note.usage.items()))
    controlled = request.get(THINKEXTRACT_CONTROLS)
    if controlled is not None and (controlled.intent.kind != "default" or controlled.outcome != "unchanged"):
        parts.append(_control(controlled))
    counted = request.get(THINKEXTRACT_REASONING_TOKENS)
    if counted is not None:
        parts.append(f"reasoning tokens {counted.tokens} in the usage ({_COUNTED_BY[counted.counted]})")
    budgeted = request.get(THINKEXTRACT_BUDGET)
    if budgeted is not None:
        parts.append(f"budget enforced by the gateway: {budgeted.counted} reasoning events counted, {budgeted.outcome}")
    if not settings.middleware:
        verdict = "not translated: the middleware is off"
    elif surface is None:
        verdict = "not translated: not a route the middleware translates"
    elif request.method != hdrs.METH_POST:
        verdict = f"not translated: {request.method} answers are not translated"
    elif note.passed is not None:
        verdict = f"{surface}: passed through ({note.passed}): {_WHY_PASSED.get(note.passed, 'see the statistics')}"
    elif note.status is None:
        verdict = f"{surface}: no answer relayed"
    elif note.native:  # nothing to move: the upstream wrote its reasoning where clients read it
        verdict = f"{surface}: the upstream's own reasoning passed on"
    else:
        verdict = f"{surface}: translated, {SURFACES[surface].story(config)}"
    return f"{', '.join(parts)}; {verdict}"


_COUNTED_BY = {
    "reasoning events": "the gateway's count of reasoning events",
    "tokenizer": "the gateway's count, by the upstream's /tokenize",
    "server": "the server's usage.reasoning_tokens",
}


def _control(controlled: Controlled) -> str:
    """The reasoning control read and what was written for it, in the gateway's words: of the
    client's request, only the field it was read from and its level or budget."""
    intent = controlled.intent
    said: str = intent.kind
    if intent.kind == "effort" and intent.effort is not None:
        said += f" {intent.effort}"
    elif intent.kind == "budget" and intent.budget is not None:
        said += f" {intent.budget}"
    if intent.form:
        said += f" ({intent.form})"
    if intent.exclude:
        said += " without reasoning back"
    return f"control {said} -> {controlled.written or 'nothing written'}, {controlled.outcome}"


def build_app(settings: Settings) -> web.Application:
    """The gateway as an aiohttp application: gateway_mw, health, readiness, metrics, and the
    forwarding route (every other path, held to ``forward_routes``)."""
    # handler_args reach aiohttp's connection handler under any runner, gunicorn's worker included.
    # auto_decompress off: a compressed request body goes upstream as it came, never inflated here.
    handler_args = {"access_log_class": GatewayAccessLogger, "auto_decompress": False}
    app = web.Application(middlewares=[gateway_middleware], handler_args=handler_args)
    if settings.middleware:
        try:
            setup(app, settings.think_extract)
        except ValueError as exc:  # a reasoning_store that cannot be opened: its form, a value, its file
            raise SettingsError(str(exc)) from None
        app[THINKEXTRACT_STATS] = NotedStats()  # the same statistics, which also tell the request's note
    counters = Counters()
    metrics_ = GatewayMetrics(app.get(THINKEXTRACT_STATS), counters, app.get(THINKEXTRACT_RECORD))
    demo = functools.partial(demo_model.serve, settings.pace) if settings.upstream is None else None
    proxy = app[PROXY] = Proxy(settings, metrics_, local_upstream=demo)
    if settings.middleware:
        app[THINKEXTRACT_MODEL_INFO] = proxy.model_info  # Ollama's /api/show, asked once per model
        app[THINKEXTRACT_TOKEN_COUNTER] = proxy.count_tokens  # the upstream's /tokenize, once per body
    app.cleanup_ctx.append(proxy.context)
    app.router.add_get("/healthz", healthz, name="healthz")
    app.router.add_get("/readyz", readyz, name="readyz")
    app.router.add_get("/metrics", metrics, name=_METRICS)
    app.router.add_route("*", "/{tail:.*}", proxy.forward, name=_FORWARD)
    return app


def app_factory() -> web.Application:
    """For ``gunicorn 'gateway_mw.proxy:app_factory()'`` (worker class
    ``gateway_mw.proxy.worker.GatewayWorker``, or aiohttp's ``aiohttp.GunicornWebWorker``).

    Settings come from ``GATEWAY_*`` / ``THINK_EXTRACT_*`` variables and ``GATEWAY_CONFIG``; gunicorn's
    ``--bind`` decides where it listens. It needs an upstream, or ``GATEWAY_DEMO_MODEL=true``. A bad
    setting is one line on stderr, and the worker exits with gunicorn's "application failed to load"
    status (4), which stops gunicorn. (``gunicorn -c python:gateway_mw.proxy.gunicorn_conf`` checks the
    settings once, in the master, before any worker starts.)
    """
    try:
        settings, _ = load_settings([])
        require_upstream(settings)
    except SettingsError as exc:
        _refuse(str(exc))
    configure_logging(settings)
    warn_demo(settings)
    workers = gunicorn_workers(sys.argv[1:], os.environ)
    if workers > 1 and settings.middleware and settings.think_extract.reasoning_store == "memory":
        log.warning(
            "%d workers each keep a reasoning record of their own (reasoning_store=memory): a client's next "
            "turn that reaches another worker finds none; set reasoning_store to sqlite:PATH (one host) or "
            "redis://HOST:PORT/DB (several)",
            workers,
        )
    try:
        return build_app(settings)
    except SettingsError as exc:
        _refuse(str(exc))


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


def _refuse(message: str) -> NoReturn:
    """Stop on a bad setting: one line, exit status 4; under gunicorn, one line from all its workers."""
    refuse(message)
