"""What the way back in reads of one surface: :class:`RequestSide`, a part of the surface's
definition (``gateway_mw.surfaces.definition``), which the caller looks up and hands in."""

from __future__ import annotations

from typing import Any, Protocol

from ..controls.fields import ControlFields
from .plan import Form, Plan, Scope
from .recall import Recall, Thread

__all__ = ["Reading", "RequestSide"]


class Reading(Protocol):
    """What every surface's reading of a body says alike."""

    @property
    def reads_late(self) -> bool:
        """Whether the record's entries of an answer may read more of it than it has read so far
        (then a reading kept now is counted again after them)."""
        ...

    @property
    def model(self) -> str | None:
        """The model the body names."""
        ...

    @property
    def controls(self) -> ControlFields:
        """The body's reasoning control fields, read in the same pass."""
        ...

    def texts(self) -> list[Any]:
        """The texts a reasoning control's text switch may end."""
        ...

    def thread(self) -> Thread:
        """The digests of the conversation's prefixes (its record keys' and its answers')."""
        ...

    @property
    def count(self) -> int:
        """How many messages (or items) the body's history holds: with its size, what its reading
        costs (a history of many short turns costs more per byte than one of long tool results)."""
        ...

    def held(self) -> int:
        """The bytes what was decoded of the body holds besides it (a kept reading is counted at its
        body's bytes and these)."""
        ...

    def shared(self, earlier: object) -> int:
        """How many first messages (or items) this body is proven to share with ``earlier``, an
        earlier request's reading (0: none, or another surface's or model's)."""
        ...

    def continued_by(self, body: bytes, most: int | None = None) -> Reading | None:
        """A reading of ``body``, made from this one, when ``body`` holds this one's messages byte for
        byte from its start (an agent's next request): only the rest of it decoded (``None``: it does
        not, the rest is over ``most`` bytes, or the surface reads every body whole)."""
        ...

    def adopt(self, earlier: Any, shared: int) -> None:
        """Take what ``earlier`` learned of the first ``shared`` messages (as :meth:`shared` gave
        it) instead of learning it again: nothing that holds a part of its body."""
        ...


class RequestSide(Protocol):
    """What the way back in reads of one surface's requests (a part of its definition).

    A body is read once (:meth:`read_history`); the other pieces take that reading, whose type is
    the surface's own (``Any`` here: each surface's functions name theirs)."""

    def read_history(self, body: bytes) -> Reading | None:
        """``body`` read as far as the way back in needs, every other value left as its bytes
        (``None``: no history in it — not JSON, no messages…)."""
        ...

    def transform_history(self, read: Any, plan: Plan, recall: Recall) -> bytes | None:
        """The body with its earlier turns' reasoning written as ``plan`` says (``None``: unchanged)."""
        ...

    def history_keys(self, read: Any, turns: int, plan: Plan | None) -> list[str]:
        """The record keys of the latest ``turns`` assistant turns (with ``plan``: only of those
        whose reasoning the transform would take from the record)."""
        ...

    def answer_prefix(self, read: Any) -> bytes | None:
        """The conversation a response to the request (read, or its bytes) follows, as its answers'
        keys begin (``None``: nothing to key them by)."""
        ...

    @property
    def unknown_family(self) -> tuple[Form, Scope]:
        """``auto`` for a model of no known family (:data:`~.plan.UNKNOWN_FAMILY`, unless its server
        reads reasoning whatever the model)."""
        ...

    def asks_for_blobs(self, read: Any | None, body: bytes) -> bool:
        """Whether the client asks for reasoning it can send back only as an opaque blob."""
        ...
