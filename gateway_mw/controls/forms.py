"""The forms in which a client says what it wants of the model's thinking, each read into one
:class:`~.intent.Intent` (``None``: the form says nothing). A surface names its own, read before the
others (:class:`~.side.SurfaceControls`).

A value of the wrong type or an unknown word says nothing (the intent stays ``default``, and the
body goes on as it came, for the server to answer as it would).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from .fields import ControlFields
from .intent import EFFORTS, Effort, Intent

__all__ = [
    "FORMS",
    "Form",
    "chat_template_kwargs",
    "decoded",
    "reasoning",
    "reasoning_effort",
    "think",
    "thinking",
]

Form = Callable[[ControlFields], "Intent | None"]
"""A reader of one form: what the body's control fields say in it, or ``None``."""

_decode_any = msgspec.json.Decoder().decode


def decoded(raw: msgspec.Raw) -> Any:
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


def reasoning_effort(fields: ControlFields) -> Intent | None:
    """OpenAI's ``reasoning_effort`` (chat completions)."""
    return _effort(decoded(fields.reasoning_effort), "reasoning_effort")


def reasoning(fields: ControlFields) -> Intent | None:
    """OpenRouter's ``reasoning`` (chat) and Responses' (``effort`` alone there)."""
    said = decoded(fields.reasoning)
    if not isinstance(said, dict):
        return None
    if said.get("enabled") is False:
        return Intent("off", form="reasoning")
    effort = _effort(said.get("effort"), "reasoning")
    if effort is not None:
        return effort
    budget = _count(said.get("max_tokens"))
    if budget is not None:
        return Intent("budget", budget=budget, form="reasoning")
    if said.get("enabled") is True:
        return Intent("on", form="reasoning")
    return None


def thinking(fields: ControlFields) -> Intent | None:
    """Anthropic's ``thinking``, and ``output_config.effort`` where thinking is not disabled."""
    said = decoded(fields.thinking)
    kind = said.get("type") if isinstance(said, dict) else None
    if kind == "disabled":
        return Intent("off", form="thinking")
    if kind == "enabled":
        if "budget_tokens" not in said:
            return Intent("on", form="thinking")
        budget = _count(said["budget_tokens"])
        return None if budget is None else Intent("budget", budget=budget, form="thinking")
    config = decoded(fields.output_config)
    effort = config.get("effort") if isinstance(config, dict) else None
    if effort in EFFORTS:
        return Intent("effort", effort, form="output_config")
    return None  # adaptive, or nothing: the model's own way


def think(fields: ControlFields) -> Intent | None:
    """Ollama's ``think``: a switch or a level."""
    said = decoded(fields.think)
    if said is True:
        return Intent("on", form="think")
    if said is False:
        return Intent("off", form="think")
    if said in ("low", "medium", "high", "max"):
        effort: Effort = said
        return Intent("effort", effort, form="think")
    return None


def chat_template_kwargs(fields: ControlFields) -> Intent | None:
    """The server's own form, the template's switch in ``chat_template_kwargs``."""
    said = decoded(fields.chat_template_kwargs)
    if not isinstance(said, dict):
        return None
    switch = said.get("enable_thinking", said.get("thinking"))
    if switch is False:
        return Intent("off", form="chat_template_kwargs")
    if switch is True:
        return Intent("on", form="chat_template_kwargs")
    return None


FORMS: tuple[Form, ...] = (reasoning_effort, reasoning, thinking, think, chat_template_kwargs)
"""Every form, in the order they are read after the surface's own (the first that says something wins)."""
