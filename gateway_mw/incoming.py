"""The aiohttp side of the way back in: a request body read once, bounded, given to the sans-I/O
request transform (``history``), and the result made what the handler reads.

A body that changes is handed on through the request's cached body (``read()``, ``text()``,
``json()``) and a fresh payload stream (``content``, a property aiohttp caches: its cache entry too);
all three are private to aiohttp's request (pinned by the tests at the lowest and newest aiohttp the
project supports). The request's
``Content-Length`` header still describes the client's body: a handler that forwards headers must
take the new one's length, which :data:`THINKEXTRACT_REQUEST_BODY` holds.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import hdrs, web
from aiohttp.streams import StreamReader

from .config import Surface, ThinkExtractConfig
from .history import asks_for_blobs, transform_request

__all__ = ["THINKEXTRACT_REQUEST_BODY", "THINKEXTRACT_SERVER", "reads_history", "rewrite_request"]

log = logging.getLogger("gateway_mw")

THINKEXTRACT_REQUEST_BODY: Any = (
    web.RequestKey("THINKEXTRACT_REQUEST_BODY", bytes) if hasattr(web, "RequestKey") else "THINKEXTRACT_REQUEST_BODY"
)
"""Set on a request whose body the middleware rewrote: the bytes the handler now reads."""
THINKEXTRACT_SERVER: Any = (
    web.RequestKey("THINKEXTRACT_SERVER", str) if hasattr(web, "RequestKey") else "THINKEXTRACT_SERVER"
)
"""Optional, set by an outer middleware: the server behind this request's upstream (``vllm``,
``llamacpp``…), over the configured ``upstream_server`` (a gateway that routes to several upstreams)."""


async def rewrite_request(request: web.Request, surface: Surface, config: ThinkExtractConfig) -> tuple[str, bool]:
    """Give the handler the request with its history in the upstream's form. Returns what happened
    (``rewritten``, ``unchanged``, or why the body was not read) and whether the client asked for
    reasoning it can send back in ``encrypted_content``."""
    if not reads_history(config):
        return "pass", False
    server = request.get(THINKEXTRACT_SERVER)
    if server is not None and server != config.upstream_server:
        config = config.replace(upstream_server=server)
    body = await _read_bounded(request, config.max_body_bytes)
    if isinstance(body, str):
        return body, False
    blobs = surface == "responses" and asks_for_blobs(body)
    try:
        new = transform_request(surface, body, config)
    except Exception:  # a bug must not fail the request: it goes as it came
        log.exception("gateway_mw: %s request transform failed; the request goes as it came", surface)
        return "error", blobs
    if new is None:
        return "unchanged", blobs
    _hand_over(request, new)
    request[THINKEXTRACT_REQUEST_BODY] = new
    return "rewritten", blobs


def reads_history(config: ThinkExtractConfig) -> bool:
    """Whether any model may have its requests rewritten (``pass`` everywhere: bodies are not read)."""
    if config.history_reasoning != "pass":
        return True
    return any(p.history_reasoning not in (None, "pass") for p in config.profiles)


async def _read_bounded(request: web.Request, cap: int) -> bytes | str:
    """The request body, read once and handed back to the handler; or why it is left unread."""
    if request.method != hdrs.METH_POST or not request.body_exists:
        return "no_body"
    cached = request._read_bytes  # an outer middleware read it already
    if cached is not None:
        return cached
    length = request.content_length
    if length is None:
        return "chunked"  # no length to check first: it streams on as it comes
    if length > cap:
        return "too_large"
    if request.headers.get(hdrs.CONTENT_ENCODING, "identity").strip().lower() != "identity":
        return "content_encoding"
    body = await request._payload.read()  # not .content: aiohttp caches what that returns
    _hand_over(request, body)
    return body


def _hand_over(request: web.Request, body: bytes) -> None:
    """Make ``body`` what every way of reading the request returns."""
    request._read_bytes = body
    # A high water mark above the body, so that feeding it never pauses the connection's reading.
    payload = StreamReader(request._protocol, limit=max(2**16, len(body)), loop=request._loop)
    if body:
        payload.feed_data(body)
    payload.feed_eof()
    request._payload = payload
    request._cache["content"] = payload  # ``content`` is a cached property of the request
