"""What the gateway notes of one forwarded request, for its metrics and log lines: the client key's
alias, the status, how a stream ended, the usage the upstream reported, and why the middleware left
the answer untranslated (if it did).

The middleware tells the last only to its statistics; :class:`NotedStats` stands in for them and
copies each reason onto the note of the request being handled (a context variable: the middleware
runs in the request's task).
"""

from __future__ import annotations

import contextvars

from aiohttp import web

from ..channels import Counts
from ..config import Surface
from ..stats import ThinkExtractStats
from .usage import Usage

__all__ = ["NOTE", "NotedStats", "RequestNote", "current_note", "note_of"]

NOTE: web.RequestKey[RequestNote] = web.RequestKey("gateway_mw.note")
NO_KEY = "-"
"""The alias shown for a request without an accepted key (none needed, or refused)."""


class RequestNote:
    __slots__ = ("alias", "client_gone", "model", "native", "outcome", "passed", "response", "status", "usage")

    def __init__(self) -> None:
        self.alias = NO_KEY
        self.status: int | None = None  # once the answer's head went out
        self.outcome: str | None = None  # a stream's, once it ended
        self.client_gone = False
        self.passed: str | None = None  # why the middleware passed the answer through
        self.native = False  # the answer carried the upstream's own reasoning, passed on
        self.usage: Usage = {}
        self.model: str | None = None
        self.response: web.StreamResponse | None = None  # the answer, once its head went out


_CURRENT: contextvars.ContextVar[RequestNote | None] = contextvars.ContextVar("gateway_mw_note", default=None)


def note_of(request: web.BaseRequest) -> RequestNote:
    """The request's note, made on first use (a clone of the request shares it)."""
    note = request.get(NOTE)
    if note is None:
        note = request[NOTE] = RequestNote()
    return note


def current_note() -> contextvars.ContextVar[RequestNote | None]:
    """The context variable holding the note of the request the current task handles."""
    return _CURRENT


class NotedStats(ThinkExtractStats):
    """The middleware's statistics, which also tell the request's note why its answer passed."""

    def translated(self, surface: Surface, counts: Counts, error: bool) -> None:
        super().translated(surface, counts, error)
        note = _CURRENT.get()
        if note is not None and counts.native:
            note.native = True

    def passed(self, surface: Surface, reason: str) -> None:
        super().passed(surface, reason)
        note = _CURRENT.get()
        if note is not None:
            note.passed = reason
