"""What the writers of every server share: the effort ladders, gpt-oss's level, and the model's
template switch in ``chat_template_kwargs``."""

from __future__ import annotations

from collections.abc import Callable

from .intent import Effort
from .out import Out, nearest_effort

__all__ = ["ALL", "HARMONY", "TEMPLATE_KEYS", "Writer", "bucket", "harmony_level", "no_switch", "put_switch"]

Writer = Callable[[Out, str], None]
"""Writes ``out.intent`` for a model whose template reads the given ``template_switch``."""

ALL: tuple[Effort, ...] = ("minimal", "low", "medium", "high", "xhigh", "max")
HARMONY: tuple[Effort, ...] = ("low", "medium", "high")
"""gpt-oss's levels (it cannot be turned off)."""
TEMPLATE_KEYS = {
    "enable_thinking": ("enable_thinking",),
    "thinking": ("thinking",),
    "both": ("enable_thinking", "thinking"),
}
"""The ``chat_template_kwargs`` keys of each template switch that has them."""


def bucket(budget: int) -> Effort:
    """A budget as gpt-oss's level: what a model that takes no budget can be given of one."""
    return "low" if budget < 2048 else "medium" if budget < 8192 else "high"


def harmony_level(out: Out, budget_enforced: bool = False) -> Effort:
    """gpt-oss's level for the intent (it cannot be off: ``low``; a budget: its bucket), saying when
    it is the nearest rather than the intent itself (``budget_enforced``: the budget goes to the
    server too, so the intent reaches the model as asked)."""
    intent = out.intent
    if intent.kind == "effort":
        assert intent.effort is not None
        level = nearest_effort(intent.effort, HARMONY)
        if level != intent.effort:
            out.nearest()
        return level
    if intent.budget is None:
        out.nearest()
        return "low"
    if not budget_enforced:
        out.nearest()
    return bucket(intent.budget)


def put_switch(out: Out, switch: str, on: bool) -> bool:
    """The template's own switch in ``chat_template_kwargs`` (``thinking_budget: 0`` for a budget
    template); ``False`` when the template has none there."""
    if switch in TEMPLATE_KEYS:
        out.template_kwargs(dict.fromkeys(TEMPLATE_KEYS[switch], on))
        return True
    if switch == "budget":
        if not on:
            out.template_kwargs({"thinking_budget": 0})
        return True
    return False


def no_switch(out: Out, switch: str) -> None:
    """Off or on for a template that reads no switch this server carries: a model that never
    thinks is off already; one that always does is on already; the text switch is the client's
    own when it wrote it."""
    kind = out.intent.kind
    if switch == "none":
        if kind != "off":
            out.unsupported()
    elif switch == "text":
        if out.intent.form != "text":
            out.unsupported()
    elif kind == "off":
        out.unsupported()  # always thinks (or gpt-oss, which a caller handled): no way to stop it
