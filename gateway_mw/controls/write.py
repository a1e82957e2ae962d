"""Writing: an intent made into top-level edits of the body, in the fields the upstream's server
reads on the request's surface, with the values the model's chat template reads (its
``template_switch``), never a value the server refuses.

One writer per server and surface (:data:`WRITERS`); each says, through :class:`~.out.Out`, what
it wrote and whether the intent reached the model as asked (``applied``), as the nearest the server
and the model accept (``nearest``), or not at all (``unsupported``). A server the gateway does not
know (``generic``, ``openai``, ``anthropic``) gets nothing: unknown fields may be refused there.
vLLM's, SGLang's and llama.cpp's writers are here, Ollama's in :mod:`.ollama`, and what they all
share in :mod:`.switches`.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ..config import Surface, ThinkExtractConfig
from .continuation import enforcers
from .fields import ControlFields
from .intent import Effort, Intent, IntentKind, ModelInfo
from .ollama import ollama_asks, ollama_messages, ollama_messages_asks, ollama_native, ollama_openai
from .operator import decide
from .out import Out, Outcome, nearest_effort, token_count
from .side import ControlSide
from .switches import ALL, HARMONY, TEMPLATE_KEYS, Writer, bucket, harmony_level, no_switch, put_switch

__all__ = ["ASKS_MODEL", "WRITERS", "Controlled", "needs_model_info", "write_controls"]


class Controlled(msgspec.Struct, frozen=True, gc=False):
    """What the gateway did with one request's reasoning control."""

    intent: Intent
    """The intent written: the client's, or the operator's (form ``operator``)."""
    outcome: Outcome
    written: str = ""
    """What was written, for the debug line (``chat_template_kwargs.enable_thinking=false``)."""
    edits: dict[str, bytes | None] = {}
    """Top-level members to write, as JSON bytes (``None``: removed); empty when nothing changes."""
    appends: bool = False
    """Every edit adds a member the body does not have (:func:`~.edit.apply_edits` then copies the
    body once, with no decode)."""
    by_gateway: bool = False
    """The budget (``intent.budget``) is the gateway's to enforce: it ends the thinking itself."""
    stream: bool = True
    """The client asked for a stream (with :attr:`by_gateway` only)."""


# -- chat completions and Responses of the servers that pass chat_template_kwargs ---------------


def _template_server(
    effort_at: tuple[str, ...],
    budget_field: str | None,
    off_by_effort: bool,
    *,
    harmony_kwarg: bool = False,
    harmony_budget: bool = False,
    harmony_object: bool = False,
) -> Writer:
    """A writer for vLLM's, SGLang's and llama.cpp's chat endpoints (llama.cpp's Responses too): the
    switch in ``chat_template_kwargs``, the effort at ``effort_at`` (a top-level member, or a key of
    one), the server's own budget field, if it enforces one; ``off_by_effort``: ``none`` turns the
    template's switch off too (llama.cpp). For gpt-oss, whose template reads the level as its
    ``reasoning_effort`` variable: ``harmony_kwarg``, the level in ``chat_template_kwargs`` too (builds
    that read no top-level effort); ``harmony_budget``, the budget field is enforced on its analysis
    channel as well; ``harmony_object``, the server takes a ``reasoning.effort`` the body has over
    ``reasoning_effort`` (SGLang), so it is made the same level."""

    def put_effort(out: Out, effort: str) -> None:
        if len(effort_at) == 1:
            out.put(effort_at[0], effort)
        elif not out.put_in(effort_at[0], {effort_at[1]: effort}):
            out.unsupported()

    def harmony(out: Out) -> None:
        budget = out.intent.budget if harmony_budget and budget_field is not None else None
        level = harmony_level(out, budget_enforced=budget is not None)
        put_effort(out, level)
        if harmony_object and out.value_at(("reasoning", "effort")) not in (None, level):
            out.put_in("reasoning", {"effort": level})
        if harmony_kwarg:
            out.template_kwargs({"reasoning_effort": level})
        if budget is not None and budget_field is not None:
            out.put(budget_field, budget)

    def write(out: Out, switch: str) -> None:
        intent = out.intent
        if switch == "none" and intent.kind != "off":
            out.unsupported()
            return
        if switch == "effort":  # gpt-oss: every intent but "on" (its default) is a level
            if intent.kind != "on":
                harmony(out)
        elif intent.kind == "effort":
            assert intent.effort is not None
            effort = nearest_effort(intent.effort, ALL)
            if effort != intent.effort:
                out.nearest()
            put_effort(out, effort)
            if switch in TEMPLATE_KEYS:  # an effort is thinking on (a template that reads no effort still thinks)
                put_switch(out, switch, True)
        elif intent.kind == "off":
            if off_by_effort and switch in TEMPLATE_KEYS:
                put_effort(out, "none")
            if not put_switch(out, switch, False):
                if switch == "always" and budget_field is not None:
                    out.put(budget_field, 0)
                    out.nearest()
                else:
                    no_switch(out, switch)
        elif intent.kind == "on":
            if not put_switch(out, switch, True):
                no_switch(out, switch)
        elif intent.kind == "budget":
            assert intent.budget is not None
            put_switch(out, switch, True)
            if switch == "budget":
                out.template_kwargs({"thinking_budget": intent.budget})
            out.budget(budget_field, intent.budget)

    return write


