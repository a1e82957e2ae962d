"""What becomes of the reasoning of earlier assistant turns: the form, the turns that keep it, and the
places the upstream's server reads it from. Pure data, decided once per request."""

from __future__ import annotations

from typing import Literal, NamedTuple

from ..config import ThinkExtractConfig
from ..families import family_for

__all__ = ["CHAT_FIELDS", "UNKNOWN_FAMILY", "Form", "Plan", "Scope", "Server", "plan_for"]

Form = Literal["pass", "field", "inline", "strip"]
Scope = Literal["all", "current_turn", "tool_turns"]
Server = Literal["vllm", "sglang", "llamacpp", "ollama", "openai", "anthropic", "generic"]

CHAT_FIELDS: dict[Server, tuple[str, ...]] = {
    "vllm": ("reasoning",),  # vLLM ≥ 0.16 reads only `reasoning` (an incoming reasoning_content is dropped)
    "sglang": ("reasoning_content",),
    "llamacpp": ("reasoning_content",),
    "ollama": ("reasoning",),
    "openai": (),  # OpenAI's own models take no reasoning back in chat: none is sent
    "anthropic": ("reasoning_content", "reasoning"),  # not a chat server: as generic
    "generic": ("reasoning_content", "reasoning"),  # each server reads one and ignores the other
}
"""Where each server's chat completions endpoint reads an assistant turn's reasoning."""


class Plan(NamedTuple):
    """The decision for one request."""

    form: Form
    scope: Scope
    server: Server
    config: ThinkExtractConfig
    """The settings resolved for the request's model: its tag pairs write the ``inline`` form."""

    @property
    def harmony(self) -> bool:
        """gpt-oss: its template rejects a tool-call turn that carries both content and reasoning."""
        return self.config.protocol == "harmony"


UNKNOWN_FAMILY: tuple[Form, Scope] = ("inline", "all")
"""``auto`` for a model of no known family: what a client sends without a gateway."""


def plan_for(
    config: ThinkExtractConfig, model: str | None, server: Server, unknown: tuple[Form, Scope] = UNKNOWN_FAMILY
) -> Plan:
    """The plan for a request to ``model``: its profile's or family's form and scope, or the
    global ones (``auto`` is the family's, ``unknown`` for a model of no known family: the
    surface's, where its server reads reasoning whatever the model)."""
    resolved = config.for_model(model)
    form, scope = resolved.history_reasoning, resolved.history_scope
    family = family_for(model) if model is not None and resolved.families else None
    default_form, default_scope = family.history if family is not None else unknown
    if form == "auto":
        form = default_form  # type: ignore[assignment]
        if scope == "auto":
            scope = default_scope  # type: ignore[assignment]
    if scope == "auto":
        scope = "all"
    if not resolved.enabled:
        form = "pass"
    return Plan(form, scope, server, resolved)  # type: ignore[arg-type]
