"""Counters the middleware keeps per surface, for dashboards and tests."""

from __future__ import annotations

from typing import Any

import msgspec

from .channels import Counts
from .config import Surface
from .surfaces.registry import SURFACES

__all__ = ["SurfaceStats", "ThinkExtractStats"]


class SurfaceStats(msgspec.Struct):
    seen: int = 0
    """Responses on this surface's routes."""
    translated: int = 0
    """Responses that went through the translator."""
    passed_through: dict[str, int] = msgspec.field(default_factory=dict)
    """Responses left untouched, by reason (``status``, ``content_type``, ``client_off``, …)."""
    reasoning_blocks: int = 0
    reasoning_chars: int = 0
    unclosed_blocks: int = 0
    cap_overflows: int = 0
    unreadable_events: int = 0
    """Data events passed on untranslated because they could not be read (held text went first).

    Only events the translator had to read count: while nothing is held and the raw bytes show that
    no tag can start, events pass without being read at all."""
    oversized_events: int = 0
    """Events over ``max_event_bytes``, streamed through raw as their bytes arrived."""
    translation_errors: int = 0
    """Responses in which a translator failed (the failing event passed as it came)."""
    history: dict[str, int] = msgspec.field(default_factory=dict)
    """Requests by what the way back in did with their earlier turns: ``rewritten``, ``unchanged``,
    or why the body was not read (``too_large``, ``chunked``, ``content_encoding``, ``pass``…)."""
    controls: dict[str, int] = msgspec.field(default_factory=dict)
    """Requests whose reasoning control was read, by ``"<intent>:<outcome>"`` (``off:applied``,
    ``effort:nearest``, ``default:unchanged``…)."""

    budgets: dict[str, int] = msgspec.field(default_factory=dict)
    """Streams whose reasoning budget the gateway enforced, by what came of it: ``within`` (the
    reasoning ended within it), ``continued`` (cut, and the answer continued), ``continuation_failed``
    (cut, the continuation failed: the answer ended there), ``not_continued`` (cut, the request could
    not be continued), ``client_gone`` (cut, and the client left before the continuation or during it),
    ``not_relayed`` (the handler returned the whole answer as one body: nothing to cut)."""
    budget_reasoning_events: int = 0
    """The reasoning events those streams counted (servers stream one token per event)."""

    def add(self, counts: Counts) -> None:
        self.reasoning_blocks += counts.reasoning_blocks
        self.reasoning_chars += counts.reasoning_chars
        self.unclosed_blocks += counts.unclosed
        self.cap_overflows += counts.overflows
        self.unreadable_events += counts.unreadable_events
        self.oversized_events += counts.oversized_events


class ThinkExtractStats(msgspec.Struct):
    """Counters for one application (one worker process): one :class:`SurfaceStats` for each surface."""

    surfaces: dict[Surface, SurfaceStats] = msgspec.field(
        default_factory=lambda: {name: SurfaceStats() for name in SURFACES}
    )

    def surface(self, surface: Surface) -> SurfaceStats:
        return self.surfaces[surface]

    def translated(self, surface: Surface, counts: Counts, error: bool) -> None:
        """One answer on ``surface`` went through a translator (which failed, if ``error``)."""
        stats = self.surface(surface)
        stats.translated += 1
        stats.add(counts)
        if error:
            stats.translation_errors += 1

    def controlled(self, surface: Surface, intent: str, outcome: str) -> None:
        """One request on ``surface`` whose reasoning control was read: its intent, and the outcome."""
        counter = self.surface(surface).controls
        key = f"{intent}:{outcome}"
        counter[key] = counter.get(key, 0) + 1

    def budgeted(self, surface: Surface, counted: int, outcome: str) -> None:
        """One stream on ``surface`` whose reasoning budget the gateway enforced."""
        stats = self.surface(surface)
        stats.budgets[outcome] = stats.budgets.get(outcome, 0) + 1
        stats.budget_reasoning_events += counted

    def passed(self, surface: Surface, reason: str) -> None:
        counter = self.surface(surface).passed_through
        counter[reason] = counter.get(reason, 0) + 1

    def snapshot(self) -> dict[str, Any]:
        """Plain dicts, ready for JSON: each surface's counters under its name."""
        snapshot: dict[str, Any] = msgspec.to_builtins(self.surfaces)
        return snapshot
