"""Writing: an intent made into top-level edits of the body, in the fields the upstream's server
reads on the request's surface, with the values the model's chat template reads (its
``template_switch``), never a value the server refuses.

One writer per server and surface (:data:`WRITERS`); each says, through :class:`~.out.Out`, what
it wrote and whether the intent reached the model as asked (``applied``), as the nearest the server
and the model accept (``nearest``), or not at all (``unsupported``). A server the gateway does not
know (``generic``, ``openai``, ``anthropic``) gets nothing: unknown fields may be refused there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from ..config import ThinkExtractConfig
from .continuation import STREAMED, enforcers
from .fields import ControlFields
from .intent import Effort, Intent, ModelInfo
from .operator import decide
from .out import Out, Outcome, nearest_effort

__all__ = ["WRITERS", "Controlled", "needs_model_info", "write_controls"]

Surface = Literal["chat", "messages", "responses", "ollama"]


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


Writer = Callable[[Out, str], None]
"""Writes ``out.intent`` for a model whose template reads the given ``template_switch``."""

ALL: tuple[Effort, ...] = ("minimal", "low", "medium", "high", "xhigh", "max")
HARMONY: tuple[Effort, ...] = ("low", "medium", "high")
"""gpt-oss's levels (it cannot be turned off)."""
_KEYS = {"enable_thinking": ("enable_thinking",), "thinking": ("thinking",), "both": ("enable_thinking", "thinking")}
"""The ``chat_template_kwargs`` keys of each template switch that has them."""


def _bucket(budget: int) -> Effort:
    """A budget as gpt-oss's level: what a model that takes no budget can be given of one."""
    return "low" if budget < 2048 else "medium" if budget < 8192 else "high"


def _harmony_level(out: Out, budget_enforced: bool = False) -> Effort:
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
    return _bucket(intent.budget)


def _switch(out: Out, switch: str, on: bool) -> bool:
    """The template's own switch in ``chat_template_kwargs`` (``thinking_budget: 0`` for a budget
    template); ``False`` when the template has none there."""
    if switch in _KEYS:
        out.template_kwargs(dict.fromkeys(_KEYS[switch], on))
        return True
    if switch == "budget":
        if not on:
            out.template_kwargs({"thinking_budget": 0})
        return True
    return False


def _no_switch(out: Out, switch: str) -> None:
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
        level = _harmony_level(out, budget_enforced=budget is not None)
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
            if switch in _KEYS:  # an effort is thinking on (a template that reads no effort still thinks)
                _switch(out, switch, True)
        elif intent.kind == "off":
            if off_by_effort and switch in _KEYS:
                put_effort(out, "none")
            if not _switch(out, switch, False):
                if switch == "always" and budget_field is not None:
                    out.put(budget_field, 0)
                    out.nearest()
                else:
                    _no_switch(out, switch)
        elif intent.kind == "on":
            if not _switch(out, switch, True):
                _no_switch(out, switch)
        elif intent.kind == "budget":
            assert intent.budget is not None
            _switch(out, switch, True)
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
            effort = _bucket(intent.budget) if intent.budget is not None else "low"
        if effort != intent.effort:
            out.nearest()
        if not out.put_in("output_config", {"effort": effort}):
            out.unsupported()
        if switch in _KEYS:
            _switch(out, switch, True)
        return
    if switch == "none" and intent.kind != "off":
        out.unsupported()
    elif intent.kind in ("off", "on"):
        if not _switch(out, switch, intent.kind == "on"):
            _no_switch(out, switch)
    elif intent.kind == "budget":
        assert intent.budget is not None
        _switch(out, switch, True)
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
            effort = "low" if intent.budget is None else _bucket(intent.budget)
            out.nearest()
        elif intent.kind == "off" and off is not None:
            effort = off
        elif intent.kind == "on" and switch in ("always", "budget"):
            return  # thinks by default
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
            effort = "low" if intent.budget is None else _bucket(intent.budget)
        if effort != intent.effort:
            out.nearest()
        out.template_kwargs({"reasoning_effort": effort})  # the template's own variable
        if switch in _KEYS:
            _switch(out, switch, True)
    elif intent.kind == "off":
        if not _switch(out, switch, False):
            if switch == "always":
                out.put("thinking", {"type": "enabled", "budget_tokens": 0})
                out.nearest()
            else:
                _no_switch(out, switch)
    elif intent.kind == "on":
        if not _switch(out, switch, True):
            _no_switch(out, switch)
    elif intent.kind == "budget":
        assert intent.budget is not None
        _switch(out, switch, True)
        if switch == "budget":
            out.template_kwargs({"thinking_budget": intent.budget})
        out.put("thinking", {"type": "enabled", "budget_tokens": intent.budget})


# -- SGLang: /v1/messages reads ``thinking`` and ``output_config.effort`` ------------------------