# -- vLLM: /v1/messages ignores ``thinking``; /v1/responses reads only ``reasoning.effort`` -------


def _vllm_messages(out: Out, switch: str) -> None:
    """vLLM's messages endpoint reads ``output_config.effort`` (low…max) and ``chat_template_kwargs``."""
    intent = out.intent
    ladder: tuple[Effort, ...] = HARMONY if switch == "effort" else ("low", "medium", "high", "xhigh", "max")
    if intent.kind == "effort" or (switch == "effort" and intent.kind in ("off", "budget")):
        if intent.kind == "effort":
            assert intent.effort is not None
            effort = nearest_effort(intent.effort, ladder)
        else:
            effort = bucket(intent.budget) if intent.budget is not None else "low"
        if effort != intent.effort:
            out.nearest()
        if not out.put_in("output_config", {"effort": effort}):
            out.unsupported()
        if switch in TEMPLATE_KEYS:
            put_switch(out, switch, True)
        return
    if switch == "none" and intent.kind != "off":
        out.unsupported()
    elif intent.kind in ("off", "on"):
        if not put_switch(out, switch, intent.kind == "on"):
            no_switch(out, switch)
    elif intent.kind == "budget":
        assert intent.budget is not None
        put_switch(out, switch, True)
        if switch == "budget":
            out.template_kwargs({"thinking_budget": intent.budget})
        else:
            out.nearest()  # on; no budget on this endpoint


def _effort_only(ladder: tuple[Effort, ...], off: str | None) -> Writer:
    """An endpoint that reads only ``reasoning.effort`` (vLLM's and SGLang's Responses): ``off``, the
    word it takes for off where it turns a model off by it (else off is beyond it)."""

    def write(out: Out, switch: str) -> None:
        intent = out.intent
        if switch == "none":
            if intent.kind != "off":
                out.unsupported()
            return
        effort: str
        if intent.kind == "effort":
            assert intent.effort is not None
            effort = nearest_effort(intent.effort, HARMONY if switch == "effort" else ladder)
            if effort != intent.effort:
                out.nearest()
        elif switch == "effort" and intent.kind in ("off", "budget"):
            effort = "low" if intent.budget is None else bucket(intent.budget)
            out.nearest()
        elif intent.kind == "off" and off is not None:
            effort = off
        elif intent.kind == "on" and switch in ("always", "budget"):
            return  # thinks by default
        elif intent.kind == "budget" and switch != "none":
            assert intent.budget is not None
            out.budget(None, intent.budget)  # no field of the server's: the gateway's, where it continues
            return
        else:
            out.unsupported()
            return
        if not out.put_in("reasoning", {"effort": effort}):
            out.unsupported()

    return write


# -- llama.cpp: /v1/messages keeps only chat_template_kwargs of the client's own fields ----------


