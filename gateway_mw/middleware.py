"""The aiohttp side: the ways in (:func:`setup`, the app keys), and the middleware that picks the
surface, gates by config, and translates what the handler writes.

The middleware swaps the request's payload writer for a :class:`~gateway_mw.exchange.TranslatingWriter`
before the handler runs, so every byte of the response passes through it whatever the handler does. A
plain ``web.Response`` with a bytes body is rewritten before aiohttp prepares it, so its
``Content-Length`` and any compression apply to the translated body.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Awaitable, Callable, Iterable
from functools import cache
from typing import Final

from aiohttp import hdrs, web

from .aio import innermost_setting, swap_writer
from .config import FALSE_WORDS, Surface, ThinkExtractConfig
from .continuing import continue_answer, whole_body
from .exchange import THINKEXTRACT_BUDGET, Session, TranslatingWriter
from .incoming import (
    CLIENT_GONE,
    THINKEXTRACT_CONTROLS,
    THINKEXTRACT_MODEL_INFO,
    THINKEXTRACT_REQUEST_BODY,
    THINKEXTRACT_SCOPE,
    THINKEXTRACT_SERVER,
    RequestBodyTimeout,
    entries_handed_over,
    rewrite_request,
)
from .marks import NewId, random_id
from .record import ReasoningRecord, open_record
from .stats import ThinkExtractStats
from .surfaces.registry import SURFACES
from .tokencount import THINKEXTRACT_REASONING_TOKENS, THINKEXTRACT_TOKEN_COUNTER

__all__ = [
    "CLIENT_GONE",
    "THINKEXTRACT_BUDGET",
    "THINKEXTRACT_CONFIG",
    "THINKEXTRACT_CONTROLS",
    "THINKEXTRACT_IDS",
    "THINKEXTRACT_MODEL_INFO",
    "THINKEXTRACT_REASONING_TOKENS",
    "THINKEXTRACT_RECORD",
    "THINKEXTRACT_REQUEST_BODY",
    "THINKEXTRACT_SCOPE",
    "THINKEXTRACT_SERVER",
    "THINKEXTRACT_STATS",
    "THINKEXTRACT_TOKEN_COUNTER",
    "THINK_EXTRACT_HEADER",
    "RequestBodyTimeout",
    "setup",
    "thinkextract_middleware",
]

log = logging.getLogger("gateway_mw")

THINKEXTRACT_CONFIG = web.AppKey("THINKEXTRACT_CONFIG", ThinkExtractConfig)
THINKEXTRACT_STATS = web.AppKey("THINKEXTRACT_STATS", ThinkExtractStats)
THINKEXTRACT_RECORD: web.AppKey[ReasoningRecord] = web.AppKey("THINKEXTRACT_RECORD")
"""The reasoning record: what the gateway moved out of each answer, given back to clients that do not
send it back themselves. Set by :func:`setup` (the one ``reasoning_store`` names, or the one it is
given); a middleware installed without ``setup()`` keeps none unless the application sets this key."""
THINKEXTRACT_IDS: web.AppKey[NewId] = web.AppKey("THINKEXTRACT_IDS")
"""Optional: the source of the ids the translators make up (``rs_…``, ``msg_…``), given the prefix;
random by default. Set it to make output deterministic (tests, replays)."""
THINK_EXTRACT_HEADER: Final = "X-Think-Extract"
"""A client may send ``X-Think-Extract: off`` (or ``false``, ``0``, ``no``) to get the raw output."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@cache
def _env_config() -> ThinkExtractConfig | ValueError:
    """The ``THINK_EXTRACT_*`` configuration of a bare middleware (no ``setup()``), read once; when
    it is invalid, the error (logged once) stands in for it."""
    try:
        return ThinkExtractConfig.from_env()
    except ValueError as exc:
        log.error("gateway_mw: %s; the routes it translates answer 500 until it is fixed", exc)
        return exc


@cache
def _env_routes() -> ThinkExtractConfig:
    """The routes of a bare middleware whose configuration is invalid: ``THINK_EXTRACT_ROUTES`` when
    that one is readable, else the default routes. Only for telling which requests it would translate."""
    try:
        return ThinkExtractConfig.from_env({k: v for k, v in os.environ.items() if k == "THINK_EXTRACT_ROUTES"})
    except ValueError:
        return ThinkExtractConfig()


def _config_for(request: web.Request) -> ThinkExtractConfig | None:
    """The configuration that applies to ``request``, or ``None`` for a request it does not
    translate. The environment is read only for a POST, and a bad one fails only the routes it
    would translate (with a 500 naming the problem in the log), never the application's others."""
    config = innermost_setting(request, THINKEXTRACT_CONFIG)
    if config is not None:
        return config
    env = _env_config()
    if isinstance(env, ThinkExtractConfig):
        return env
    if _env_routes().surface_for_path(request.path) is None:
        return None
    raise web.HTTPInternalServerError(text="gateway_mw: the THINK_EXTRACT_* configuration is invalid (see the log)")


def setup(
    app: web.Application, config: ThinkExtractConfig | None = None, *, record: ReasoningRecord | str | None = None
) -> ThinkExtractStats:
    """Install the middleware on ``app`` with ``config`` (else ``THINK_EXTRACT_*``), its statistics
    (returned) and its reasoning record: the one ``reasoning_store`` names, or ``record``.

    ``record`` is a store's spec (``"sqlite:PATH"``, ``"redis://HOST:PORT/DB"``, ``"memory"``,
    ``"off"``), which replaces the configuration's ``reasoning_store``, or a
    :class:`~gateway_mw.record.ReasoningRecord` the caller made (and closes: it may outlive the
    application, or serve several). A record ``setup()`` opens is closed at the application's end; a
    store it cannot open stops the application here."""
    config = config if config is not None else ThinkExtractConfig.from_env()
    if isinstance(record, str):
        config = config.replace(reasoning_store=record)
    # Opened first: a store it cannot open leaves the application untouched.
    opened = open_record(config.reasoning_store) if record is None or isinstance(record, str) else None
    app.middlewares.append(thinkextract_middleware)
    app[THINKEXTRACT_CONFIG] = config
    stats = app[THINKEXTRACT_STATS] = ThinkExtractStats()
    if opened is not None:
        app[THINKEXTRACT_RECORD] = opened
        app.on_cleanup.append(_close_record)
    elif record is not None and not isinstance(record, str):
        app[THINKEXTRACT_RECORD] = record
    return stats


