"""Built-in model family presets: lookup by model name, precedence, the switch, and each family's
answer read by the scanner as its own server's parser reads it."""

from __future__ import annotations

import random

import pytest

from gateway_mw import DEFAULT_TAG_PAIRS, ModelProfile, Scanner, Segment, TagPair, ThinkExtractConfig, extract
from gateway_mw.families import FAMILIES, family_for, model_key

from .familycases import CASES, NEGATIVE, QWEN_CALL, Case
from .scanning import chunk, scan


def texts(blocks: list[tuple[str, str]]) -> tuple[str, str]:
    return (
        "".join(t for k, t in blocks if k == "reasoning"),
        "".join(t for k, t in blocks if k == "content"),
    )


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("openai/gpt-oss-120b", "gpt-oss"),
        ("GPT-OSS-20B", "gpt-oss"),
        ("gpt-oss:20b", "gpt-oss"),
        ("accounts/fireworks/models/deepseek-r1", "DeepSeek-R1 and its distills"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "DeepSeek-R1 and its distills"),
        ("deepseek-r1:7b", "DeepSeek-R1 and its distills"),
        ("Qwen/Qwen3-30B-A3B-Thinking-2507", "Qwen3 thinking-only (2507)"),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "Qwen3 thinking-only (2507)"),
        ("Qwen/Qwen3-30B-A3B", "Qwen3 hybrid"),
        ("qwen3:8b", "Qwen3 hybrid"),
        ("Qwen/QwQ-32B", "QwQ"),
        ("zai-org/GLM-4.5-Air", "GLM-4.5 / 4.6 / 4.7"),
        ("tencent/Hunyuan-A13B-Instruct", "Hunyuan A13B"),
        ("google/gemma-4-27b-it", "Gemma 4"),
    ],
)
def test_family_lookup_uses_the_name_after_the_org_case_insensitively(model: str, family: str) -> None:
    found = family_for(model)
    assert found is not None
    assert found.name == family


@pytest.mark.parametrize("model", ["llama-3.1-8b-instruct", "gpt-4o", "mistral-small", "org/qwen2.5-7b", "m", ""])
def test_models_of_no_family_get_no_preset(model: str) -> None:
    assert family_for(model) is None
    config = ThinkExtractConfig()
    assert config.for_model(model) is config


def test_model_key() -> None:
    assert model_key("a/b/Qwen3-8B") == "qwen3-8b"
    assert model_key("Qwen3-8B") == "qwen3-8b"


def test_every_family_has_a_case() -> None:
    covered = {family_for(case.model).name for case in CASES if family_for(case.model)}  # type: ignore[union-attr]
    assert covered == {family.name for family in FAMILIES}


def test_a_preset_sets_only_what_its_family_needs() -> None:
    base = ThinkExtractConfig(stream_mode="buffered", separator=" ", tag_pairs=(TagPair("<x>", "</x>"),))
    r1 = base.for_model("deepseek-r1")
    assert r1 == base.replace(
        start_with_reasoning=True,
        tag_pairs=(TagPair("<think>", "</think>"), TagPair("<x>", "</x>")),
        tool_call_markers=("<｜tool▁calls▁begin｜>",),
        history_reasoning="strip",  # what auto means for it, said by the resolved settings
        history_scope="all",
        template_switch="always",
    )
    assert base.for_model("gpt-oss-120b") == base.replace(
        protocol="harmony", history_reasoning="field", history_scope="tool_turns", template_switch="effort"
    )
    hunyuan = ThinkExtractConfig(content_wrappers=(TagPair("<a>", "</a>"),)).for_model("hunyuan-a13b")
    assert hunyuan.content_wrappers == (TagPair("<answer>", "</answer>"), TagPair("<a>", "</a>"))
    assert hunyuan.strip_whitespace is True


def test_a_hybrid_preset_turns_an_operators_global_injection_off() -> None:
    config = ThinkExtractConfig(start_with_reasoning=True)
    assert config.for_model("qwen3-32b").start_with_reasoning is False
    assert config.for_model("llama3").start_with_reasoning is True


def test_a_user_profile_wins_over_the_preset_on_the_fields_it_sets() -> None:
    config = ThinkExtractConfig(
        profiles=(
            ModelProfile(match="gpt-oss*", protocol="tags"),
            ModelProfile(match="*deepseek-r1*", stream_mode="buffered"),
            ModelProfile(match="qwen3*", tool_call_markers=()),
        )
    )
    assert config.for_model("gpt-oss-20b").protocol == "tags"
    r1 = config.for_model("deepseek-ai/DeepSeek-R1")
    assert (r1.start_with_reasoning, r1.stream_mode) == (True, "buffered")  # preset kept, profile on top
    assert config.for_model("qwen3-8b").tool_call_markers == ()