def _llamacpp_messages(out: Out, switch: str) -> None:
    """llama.cpp's messages endpoint turns ``thinking.enabled`` into its budget, maps ``disabled`` to
    nothing and drops every top-level field but a few (``chat_template_kwargs`` stays)."""
    intent = out.intent
    if switch == "none" and intent.kind != "off":
        out.unsupported()
    elif intent.kind == "effort" or (switch == "effort" and intent.kind in ("off", "budget")):
        if intent.kind == "effort":
            assert intent.effort is not None
            effort = nearest_effort(intent.effort, HARMONY if switch == "effort" else ALL)
        else:
            effort = "low" if intent.budget is None else bucket(intent.budget)
        if effort != intent.effort:
            out.nearest()
        out.template_kwargs({"reasoning_effort": effort})  # the template's own variable
        if switch in TEMPLATE_KEYS:
            put_switch(out, switch, True)
    elif intent.kind == "off":
        if not put_switch(out, switch, False):
            if switch == "always":
                out.put("thinking", {"type": "enabled", "budget_tokens": 0})
                out.nearest()
            else:
                no_switch(out, switch)
    elif intent.kind == "on":
        if not put_switch(out, switch, True):
            no_switch(out, switch)
    elif intent.kind == "budget":
        assert intent.budget is not None
        put_switch(out, switch, True)
        if switch == "budget":
            out.template_kwargs({"thinking_budget": intent.budget})
        if out.server_budget:
            out.put("thinking", {"type": "enabled", "budget_tokens": intent.budget})
        else:  # the client's budget_tokens is llama.cpp's budget: it would cut first
            out.remove("thinking")
            out.budget(None, intent.budget)


# -- SGLang: /v1/messages reads ``thinking`` and ``output_config.effort`` ------------------------


def _sglang_messages(out: Out, switch: str) -> None:
    """SGLang's messages endpoint turns ``thinking`` into the template's switch (a budget accepted,
    not enforced) and then ``output_config.effort`` into its ``reasoning_effort``, the variable
    gpt-oss's template reads its level from (the client's ``thinking`` stays: that template reads
    no switch)."""
    intent = out.intent
    if switch == "effort" and intent.kind != "on":
        if not out.put_in("output_config", {"effort": harmony_level(out)}):
            out.unsupported()
    elif switch == "none" and intent.kind != "off":
        out.unsupported()
    elif switch in ("none", "effort") or (switch in ("always", "text") and intent.kind in ("off", "on")):
        no_switch(out, switch)
    elif intent.kind == "off":
        out.put("thinking", {"type": "disabled"})
    elif intent.kind == "on":
        if intent.form != "thinking":
            out.put("thinking", {"type": "enabled"})
    elif intent.kind == "effort":
        assert intent.effort is not None
        effort = nearest_effort(intent.effort, ("low", "medium", "high", "xhigh", "max"))
        if effort != intent.effort:
            out.nearest()
        if not out.put_in("output_config", {"effort": effort}):
            out.unsupported()
        elif switch in TEMPLATE_KEYS and out.current("thinking") is None:
            # An effort is thinking on, which SGLang does not derive from it (it sets the effort after
            # the switch): a family off by default (DeepSeek V3.1) would not think.
            out.put("thinking", {"type": "enabled"})
    else:
        assert intent.budget is not None
        out.nearest()  # accepted, not enforced
        if intent.form != "thinking":
            out.put("thinking", {"type": "enabled", "budget_tokens": intent.budget})


