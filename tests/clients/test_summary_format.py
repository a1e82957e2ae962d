"""The same Responses clients with ``responses_reasoning_format=summary``: every one shows the reasoning,
and each sends it back in a shape of its own (measured here; what upstreams answer to each shape is in
``test_llama_server.py`` and docs/clients.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import Proxy
from .drive_aisdk import run as aisdk
from .drive_codex import items, tool_loop
from .drive_langchain import ask, make, reasoning_of, weather
from .expect import FINAL, TOOL
from .scripted import ScriptedUpstream

RS_ID = re.compile(r"rs_[0-9a-f]{32}")


def summary(text: str) -> list[dict[str, str]]:
    return [{"type": "summary_text", "text": text}]


def replayed(scripted: ScriptedUpstream) -> list[dict[str, Any]]:
    """The reasoning items and item references in the input of the request after the tool call."""
    _, second = scripted.posts("/responses")
    return [i for i in second["input"] if i.get("type") in ("reasoning", "item_reference")]


def test_codex(codex: Path, tmp_path: Path, summary_proxy: Proxy, scripted: ScriptedUpstream) -> None:
    events = tool_loop(codex, tmp_path, summary_proxy, scripted)
    assert [i["text"] for i in items(events, "reasoning")] == [TOOL.reasoning, FINAL.reasoning]
    (item,) = replayed(scripted)
    assert RS_ID.fullmatch(item.pop("id"))
    assert item == {"type": "reasoning", "summary": summary(TOOL.reasoning), "content": None, "encrypted_content": None}


@pytest.mark.parametrize("mode", ["generate", "stream"])
def test_ai_sdk(mode: str, node_modules: Path, summary_proxy: Proxy, scripted: ScriptedUpstream) -> None:
    shown = aisdk(node_modules, "responses", summary_proxy.base, mode, tools=True, model="scripted")
    assert [s["reasoningText"] for s in shown["steps"]] == [TOOL.reasoning, FINAL.reasoning]
    assert [s["text"] for s in shown["steps"]] == [TOOL.answer, FINAL.answer]
    reasoning, message = replayed(scripted)
    assert reasoning["type"] == "item_reference" and RS_ID.fullmatch(reasoning["id"])
    assert message == {"type": "item_reference", "id": "msg_scripted"}


@pytest.mark.parametrize("mode", ["invoke", "stream"])
def test_langchain(mode: str, summary_proxy: Proxy, scripted: ScriptedUpstream) -> None:
    model = make("ChatOpenAI(responses)", summary_proxy.base, "scripted").bind_tools([weather()])
    from langchain_core.messages import HumanMessage, ToolMessage  # installed with the client, checked by make()

    question = [HumanMessage("What is the weather in Paris?")]
    first = ask(model, mode, question)
    second = ask(model, mode, [*question, first, ToolMessage("sunny", tool_call_id=first.tool_calls[0]["id"])])
    assert [reasoning_of(first), reasoning_of(second)] == [[TOOL.reasoning], [FINAL.reasoning]]
    assert [first.text, second.text] == [TOOL.answer, FINAL.answer]
    (item,) = replayed(scripted)
    assert RS_ID.fullmatch(item.pop("id"))
    status = "completed" if mode == "invoke" else "in_progress"
    assert item == {"type": "reasoning", "summary": summary(TOOL.reasoning), "status": status}