async def _close_record(app: web.Application) -> None:
    """At the application's end: the writes in flight are done (each within its timeout)."""
    record = app.get(THINKEXTRACT_RECORD)
    if record is not None:
        await entries_handed_over()  # the entries of large requests still being read go in first
        await record.close()


@web.middleware
async def thinkextract_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method != hdrs.METH_POST:
        return await handler(request)
    config = _config_for(request)
    surface = config.surface_for_path(request.path) if config is not None else None
    if config is None or surface is None:
        return await handler(request)
    new_id = innermost_setting(request, THINKEXTRACT_IDS) or random_id
    session = Session(request, surface, config, innermost_setting(request, THINKEXTRACT_STATS), new_id)
    reason = _not_translated(request, surface, config)
    if reason is not None:
        session.passed(reason)
        return await handler(request)

    record = innermost_setting(request, THINKEXTRACT_RECORD)
    if record is None and config.reasoning_store != "off":
        _say_no_record(request.app, config.reasoning_store)
    incoming = await rewrite_request(request, surface, config, record)
    session.history(incoming.outcome)
    if incoming.outcome == "client_gone":
        return web.Response(status=CLIENT_GONE)  # no one to answer: what the access log shows
    if incoming.blobs:  # the client keeps reasoning it can send back only as encrypted_content
        session.config = config.replaced(responses_encrypted_content=True)
    controlled = incoming.controls
    if controlled is not None:
        if session.stats is not None:
            session.stats.controlled(surface, controlled.intent.kind, controlled.outcome)
        if controlled.intent.exclude:  # the client wants no reasoning back
            session.config = session.config.replaced(reasoning_exclude=True)
    budget = None
    side = session.definition.budget
    if side is not None and controlled is not None and controlled.by_gateway and controlled.intent.budget is not None:
        budget = side.counter(controlled.intent.budget, config.max_event_bytes)
    if record is not None and incoming.body is not None:  # a cut answer: kept once continued (continuing)
        session.keep(record, incoming)

    writer = TranslatingWriter(request.writer, session)
    writer.budget = budget
    if side is not None and budget is not None and controlled is not None and not controlled.stream:
        writer.collect = side.collector(config.max_event_bytes)  # asked for as a stream: its body is the client's
    inner = swap_writer(request, writer)
    try:
        response = await handler(request)
    except BaseException as exc:
        if budget is not None and budget.cut and isinstance(exc, Exception):
            return await continue_answer(request, handler, session, writer, inner, None, exc)
        await writer.abort()
        swap_writer(request, inner)  # aiohttp's error response, if any, goes out untouched
        raise
    if budget is not None and budget.cut:
        return await continue_answer(request, handler, session, writer, inner, response, None)
    if not response.prepared and writer.undecided:
        if isinstance(response, web.FileResponse):
            session.passed("file")  # sendfile() bypasses the writer: nothing to translate
            writer.pass_through()
        elif isinstance(response, web.Response) and isinstance(body := response.body, (bytes, bytearray)):
            collect = writer.collect
            if collect is not None and session.response_kind(response.status, response.headers, False) == "sse":
                # the stream asked for in its place, as a body
                response.body = whole_body(session, collect, bytes(body))
                response.content_type = "application/json"
            else:
                await session.rewrite_response(response, bytes(body))
            writer.pass_through()
            if budget is not None:  # read whole before the middleware saw any of it: nothing to cut
                session.budgeted(0, "not_relayed")
        # Otherwise (a streamed payload, an unprepared StreamResponse) the writer translates
        # what aiohttp writes once the handler has returned.
    return response


def _not_translated(request: web.Request, surface: Surface, config: ThinkExtractConfig) -> str | None:
    """Why this request is not translated at all, or ``None``."""
    if not (config.enabled and SURFACES[surface].enabled(config)):
        return "disabled"
    if THINK_EXTRACT_HEADER in request.headers and _client_opted_out(request.headers.getall(THINK_EXTRACT_HEADER)):
        return "client_off"
    return None


_told_no_record: weakref.WeakSet[web.Application] = weakref.WeakSet()


def _say_no_record(app: web.Application, store: str) -> None:
    """Say once per application that it keeps no record though its configuration names one: only
    ``setup()`` opens a store (and closes it), for a middleware has no part in the application's
    start and end. The store's kind only: a URL may carry a password."""
    if app in _told_no_record:
        return
    _told_no_record.add(app)
    kind = store.strip().partition(":")[0]
    log.warning(
        "gateway_mw: no reasoning record: reasoning_store is %s, but only gateway_mw.setup() opens a store;"
        " this middleware was installed without it, so reasoning a client does not send back is not restored."
        " Use setup(app, config), set app[THINKEXTRACT_RECORD], or set reasoning_store to 'off'",
        kind,
    )


def _client_opted_out(values: Iterable[str]) -> bool:
    """Whether any ``X-Think-Extract`` value (headers repeated, or comma-separated) says off."""
    return any(item.strip().lower() in FALSE_WORDS for value in values for item in value.split(","))
