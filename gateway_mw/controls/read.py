"""Reading: every form in which a client says what it wants of the model's thinking, normalised to
one :class:`~.intent.Intent`. A value of the wrong type or an unknown word says nothing (the intent
stays ``default``, and the body goes on as it came, for the server to answer as it would)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from ..config import Surface
from .fields import ControlFields
from .intent import EFFORTS, Effort, Intent
from .text import read_with_texts, text_switch

__all__ = ["read_intent"]


_DEFAULT = Intent()

_decode_any = msgspec.json.Decoder().decode


def _value(raw: msgspec.Raw) -> Any:
    """A raw value decoded (``None`` when absent or unreadable: no form takes ``null``)."""
    if not raw:
        return None
    try:
        return _decode_any(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


_MOST_TOKENS = 2**31 - 1
"""The largest count every server's integer holds (llama.cpp's is 32 bits; one past vLLM's 64 fails
its engine's encoder): a larger budget is no limit either way, and is written as this one."""


def _count(value: Any) -> int | None:
    """A token count as the servers take one: a non-negative JSON integer (not a bool)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return min(value, _MOST_TOKENS)
    return None


def _effort(word: Any, form: str) -> Intent | None:
    if word == "none":
        return Intent("off", form=form)
    if word in EFFORTS:
        effort: Effort = word
        return Intent("effort", effort, form=form)
    return None


def _reasoning_effort(fields: ControlFields) -> Intent | None:
    return _effort(_value(fields.reasoning_effort), "reasoning_effort")


def _reasoning(fields: ControlFields) -> Intent | None:
    """OpenRouter's ``reasoning`` (chat) and Responses' (``effort`` alone there)."""
    value = _value(fields.reasoning)
    if not isinstance(value, dict):
        return None
    if value.get("enabled") is False:
        return Intent("off", form="reasoning")
    said = _effort(value.get("effort"), "reasoning")
    if said is not None:
        return said
    budget = _count(value.get("max_tokens"))
    if budget is not None:
        return Intent("budget", budget=budget, form="reasoning")
    if value.get("enabled") is True:
        return Intent("on", form="reasoning")
    return None


def _thinking(fields: ControlFields) -> Intent | None:
    """Anthropic's ``thinking``, and ``output_config.effort`` where thinking is not disabled."""
    value = _value(fields.thinking)
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "disabled":
        return Intent("off", form="thinking")
    if kind == "enabled":
        if "budget_tokens" not in value:
            return Intent("on", form="thinking")
        budget = _count(value["budget_tokens"])
        return None if budget is None else Intent("budget", budget=budget, form="thinking")
    config = _value(fields.output_config)
    effort = config.get("effort") if isinstance(config, dict) else None
    if effort in EFFORTS:
        return Intent("effort", effort, form="output_config")
    return None  # adaptive, or nothing: the model's own way


def _think(fields: ControlFields) -> Intent | None:
    """Ollama's ``think``: a switch or a level."""
    value = _value(fields.think)
    if value is True:
        return Intent("on", form="think")
    if value is False:
        return Intent("off", form="think")
    if value in ("low", "medium", "high", "max"):
        effort: Effort = value
        return Intent("effort", effort, form="think")
    return None


def _template_kwargs(fields: ControlFields) -> Intent | None:
    """The server's own form, the template's switch in ``chat_template_kwargs``."""
    value = _value(fields.chat_template_kwargs)
    if not isinstance(value, dict):
        return None
    switch = value.get("enable_thinking", value.get("thinking"))
    if switch is False:
        return Intent("off", form="chat_template_kwargs")
    if switch is True:
        return Intent("on", form="chat_template_kwargs")
    return None


_Reader = Callable[[ControlFields], "Intent | None"]
_OTHERS: tuple[_Reader, ...] = (_reasoning_effort, _reasoning, _thinking, _think, _template_kwargs)
_FIRST: dict[Surface, _Reader] = {
    "chat": _reasoning_effort,
    "messages": _thinking,
    "responses": _reasoning,
    "ollama": _think,
}
_ORDER: dict[Surface, tuple[_Reader, ...]] = {
    surface: (first, *(r for r in _OTHERS if r is not first)) for surface, first in _FIRST.items()
}
"""The surface's own form first, then the others."""


def _excluded(fields: ControlFields) -> bool:
    value = _value(fields.reasoning)
    return isinstance(value, dict) and value.get("exclude") is True


def read_intent(
    body: bytes, surface: Surface, fields: ControlFields | None = None, texts: Iterable[Any] | None = None
) -> Intent:
    """What the client of ``body`` (a request on ``surface``) asks of the model's thinking.

    ``fields``: the body's control fields, and ``texts``: the latest user message and the system
    prompt (raw or read, latest first), when a reader of the body has them already; what is not
    handed in is read here, in one pass."""
    if fields is None:
        both = read_with_texts(body)
        if both is None:
            return _DEFAULT
        fields, texts = both[0], both[1] if texts is None else texts
    intent = next((said for read in _ORDER[surface] if (said := read(fields)) is not None), None)
    if intent is None:
        if texts is None:  # read only when no field said anything
            both = read_with_texts(body)
            texts = () if both is None else both[1]
        intent = text_switch(texts) or _DEFAULT
    if _excluded(fields):
        intent = msgspec.structs.replace(intent, exclude=True)
    return intent
