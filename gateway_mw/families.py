"""Built-in presets for model families: :class:`~gateway_mw.profiles.ModelProfile` objects, as an
operator writes them, chosen by the response's ``model`` name.

Each one names the output format a family's inference-server parser handles and the settings that
make the scanner read it the same way. :meth:`ThinkExtractConfig.for_model` applies the first family
whose globs match (when ``families`` is on), below the operator's own ``profiles``, with the same
code. The table in ``docs/models.md`` lists every family with the parser or chat template it follows.

The first matching family wins, so the more specific globs come first. Every family says what
``history_reasoning="auto"`` means for it (``history``): the form in which its earlier turns'
reasoning reaches the upstream, and which turns keep it, as its chat template reads them (``inline``,
what clients send without a gateway, where the template is not known to read a field).
"""

from __future__ import annotations

from functools import lru_cache

from .profiles import ModelProfile, model_key
from .tags import TagPair

__all__ = ["FAMILIES", "family_for", "model_key"]

# Markers that open a tool call, as each family's server-side tool parser looks for them.
QWEN_TOOL_CALL = "<tool_call>"  # Qwen3, QwQ, Hermes, GLM-4.5+, ERNIE 4.5, Nemotron
DEEPSEEK_TOOL_CALLS = "<｜tool▁calls▁begin｜>"  # fullwidth bars and U+2581, as DeepSeek's tokenizer writes them
KIMI_TOOL_CALLS = "<|tool_calls_section_begin|>"

INLINE = ("inline", "all")
"""A family's history where its template is not known to read a reasoning field."""

_THINK = TagPair("<think>", "</think>")