def test_families_are_profiles_an_operator_could_write() -> None:
    """A built-in family is a ModelProfile; the same profile written by an operator (with the family
    switch off) resolves to the same settings."""
    for family in FAMILIES:
        assert isinstance(family, ModelProfile)
        assert "auto" not in family.history  # what auto means for it, always said
        written = ModelProfile(**{name: getattr(family, name) for name in family.__struct_fields__})
        model = family.globs[0].replace("*", "x")
        assert family_for(model) is family
        by_operator = ThinkExtractConfig(families=False, profiles=(written,)).for_model(model)
        assert by_operator.replace(families=True, profiles=()) == ThinkExtractConfig().for_model(model)


def test_an_operator_profile_adds_tag_pairs_and_says_what_auto_means() -> None:
    mine = ModelProfile(
        match="acme-*",
        add_tag_pairs=(TagPair("<mm>", "</mm>"),),
        add_tool_call_markers=("<call>",),
        history=("field", "current_turn"),
    )
    config = ThinkExtractConfig(profiles=(mine,))
    acme = config.for_model("org/ACME-7b")  # a glob matches the whole name or the part after the last /
    assert acme == config.replace(
        tag_pairs=(TagPair("<mm>", "</mm>"), *DEFAULT_TAG_PAIRS),
        tool_call_markers=("<call>",),
        history_reasoning="field",
        history_scope="current_turn",
    )
    # An operator's global choice is not auto: no profile's history changes it.
    explicit = config.replace(history_reasoning="inline")
    assert (explicit.for_model("acme-1").history_reasoning, explicit.for_model("acme-1").history_scope) == (
        "inline",
        "auto",
    )
    assert explicit.for_model("qwen3-8b").history_reasoning == "inline"
    # A profile without history leaves a family's.
    plain = ThinkExtractConfig(profiles=(ModelProfile(match="qwen3*", separator=" "),)).for_model("qwen3-8b")
    assert (plain.separator, plain.history_reasoning, plain.history_scope) == (" ", "field", "current_turn")


def test_families_switch_off_as_a_whole() -> None:
    config = ThinkExtractConfig(families=False)
    for case in CASES:
        assert config.for_model(case.model) is config
    env = ThinkExtractConfig.from_env({"THINK_EXTRACT_FAMILIES": "off"})
    assert env.families is False
    assert env.for_model("gpt-oss-120b").protocol == "tags"
    with pytest.raises(ValueError, match="THINK_EXTRACT_FAMILIES='maybe' is invalid"):
        ThinkExtractConfig.from_env({"THINK_EXTRACT_FAMILIES": "maybe"})


def test_global_off_stays_off_with_a_family() -> None:
    assert ThinkExtractConfig(enabled=False).for_model("gpt-oss-120b").enabled is False


def test_new_settings_from_env() -> None:
    config = ThinkExtractConfig.from_env(
        {
            "THINK_EXTRACT_PROTOCOL": "Harmony",
            "THINK_EXTRACT_TOOL_CALL_MARKERS": r"<tool_call>,[TOOL_CALLS],a\,b",
            "THINK_EXTRACT_CONTENT_WRAPPERS": "<answer>...</answer>",
        }
    )
    assert config.protocol == "harmony"
    assert config.tool_call_markers == ("<tool_call>", "[TOOL_CALLS]", "a,b")
    assert config.content_wrappers == (TagPair("<answer>", "</answer>"),)
    with pytest.raises(ValueError, match="THINK_EXTRACT_PROTOCOL='json' is invalid: expected one of tags, harmony"):
        ThinkExtractConfig.from_env({"THINK_EXTRACT_PROTOCOL": "json"})
    with pytest.raises(ValueError, match="THINK_EXTRACT_TOOL_CALL_MARKERS='a,,b' is invalid"):
        ThinkExtractConfig.from_env({"THINK_EXTRACT_TOOL_CALL_MARKERS": "a,,b"})
    with pytest.raises(ValueError, match="protocol must be one of 'tags', 'harmony'"):
        ModelProfile(match="x", protocol="xml")  # type: ignore[arg-type]
    profiles = ThinkExtractConfig.from_env(
        {"THINK_EXTRACT_PROFILES": '[{"match": "x*", "protocol": "harmony", "tool_call_markers": ["<t>"]}]'}
    )
    assert profiles.for_model("x1").protocol == "harmony"
    assert profiles.for_model("x1").tool_call_markers == ("<t>",)


# -- each family's answer through the scanner --------------------------------------------------


def _check(case: Case, config: ThinkExtractConfig) -> None:
    cfg = config.for_model(case.model)
    whole = scan([case.text], cfg)
    assert texts(whole) == (case.reasoning, case.content)
    assert [(s.kind, s.text) for s in extract(case.text, cfg)] == whole
    assert scan(list(case.text), cfg) == whole
    rng = random.Random(case.id)
    for _ in range(20):
        assert scan(chunk(case.text, [rng.randint(1, 9) for _ in range(8)]), cfg) == whole


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_family_reads_as_its_server_parser_reads_it(case: Case) -> None:
    _check(case, ThinkExtractConfig())


