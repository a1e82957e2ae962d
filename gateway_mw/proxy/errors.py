"""The answers the gateway gives on its own, in the error shape of the API the client speaks."""

from __future__ import annotations

import logging

from aiohttp import web

from ..config import Surface
from ..surfaces.errors import openai_error
from ..surfaces.registry import SURFACES
from .heads import request_id
from .logsafe import request_line
from .settings import Settings

__all__ = ["body_timed_out", "error_response", "error_shape"]

log = logging.getLogger("gateway_mw.proxy")


def error_shape(settings: Settings, path: str) -> Surface | None:
    """The surface whose error shape a gateway error on ``path`` takes: the translated route's, or,
    outside the prefix, the surface whose other routes are there (Ollama's ``/api/tags``…: its
    definition's ``error_paths``)."""
    surface = settings.think_extract.surface_for_path(path)
    if surface is None and not path.startswith(settings.prefix):
        return next((s.name for s in SURFACES.values() if path.startswith(s.error_paths)), None)
    return surface


def error_response(surface: Surface | None, status: int, code: str, message: str) -> web.Response:
    """An error body in the shape of the surface's API (its definition's), OpenAI's off its routes."""
    error_body = SURFACES[surface].error_body if surface is not None else openai_error
    return web.json_response(error_body(status, code, message), status=status)


def body_timed_out(request: web.Request, surface: Surface | None) -> web.Response:
    """The answer to a request whose body stopped arriving (``read_timeout`` without a byte): 408,
    the connection closed (what is left of the body is never read), one INFO line."""
    log.info("request %s: %s: the request body stopped arriving", request_id(request), request_line(request))
    refused = error_response(surface, 408, "request_timeout", "the request body stopped arriving")
    refused.force_close()
    return refused
