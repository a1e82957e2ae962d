"""Ollama's endpoints: ``think`` on ``/api/chat`` and ``/api/generate`` (a switch or a level, refused
as ``true`` or a level to a model that cannot think), an effort on its ``/v1`` chat and Responses,
``thinking`` or ``output_config.effort`` on its ``/v1/messages``; what each version takes."""

from __future__ import annotations

import msgspec

from .intent import Effort, IntentKind
from .out import Out, nearest_effort
from .switches import HARMONY, Writer, bucket, harmony_level, no_switch

__all__ = ["ollama_asks", "ollama_messages", "ollama_messages_asks", "ollama_native", "ollama_openai"]

_OLLAMA_LEVELS = (0, 17, 7)
"""From this version, ``think`` takes a level for every model (before, gpt-oss's alone)."""
_OLLAMA_MAX = (0, 22)
"""From this version, ``think`` takes ``max``."""


def _ollama_levels(out: Out, switch: str, unknown: tuple[Effort, ...] | None) -> tuple[Effort, ...] | None:
    """The levels Ollama takes for this model (``None``: none but a switch); ``unknown``: those
    taken for granted when its version is not known."""
    version = out.info.version
    if switch == "effort":
        return HARMONY  # gpt-oss: Ollama maps max to high itself, not every version
    if version is None:
        return unknown
    if version < _OLLAMA_LEVELS:
        return None
    return ("low", "medium", "high", "max") if version >= _OLLAMA_MAX else HARMONY


def ollama_asks(kind: IntentKind, switch: str) -> bool:
    """Whether what is written for an intent of ``kind`` depends on what Ollama says of the model
    (whether it can think, its version): every intent but off and the model's own way."""
    return kind in ("on", "effort", "budget")


def ollama_messages_asks(kind: IntentKind, switch: str) -> bool:
    """The same on its ``/v1/messages``: only gpt-oss's level there depends on the version."""
    return switch == "effort" and kind in ("off", "effort", "budget")


def ollama_native(out: Out, switch: str) -> None:
    """``/api/chat`` and ``/api/generate``: ``think``, a switch or a level; ``true`` or a level to a
    model that cannot think is refused, and ``false`` does not stop gpt-oss."""
    intent = out.intent
    capable = out.info.thinking
    if intent.kind == "off":
        if switch == "effort" and capable is False:
            out.unsupported()  # a level to a model that cannot think is refused; false is harmless
        elif switch == "effort":
            out.put("think", "low")
            out.nearest()
        elif switch in ("always", "text"):
            no_switch(out, switch)
        elif switch != "none" or out.current("think") is not None:
            out.put("think", False)
        return
    if capable is False or switch == "none":
        out.remove("think", "removed (the model cannot think)")
        out.unsupported()
        return
    levels = _ollama_levels(out, switch, None)
    wanted: Effort | None = intent.effort
    if intent.kind == "budget" and switch == "effort":
        assert intent.budget is not None
        wanted = bucket(intent.budget)
    if intent.kind == "budget" and switch != "effort" and out.current("messages") is not None:
        assert intent.budget is not None
        out.budget(None, intent.budget)  # no field of Ollama's: the gateway's, on /api/chat
    elif intent.kind == "budget" or (intent.kind == "effort" and levels is None):
        out.nearest()  # Ollama has no budget (/api/generate cannot be continued); a level it does not take is on
    if wanted is not None and levels is not None:
        level = nearest_effort(wanted, levels)
        if level != intent.effort:
            out.nearest()
        if capable is None and switch != "effort" and intent.form != "think":
            out.nearest()  # a level to a model not known to think would be refused: not written
            return
        out.put("think", level)
    elif capable is True or switch == "effort":
        out.put("think", True)
    elif intent.form == "think":
        out.nearest()  # the client's own true: kept
    else:
        out.nearest()  # thinking-capable models think by default: nothing that may be refused


