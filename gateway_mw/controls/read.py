"""Reading: every form in which a client says what it wants of the model's thinking
(:mod:`.forms`), normalised to one :class:`~.intent.Intent`, the surface's own form first (its
definition's ``controls``). A value of the wrong type or an unknown word says nothing (the intent
stays ``default``, and the body goes on as it came, for the server to answer as it would)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from .fields import ControlFields
from .forms import decoded
from .intent import Intent
from .side import ControlSide
from .text import read_with_texts, text_switch

__all__ = ["Texts", "read_intent"]


_DEFAULT = Intent()


def _excluded(fields: ControlFields) -> bool:
    value = decoded(fields.reasoning)
    return isinstance(value, dict) and value.get("exclude") is True


Texts = Iterable[Any] | Callable[[], Iterable[Any] | None] | None
"""The texts a text switch may end, or what gives them when asked (only when no field says anything)."""


def read_intent(body: bytes, surface: ControlSide, fields: ControlFields | None = None, texts: Texts = None) -> Intent:
    """What the client of ``body`` (a request on ``surface``) asks of the model's thinking.

    ``fields``: the body's control fields, and ``texts``: the latest user message and the system
    prompt (raw or read, latest first), or what gives them, when a reader of the body has them
    already; what is not handed in is read here, in one pass."""
    if fields is None:
        both = read_with_texts(body, surface.controls)
        if both is None:
            return _DEFAULT
        fields, texts = both[0], both[1] if texts is None else texts
    intent = None
    if fields.speaks:
        intent = next((said for read in surface.controls.forms if (said := read(fields)) is not None), None)
    if intent is None:
        if callable(texts):
            texts = texts()
        if texts is None:  # read only when no field said anything
            both = read_with_texts(body, surface.controls)
            texts = () if both is None else both[1]
        intent = text_switch(texts) or _DEFAULT
    if fields.reasoning and _excluded(fields):
        intent = msgspec.structs.replace(intent, exclude=True)
    return intent
