"""Codex CLI (``codex exec --json``) against the proxy, through a custom provider with ``wire_api = "responses"``.

Codex's reasoning place is the ``reasoning`` item of its JSON events (``item.completed``); its answer is
the ``agent_message`` item. It runs with a scratch ``CODEX_HOME`` whose ``config.toml`` points the
provider at the proxy and turns off analytics, feedback, telemetry export, update checks, web search,
history, and every feature that fetches something: plugins (remote ones, sharing), apps, skill search and
skill dependency installs, in-app updates, model discovery, the browser and computer use, the daemon,
tool suggestions and memories.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import Proxy
from .drive_codex import Codex, items, tool_loop
from .expect import FINAL, TOOL, llama_accepts_reasoning_item, turn_for
from .scripted import ScriptedUpstream


def test_agent_message_is_clean(codex: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream) -> None:
    """The part that works today, kept apart from the reasoning view below so it is proven either way."""
    events = Codex(codex, scripted_proxy.base, tmp_path).run("What is 2+2?")
    assert [i["text"] for i in items(events, "agent_message")] == [turn_for("scripted").answer]
    assert events[-1]["type"] == "turn.completed"


@pytest.mark.parametrize("upstream", ["demo", "scripted"])
def test_one_turn_shows_reasoning(
    upstream: str, codex: Path, tmp_path: Path, demo_proxy: Proxy, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    proxy = demo_proxy if upstream == "demo" else scripted_proxy
    turn = turn_for(upstream)
    events = Codex(codex, proxy.base, tmp_path).run("What is 2+2?")
    assert [i["text"] for i in items(events, "agent_message")] == [turn.answer]
    reasoning = [i["text"] for i in items(events, "reasoning")]
    if upstream == "demo":  # the demo model repeats the prompt Codex builds around the question
        assert len(reasoning) == 1 and reasoning[0].endswith(
            "What is 2+2? I am a demo model, so I plan a short answer."
        )
    else:
        assert reasoning == [turn.reasoning]


def test_tool_loop_replays_the_reasoning_item(
    codex: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    tool_loop(codex, tmp_path, scripted_proxy, scripted)
    first, second = scripted.posts("/responses")
    assert first["include"] == ["reasoning.encrypted_content"]
    history = second["input"][len(first["input"]) :]
    assert [i["type"] for i in history] == ["reasoning", "message", "function_call", "function_call_output"]
    # Codex sends the item back as it received it, its id included, with no encrypted_content.
    (reasoning,) = history[:1]
    assert re.fullmatch(r"rs_[0-9a-f]{32}", reasoning["id"])
    assert "encrypted_content" in reasoning and reasoning["encrypted_content"] is None
    assert llama_accepts_reasoning_item(reasoning, TOOL.reasoning), reasoning


def test_tool_loop_shows_reasoning(
    codex: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    events = tool_loop(codex, tmp_path, scripted_proxy, scripted)
    assert [i["text"] for i in items(events, "reasoning")] == [TOOL.reasoning, FINAL.reasoning]