def ollama_openai(effort_field: tuple[str, ...]) -> Writer:
    """Ollama's ``/v1/chat/completions`` and ``/v1/responses``: an effort (``none`` is off), read from
    ``reasoning.effort`` when the body has a ``reasoning`` object, else from ``reasoning_effort``; no
    budget, but the gateway's where it continues (a thinking-capable model thinks by default)."""

    def write(out: Out, switch: str) -> None:
        intent = out.intent
        has_object = out.current("reasoning") not in (None, msgspec.Raw(b"null"))
        at = ("reasoning", "effort") if has_object else effort_field
        effort: str
        if intent.kind == "off":
            if switch == "effort" and out.info.thinking is False:
                out.unsupported()  # a level to a model that cannot think is refused; none is harmless
                return
            if switch == "effort":
                effort = "low"
                out.nearest()
            elif switch in ("always", "text"):
                no_switch(out, switch)
                return
            elif switch == "none":
                return
            else:
                effort = "none"
        elif intent.kind == "on":
            if out.info.thinking is False or switch == "none":
                out.unsupported()
            return  # thinking-capable models think by default; /v1 has no "on" but a level
        elif intent.kind == "budget" and switch != "effort":
            assert intent.budget is not None
            if out.info.thinking is False or switch == "none":
                out.unsupported()
            else:  # no field of Ollama's: the gateway's where it continues (chat), else thinking on
                out.budget(None, intent.budget)
            return
        else:
            wanted = intent.effort if intent.effort is not None else bucket(intent.budget or 0)
            levels = _ollama_levels(out, switch, HARMONY)
            # The client's own level, where Ollama reads it ("none" turns thinking off on every version,
            # and an empty one says nothing: neither is a level to replace or to drop).
            own = out.value_at(at) not in (None, "none", "")
            if out.info.thinking is False or switch == "none" or levels is None:
                out.unsupported()
                if own:  # refused as it came: dropped
                    out.remove_at(at, "removed (refused for this model)")
                return
            if out.info.thinking is None and switch != "effort" and not own:
                out.nearest()  # a level to a model not known to think would be refused: not written
                return
            effort = nearest_effort(wanted, levels)
            if effort != intent.effort:
                out.nearest()
        if len(at) == 1:
            out.put(at[0], effort)
        elif not out.put_in(at[0], {at[1]: effort}):
            out.unsupported()

    return write


_OLLAMA_OUTPUT_CONFIG = (0, 23, 4)
"""From this version, ``/v1/messages`` reads ``output_config.effort``."""


def ollama_messages(out: Out, switch: str) -> None:
    """Ollama's ``/v1/messages``: ``thinking`` enabled or disabled (a budget ignored; ``true`` to a
    model that cannot think dropped, not refused), else ``output_config.effort``."""
    intent = out.intent
    if switch == "effort" and intent.kind != "on":
        _ollama_messages_harmony(out)
    elif intent.kind == "off":
        if switch in ("always", "text"):
            no_switch(out, switch)
        elif switch != "none" and not out.put_in("thinking", {"type": "disabled"}):
            out.unsupported()
    elif switch == "none":
        out.unsupported()
    elif intent.kind == "effort":
        assert intent.effort is not None
        effort = nearest_effort(intent.effort, ("low", "medium", "high", "xhigh", "max"))  # xhigh: Ollama's high
        if effort != intent.effort:
            out.nearest()
        if not out.put_in("output_config", {"effort": effort}):
            out.unsupported()
    elif intent.kind == "budget":
        out.nearest()  # no budget: thinking on
        if intent.form != "thinking":
            out.put("thinking", {"type": "enabled"})
    elif intent.form != "thinking" and switch not in ("always", "effort"):
        out.put("thinking", {"type": "enabled"})


def _ollama_messages_harmony(out: Out) -> None:
    """gpt-oss on Ollama's ``/v1/messages``: harmony reads a level, never the bool ``thinking`` makes,
    and ``output_config.effort`` is read only when ``thinking`` says nothing: the client's
    ``thinking`` gives way to the level. A version known to read no ``output_config`` gets nothing
    (what the client sent changes nothing either); one not known is taken to read it (a version
    that does not ignores the member, and the model thinks at its default, as with a bool)."""
    version = out.info.version
    if version is not None and version < _OLLAMA_OUTPUT_CONFIG:
        out.unsupported()
        return
    level = harmony_level(out)
    if not out.put_in("output_config", {"effort": level}):
        out.unsupported()
        return
    thinking = out.value_at(("thinking",))
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled"):
        out.remove("thinking", "removed (gpt-oss reads the level, not the switch)")
