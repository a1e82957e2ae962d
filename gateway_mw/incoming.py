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
from typing import Any, NamedTuple

import msgspec
from aiohttp import hdrs, web
from aiohttp.streams import StreamReader

from .channels import Said
from .config import Surface, ThinkExtractConfig
from .credentials import credentials, scope_for
from .history import NOTHING, Recall, Recalled, asks_for_blobs, record_entries, record_keys, transform_request
from .record import ReasoningRecord

__all__ = [
    "THINKEXTRACT_REQUEST_BODY",
    "THINKEXTRACT_SCOPE",
    "THINKEXTRACT_SERVER",
    "Incoming",
    "reads_history",
    "remember",
    "rewrite_request",
    "scope_of",
]

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


THINKEXTRACT_SCOPE: Any = (
    web.RequestKey("THINKEXTRACT_SCOPE", bytes) if hasattr(web, "RequestKey") else "THINKEXTRACT_SCOPE"
)
"""Optional, set by an outer middleware: whose reasoning record this request reads and writes (bytes
no one can turn back into a credential). By default, a keyed digest of the API key the request
presents, the same as ``Authorization: Bearer`` or as ``x-api-key``, or one shared scope when it
presents none."""


class Incoming(NamedTuple):
    """What the way back in did with a request."""

    outcome: str
    """``rewritten``, ``unchanged``, or why the body was not read (``too_large``, ``chunked``…)."""
    body: bytes | None = None
    """The body as the client sent it (for the record's keys of the answer)."""
    blobs: bool = False
    """Whether the client asked for reasoning it can send back in ``encrypted_content``."""
    scope: bytes = b""


def scope_of(request: web.Request) -> bytes:
    """The reasoning record's scope of ``request`` (see :data:`THINKEXTRACT_SCOPE`)."""
    scope = request.get(THINKEXTRACT_SCOPE)
    if scope is not None:
        return bytes(scope)
    return scope_for(credentials(request.headers))


async def rewrite_request(
    request: web.Request, surface: Surface, config: ThinkExtractConfig, record: ReasoningRecord | None
) -> Incoming:
    """Give the handler the request with its history in the upstream's form, reasoning the client
    did not send back restored from ``record`` where it holds some."""
    if not reads_history(config):
        return Incoming("pass")
    server = request.get(THINKEXTRACT_SERVER)
    if server is not None and server != config.upstream_server:
        config = config.replace(upstream_server=server)
    body = await _read_bounded(request, config.max_body_bytes)
    if isinstance(body, str):
        return Incoming(body)
    blobs = surface == "responses" and asks_for_blobs(body)
    scope = scope_of(request) if record is not None else b""
    try:
        recall = await _recall(record, scope, surface, body) if record is not None else NOTHING
        new = transform_request(surface, body, config, recall)
    except Exception:  # a bug must not fail the request: it goes as it came
        log.exception("gateway_mw: %s request transform failed; the request goes as it came", surface)
        return Incoming("error", body, blobs, scope)
    if new is None:
        return Incoming("unchanged", body, blobs, scope)
    _hand_over(request, new)
    request[THINKEXTRACT_REQUEST_BODY] = new
    return Incoming("rewritten", body, blobs, scope)


_decode_recalled = msgspec.json.Decoder(Recalled).decode


async def _recall(record: ReasoningRecord, scope: bytes, surface: Surface, body: bytes) -> Recall:
    """What the record holds for the turns of ``body`` (its own timeout bounds the wait)."""
    keys = record_keys(surface, body)
    if not keys:
        return NOTHING
    found = await record.get(scope, keys)
    out: dict[str, Recalled] = {}
    for key, value in found.items():
        try:
            out[key] = _decode_recalled(value)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue  # written by another version: no record
    return out


def remember(
    record: ReasoningRecord, incoming: Incoming, surface: Surface, said: list[Said], config: ThinkExtractConfig
) -> int:
    """Keep what the answers to a request said, after the response (written in the background)."""
    if incoming.body is None or not said:
        return 0
    entries = record_entries(surface, incoming.body, said, config)
    if entries:
        record.put_soon(incoming.scope, {key: msgspec.json.encode(entry) for key, entry in entries.items()})
    return len(entries)


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
