"""An answer without its reasoning (``reasoning_exclude``): a surface's translator, with the surface's
filter over what it writes.

The translator runs as it always does: it reads every event, moves reasoning out of the text and
keeps what the model wrote for the reasoning record. The surface's :class:`ReasoningFilter` then takes
every reasoning field, block or item out of the events the translator gives, whoever wrote them (the
gateway from tags, or the server in its own fields), renumbers what follows and drops an event left
with nothing to say. Filtering what is written, rather than teaching each writer to write less, keeps
one rule per surface for both kinds of reasoning, and leaves the translators and their fast paths as
they are when the setting is off; when it is on, nothing is proven without reading it (a fast path
passes the server's reasoning as its bytes).

Pure: no I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from ..channels import Counts, Said, Transcripts
from ..sse import SSEEvent
from ..steady import DECLINED, Proven
from . import StreamTranslator

__all__ = ["ReasoningFilter", "WithoutReasoning"]

log = logging.getLogger("gateway_mw")


class ReasoningFilter(Protocol):
    """One stream's translated events with their reasoning left out (a surface's own rule)."""

    def events(self, events: list[SSEEvent]) -> list[SSEEvent]:
        """``events`` (in order, as the translator wrote them) without reasoning: an event left as it
        was is the same object."""
        ...


Reread = Callable[[bytes], list[SSEEvent]]
"""The whole bytes of one event read again as the stream's framing reads them."""


class WithoutReasoning:
    """A :class:`~gateway_mw.surfaces.StreamTranslator` whose every event goes through ``drop``.

    An event over ``max_event_bytes`` is held until it ends, up to ``limit`` bytes (as an event a
    surface must read whole is, ``max_body_bytes``), and read again whole: it may be reasoning.
    Past ``limit`` it goes on as its bytes arrive, unread."""

    def __init__(
        self, inner: StreamTranslator, drop: ReasoningFilter, reread: Reread, newline: Callable[[], bytes], limit: int
    ) -> None:
        self._inner = inner
        self._drop = drop
        self._reread = reread
        self._newline = newline  # the stream's line ending, for an event the filter wrote
        self._limit = limit
        self._pieces: list[bytes] = []  # the pieces of the oversized event under way
        self._size = 0
        self._unread = False  # the oversized event under way grew past the limit: it passes
        self.counts: Counts = inner.counts
        self.large_events = inner.large_events

    @property
    def transcripts(self) -> Transcripts | None:
        return self._inner.transcripts

    @transcripts.setter
    def transcripts(self, value: Transcripts | None) -> None:
        self._inner.transcripts = value

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        return self._drop.events(self._inner.event(event))

    def flush(self) -> list[SSEEvent]:
        return self._drop.events(self._inner.flush())

    def finish(self) -> list[SSEEvent]:
        return self._drop.events(self._inner.finish())

    def said(self) -> list[Said]:
        return self._inner.said()

    def fast_forward(self, span: bytes) -> Proven:
        return DECLINED  # every event is read, and what it says filtered

    def oversized(self, piece: bytes, more: bool) -> bytes:
        try:
            out = self._inner.oversized(piece, more)  # renumbered as the surface renumbers it
        except Exception:  # as the pipeline does with a fault: the piece as it came, after what is held
            log.exception("gateway_mw: translator failed on an oversized event; it passes as it came")
            self._unread = more
            return self._take() + piece
        self.large_events = self._inner.large_events  # a translator may stop holding any
        if self._unread:
            self._unread = more
            return out
        self._pieces.append(out)
        self._size += len(out)
        if self._size > self._limit:  # too large to hold: it goes on as it comes
            self._unread = more
            return self._take()
        if more:
            return b""
        whole = self._take()
        events = self._reread(whole)
        kept = self._drop.events(events)
        if kept == events:
            return whole
        newline = self._newline()
        return b"".join(e.raw if e in events or newline == b"\n" else e.raw.replace(b"\n", newline) for e in kept)

    def _take(self) -> bytes:
        whole = b"".join(self._pieces)
        self._pieces, self._size = [], 0
        return whole