FAMILIES: tuple[ModelProfile, ...] = (
    # Its template reads the analysis channel of tool-call turns only (and rejects both content and
    # reasoning there: the request side drops reasoning from a tool turn that has content).
    ModelProfile(
        name="gpt-oss",
        match=("gpt-oss*",),
        protocol="harmony",
        history=("field", "tool_turns"),
        template_switch="effort",  # low, medium, high; it cannot be turned off
    ),
    ModelProfile(
        name="DeepSeek-R1 and its distills",
        match=("deepseek-r1*", "deepseek-reasoner*"),
        add_tag_pairs=(_THINK,),
        add_tool_call_markers=(DEEPSEEK_TOOL_CALLS,),
        start_with_reasoning=True,
        history=("strip", "all"),  # its template drops what comes before </think> anyway
        template_switch="always",
    ),
    ModelProfile(
        name="DeepSeek V3.1 (hybrid)",
        match=("deepseek-v3.1*", "deepseek-v3p1*"),
        add_tool_call_markers=(DEEPSEEK_TOOL_CALLS,),
        start_with_reasoning=False,
        history=("strip", "all"),  # its template writes a tool turn's content raw: no tags there
        template_switch="thinking",
    ),
    ModelProfile(
        name="DeepSeek V3.2 (hybrid)",
        match=("deepseek-v3.2*", "deepseek-v3p2*"),
        add_tool_call_markers=(DEEPSEEK_TOOL_CALLS,),
        start_with_reasoning=False,
        history=("field", "current_turn"),  # its encoders consume the reasoning of the current turn
        template_switch="thinking",
    ),
    ModelProfile(
        name="QwQ-32B-Preview (no tags)",
        match=("qwq*preview*",),
        start_with_reasoning=False,
        history=INLINE,
        template_switch="always",
    ),
    ModelProfile(
        name="QwQ",
        match=("qwq*",),
        add_tag_pairs=(_THINK,),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        start_with_reasoning=True,
        history=("strip", "all"),
        template_switch="always",
    ),
    ModelProfile(
        name="Qwen3 thinking-only (2507)",
        match=("qwen3*thinking-2507*", "qwen3*-thinking"),
        add_tag_pairs=(_THINK,),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        start_with_reasoning=True,
        history=("field", "current_turn"),
        template_switch="always",
    ),
    ModelProfile(
        name="Qwen3 instruct-only (2507, Coder)",
        match=("qwen3*instruct-2507*", "qwen3*-instruct", "qwen3-coder*"),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        start_with_reasoning=False,
        history=("field", "current_turn"),
        template_switch="none",  # never thinks (Ollama refuses think: true to it)
    ),
    ModelProfile(
        name="Qwen3 hybrid",
        match=("qwen3*",),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        start_with_reasoning=False,
        history=("field", "current_turn"),
        template_switch="enable_thinking",
    ),
    ModelProfile(
        name="GLM-4.5 / 4.6 / 4.7",
        match=("glm-4.5*", "glm-4.6*", "glm-4.7*", "glm-z1*"),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        start_with_reasoning=False,
        history=("field", "current_turn"),
        template_switch="enable_thinking",
    ),
    ModelProfile(
        name="Kimi K2 Thinking",
        match=("kimi-k2*thinking*",),
        add_tool_call_markers=(KIMI_TOOL_CALLS,),
        start_with_reasoning=False,
        history=("field", "current_turn"),
        template_switch="always",  # its template has no switch
    ),
    ModelProfile(
        name="Kimi K2",
        match=("kimi-k2*",),
        add_tool_call_markers=(KIMI_TOOL_CALLS,),
        start_with_reasoning=False,
        history=("field", "current_turn"),
        template_switch="thinking",
    ),
    ModelProfile(
        name="Hunyuan A13B",
        match=("hunyuan-a13b*", "hunyuan-*a13b*"),
        add_tool_call_markers=("<tool_calls>",),
        add_content_wrappers=(TagPair("<answer>", "</answer>"),),
        strip_whitespace=True,
        history=INLINE,
    ),
    ModelProfile(
        name="ERNIE 4.5 thinking",
        match=("ernie-4.5*thinking*",),
        add_tag_pairs=(_THINK,),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        add_content_wrappers=(TagPair("<response>", "</response>"),),
        start_with_reasoning=True,
        strip_whitespace=True,
        history=INLINE,
        template_switch="always",
    ),
    ModelProfile(
        name="Granite 3.2",
        match=("granite-3.2*",),
        add_tag_pairs=(
            TagPair("Here is my thought process:", "Here is my response:"),
            TagPair("Here's my thought process:", "Here's my response:"),
        ),
        strip_whitespace=True,
        history=INLINE,
        template_switch="thinking",
    ),
    ModelProfile(
        name="Granite 3.3",
        match=("granite-3.3*",),
        add_content_wrappers=(TagPair("<response>", "</response>"),),
        history=INLINE,
    ),
    ModelProfile(
        name="Command R7B / Command A reasoning",
        match=("command-r7b*", "command-a-reasoning*", "c4ai-command-r7b*"),
        add_tag_pairs=(TagPair("<|START_THINKING|>", "<|END_THINKING|>"),),
        add_tool_call_markers=("<|START_ACTION|>",),
        add_content_wrappers=(
            TagPair("<|START_RESPONSE|>", "<|END_RESPONSE|>"),
            TagPair("<|START_TEXT|>", "<|END_TEXT|>"),
        ),
        history=INLINE,
    ),
    ModelProfile(
        name="Seed-OSS",
        match=("seed-oss*",),
        add_tag_pairs=(TagPair("<seed:think>", "</seed:think>"),),
        add_tool_call_markers=("<seed:tool_call>",),
        history=INLINE,
        template_switch="budget",
    ),
    ModelProfile(
        name="Gemma 4",
        match=("gemma-4*", "gemma4*"),
        add_tag_pairs=(TagPair("<|channel>thought\n", "<channel|>"), TagPair("<|channel>", "<channel|>")),
        add_tool_call_markers=("<|tool_call>",),
        history=INLINE,
        template_switch="enable_thinking",
    ),
    ModelProfile(
        name="MiniMax M2",
        match=("minimax-m2*",),
        add_tag_pairs=(_THINK,),
        add_tool_call_markers=("<minimax:tool_call>",),
        start_with_reasoning=True,
        history=("field", "current_turn"),
        template_switch="always",
    ),
    ModelProfile(
        name="MiniMax M3",
        match=("minimax-m3*",),
        add_tag_pairs=(TagPair("<mm:think>", "</mm:think>"),),
        add_tool_call_markers=("<minimax:tool_call>",),
        history=INLINE,
    ),
    ModelProfile(
        name="Step 3 / Step 3.5",
        match=("step3*", "step-3*"),
        add_tag_pairs=(_THINK,),
        start_with_reasoning=True,
        history=INLINE,
    ),
    ModelProfile(
        name="Magistral / Mistral reasoning",
        match=("magistral*",),
        add_tool_call_markers=("[TOOL_CALLS]",),
        history=INLINE,
        template_switch="always",
    ),
    ModelProfile(
        name="Olmo 3 Think",
        match=("olmo-3*think*", "olmo3*think*"),
        add_tag_pairs=(_THINK,),
        start_with_reasoning=True,
        history=INLINE,
        template_switch="always",
    ),
    ModelProfile(
        name="Nemotron Nano v2",
        match=("*nemotron-nano*v2*",),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        start_with_reasoning=False,
        history=INLINE,
        template_switch="text",  # /think and /no_think in the system message, nothing else
    ),
    ModelProfile(
        name="Nemotron (hybrid)",
        match=("*nemotron*",),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        start_with_reasoning=False,
        history=INLINE,
        template_switch="enable_thinking",
    ),
    ModelProfile(
        name="Hermes 4 (hybrid)",
        match=("hermes-4*",),
        add_tool_call_markers=(QWEN_TOOL_CALL,),
        start_with_reasoning=False,
        history=INLINE,
        template_switch="enable_thinking",
    ),
    ModelProfile(
        name="Apertus",
        match=("apertus*",),
        add_tag_pairs=(TagPair("<|inner_prefix|>", "<|inner_suffix|>"),),
        add_tool_call_markers=("<|tools_prefix|>",),
        history=INLINE,
    ),
)
"""Every built-in family, most specific first."""


NAME_CHARS = 256
"""A name the client chooses (a model, a path) longer than this is worked out each time, never kept
in a table of what was worked out from it: no real one is so long, and a kept one holds its bytes
(a model named with megabytes, in each of a table's entries)."""


def family_for(model: str) -> ModelProfile | None:
    """The built-in family of ``model``, or ``None`` when it belongs to none."""
    return _family_of(model) if len(model) <= NAME_CHARS else _matching(model)


@lru_cache(maxsize=512)  # model names are the client's: bounded, and short (:data:`NAME_CHARS`)
def _family_of(model: str) -> ModelProfile | None:
    return _matching(model)


def _matching(model: str) -> ModelProfile | None:
    return next((family for family in FAMILIES if family.matches(model)), None)
