"""What the gateway's log lines may carry of a request: client-sent text with its control characters
escaped, so that one request is one line whatever it holds, and no credential.

A client chooses its path, query and headers; the upstream chooses its own headers and error texts. A
log line that carries any of them raw can be split, overwritten (``\\r``, ANSI escapes) or reordered
(bidirectional overrides) on the operator's terminal, or in a log store that breaks lines at NEL,
LINE SEPARATOR or PARAGRAPH SEPARATOR.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import unquote_plus

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_log import AccessLogger
from aiohttp.web_request import BaseRequest

from .notes import NOTE

__all__ = [
    "CREDENTIAL_ENDINGS",
    "CREDENTIAL_HEADERS",
    "CREDENTIAL_PARAMS",
    "KEY_ALIAS_FIELD",
    "GatewayAccessLogger",
    "ParserErrors",
    "filter_parser_errors",
    "printable",
    "redact_query",
    "request_line",
]

CREDENTIAL_PARAMS = frozenset(
    {
        "apikey",
        "key",
        "token",
        "accesstoken",
        "authtoken",
        "idtoken",
        "refreshtoken",
        "auth",
        "authorization",
        "xapikey",
        "password",
        "secret",
        "clientsecret",
        "signature",
        "sig",
    }
)
"""Query parameters whose value the access log never shows, compared decoded, case-insensitively and
without ``-``, ``_``, ``.`` or brackets (``api_key``, ``API-Key``, ``apikey[]`` are one name); so is
any name that ends in one of :data:`CREDENTIAL_ENDINGS` (``access_key``, ``x-goog-api-key``)."""

CREDENTIAL_ENDINGS = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "signature",
    "session",
    "sessionid",
    "jwt",
    "bearer",
    "credential",
    "credentials",
)
"""Endings of a query parameter's name that say it carries a credential (``keys`` is no such name)."""

CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"})
"""Request headers whose value the access log never shows, should its format name them."""

REDACTED = "***"

_UNPRINTABLE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Escaped in a log line: C0, DEL and C1 controls, the line and paragraph separators, bidirectional
marks and overrides, lone surrogates (bytes a parser could not decode, which a UTF-8 log stream would
fail to write), and the backslash, so that an escape in the log is never the client's own text."""


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if char == "\\":
        return "\\\\"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character that could break or disguise a log line escaped (``\\x1b``,
    ``\\u2028``, ``\\\\``); other text, non-ASCII letters included, as it is."""
    return _UNPRINTABLE.sub(_escape, text)


def _is_credential(name: str) -> bool:
    plain = re.sub(r"[-_.\[\]]", "", unquote_plus(name)).lower()
    return plain in CREDENTIAL_PARAMS or plain.endswith(CREDENTIAL_ENDINGS)


def redact_query(query: str) -> str:
    """``query`` (as sent) with the value of each credential parameter replaced by ``***``."""
    parts = re.split(r"([&;])", query)  # some servers split at ";" too
    for i in range(0, len(parts), 2):
        name, eq, _ = parts[i].partition("=")
        if eq and _is_credential(name):
            parts[i] = f"{name}={REDACTED}"
    return "".join(parts)


def request_line(request: web.BaseRequest) -> str:
    """Method and path as the client sent them (percent-encoded, no query), printable."""
    return printable(f"{request.method} {request.rel_url.raw_path}")


KEY_ALIAS_FIELD = "key_alias"
"""``%{key_alias}o`` in the access log format: the alias of the client's key (``-`` without one)."""


class GatewayAccessLogger(AccessLogger):
    """aiohttp's access log, same format, every value printable; the request line's credential query
    parameters and any credential header the format names show ``***``; ``%{key_alias}o`` is the
    alias of the client's key, never the key."""

    def _format_line(
        self, request: BaseRequest, response: web.StreamResponse, time: float
    ) -> Iterable[tuple[str | tuple[str, str], str]]:
        line = []
        for key, value in super()._format_line(request, response, time):
            if key == "first_request_line" and request is not None:
                value = _first_line(request)
            elif isinstance(key, tuple) and key[0] == "request_header" and key[1].lower() in CREDENTIAL_HEADERS:
                value = value if value == "-" else REDACTED
            elif key == ("response_header", KEY_ALIAS_FIELD):
                note = request.get(NOTE) if request is not None else None
                value = getattr(note, "alias", "-")  # the gateway's own field: no header of that name is read
            line.append((key, printable(value) if isinstance(value, str) else value))
        return line


def _first_line(request: BaseRequest) -> str:
    """aiohttp's ``%r`` with the query redacted."""
    url = request.rel_url
    target = url.raw_path + (f"?{redact_query(url.raw_query_string)}" if url.raw_query_string else "")
    return f"{request.method} {target} HTTP/{request.version.major}.{request.version.minor}"


class ParserErrors(logging.Filter):
    """On the logger of aiohttp's connection handler (``aiohttp.server``, or gunicorn's error logger
    under aiohttp's gunicorn worker): a request that aiohttp's parser refused keeps its line, without
    the exception, whose text quotes the offending bytes (a header line, key and all).

    The gateway's own runner answers such requests itself (:mod:`.connections`); this covers the
    runners it does not make.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg = printable(f"{record.getMessage()}: {type(exc).__name__}; what it sent is not logged")
            record.args, record.exc_info, record.exc_text = None, None, None
        return True


def filter_parser_errors(*names: str) -> None:
    """Put :class:`ParserErrors` on the loggers ``names`` (once each)."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ParserErrors) for f in logger.filters):
            logger.addFilter(ParserErrors())
