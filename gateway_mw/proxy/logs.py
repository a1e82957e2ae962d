"""What the gateway logs, and how: the formats, the setup, the demo model's warning."""

from __future__ import annotations

import logging

from .logsafe import filter_parser_errors
from .settings import Settings

__all__ = ["ACCESS_LOG_FORMAT", "LOG_FORMAT", "configure_logging", "warn_demo"]

log = logging.getLogger("gateway_mw.proxy")

ACCESS_LOG_FORMAT = '%a "%r" %s %b %Tfs "%{User-Agent}i" request_id=%{X-Request-Id}o key=%{key_alias}o'
"""aiohttp's access log: client, request line, status, bytes, seconds, user agent, request id, the
alias of the client's key. (No header that could carry a credential is logged;
:class:`.logsafe.GatewayAccessLogger` writes it, with the request line's credential query parameters
as ``***`` and every value printable.)"""

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(settings: Settings) -> None:
    """Log to stderr at ``settings.log_level``, unless the host program (gunicorn) set logging up."""
    level = getattr(logging, settings.log_level.upper())
    logging.basicConfig(level=level, format=LOG_FORMAT)
    for name in ("gateway_mw", "aiohttp"):
        logging.getLogger(name).setLevel(level)
    filter_parser_errors("aiohttp.server", "gunicorn.error")


def warn_demo(settings: Settings) -> None:
    """Say so, at WARNING, when the gateway serves the demo model: no real model answers."""
    if settings.upstream is None:
        why = "demo_model is set" if settings.demo_model else "no upstream (--upstream, GATEWAY_UPSTREAM)"
        log.warning(
            "%s: serving the embedded demo model, which answers every model name with the same canned text",
            why,
        )
