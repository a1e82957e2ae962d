"""What the way back in reads of one surface: :class:`RequestSide`, a part of the surface's
definition (``gateway_mw.surfaces.definition``), which the caller looks up and hands in."""

from __future__ import annotations

from typing import Protocol

from .plan import Form, Plan, Scope
from .recall import Recall

__all__ = ["RequestSide"]


class RequestSide(Protocol):
    """What the way back in reads of one surface's requests (a part of its definition)."""

    def transform_history(self, body: bytes, plan: Plan, recall: Recall) -> bytes | None:
        """``body`` with its earlier turns' reasoning written as ``plan`` says (``None``: unchanged)."""
        ...

    def history_keys(self, body: bytes, turns: int) -> list[str]:
        """The record keys of the latest ``turns`` assistant turns of ``body``."""
        ...

    def answer_prefix(self, request: bytes) -> bytes | None:
        """The conversation a response to ``request`` follows, as its answers' keys begin
        (``None``: nothing to key them by)."""
        ...

    @property
    def unknown_family(self) -> tuple[Form, Scope]:
        """``auto`` for a model of no known family (:data:`~.plan.UNKNOWN_FAMILY`, unless its server
        reads reasoning whatever the model)."""
        ...

    def asks_for_blobs(self, body: bytes) -> bool:
        """Whether the client asks for reasoning it can send back only as an opaque blob."""
        ...