WRITERS: dict[tuple[str, Surface], Writer] = {
    ("vllm", "chat"): _template_server(("reasoning_effort",), "thinking_token_budget", off_by_effort=False),
    ("vllm", "messages"): _vllm_messages,
    ("vllm", "responses"): _effort_only(("minimal", "low", "medium", "high", "xhigh"), off=None),
    ("sglang", "chat"): _template_server(("reasoning_effort",), None, off_by_effort=False, harmony_object=True),
    ("sglang", "messages"): _sglang_messages,
    ("sglang", "responses"): _effort_only(HARMONY, off=None),
    ("llamacpp", "chat"): _template_server(
        ("reasoning_effort",), "thinking_budget_tokens", off_by_effort=True, harmony_kwarg=True, harmony_budget=True
    ),
    ("llamacpp", "messages"): _llamacpp_messages,
    ("llamacpp", "responses"): _template_server(
        ("reasoning", "effort"), "thinking_budget_tokens", off_by_effort=True, harmony_kwarg=True, harmony_budget=True
    ),
    ("ollama", "chat"): ollama_openai(("reasoning_effort",)),
    ("ollama", "messages"): ollama_messages,
    ("ollama", "responses"): ollama_openai(("reasoning", "effort")),
    ("ollama", "ollama"): ollama_native,
}
"""Each server's endpoints, by the surface of the request: what they read, and how."""

ASKS_MODEL: dict[tuple[str, Surface], Callable[[IntentKind, str], bool]] = {
    ("ollama", "chat"): ollama_asks,
    ("ollama", "messages"): ollama_messages_asks,
    ("ollama", "responses"): ollama_asks,
    ("ollama", "ollama"): ollama_asks,
}
"""The endpoints whose writer's edits, for an intent's kind and the model's ``template_switch``,
depend on what the upstream says of the model."""


def _effective(intent: Intent, config: ThinkExtractConfig, own_budget: bool = False) -> tuple[Intent, bool]:
    """The intent to write, and whether the operator's replaced the client's (:func:`.operator.decide`).
    ``own_budget``: the client set the server's own budget field, and so said a budget, which the
    operator's default (for a request that says nothing) leaves as it came."""
    if not config.reasoning_controls:
        return Intent(), False
    if own_budget and intent.kind == "default" and not config.reasoning_control_pinned:
        return intent, False
    return decide(intent, config.reasoning_control, config.reasoning_control_pinned)


_SERVER_BUDGETS = {"vllm": "thinking_token_budget", "llamacpp": "thinking_budget_tokens"}
"""The budget field each server reads of a request, of its own."""


def _said_own_budget(fields: ControlFields, server: str) -> bool:
    name = _SERVER_BUDGETS.get(server)
    raw = getattr(fields, name) if name is not None else None
    return bool(raw) and token_count(raw) is not None  # (absent: empty, nothing to decode)


def needs_model_info(intent: Intent, surface: ControlSide, server: str, config: ThinkExtractConfig) -> bool:
    """Whether what is written for ``intent`` depends on what the upstream says of the model
    (Ollama: whether it can think, its version), so that the caller asks before writing."""
    asks = ASKS_MODEL.get((server, surface.name))
    return asks is not None and asks(_effective(intent, config)[0].kind, config.template_switch)


def write_controls(
    intent: Intent,
    fields: ControlFields,
    surface: ControlSide,
    server: str,
    config: ThinkExtractConfig,
    info: ModelInfo | None = None,
) -> Controlled:
    """The edits that say ``intent`` (the client's, read from the body whose ``fields`` these are,
    under the operator's control in ``config``, the settings for the request's model) to the
    ``server`` behind the upstream, on ``surface``."""
    written, override = _effective(intent, config, _said_own_budget(fields, server))
    if written.kind == "default":
        return Controlled(written, "unchanged")
    writer = WRITERS.get((server, surface.name))
    if writer is None:
        return Controlled(written, "unsupported")
    server_budget, gateway_budget = enforcers(config, fields, surface, server, written.exclude)
    pinned = config.reasoning_control_pinned
    out = Out(written, fields, info or ModelInfo(), override, server_budget, gateway_budget, pinned)
    writer(out, config.template_switch)
    controls = surface.controls
    stream = controls.streams(bytes(fields.stream).strip())
    if out.by_gateway and not stream:  # the gateway counts a stream, and gives the client its body
        out.edits.update(controls.streamed)
        out.written.append("stream=true")
    appends = bool(out.edits) and all(
        value is not None and not getattr(fields, name, b"?") for name, value in out.edits.items()
    )
    return Controlled(written, out.outcome, ", ".join(out.written), out.edits, appends, out.by_gateway, stream)