def _sglang_messages(out: Out, switch: str) -> None:
    """SGLang's messages endpoint turns ``thinking`` into the template's switch (a budget accepted,
    not enforced) and then ``output_config.effort`` into its ``reasoning_effort``, the variable
    gpt-oss's template reads its level from (the client's ``thinking`` stays: that template reads
    no switch)."""
    intent = out.intent
    if switch == "effort" and intent.kind != "on":
        if not out.put_in("output_config", {"effort": _harmony_level(out)}):
            out.unsupported()
    elif switch == "none" and intent.kind != "off":
        out.unsupported()
    elif switch in ("none", "effort") or (switch in ("always", "text") and intent.kind in ("off", "on")):
        _no_switch(out, switch)
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
    else:
        assert intent.budget is not None
        out.nearest()  # accepted, not enforced
        if intent.form != "thinking":
            out.put("thinking", {"type": "enabled", "budget_tokens": intent.budget})


# -- Ollama -------------------------------------------------------------------------------------

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


def _ollama_native(out: Out, switch: str) -> None:
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
            _no_switch(out, switch)
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
        wanted = _bucket(intent.budget)
    if intent.kind == "budget" or (intent.kind == "effort" and levels is None):
        out.nearest()  # Ollama has no budget; a level it does not take is thinking on
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


def _ollama_openai(effort_field: tuple[str, ...]) -> Writer:
    """Ollama's ``/v1/chat/completions`` and ``/v1/responses``: an effort (``none`` is off), read from
    ``reasoning.effort`` when the body has a ``reasoning`` object, else from ``reasoning_effort``."""

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
                _no_switch(out, switch)
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
            out.unsupported()  # no budget
            return
        else:
            wanted = intent.effort if intent.effort is not None else _bucket(intent.budget or 0)
            levels = _ollama_levels(out, switch, HARMONY)
            own = out.value_at(at) is not None  # the client's own level, where Ollama reads it
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


def _ollama_messages(out: Out, switch: str) -> None:
    """Ollama's ``/v1/messages``: ``thinking`` enabled or disabled (a budget ignored; ``true`` to a
    model that cannot think dropped, not refused), else ``output_config.effort``."""
    intent = out.intent
    if switch == "effort" and intent.kind != "on":
        _ollama_messages_harmony(out)
    elif intent.kind == "off":
        if switch in ("always", "text"):
            _no_switch(out, switch)
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
    level = _harmony_level(out)
    if not out.put_in("output_config", {"effort": level}):
        out.unsupported()
        return
    thinking = out.value_at(("thinking",))
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled"):
        out.remove("thinking", "removed (gpt-oss reads the level, not the switch)")


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
    ("ollama", "chat"): _ollama_openai(("reasoning_effort",)),
    ("ollama", "messages"): _ollama_messages,
    ("ollama", "responses"): _ollama_openai(("reasoning", "effort")),
    ("ollama", "ollama"): _ollama_native,
}
"""Each server's endpoints, by the surface of the request: what they read, and how."""


def _effective(intent: Intent, config: ThinkExtractConfig) -> tuple[Intent, bool]:
    if not config.reasoning_controls:
        return Intent(), False
    return decide(intent, config.reasoning_control, config.reasoning_control_pinned)


def needs_model_info(intent: Intent, surface: Surface, server: str, config: ThinkExtractConfig) -> bool:
    """Whether what is written for ``intent`` depends on what the upstream says of the model
    (Ollama: whether it can think, its version), so that the caller asks before writing."""
    if server != "ollama":
        return False
    kind = _effective(intent, config)[0].kind
    if surface == "messages":  # only gpt-oss's level there depends on the version
        return config.template_switch == "effort" and kind in ("off", "effort", "budget")
    return kind in ("on", "effort", "budget")


def write_controls(
    intent: Intent,
    fields: ControlFields,
    surface: Surface,
    server: str,
    config: ThinkExtractConfig,
    info: ModelInfo | None = None,
) -> Controlled:
    """The edits that say ``intent`` (the client's, read from the body whose ``fields`` these are,
    under the operator's control in ``config``, the settings for the request's model) to the
    ``server`` behind the upstream, on ``surface``."""
    written, override = _effective(intent, config)
    if written.kind == "default":
        return Controlled(written, "unchanged")
    writer = WRITERS.get((server, surface))
    if writer is None:
        return Controlled(written, "unsupported")
    server_budget, gateway_budget = enforcers(config, fields, surface, server, written.exclude)
    out = Out(written, fields, info or ModelInfo(), override, server_budget, gateway_budget)
    writer(out, config.template_switch)
    stream = bytes(fields.stream).strip() == b"true"
    if out.by_gateway and not stream:  # the gateway counts a stream, and gives the client its body
        out.edits.update(STREAMED)
        out.written.append("stream=true")
    appends = bool(out.edits) and all(
        value is not None and not getattr(fields, name, b"?") for name, value in out.edits.items()
    )
    return Controlled(written, out.outcome, ", ".join(out.written), out.edits, appends, out.by_gateway, stream)
