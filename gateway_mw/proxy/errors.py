"""The answers the gateway gives on its own, in the error shape of the API the client speaks."""

from __future__ import annotations

import logging

from aiohttp import web

from .heads import request_id
from .logsafe import request_line
from .settings import Settings

__all__ = ["OLLAMA_API", "body_timed_out", "error_response", "error_shape"]

log = logging.getLogger("gateway_mw.proxy")

OLLAMA_API = "/api/"  # where Ollama's native routes live


def error_shape(settings: Settings, path: str) -> str | None:
    """The surface whose error shape a gateway error on ``path`` takes: the translated route's, or
    Ollama's for its other routes (``/api/tags``, ``/api/show``…), outside the prefix."""
    surface = settings.think_extract.surface_for_path(path)
    if surface is None and path.startswith(OLLAMA_API) and not path.startswith(settings.prefix):
        return "ollama"
    return surface


def error_response(surface: str | None, status: int, code: str, message: str) -> web.Response:
    """An error body in the shape of the surface's API: Anthropic's for messages, Ollama's for its
    native routes (``error`` a string: its clients read it so), OpenAI's otherwise."""
    if surface == "ollama":
        return web.json_response({"error": message}, status=status)
    if surface == "messages":
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            404: "not_found_error",
            405: "invalid_request_error",
            408: "timeout_error",
            504: "timeout_error",
        }.get(status, "api_error")
        return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)
    kind = "invalid_request_error" if status < 500 else "server_error"
    error = {"message": message, "type": kind, "param": None, "code": code}
    return web.json_response({"error": error}, status=status)


def body_timed_out(request: web.Request, surface: str | None) -> web.Response:
    """The answer to a request whose body stopped arriving (``read_timeout`` without a byte): 408,
    the connection closed (what is left of the body is never read), one INFO line."""
    log.info("request %s: %s: the request body stopped arriving", request_id(request), request_line(request))
    refused = error_response(surface, 408, "request_timeout", "the request body stopped arriving")
    refused.force_close()
    return refused
