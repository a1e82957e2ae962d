"""The operator's say: the intent for a request that says nothing (``reasoning_control``), and,
pinned, the intent whatever the client says (with two budgets, the smaller: a ceiling)."""

from __future__ import annotations

from functools import lru_cache

from .intent import EFFORTS, Effort, Intent

__all__ = ["decide", "operator_intent"]


@lru_cache(maxsize=64)
def operator_intent(word: str) -> Intent:
    """``reasoning_control``'s word as an intent (form ``operator``): ``default``, ``off``, ``on``, an
    effort, ``budget:N`` (the configuration checked the word)."""
    if word in ("off", "on"):
        return Intent("off" if word == "off" else "on", form="operator")
    if word in EFFORTS:
        effort: Effort = word
        return Intent("effort", effort, form="operator")
    if word.startswith("budget:"):
        return Intent("budget", budget=int(word.removeprefix("budget:")), form="operator")
    return Intent()


def decide(client: Intent, control: str, pinned: bool) -> tuple[Intent, bool]:
    """The intent to write for a client's, under the operator's ``control``; and whether the
    operator's replaced one the client said (then the client's own fields give way)."""
    operator = operator_intent(control)
    if operator.kind == "default":
        return client, False
    if client.kind == "default":
        return _keeping(operator, client), False
    if not pinned or (client.kind, client.effort, client.budget) == (operator.kind, operator.effort, operator.budget):
        return client, False
    if operator.kind == "budget" and client.kind == "budget":
        assert operator.budget is not None and client.budget is not None
        if client.budget <= operator.budget:
            return client, False
    return _keeping(operator, client), True


def _keeping(operator: Intent, client: Intent) -> Intent:
    """The operator's intent, with the client's wish for no reasoning back."""
    if client.exclude:
        return Intent(operator.kind, operator.effort, operator.budget, True, operator.form)
    return operator
