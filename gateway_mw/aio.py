"""Every private part of aiohttp's request that the middleware uses, and one lookup of its own.

The middleware needs four things aiohttp has no public way to do: put its own payload writer
between the handler and the connection (so that whatever the handler writes goes through it), see a
body an outer middleware already read, make a rewritten body what every way of reading the request
returns (``read()``, ``text()``, ``json()``, ``content``), and ask the handler again with another
body (aiohttp refuses to clone a request whose body was read). Each is done here, on the request
attributes named in :data:`PRIVATE_ATTRIBUTES`; ``tests/middleware/test_aio.py`` fails, naming the
attribute, when an aiohttp release renames or drops one. The lookup (:func:`app_setting`) is
``request.config_dict.get`` made of public calls without the exceptions it raises for a key an
application lacks.
"""

from __future__ import annotations

import asyncio
from typing import TypeVar, cast

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.streams import StreamReader

_T = TypeVar("_T")

__all__ = [
    "PRIVATE_ATTRIBUTES",
    "app_setting",
    "clone_with",
    "hand_over",
    "innermost_setting",
    "raw_payload",
    "read_already",
    "restore_writer",
    "swap_writer",
]

PRIVATE_ATTRIBUTES = ("_payload_writer", "_read_bytes", "_payload", "_cache")
"""The attributes of :class:`aiohttp.web.BaseRequest` this module reads or sets."""
CACHED_CONTENT = "content"
"""The request's ``content``: a cached property (``reify``), whose value aiohttp keeps in ``_cache``."""


def swap_writer(request: web.BaseRequest, writer: AbstractStreamWriter) -> AbstractStreamWriter:
    """Make ``writer`` the one the response goes out through; the one it replaces is returned (put
    it back the same way)."""
    replaced = request.writer
    request._payload_writer = writer
    return replaced


def restore_writer(request: web.BaseRequest, writer: AbstractStreamWriter, own: AbstractStreamWriter) -> None:
    """Put the request's ``own`` writer back where ``writer`` stands in for it, once its response is
    over: a writer that holds what holds the request (the middleware's session) no longer makes a
    cycle with it, which kept the request, its body and the reading of it alive until the garbage
    collector's next pass."""
    if request._payload_writer is writer:
        request._payload_writer = own


def read_already(request: web.BaseRequest) -> bytes | None:
    """The body, when something before the middleware read it whole already."""
    return request._read_bytes


def raw_payload(request: web.BaseRequest) -> StreamReader:
    """The body's stream as the connection feeds it (not ``content``: aiohttp caches what that
    returns, and :func:`hand_over` replaces it)."""
    return request._payload


def hand_over(request: web.BaseRequest, body: bytes) -> None:
    """Make ``body`` what every way of reading the request returns."""
    request._read_bytes = body
    # A high water mark above the body, so that feeding it never pauses the connection's reading.
    payload = StreamReader(request.protocol, limit=max(2**16, len(body)), loop=asyncio.get_running_loop())
    if body:
        payload.feed_data(body)
    payload.feed_eof()
    request._payload = payload
    request._cache[CACHED_CONTENT] = payload


def clone_with(request: web.Request, body: bytes, writer: AbstractStreamWriter) -> web.Request:
    """A copy of ``request`` whose body is ``body`` and whose response goes out through ``writer``
    (its state copied: the keys set on ``request`` so far)."""
    read, request._read_bytes = request._read_bytes, None  # clone() refuses a request read already
    try:
        clone = request.clone()
    finally:
        request._read_bytes = read
    clone._payload_writer = writer
    hand_over(clone, body)
    return clone


_ABSENT = object()


def app_setting(request: web.Request, key: web.AppKey[_T]) -> _T | None:
    """``request.config_dict.get(key)`` (the value of the application handling it, else of the
    applications around it), without the ``KeyError`` that lookup raises and catches, in Python, for
    each application that lacks the key: a few microseconds a request, public calls only."""
    apps = request.match_info.apps
    return _first_set(apps[: apps.index(request.app) + 1], key)


def innermost_setting(request: web.Request, key: web.AppKey[_T]) -> _T | None:
    """The value of ``key`` in the innermost application of the request's route that has it (a
    sub-application overrides the one around it, whichever application's middleware asks)."""
    return _first_set(request.match_info.apps, key)


def _first_set(apps: tuple[web.Application, ...], key: web.AppKey[_T]) -> _T | None:
    """The value of ``key`` in the last of ``apps`` that has it (``app.get``: ``key in app`` raises
    and catches a ``KeyError`` for each application without it)."""
    for app in reversed(apps):
        value = app.get(key, _ABSENT)
        if value is not _ABSENT:
            return cast(_T, value)
    return None
