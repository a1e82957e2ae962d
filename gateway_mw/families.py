"""Built-in presets for model families, chosen by the response's ``model`` name.

Each :class:`Family` names the output format a family's inference-server parser handles and the
settings that make the scanner read it the same way. :meth:`ThinkExtractConfig.for_model` applies the
first family whose pattern matches (when ``families`` is on), below the user's own ``profiles``.
The table in ``docs/models.md`` lists every family with the parser or chat template it follows.

Patterns are fnmatch globs compared, case-insensitively, with the name after the last ``/``
(``openai/gpt-oss-120b`` → ``gpt-oss-120b``); the first matching family wins, so the more specific
patterns come first.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import msgspec

from .tags import TagPair

if TYPE_CHECKING:
    from .config import ThinkExtractConfig

__all__ = ["FAMILIES", "Family", "family_for", "model_key"]

# Markers that open a tool call, as each family's server-side tool parser looks for them.
QWEN_TOOL_CALL = "<tool_call>"  # Qwen3, QwQ, Hermes, GLM-4.5+, ERNIE 4.5, Nemotron
DEEPSEEK_TOOL_CALLS = "<｜tool▁calls▁begin｜>"  # fullwidth bars and U+2581, as DeepSeek's tokenizer writes them
KIMI_TOOL_CALLS = "<|tool_calls_section_begin|>"


class Family(msgspec.Struct, frozen=True, kw_only=True):
    """One model family's preset: the settings its output format needs.

    ``overrides`` replace config fields; ``tag_pairs``, ``tool_call_markers`` and
    ``content_wrappers`` are put in front of the configured ones (so a family's own pair is the
    first, the one ``start_with_reasoning`` closes), keeping whatever the operator configured.
    ``history`` is what ``history_reasoning="auto"`` (and ``history_scope="auto"``) mean for it:
    the form in which its earlier turns' reasoning reaches the upstream, and which turns keep it,
    as its chat template reads them (``inline``, what clients send without a gateway, where the
    template is not known to read a field).
    """

    name: str
    patterns: tuple[str, ...]
    tag_pairs: tuple[TagPair, ...] = ()
    tool_call_markers: tuple[str, ...] = ()
    content_wrappers: tuple[TagPair, ...] = ()
    overrides: dict[str, Any] = msgspec.field(default_factory=dict)
    history: tuple[str, str] = ("inline", "all")

    def matches(self, key: str) -> bool:
        return any(fnmatchcase(key, pattern) for pattern in self.patterns)

    def apply(self, config: ThinkExtractConfig) -> ThinkExtractConfig:
        changes = dict(self.overrides)
        if self.tag_pairs:
            changes["tag_pairs"] = _union(self.tag_pairs, config.tag_pairs)
        if self.tool_call_markers:
            changes["tool_call_markers"] = _union(self.tool_call_markers, config.tool_call_markers)
        if self.content_wrappers:
            changes["content_wrappers"] = _union(self.content_wrappers, config.content_wrappers)
        return config.replace(**changes) if changes else config


def _union(first: tuple[Any, ...], then: tuple[Any, ...]) -> tuple[Any, ...]:
    return first + tuple(item for item in then if item not in first)


_THINK = TagPair("<think>", "</think>")

FAMILIES: tuple[Family, ...] = (
    # Its template reads the analysis channel of tool-call turns only (and rejects both content and
    # reasoning there: the request side drops reasoning from a tool turn that has content).
    Family(name="gpt-oss", patterns=("gpt-oss*",), overrides={"protocol": "harmony"}, history=("field", "tool_turns")),
    Family(
        name="DeepSeek-R1 and its distills",
        patterns=("deepseek-r1*", "deepseek-reasoner*"),
        tag_pairs=(_THINK,),
        tool_call_markers=(DEEPSEEK_TOOL_CALLS,),
        overrides={"start_with_reasoning": True},
        history=("strip", "all"),  # its template drops what comes before </think> anyway
    ),
    Family(
        name="DeepSeek V3.1 (hybrid)",
        patterns=("deepseek-v3.1*", "deepseek-v3p1*"),
        tool_call_markers=(DEEPSEEK_TOOL_CALLS,),
        overrides={"start_with_reasoning": False},
        history=("strip", "all"),  # its template writes a tool turn's content raw: no tags there
    ),
    Family(
        name="DeepSeek V3.2 (hybrid)",
        patterns=("deepseek-v3.2*", "deepseek-v3p2*"),
        tool_call_markers=(DEEPSEEK_TOOL_CALLS,),
        overrides={"start_with_reasoning": False},
        history=("field", "current_turn"),  # its encoders consume the reasoning of the current turn
    ),
    Family(
        name="QwQ-32B-Preview (no tags)",
        patterns=("qwq*preview*",),
        overrides={"start_with_reasoning": False},
    ),
    Family(
        name="QwQ",
        patterns=("qwq*",),
        tag_pairs=(_THINK,),
        tool_call_markers=(QWEN_TOOL_CALL,),
        overrides={"start_with_reasoning": True},
        history=("strip", "all"),
    ),
    Family(
        name="Qwen3 thinking-only (2507)",
        patterns=("qwen3*thinking-2507*", "qwen3*-thinking"),
        tag_pairs=(_THINK,),
        tool_call_markers=(QWEN_TOOL_CALL,),
        overrides={"start_with_reasoning": True},
        history=("field", "current_turn"),
    ),
    Family(
        name="Qwen3 hybrid",
        patterns=("qwen3*",),
        tool_call_markers=(QWEN_TOOL_CALL,),
        overrides={"start_with_reasoning": False},
        history=("field", "current_turn"),
    ),
    Family(
        name="GLM-4.5 / 4.6 / 4.7",
        patterns=("glm-4.5*", "glm-4.6*", "glm-4.7*", "glm-z1*"),
        tool_call_markers=(QWEN_TOOL_CALL,),
        overrides={"start_with_reasoning": False},
        history=("field", "current_turn"),
    ),
    Family(
        name="Kimi K2",
        patterns=("kimi-k2*",),
        tool_call_markers=(KIMI_TOOL_CALLS,),
        overrides={"start_with_reasoning": False},
        history=("field", "current_turn"),
    ),
    Family(
        name="Hunyuan A13B",
        patterns=("hunyuan-a13b*", "hunyuan-*a13b*"),
        tool_call_markers=("<tool_calls>",),
        content_wrappers=(TagPair("<answer>", "</answer>"),),
        overrides={"strip_whitespace": True},
    ),
    Family(
        name="ERNIE 4.5 thinking",
        patterns=("ernie-4.5*thinking*",),
        tag_pairs=(_THINK,),
        tool_call_markers=(QWEN_TOOL_CALL,),
        content_wrappers=(TagPair("<response>", "</response>"),),
        overrides={"start_with_reasoning": True, "strip_whitespace": True},
    ),
    Family(
        name="Granite 3.2",
        patterns=("granite-3.2*",),
        tag_pairs=(
            TagPair("Here is my thought process:", "Here is my response:"),
            TagPair("Here's my thought process:", "Here's my response:"),
        ),
        overrides={"strip_whitespace": True},
    ),
    Family(
        name="Granite 3.3",
        patterns=("granite-3.3*",),
        content_wrappers=(TagPair("<response>", "</response>"),),
    ),
    Family(
        name="Command R7B / Command A reasoning",
        patterns=("command-r7b*", "command-a-reasoning*", "c4ai-command-r7b*"),
        tag_pairs=(TagPair("<|START_THINKING|>", "<|END_THINKING|>"),),
        tool_call_markers=("<|START_ACTION|>",),
        content_wrappers=(
            TagPair("<|START_RESPONSE|>", "<|END_RESPONSE|>"),
            TagPair("<|START_TEXT|>", "<|END_TEXT|>"),
        ),
    ),
    Family(
        name="Seed-OSS",
        patterns=("seed-oss*",),
        tag_pairs=(TagPair("<seed:think>", "</seed:think>"),),
        tool_call_markers=("<seed:tool_call>",),
    ),
    Family(
        name="Gemma 4",
        patterns=("gemma-4*", "gemma4*"),
        tag_pairs=(TagPair("<|channel>thought\n", "<channel|>"), TagPair("<|channel>", "<channel|>")),
        tool_call_markers=("<|tool_call>",),
    ),
    Family(
        name="MiniMax M2",
        patterns=("minimax-m2*",),
        tag_pairs=(_THINK,),
        tool_call_markers=("<minimax:tool_call>",),
        overrides={"start_with_reasoning": True},
        history=("field", "current_turn"),
    ),
    Family(
        name="MiniMax M3",
        patterns=("minimax-m3*",),
        tag_pairs=(TagPair("<mm:think>", "</mm:think>"),),
        tool_call_markers=("<minimax:tool_call>",),
    ),
    Family(
        name="Step 3 / Step 3.5",
        patterns=("step3*", "step-3*"),
        tag_pairs=(_THINK,),
        overrides={"start_with_reasoning": True},
    ),
    Family(
        name="Magistral / Mistral reasoning",
        patterns=("magistral*",),
        tool_call_markers=("[TOOL_CALLS]",),
    ),
    Family(
        name="Olmo 3 Think",
        patterns=("olmo-3*think*", "olmo3*think*"),
        tag_pairs=(_THINK,),
        overrides={"start_with_reasoning": True},
    ),
    Family(
        name="Nemotron (hybrid)",
        patterns=("*nemotron*",),
        tool_call_markers=(QWEN_TOOL_CALL,),
        overrides={"start_with_reasoning": False},
    ),
    Family(
        name="Hermes 4 (hybrid)",
        patterns=("hermes-4*",),
        tool_call_markers=(QWEN_TOOL_CALL,),
        overrides={"start_with_reasoning": False},
    ),
    Family(
        name="Apertus",
        patterns=("apertus*",),
        tag_pairs=(TagPair("<|inner_prefix|>", "<|inner_suffix|>"),),
        tool_call_markers=("<|tools_prefix|>",),
    ),
)
"""Every built-in family, most specific first."""


def model_key(model: str) -> str:
    """The part of a model name the family patterns see: after the last ``/``, lower case."""
    return model.rsplit("/", 1)[-1].lower()


@lru_cache(maxsize=512)
def _family_index(key: str) -> int:
    for index, family in enumerate(FAMILIES):
        if family.matches(key):
            return index
    return -1


def family_for(model: str) -> Family | None:
    """The built-in family of ``model``, or ``None`` when it belongs to none."""
    index = _family_index(model_key(model))
    return FAMILIES[index] if index >= 0 else None