@pytest.mark.parametrize("case", NEGATIVE, ids=[c.id for c in NEGATIVE])
def test_negative_controls_plain_models_keep_family_markers_literal(case: Case) -> None:
    _check(case, ThinkExtractConfig())


def test_with_families_off_gpt_oss_falls_back_to_the_literal_default_pair() -> None:
    text = "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>{}"
    cfg = ThinkExtractConfig(families=False).for_model("gpt-oss-120b")
    assert cfg.tag_pairs == DEFAULT_TAG_PAIRS
    # The one literal pair never closes on a constrained header: everything is reasoning.
    assert scan([text], cfg) == [("reasoning", text[len("<|channel|>analysis<|message|>") :])]


def test_tool_call_marker_ends_the_block_in_buffered_mode_too() -> None:
    cfg = ThinkExtractConfig(stream_mode="buffered").for_model("qwen3-8b")
    assert scan(list("<think>plan" + QWEN_CALL), cfg) == [("reasoning", "plan"), ("content", QWEN_CALL)]


def test_after_a_tool_call_marker_tags_are_text() -> None:
    cfg = ThinkExtractConfig().for_model("qwen3-8b")
    text = '<think>plan<tool_call>{"arguments": "<think>x</think>"}</tool_call>'
    assert scan([text], cfg) == [("reasoning", "plan"), ("content", text[len("<think>plan") :])]


def test_a_tool_call_marker_in_content_is_content_and_ends_tag_recognition() -> None:
    cfg = ThinkExtractConfig().for_model("qwen3-8b")
    text = "<think>plan</think>" + QWEN_CALL
    assert scan(list(text), cfg) == [("reasoning", "plan"), ("content", QWEN_CALL)]
    call = '<tool_call>{"name": "write", "arguments": {"text": "<think>x</think><answer>"}}</tool_call>'
    for model in ("qwen3-8b", "hunyuan-a13b"):  # (Hunyuan's marker is <tool_calls>: here <tool_call> is text)
        cfg = ThinkExtractConfig().for_model(model)
        blocks = scan(list("<think>plan</think>" + call), cfg)
        if model == "qwen3-8b":
            assert blocks == [("reasoning", "plan"), ("content", call)]
        else:
            assert blocks == [
                ("reasoning", "plan"),
                ("content", '<tool_call>{"name": "write", "arguments": {"text": "'),
                ("reasoning", "\nx"),  # a second block: the separator first
                ("content", '\n"}}</tool_call>'),  # <answer>, Hunyuan's wrapper, vanished
            ]


def test_scanner_counters_for_harmony() -> None:
    cfg = ThinkExtractConfig().for_model("gpt-oss-120b")
    scanner = Scanner(cfg)
    out = scanner.feed("<|channel|>analysis<|message|>abc<|end|><|channel|>analysis<|message|>de")
    out += scanner.finish()
    # Two analysis messages are two blocks of one kind: one run on the wire, joined by the separator.
    assert out == [Segment("reasoning", "abc\nde")]
    assert (scanner.reasoning_blocks, scanner.reasoning_chars, scanner.unclosed, scanner.overflows) == (2, 6, True, 0)


def test_harmony_flush_gives_up_waiting_and_loses_nothing() -> None:
    cfg = ThinkExtractConfig(protocol="harmony", stream_mode="buffered", max_buffer_bytes=4)
    scanner = Scanner(cfg)
    assert scanner.feed("<|channel|>analysis<|message|>ab") == []
    assert scanner.feed("<|en") == []  # "ab" held as the buffered body, "<|en" as a possible terminator
    assert scanner.flush() == [Segment("content", "<|channel|>analysis<|message|>ab<|en")]
    assert scanner.feed("d|>x") == [Segment("content", "d|>x")]  # the message was released: verbatim
    assert scanner.finish() == []
    live = Scanner(cfg.replace(stream_mode="live"))
    assert live.feed("<|channel|>fin") == []
    assert live.flush() == [Segment("content", "<|channel|>fin")]  # a header cut short is text
    assert live.feed("al<|message|>y") == [Segment("content", "al<|message|>y")]
    assert live.finish() == []


def test_tags_flush_in_the_start_state_keeps_the_leading_whitespace() -> None:
    scanner = Scanner(ThinkExtractConfig(start_with_reasoning=True, separator="", trim_tag_edges=False))
    assert scanner.feed(" \n<thi") == []
    assert scanner.flush() == [Segment("reasoning", " \n<thi")]
    assert scanner.feed("nk>x</think>y") == [Segment("reasoning", "nk>x"), Segment("content", "y")]
    # trim_tag_edges: the whitespace opens the implied block, so it is its leading edge
    scanner = Scanner(ThinkExtractConfig(start_with_reasoning=True, separator=""))
    assert scanner.feed(" \n<thi") == []
    assert scanner.flush() == [Segment("reasoning", "<thi")]
    assert scanner.feed("nk>x</think>y") == [Segment("reasoning", "nk>x"), Segment("content", "y")]
