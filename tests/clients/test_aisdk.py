"""The Vercel AI SDK (``ai`` with ``@ai-sdk/openai-compatible``, ``@ai-sdk/anthropic`` and
``@ai-sdk/openai``'s ``.responses()``) against the proxy: ``generateText`` and ``streamText``.

The SDK's reasoning place is ``reasoningText`` (per step, and the final one), streamed as
``reasoning-start`` / ``reasoning-delta`` / ``reasoning-end`` parts. ``tests/clients/aisdk.mjs`` makes one
call and prints what the SDK shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import Proxy
from .drive_aisdk import run
from .expect import FINAL, TOOL, turn_for
from .scripted import ScriptedUpstream


def expected_parts(steps: int, tool_first: bool) -> list[list[str]]:
    """The part types of ``steps`` steps (reasoning deltas left out), a tool call closing the first one."""
    parts: list[list[str]] = []
    for n in range(steps):
        parts += [["reasoning-start"], ["reasoning-end"], ["text-start"], ["text-end"]]
        if tool_first and n == 0:
            parts.append(["tool-call"])
        parts.append(["finish-step"])
    return parts


def squash(parts: list[list[str]]) -> tuple[list[list[str]], list[str]]:
    """(part types with the deltas left out, the reasoning text of each reasoning run)."""
    kinds: list[list[str]] = []
    texts: list[str] = []
    for part in parts:
        if part[0] == "reasoning-delta":
            texts[-1] += part[1]
        else:
            kinds.append(part)
            if part[0] == "reasoning-start":
                texts.append("")
    return kinds, texts


def cases() -> list[Any]:
    out = []
    for upstream in ("demo", "scripted"):
        for provider in ("chat", "anthropic", "responses"):
            for mode in ("generate", "stream"):
                marks: list[Any] = []
                out.append(pytest.param(upstream, provider, mode, marks=marks, id=f"{upstream}-{provider}-{mode}"))
    return out


@pytest.mark.parametrize(("upstream", "provider", "mode"), cases())
def test_one_turn_shows_reasoning_and_clean_answer(
    upstream: str,
    provider: str,
    mode: str,
    node_modules: Path,
    demo_proxy: Proxy,
    scripted_proxy: Proxy,
    scripted: ScriptedUpstream,
) -> None:
    proxy = demo_proxy if upstream == "demo" else scripted_proxy
    turn = turn_for(upstream)
    shown = run(node_modules, provider, proxy.base, mode)
    assert shown["text"] == turn.answer
    assert shown["reasoningText"] == turn.reasoning
    assert shown["steps"] == [{"text": turn.answer, "reasoningText": turn.reasoning, "toolCalls": []}]
    if mode == "stream":
        kinds, texts = squash(shown["parts"])
        assert kinds == expected_parts(1, tool_first=False)
        assert texts == [turn.reasoning]


def tool_cases() -> list[Any]:
    return [
        pytest.param(p, m, id=f"{p}-{m}") for p in ("chat", "anthropic", "responses") for m in ("generate", "stream")
    ]


@pytest.mark.parametrize(("provider", "mode"), tool_cases())
def test_tool_turn_and_replayed_second_turn(
    provider: str, mode: str, node_modules: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    shown = run(node_modules, provider, scripted_proxy.base, mode, tools=True)
    weather = {"toolName": "get_weather", "input": {"city": "Paris"}}
    assert shown["steps"] == [
        {"text": TOOL.answer, "reasoningText": TOOL.reasoning, "toolCalls": [weather]},
        {"text": FINAL.answer, "reasoningText": FINAL.reasoning, "toolCalls": []},
    ]
    if mode == "stream":
        kinds, texts = squash(shown["parts"])
        assert kinds == expected_parts(2, tool_first=True)
        assert texts == [TOOL.reasoning, FINAL.reasoning]

    arguments = json.dumps({"city": "Paris"}, separators=(",", ":"))
    if provider == "chat":
        (body,) = scripted.posts("/chat/completions")[1:]
        # The AI SDK sends the reasoning back in reasoning_content.
        assert body["messages"][1:] == [
            {
                "role": "assistant",
                "content": TOOL.answer,
                "reasoning_content": TOOL.reasoning,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ]
    elif provider == "anthropic":
        (body,) = scripted.posts("/messages")[1:]
        (assistant, result) = body["messages"][1:]
        signature = assistant["content"][0]["signature"]
        assert signature.startswith("gw1:")
        assert assistant == {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": TOOL.reasoning, "signature": signature},
                {"type": "text", "text": TOOL.answer},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        }
        assert result == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}],
        }
    else:
        (body,) = scripted.posts("/responses")[1:]
        # With its default store=true the AI SDK sends earlier output items back as references to their
        # ids, the gateway's own reasoning id included: an id the upstream never issued (docs/clients.md).
        reference, *rest = body["input"][1:]
        assert reference["type"] == "item_reference" and re.fullmatch(r"rs_[0-9a-f]{32}", reference["id"])
        assert rest == [
            {"type": "item_reference", "id": "msg_scripted"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": arguments},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        ]


@pytest.mark.parametrize("mode", ["generate", "stream"])
def test_responses_store_false_sends_the_turn_inline(
    mode: str, node_modules: Path, summary_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    """With ``store: false`` no reference is sent: the assistant text and the call go inline, and the
    reasoning is left out (measured with the summary format, which the AI SDK shows)."""
    shown = run(node_modules, "responses", summary_proxy.base, mode, tools=True, model="scripted", store=False)
    assert [s["reasoningText"] for s in shown["steps"]] == [TOOL.reasoning, FINAL.reasoning]
    _, second = scripted.posts("/responses")
    assert second["store"] is False
    assert second["input"][1:] == [
        {"role": "assistant", "content": TOOL.answer},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]
