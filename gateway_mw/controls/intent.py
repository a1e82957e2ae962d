"""One client's reasoning intent, whatever form it came in, and what is known of the model it goes to."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

import msgspec

__all__ = ["EFFORTS", "Effort", "Intent", "IntentKind", "ModelInfo", "ModelInfoSource"]

IntentKind = Literal["default", "off", "on", "effort", "budget"]
"""``default``: nothing said (nothing changes); ``on``: thinking on at the model's own effort."""
Effort = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
EFFORTS: tuple[Effort, ...] = ("minimal", "low", "medium", "high", "xhigh", "max")
"""The effort ladder, lowest first (``none`` is :attr:`Intent.kind` ``off``)."""


class Intent(msgspec.Struct, frozen=True, gc=False):
    """What a client asks of the model's reasoning, normalised from its API's form."""

    kind: IntentKind = "default"
    effort: Effort | None = None
    """With ``kind == "effort"``."""
    budget: int | None = None
    """With ``kind == "budget"``: at most this many reasoning tokens."""
    exclude: bool = False
    """The client wants no reasoning back in the answer (OpenRouter's ``reasoning.exclude``)."""
    form: str = ""
    """Where it was read (``reasoning_effort``, ``thinking``, ``think``…), for the debug line."""


class ModelInfo(msgspec.Struct, frozen=True, gc=False):
    """What the upstream says of one model, where the server can be asked (Ollama's ``/api/show``,
    the server's version): ``None`` is not known, and the writer takes the value every version accepts."""

    thinking: bool | None = None
    """Whether the model can think (Ollama refuses ``think: true`` to one that cannot)."""
    version: tuple[int, ...] | None = None
    """The server's version, where what it accepts changed (Ollama's ``think`` levels)."""


ModelInfoSource = Callable[[str], Awaitable["ModelInfo | None"]]
"""Given a model's name, what the upstream says of it (asked once per model, cached by the source)."""
