"""Model profiles: settings for the models whose name matches, written by an operator or built in
(the model families of :mod:`.families`), and the choices the settings a profile sets accept.

A leaf below the configuration: :mod:`.families` builds its presets from it, and
:class:`~gateway_mw.config.ThinkExtractConfig` applies them, built-in first, then the operator's.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Annotated, Literal

import msgspec

from .fieldcheck import check, twin
from .tags import TagPair

__all__ = [
    "HistoryForm",
    "HistoryReasoning",
    "HistoryScope",
    "HistoryTurns",
    "Marker",
    "Markers",
    "ModelProfile",
    "Placement",
    "Positive",
    "Protocol",
    "ReasoningControl",
    "ResponsesReasoningFormat",
    "StreamMode",
    "TagPairs",
    "TemplateSwitch",
    "model_key",
]

StreamMode = Literal["live", "buffered"]
Placement = Literal["anywhere", "leading"]
Protocol = Literal["tags", "harmony"]
ResponsesReasoningFormat = Literal["both", "content", "summary"]
HistoryForm = Literal["pass", "field", "inline", "strip"]
HistoryTurns = Literal["all", "current_turn", "tool_turns"]
HistoryReasoning = Literal["auto", "pass", "field", "inline", "strip"]
HistoryScope = Literal["auto", "all", "current_turn", "tool_turns"]
TemplateSwitch = Literal["enable_thinking", "thinking", "effort", "budget", "text", "always", "none", "both"]
"""What a model's chat template reads to think or not: the ``chat_template_kwargs`` key
``enable_thinking`` or ``thinking`` (``both``: a model of no known family, given both keys, as SGLang
does; a key a template does not read is inert), ``reasoning_effort`` alone (gpt-oss: it cannot be
turned off), ``thinking_budget`` (Seed-OSS), ``/think`` and ``/no_think`` in the text (Nemotron Nano
v2), nothing because it always thinks, or nothing because it never does."""

Positive = Annotated[int, msgspec.Meta(ge=1, description="a positive integer (bytes)")]
TagPairs = Annotated[
    tuple[TagPair, ...],
    msgspec.Meta(min_length=1, description="a list of one or more tag pairs (open...close[,open...close])"),
]
Marker = Annotated[str, msgspec.Meta(min_length=1, description="a non-empty string")]
Markers = Annotated[
    tuple[Marker, ...], msgspec.Meta(description=r"marker[,marker] with no empty marker (escapes: \n \t \r \\ \,)")
]
Glob = Annotated[str, msgspec.Meta(min_length=1, description="a non-empty glob")]
Globs = Annotated[
    Glob | tuple[Glob, ...], msgspec.Meta(description="a non-empty glob like deepseek-r1*, or a list of them")
]

ReasoningControl = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^(default|off|on|minimal|low|medium|high|xhigh|max|budget:[0-9]{1,9})$",
        description="default, off, on, an effort (minimal, low, medium, high, xhigh, max) or budget:N",
    ),
]


# ``history`` holds words, not the Literal types: ``history.plan`` reads a family's as strings.
HistoryWord = Annotated[
    str, msgspec.Meta(pattern="^(auto|pass|field|inline|strip)$", description="one of auto, pass, field, inline, strip")
]
TurnsWord = Annotated[
    str,
    msgspec.Meta(
        pattern="^(auto|all|current_turn|tool_turns)$", description="one of auto, all, current_turn, tool_turns"
    ),
]


def model_key(model: str) -> str:
    """The part of a model name after its last ``/``, in lower case (``openai/gpt-oss-120b`` →
    ``gpt-oss-120b``): a profile's globs match it, or the whole name."""
    return model.rsplit("/", 1)[-1].lower()


class ModelProfile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Settings for the models whose name matches ``match``.

    ``match`` is an fnmatch glob, or a list of them, compared case-insensitively with the model
    name and with its part after the last ``/`` (``"deepseek-r1*"`` matches
    ``deepseek-ai/DeepSeek-R1``). A setting left as ``None`` keeps the value in effect; the
    ``add_*`` lists go in front of the ones in effect, which stay (a family's own tag pair first,
    the one ``start_with_reasoning`` closes). ``history`` is what ``history_reasoning="auto"``
    (and ``history_scope="auto"``) become for these models.
    """

    match: Globs
    name: str | None = None
    """What the gateway's debug line and ``docs/models.md`` call it (the glob when unnamed)."""
    # -- whether, and how, the answer is read
    enabled: bool | None = None
    tag_pairs: TagPairs | None = None
    add_tag_pairs: tuple[TagPair, ...] = ()
    start_with_reasoning: bool | None = None
    placement: Placement | None = None
    protocol: Protocol | None = None
    tool_call_markers: Markers | None = None
    add_tool_call_markers: Markers = ()
    content_wrappers: tuple[TagPair, ...] | None = None
    add_content_wrappers: tuple[TagPair, ...] = ()
    code_aware: bool | None = None
    # -- how the text is written
    stream_mode: StreamMode | None = None
    separator: str | None = None
    strip_whitespace: bool | None = None
    trim_tag_edges: bool | None = None
    trim_reasoning_tail: bool | None = None
    max_buffer_bytes: Positive | None = None
    chat_mirror_reasoning: bool | None = None
    responses_reasoning_format: ResponsesReasoningFormat | None = None
    # -- the way back in
    history_reasoning: HistoryReasoning | None = None
    history_scope: HistoryScope | None = None
    history: tuple[HistoryWord, TurnsWord] = ("auto", "auto")
    # -- reasoning controls
    reasoning_control: ReasoningControl | None = None
    reasoning_control_pinned: bool | None = None
    template_switch: TemplateSwitch | None = None

    def __post_init__(self) -> None:
        check(self, _CHECKED)

    @property
    def globs(self) -> tuple[str, ...]:
        return (self.match,) if isinstance(self.match, str) else self.match

    def matches(self, model: str) -> bool:
        name, key = model.lower(), model_key(model)
        return any(fnmatchcase(name, glob.lower()) or fnmatchcase(key, glob.lower()) for glob in self.globs)


_CHECKED = twin(ModelProfile)
