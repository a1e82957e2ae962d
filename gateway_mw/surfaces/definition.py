"""What the gateway knows of one API surface, as one object: :class:`SurfaceDefinition`.

Each surface declares its definition in its own module (``chat/surface.py``, ``messages/surface.py``,
``responses/surface.py``, the end of ``ollama.py``) and :mod:`.registry` holds one entry per surface.
Everything that differs by surface — the middleware's content types, the pipeline's framing and
translator, the record's keys, the gateway's debug line, the statistics — is read from it, so that a
surface missing a piece fails ``mypy --strict``, not a request.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from ..config import Surface, ThinkExtractConfig
from ..controls.side import SurfaceControls
from ..history import RequestSide
from . import StreamTranslator
from .base import Counts, NewId, Said
from .budgeting import BudgetSide
from .exclude import ReasoningFilter
from .usage import BodyUsage

__all__ = ["NDJSON_TYPES", "SSE_TYPES", "Framing", "SurfaceDefinition"]

Framing = Literal["sse", "ndjson"]
"""How a surface frames a stream: Server-Sent Events, or newline-delimited JSON (Ollama)."""

SSE_TYPES = frozenset({"text/event-stream"})
NDJSON_TYPES = frozenset({"application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines"})


class SurfaceDefinition(RequestSide, Protocol):
    """One API surface: how its answers are framed and translated, what they said, how its requests'
    history is read (:class:`~gateway_mw.history.RequestSide`), how it is switched on and described."""

    @property
    def name(self) -> Surface:
        """Its name: in ``routes``, in the statistics and in the metrics' ``surface`` label."""
        ...

    @property
    def forward_routes(self) -> tuple[str, ...]:
        """The routes the gateway forwards for it by default (``METHOD PATH``, a path without a leading
        ``/`` under the prefix): its own, and the read-only ones its clients ask first."""
        ...

    @property
    def error_paths(self) -> tuple[str, ...]:
        """Where, outside the prefix, a path whose route it does not translate (``/api/tags``) still
        gets the gateway's errors in its shape: the paths' beginnings."""
        ...

    @property
    def framing(self) -> Framing:
        """How its streams are framed (the pipeline's decoder)."""
        ...

    @property
    def stream_types(self) -> frozenset[str]:
        """The content types (lower case, no parameters) of the streams it translates; any other
        than JSON passes through as ``content_type``."""
        ...

    def stream(self, config: ThinkExtractConfig, new_id: NewId) -> StreamTranslator:
        """A translator for one stream (``new_id``: where made-up ids come from)."""
        ...

    def transform_body(
        self, body: bytes | bytearray, config: ThinkExtractConfig, new_id: NewId
    ) -> tuple[bytes | None, Counts]:
        """A non-stream answer translated (``None``: nothing changed), and what was done."""
        ...

    def without_reasoning(self) -> ReasoningFilter:
        """A filter for one stream's translated events that leaves every reasoning field, block
        and item out, renumbering what follows (``reasoning_exclude``)."""
        ...

    def body_without_reasoning(self, body: bytes | bytearray) -> bytes | None:
        """A non-stream answer (as translated) without its reasoning; ``None``: it carried none."""
        ...

    def said_of_body(self, body: bytes, item_ids: tuple[str, ...]) -> list[Said]:
        """Each answer of a non-stream upstream ``body``, for the reasoning record: its text as the
        model wrote it and its tool calls (``item_ids``: the ids the gateway gave its items)."""
        ...

    @property
    def budget(self) -> BudgetSide | None:
        """Its pieces for a reasoning budget the gateway enforces (:mod:`.budgeting`); ``None``:
        the gateway enforces none on it."""
        ...

    @property
    def usage(self) -> BodyUsage | None:
        """Where its usage counts the reasoning tokens, and how a body's reasoning is read, for the
        count a non-stream body lacks (:mod:`.usage`); ``None``: its usage has no such count."""
        ...

    @property
    def controls(self) -> SurfaceControls:
        """What the reasoning controls need of it: its own form of the control, and how its
        requests stream."""
        ...

    def enabled(self, config: ThinkExtractConfig) -> bool:
        """Whether ``config`` translates this surface (``config.enabled`` aside)."""
        ...

    def story(self, config: ThinkExtractConfig) -> str:
        """Where a translated answer's reasoning went, for the gateway's debug line."""
        ...

    def error_body(self, status: int, code: str, message: str) -> Any:
        """A gateway error in the shape its clients read (JSON-ready)."""
        ...
