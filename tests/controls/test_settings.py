"""The settings of the reasoning controls: checked like every other one, read from
``THINK_EXTRACT_*``, set per model by a profile over its family's preset, and the table of
docs/models.md giving each family's template switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway_mw import ModelProfile, ThinkExtractConfig
from gateway_mw.families import FAMILIES

from .writing import control

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def test_the_settings_come_from_the_environment() -> None:
    config = ThinkExtractConfig.from_env(
        {
            "THINK_EXTRACT_REASONING_CONTROLS": "off",
            "THINK_EXTRACT_REASONING_CONTROL": "budget:2000",
            "THINK_EXTRACT_REASONING_CONTROL_PINNED": "yes",
            "THINK_EXTRACT_TEMPLATE_SWITCH": "Thinking",
            "THINK_EXTRACT_REASONING_EXCLUDE": "1",
        }
    )
    got = (
        config.reasoning_controls,
        config.reasoning_control,
        config.reasoning_control_pinned,
        config.template_switch,
        config.reasoning_exclude,
    )
    assert got == (False, "budget:2000", True, "thinking", True)


def test_the_defaults() -> None:
    config = ThinkExtractConfig()
    got = (config.reasoning_controls, config.reasoning_control, config.reasoning_control_pinned, config.template_switch)
    assert got == (True, "default", False, "both")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"THINK_EXTRACT_REASONING_CONTROL": "loud"},
            "THINK_EXTRACT_REASONING_CONTROL='loud' is invalid: expected default, off, on, an effort"
            " (minimal, low, medium, high, xhigh, max) or budget:N",
        ),
        (
            {"THINK_EXTRACT_TEMPLATE_SWITCH": "maybe"},
            "THINK_EXTRACT_TEMPLATE_SWITCH='maybe' is invalid: expected one of enable_thinking, thinking, effort,"
            " budget, text, always, none, both",
        ),
    ],
)
def test_a_bad_value_names_the_variable_and_what_it_takes(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        ThinkExtractConfig.from_env(env)
    assert str(raised.value) == message


@pytest.mark.parametrize("word", ["HIGH", "budget:", "budget:-1", "budget:1.5", "none", ""])
def test_a_control_word_is_checked_in_python_too(word: str) -> None:
    with pytest.raises(ValueError) as raised:
        ThinkExtractConfig(reasoning_control=word)
    assert str(raised.value).startswith("reasoning_control must be default, off, on, an effort")
    with pytest.raises(ValueError):
        ModelProfile(match="x*", reasoning_control=word)


def test_a_profile_sets_them_per_model_over_the_family() -> None:
    config = ThinkExtractConfig.from_env(
        {
            "THINK_EXTRACT_PROFILES": '[{"match": "qwen3*", "reasoning_control": "off", "template_switch": "thinking",'
            ' "reasoning_control_pinned": true}]'
        }
    )
    qwen, other = config.for_model("qwen3-8b"), config.for_model("gpt-oss-20b")
    assert (qwen.reasoning_control, qwen.template_switch, qwen.reasoning_control_pinned) == ("off", "thinking", True)
    assert (other.reasoning_control, other.template_switch, other.reasoning_control_pinned) == (
        "default",
        "effort",
        False,
    )
    assert config.for_model("unheard-of").template_switch == "both"


def test_the_doc_table_gives_each_family_its_template_switch() -> None:
    text = DOC.read_text()
    section = text[text.index("### Reasoning controls") : text.index("## The mechanisms")]
    rows = [line.strip("| ").split(" | ") for line in section.splitlines() if line.startswith("| ")][1:]
    documented = {name: switch.strip("`") for name, switch in rows}
    assert documented == {f.name: f.template_switch or "both" for f in FAMILIES}


def test_the_configuration_page_s_before_and_after() -> None:
    page = (DOC.parent / "configuration.md").read_text()
    section = page[page.index("Before (Qwen3 on vLLM") : page.index("An operator's default")]
    before, after = (block.strip().encode() for block in section.split("```")[1::2])
    _, forwarded = control(before, "chat", "vllm")
    assert forwarded == after
