"""Writing: each row of the servers' table, as the whole body that goes upstream and the outcome
(``applied``, ``nearest``, ``unsupported``, ``unchanged``)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway_mw.config import ModelProfile, Surface, ThinkExtractConfig
from gateway_mw.controls import Intent, ModelInfo, needs_model_info
from gateway_mw.surfaces.registry import SURFACES

from .writing import MODELS, compact, control

OLD = ModelInfo(thinking=True, version=(0, 17, 0))  # before levels for every model
MID = ModelInfo(thinking=True, version=(0, 20, 0))  # levels, but no max
NEW = ModelInfo(thinking=True, version=(0, 22, 1))
CANNOT = ModelInfo(thinking=False, version=(0, 22, 1))
BEFORE_EFFORT = ModelInfo(thinking=True, version=(0, 23, 3))  # /v1/messages reads no output_config
READS_EFFORT = ModelInfo(thinking=True, version=(0, 23, 4))

NO = {"enable_thinking": False}
YES = {"enable_thinking": True}

Row = tuple[Surface, str, str, dict[str, Any], "ModelInfo | None", str, dict[str, Any]]

ROWS: list[Row] = [
    # -- chat, vLLM: the template's switch in chat_template_kwargs, its budget field, effort as is
    ("chat", "vllm", "A", {"reasoning_effort": "none"}, None, "applied",
     {"reasoning_effort": "none", "chat_template_kwargs": NO}),
    ("chat", "vllm", "B", {"reasoning_effort": "none"}, None, "applied",
     {"reasoning_effort": "none", "chat_template_kwargs": {"thinking": False}}),
    ("chat", "vllm", "both", {"reasoning": {"enabled": False}}, None, "applied",
     {"reasoning": {"enabled": False}, "chat_template_kwargs": {"enable_thinking": False, "thinking": False}}),
    ("chat", "vllm", "A", {"reasoning_effort": "none", "chat_template_kwargs": {"foo": 1}}, None, "applied",
     {"reasoning_effort": "none", "chat_template_kwargs": {"foo": 1, "enable_thinking": False}}),
    ("chat", "vllm", "C", {"reasoning_effort": "none"}, None, "nearest", {"reasoning_effort": "low"}),
    ("chat", "vllm", "C", {"reasoning_effort": "minimal"}, None, "nearest", {"reasoning_effort": "low"}),
    ("chat", "vllm", "C", {"reasoning_effort": "max"}, None, "nearest", {"reasoning_effort": "high"}),
    ("chat", "vllm", "C", {"reasoning": {"max_tokens": 5000}}, None, "nearest",
     {"reasoning": {"max_tokens": 5000}, "reasoning_effort": "medium"}),
    ("chat", "vllm", "F", {"reasoning_effort": "none"}, None, "nearest",
     {"reasoning_effort": "none", "thinking_token_budget": 0}),
    ("chat", "vllm", "G", {"reasoning_effort": "none"}, None, "applied", {"reasoning_effort": "none"}),
    ("chat", "vllm", "G", {"reasoning_effort": "high"}, None, "unsupported", {"reasoning_effort": "high"}),
    ("chat", "vllm", "A", {"reasoning": {"effort": "high"}}, None, "applied",
     {"reasoning": {"effort": "high"}, "reasoning_effort": "high", "chat_template_kwargs": YES}),
    ("chat", "vllm", "B", {"reasoning_effort": "low"}, None, "applied",
     {"reasoning_effort": "low", "chat_template_kwargs": {"thinking": True}}),
    ("chat", "vllm", "A", {"reasoning": {"max_tokens": 1000}}, None, "applied",
     {"reasoning": {"max_tokens": 1000}, "chat_template_kwargs": YES, "thinking_token_budget": 1000}),
    ("chat", "vllm", "A", {"reasoning": {"enabled": True}}, None, "applied",
     {"reasoning": {"enabled": True}, "chat_template_kwargs": YES}),
    ("chat", "vllm", "D", {"reasoning_effort": "none"}, None, "applied",
     {"reasoning_effort": "none", "chat_template_kwargs": {"thinking_budget": 0}}),
    ("chat", "vllm", "D", {"reasoning": {"max_tokens": 3000}}, None, "applied",
     {"reasoning": {"max_tokens": 3000}, "chat_template_kwargs": {"thinking_budget": 3000},
      "thinking_token_budget": 3000}),
    ("chat", "vllm", "E", {"reasoning_effort": "none"}, None, "unsupported", {"reasoning_effort": "none"}),
    ("chat", "vllm", "E", {"messages": [{"role": "system", "content": "/no_think"}]}, None, "applied",
     {"messages": [{"role": "system", "content": "/no_think"}]}),
    ("chat", "vllm", "A", {"messages": [{"role": "user", "content": "hi /no_think"}]}, None, "applied",
     {"messages": [{"role": "user", "content": "hi /no_think"}], "chat_template_kwargs": NO}),
    # -- chat, SGLang: as vLLM, but no budget it is known to enforce; gpt-oss's template reads the
    # level as its reasoning_effort (serving_chat.py _apply_jinja_template), a reasoning.effort over it
    ("chat", "sglang", "A", {"reasoning_effort": "none"}, None, "applied",
     {"reasoning_effort": "none", "chat_template_kwargs": NO}),
    ("chat", "sglang", "C", {"reasoning_effort": "none"}, None, "nearest", {"reasoning_effort": "low"}),
    ("chat", "sglang", "C", {"reasoning_effort": "xhigh"}, None, "nearest", {"reasoning_effort": "high"}),
    ("chat", "sglang", "C", {"reasoning_effort": "medium"}, None, "applied", {"reasoning_effort": "medium"}),
    ("chat", "sglang", "C", {"reasoning": {"max_tokens": 5000}}, None, "nearest",
     {"reasoning": {"max_tokens": 5000}, "reasoning_effort": "medium"}),
    ("chat", "sglang", "C", {"reasoning": {"effort": "xhigh"}}, None, "nearest",
     {"reasoning": {"effort": "high"}, "reasoning_effort": "high"}),
    ("chat", "sglang", "B", {"reasoning": {"effort": "max"}}, None, "applied",
     {"reasoning": {"effort": "max"}, "reasoning_effort": "max", "chat_template_kwargs": {"thinking": True}}),
    # SGLang has no budget field of its own: the gateway enforces it, on the stream it asks for
    ("chat", "sglang", "A", {"reasoning": {"max_tokens": 800}}, None, "applied",
     {"reasoning": {"max_tokens": 800}, "chat_template_kwargs": YES, "stream": True,
      "stream_options": {"include_usage": True}}),
    # -- chat, llama.cpp: none turns the switch off on new builds, the switch itself on old ones
    ("chat", "llamacpp", "A", {"chat_template_kwargs": NO}, None, "applied",
     {"chat_template_kwargs": NO, "reasoning_effort": "none"}),
    ("chat", "llamacpp", "B", {"think": False}, None, "applied",
     {"think": False, "reasoning_effort": "none", "chat_template_kwargs": {"thinking": False}}),
    ("chat", "llamacpp", "A", {"reasoning": {"max_tokens": 700}}, None, "applied",
     {"reasoning": {"max_tokens": 700}, "chat_template_kwargs": YES, "thinking_budget_tokens": 700}),
    ("chat", "llamacpp", "F", {"reasoning_effort": "none"}, None, "nearest",
     {"reasoning_effort": "none", "thinking_budget_tokens": 0}),
    # gpt-oss: the level in chat_template_kwargs too (old builds read only those), the budget enforced
    ("chat", "llamacpp", "C", {"reasoning_effort": "xhigh"}, None, "nearest",
     {"reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "high"}}),
    ("chat", "llamacpp", "C", {"reasoning_effort": "none"}, None, "nearest",
     {"reasoning_effort": "low", "chat_template_kwargs": {"reasoning_effort": "low"}}),
    ("chat", "llamacpp", "C", {"reasoning": {"max_tokens": 3000}}, None, "applied",
     {"reasoning": {"max_tokens": 3000}, "reasoning_effort": "medium",
      "chat_template_kwargs": {"reasoning_effort": "medium"}, "thinking_budget_tokens": 3000}),
    ("chat", "llamacpp", "C", {"reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "low"}},
     None, "applied", {"reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "low"}}),
    # -- chat, Ollama's /v1: an effort only (none is off), by version; reasoning.effort when there
    ("chat", "ollama", "A", {"reasoning_effort": "none"}, None, "applied", {"reasoning_effort": "none"}),
    ("chat", "ollama", "A", {"chat_template_kwargs": NO}, None, "applied",
     {"chat_template_kwargs": NO, "reasoning_effort": "none"}),
    ("chat", "ollama", "A", {"reasoning_effort": "minimal"}, NEW, "nearest", {"reasoning_effort": "low"}),
    ("chat", "ollama", "A", {"reasoning_effort": "xhigh"}, NEW, "nearest", {"reasoning_effort": "max"}),
    ("chat", "ollama", "A", {"reasoning_effort": "xhigh"}, MID, "nearest", {"reasoning_effort": "high"}),
    ("chat", "ollama", "A", {"reasoning_effort": "max"}, None, "nearest", {"reasoning_effort": "high"}),
    ("chat", "ollama", "A", {"reasoning_effort": "high"}, OLD, "unsupported", {}),
    ("chat", "ollama", "A", {"reasoning_effort": "high"}, CANNOT, "unsupported", {}),
    ("chat", "ollama", "A", {"reasoning": {"exclude": True}, "reasoning_effort": "minimal"}, NEW, "nearest",
     {"reasoning": {"exclude": True, "effort": "low"}, "reasoning_effort": "minimal"}),
    ("chat", "ollama", "A", {"reasoning": {"max_tokens": 900}}, NEW, "applied",  # the gateway's, as a stream
     {"reasoning": {"max_tokens": 900}, "stream": True, "stream_options": {"include_usage": True}}),
    ("chat", "ollama", "A", {"reasoning": {"max_tokens": 900}}, CANNOT, "unsupported",
     {"reasoning": {"max_tokens": 900}}),
    ("chat", "ollama", "C", {"reasoning_effort": "none"}, None, "nearest", {"reasoning_effort": "low"}),
    ("chat", "ollama", "C", {"reasoning_effort": "none"}, CANNOT, "unsupported", {"reasoning_effort": "none"}),
    ("chat", "ollama", "A", {"think": "high"}, None, "nearest", {"think": "high"}),
    # where Ollama reads the level, "none" (off on every version) is no level to replace or to drop
    ("chat", "ollama", "A", {"reasoning_effort": "high", "reasoning": {"effort": "none"}}, None, "nearest",
     {"reasoning_effort": "high", "reasoning": {"effort": "none"}}),
    ("chat", "ollama", "A", {"reasoning_effort": "high", "reasoning": {"effort": "none"}}, CANNOT, "unsupported",
     {"reasoning_effort": "high", "reasoning": {"effort": "none"}}),
    # -- messages, vLLM: thinking ignored there; output_config.effort (low…max) and the switch
    ("messages", "vllm", "A", {"thinking": {"type": "disabled"}}, None, "applied",
     {"thinking": {"type": "disabled"}, "chat_template_kwargs": NO}),
    ("messages", "vllm", "A", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, None, "nearest",
     {"thinking": {"type": "enabled", "budget_tokens": 2048}, "chat_template_kwargs": YES}),
    ("messages", "vllm", "A", {"output_config": {"effort": "minimal", "format": None}}, None, "nearest",
     {"output_config": {"effort": "low", "format": None}, "chat_template_kwargs": YES}),
    ("messages", "vllm", "C", {"thinking": {"type": "disabled"}}, None, "nearest",
     {"thinking": {"type": "disabled"}, "output_config": {"effort": "low"}}),
    ("messages", "vllm", "F", {"thinking": {"type": "disabled"}}, None, "unsupported",
     {"thinking": {"type": "disabled"}}),
    # -- messages, SGLang: reads thinking itself (a budget not enforced)
    ("messages", "sglang", "A", {"thinking": {"type": "disabled"}}, None, "applied",
     {"thinking": {"type": "disabled"}}),
    ("messages", "sglang", "A", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, None, "nearest",
     {"thinking": {"type": "enabled", "budget_tokens": 2048}}),
    ("messages", "sglang", "B", {"reasoning_effort": "none"}, None, "applied",
     {"reasoning_effort": "none", "thinking": {"type": "disabled"}}),
    ("messages", "sglang", "A", {"output_config": {"effort": "xhigh"}}, None, "applied",
     {"output_config": {"effort": "xhigh"}, "thinking": {"type": "enabled"}}),
    ("messages", "sglang", "A", {"reasoning_effort": "minimal"}, None, "nearest",
     {"reasoning_effort": "minimal", "output_config": {"effort": "low"}, "thinking": {"type": "enabled"}}),
    # an effort is thinking on: a family off by default is switched on (SGLang derives no switch from it)
    ("messages", "sglang", "B", {"output_config": {"effort": "high"}}, None, "applied",
     {"output_config": {"effort": "high"}, "thinking": {"type": "enabled"}}),
    ("messages", "sglang", "B", {"output_config": {"effort": "high"}, "thinking": {"type": "adaptive"}}, None,
     "applied", {"output_config": {"effort": "high"}, "thinking": {"type": "adaptive"}}),
    ("messages", "sglang", "A", {"reasoning": {"enabled": True}}, None, "applied",
     {"reasoning": {"enabled": True}, "thinking": {"type": "enabled"}}),
    # gpt-oss: output_config.effort becomes the request's reasoning_effort, after thinking
    ("messages", "sglang", "C", {"thinking": {"type": "disabled"}}, None, "nearest",
     {"thinking": {"type": "disabled"}, "output_config": {"effort": "low"}}),
    ("messages", "sglang", "C", {"thinking": {"type": "enabled", "budget_tokens": 9000}}, None, "nearest",
     {"thinking": {"type": "enabled", "budget_tokens": 9000}, "output_config": {"effort": "high"}}),
    ("messages", "sglang", "C", {"thinking": {"type": "enabled"}}, None, "applied",
     {"thinking": {"type": "enabled"}}),
    # -- messages, llama.cpp: keeps only chat_template_kwargs; enabled is its budget
    ("messages", "llamacpp", "A", {"thinking": {"type": "disabled"}}, None, "applied",
     {"thinking": {"type": "disabled"}, "chat_template_kwargs": NO}),
    ("messages", "llamacpp", "A", {"thinking": {"type": "enabled", "budget_tokens": 4096}}, None, "applied",
     {"thinking": {"type": "enabled", "budget_tokens": 4096}, "chat_template_kwargs": YES}),
    ("messages", "llamacpp", "F", {"thinking": {"type": "disabled"}}, None, "nearest",
     {"thinking": {"type": "enabled", "budget_tokens": 0}}),
    ("messages", "llamacpp", "C", {"output_config": {"effort": "high"}}, None, "applied",
     {"output_config": {"effort": "high"}, "chat_template_kwargs": {"reasoning_effort": "high"}}),
    # -- messages, Ollama: reads thinking and output_config.effort; no budget
    ("messages", "ollama", "A", {"thinking": {"type": "disabled"}}, None, "applied",
     {"thinking": {"type": "disabled"}}),
    ("messages", "ollama", "A", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, None, "nearest",
     {"thinking": {"type": "enabled", "budget_tokens": 2048}}),
    ("messages", "ollama", "A", {"output_config": {"effort": "minimal"}}, None, "nearest",
     {"output_config": {"effort": "low"}}),
    # gpt-oss: harmony reads a level; output_config.effort is read only when thinking says nothing,
    # from v0.23.4 (anthropic/anthropic.go)
    ("messages", "ollama", "C", {"thinking": {"type": "disabled"}}, None, "nearest",
     {"output_config": {"effort": "low"}}),
    ("messages", "ollama", "C", {"thinking": {"type": "enabled", "budget_tokens": 3000}}, READS_EFFORT, "nearest",
     {"output_config": {"effort": "medium"}}),
    ("messages", "ollama", "C", {"thinking": {"type": "disabled"}}, BEFORE_EFFORT, "unsupported",
     {"thinking": {"type": "disabled"}}),
    ("messages", "ollama", "C", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}}, READS_EFFORT,
     "nearest", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}),
    # -- responses, vLLM: reasoning.effort alone, as the template's kwarg
    ("responses", "vllm", "A", {"reasoning": {"effort": "high"}}, None, "applied", {"reasoning": {"effort": "high"}}),
    ("responses", "vllm", "A", {"reasoning": {"effort": "max"}}, None, "nearest", {"reasoning": {"effort": "xhigh"}}),
    ("responses", "vllm", "A", {"reasoning": {"effort": "none"}}, None, "unsupported",
     {"reasoning": {"effort": "none"}}),
    ("responses", "vllm", "C", {"reasoning": {"effort": "none"}}, None, "nearest", {"reasoning": {"effort": "low"}}),
    # -- responses, llama.cpp: made a chat request (the body's other fields kept)
    ("responses", "llamacpp", "A", {"reasoning": {"effort": "none"}}, None, "applied",
     {"reasoning": {"effort": "none"}, "chat_template_kwargs": NO}),
    ("responses", "llamacpp", "A", {"reasoning_effort": "low"}, None, "applied",
     {"reasoning_effort": "low", "reasoning": {"effort": "low"}, "chat_template_kwargs": YES}),
    ("responses", "llamacpp", "C", {"reasoning": {"effort": "none"}}, None, "nearest",
     {"reasoning": {"effort": "low"}, "chat_template_kwargs": {"reasoning_effort": "low"}}),
    # -- responses, Ollama: as its /v1 chat
    ("responses", "ollama", "A", {"reasoning": {"effort": "xhigh"}}, NEW, "nearest", {"reasoning": {"effort": "max"}}),
    ("responses", "ollama", "A", {"reasoning": {"max_tokens": 900}}, NEW, "nearest",  # on by default; not continued
     {"reasoning": {"max_tokens": 900}}),
    ("responses", "ollama", "A", {"reasoning_effort": "minimal"}, OLD, "unsupported", {"reasoning_effort": "minimal"}),
    ("responses", "ollama", "A", {"reasoning": {"effort": "high", "summary": "auto"}}, OLD, "unsupported",
     {"reasoning": {"summary": "auto"}}),
    # -- Ollama's /api: think, a switch or a level, by capability and version
    ("ollama", "ollama", "A", {"think": False}, None, "applied", {"think": False}),
    ("ollama", "ollama", "C", {"think": False}, None, "nearest", {"think": "low"}),
    ("ollama", "ollama", "C", {"think": False}, CANNOT, "unsupported", {"think": False}),
    ("ollama", "ollama", "A", {"think": True}, NEW, "applied", {"think": True}),
    ("ollama", "ollama", "A", {"think": True}, CANNOT, "unsupported", {}),
    ("ollama", "ollama", "G", {"think": True}, None, "unsupported", {}),
    ("ollama", "ollama", "A", {"think": "high"}, OLD, "nearest", {"think": True}),
    ("ollama", "ollama", "A", {"think": "max"}, MID, "nearest", {"think": "high"}),
    ("ollama", "ollama", "A", {"think": "max"}, NEW, "applied", {"think": "max"}),
    ("ollama", "ollama", "A", {"reasoning_effort": "high"}, NEW, "applied",
     {"reasoning_effort": "high", "think": "high"}),
    ("ollama", "ollama", "A", {"reasoning_effort": "high"}, None, "nearest", {"reasoning_effort": "high"}),
    ("ollama", "ollama", "A", {"reasoning_effort": "none"}, None, "applied",
     {"reasoning_effort": "none", "think": False}),
    ("ollama", "ollama", "A", {"reasoning": {"max_tokens": 500}}, NEW, "nearest",
     {"reasoning": {"max_tokens": 500}, "think": True}),
    ("ollama", "ollama", "F", {"think": False}, None, "unsupported", {"think": False}),
    # -- servers the gateway does not know: nothing written
    ("chat", "generic", "A", {"reasoning_effort": "none"}, None, "unsupported", {"reasoning_effort": "none"}),
    ("chat", "openai", "A", {"reasoning_effort": "none"}, None, "unsupported", {"reasoning_effort": "none"}),
    ("messages", "anthropic", "A", {"thinking": {"type": "disabled"}}, None, "unsupported",
     {"thinking": {"type": "disabled"}}),
    ("chat", "auto", "A", {"reasoning_effort": "none"}, None, "unsupported", {"reasoning_effort": "none"}),
    # -- nothing said: nothing written
    ("chat", "vllm", "A", {"messages": [{"role": "user", "content": "hi"}]}, None, "unchanged",
     {"messages": [{"role": "user", "content": "hi"}]}),
]  # fmt: skip


@pytest.mark.parametrize(("surface", "server", "family", "body", "info", "outcome", "expected"), ROWS)
def test_each_row_writes_the_whole_expected_body(
    surface: Surface,
    server: str,
    family: str,
    body: dict[str, Any],
    info: ModelInfo | None,
    outcome: str,
    expected: dict[str, Any],
) -> None:
    done, new = control(body, surface, server, family, info)
    assert (done.outcome, new) == (outcome, compact({"model": MODELS[family], **expected}))


def test_the_debug_line_says_what_was_written() -> None:
    done, _ = control({"reasoning_effort": "none", "chat_template_kwargs": {"foo": 1}}, "chat", "llamacpp", "B")
    assert done.written == "chat_template_kwargs.thinking=false"
    done, _ = control({"think": "max"}, "ollama", "ollama", "A", MID)
    assert done.written == 'think="high"'


def test_a_client_s_explicit_template_key_wins() -> None:
    body = {"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": True}}
    done, new = control(body, "chat", "vllm", "A")
    assert (done.edits, new) == ({}, compact({"model": MODELS["A"], **body}))


QWEN_OFF = ThinkExtractConfig(profiles=(ModelProfile(match="qwen3*", reasoning_control="off"),))


def test_the_operator_s_default_speaks_for_a_client_that_says_nothing() -> None:
    done, new = control({"messages": []}, "chat", "vllm", "A", config=QWEN_OFF)
    assert done.intent == Intent("off", form="operator")
    assert (done.outcome, new) == (
        "applied",
        compact({"model": MODELS["A"], "messages": [], "chat_template_kwargs": NO}),
    )
    # another model, no profile: nothing
    done, new = control({"messages": []}, "chat", "vllm", "B", config=QWEN_OFF)
    assert (done.outcome, new) == ("unchanged", compact({"model": MODELS["B"], "messages": []}))


def test_the_client_s_own_intent_wins_unless_pinned() -> None:
    body = {"reasoning_effort": "high"}
    done, new = control(body, "chat", "vllm", "A", config=QWEN_OFF)
    expected = {"model": MODELS["A"], **body, "chat_template_kwargs": YES}
    assert (done.intent.form, new) == ("reasoning_effort", compact(expected))
    pinned = ThinkExtractConfig(reasoning_control="off", reasoning_control_pinned=True)
    done, new = control({"reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": True, "x": 1}},
                        "chat", "vllm", "A", config=pinned)  # fmt: skip
    assert done.intent == Intent("off", form="operator")
    assert new == compact({"model": MODELS["A"], "chat_template_kwargs": {"enable_thinking": False, "x": 1}})


def test_a_pinned_budget_is_a_ceiling() -> None:
    ceiling = ThinkExtractConfig(reasoning_control="budget:1000", reasoning_control_pinned=True)
    over = {"thinking": {"type": "enabled", "budget_tokens": 4000}, "max_tokens": 8000}
    done, new = control(over, "messages", "llamacpp", "A", config=ceiling)
    assert done.intent == Intent("budget", budget=1000, form="operator")
    assert new == compact({"model": MODELS["A"], "thinking": {"type": "enabled", "budget_tokens": 1000},
                           "max_tokens": 8000, "chat_template_kwargs": YES})  # fmt: skip
    under = {"thinking": {"type": "enabled", "budget_tokens": 500}}
    done, new = control(under, "messages", "llamacpp", "A", config=ceiling)
    assert (done.intent.budget, new) == (500, compact({"model": MODELS["A"], **under, "chat_template_kwargs": YES}))


def test_controls_off_write_nothing() -> None:
    done, new = control({"reasoning_effort": "none"}, "chat", "vllm", "A",
                        config=ThinkExtractConfig(reasoning_controls=False))  # fmt: skip
    assert (done.intent, done.outcome, new) == (
        Intent(),
        "unchanged",
        compact({"model": MODELS["A"], "reasoning_effort": "none"}),
    )


@pytest.mark.parametrize(
    ("surface", "family", "intent", "asks"),
    [
        ("messages", "C", Intent("off", form="thinking"), True),  # gpt-oss's level: read from v0.23.4
        ("messages", "C", Intent("budget", budget=900, form="thinking"), True),
        ("messages", "C", Intent("on", form="thinking"), False),  # its default: nothing written
        ("messages", "A", Intent("off", form="thinking"), False),  # thinking disabled: every version
        ("chat", "A", Intent("off", form="reasoning_effort"), False),  # none: every version
        ("chat", "A", Intent("effort", effort="high", form="reasoning_effort"), True),
    ],
)
def test_ollama_is_asked_about_the_model_only_where_what_is_written_depends_on_it(
    surface: Surface, family: str, intent: Intent, asks: bool
) -> None:
    config = ThinkExtractConfig().for_model(MODELS[family])
    assert needs_model_info(intent, SURFACES[surface], "ollama", config) is asks
    assert needs_model_info(intent, SURFACES[surface], "vllm", config) is False
