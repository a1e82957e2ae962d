"""LangChain's chat models against the proxy: what ``content_blocks`` shows, and what a tool turn sends back.

LangChain's reasoning place is ``content_blocks``: ``{"type": "reasoning", "reasoning": text}``. Its
answer is ``.text``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Proxy
from .drive_langchain import ask, make, reasoning_of, weather
from .expect import FINAL, TOOL, llama_accepts_reasoning_item, turn_for
from .scripted import ScriptedUpstream

CLIENTS = ["ChatOpenAI", "ChatOpenAI(responses)", "ChatDeepSeek", "ChatAnthropic"]
STREAMED_REPLAY = (
    "a client limit, not the gateway's: ChatOpenAI(use_responses_api=True).stream shows the summary but builds "
    "the item it replays from summary events only, with content: [] (llama.cpp answers 400 to that; "
    "invoke replays the item whole); see docs/clients.md"
)


def cases() -> list[Any]:
    out = []
    for upstream in ("demo", "scripted"):
        for client in CLIENTS:
            for mode in ("invoke", "stream"):
                marks: list[Any] = []
                out.append(pytest.param(upstream, client, mode, marks=marks, id=f"{upstream}-{client}-{mode}"))
    return out


@pytest.mark.parametrize(("upstream", "client", "mode"), cases())
def test_one_turn_shows_reasoning_and_clean_answer(
    upstream: str, client: str, mode: str, demo_proxy: Proxy, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    proxy = demo_proxy if upstream == "demo" else scripted_proxy
    turn = turn_for(upstream)
    message = ask(make(client, proxy.base), mode, "What is 2+2?")
    assert message.text == turn.answer
    # ChatOpenAI on chat completions keeps no field outside the OpenAI schema: it has no reasoning place.
    assert reasoning_of(message) == ([] if client == "ChatOpenAI" else [turn.reasoning])


# What each client sends back in the assistant turn of its second request (measured).
Replay = Callable[[dict[str, Any], Any], None]


def _replayed_chat(body: dict[str, Any], first: Any) -> None:
    # Neither ChatOpenAI nor ChatDeepSeek sends the reasoning back on chat completions.
    assert body["messages"][1:] == [
        {
            "content": TOOL.answer,
            "role": "assistant",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_1",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
                }
            ],
        },
        {"content": "sunny", "role": "tool", "tool_call_id": "call_1"},
    ]


def _replayed_messages(body: dict[str, Any], first: Any) -> None:
    (signature,) = [b["extras"]["signature"] for b in first.content_blocks if b.get("type") == "reasoning"]
    assert signature.startswith("gw1:")
    assistant, result = body["messages"][1:]
    assert assistant["role"] == "assistant"
    assert [dict(sorted(b.items())) for b in assistant["content"]] == [
        {"signature": signature, "thinking": TOOL.reasoning, "type": "thinking"},
        {"text": TOOL.answer, "type": "text"},
        {"id": "toolu_1", "input": {"city": "Paris"}, "name": "get_weather", "type": "tool_use"},
    ]
    assert result == {
        "role": "user",
        "content": [{"type": "tool_result", "content": "sunny", "tool_use_id": "toolu_1", "is_error": False}],
    }


def _replayed_responses(body: dict[str, Any], first: Any) -> None:
    items = body["input"][1:]
    assert [i["type"] for i in items] == ["reasoning", "message", "function_call", "function_call_output"]
    assert llama_accepts_reasoning_item(items[0], TOOL.reasoning), items[0]
    assert items[1]["content"][0]["text"] == TOOL.answer
    assert items[3] == {"type": "function_call_output", "output": "sunny", "call_id": "call_1"}


REPLAY: dict[str, tuple[str, Replay]] = {
    "ChatOpenAI": ("/chat/completions", _replayed_chat),
    "ChatOpenAI(responses)": ("/responses", _replayed_responses),
    "ChatDeepSeek": ("/chat/completions", _replayed_chat),
    "ChatAnthropic": ("/messages", _replayed_messages),
}


def tool_cases() -> list[Any]:
    out = []
    for client in CLIENTS:
        for mode in ("invoke", "stream"):
            marks = []
            if client == "ChatOpenAI(responses)" and mode == "stream":
                marks = [pytest.mark.xfail(strict=True, reason=STREAMED_REPLAY)]
            out.append(pytest.param(client, mode, marks=marks, id=f"{client}-{mode}"))
    return out


@pytest.mark.parametrize(("client", "mode"), tool_cases())
def test_tool_turn_and_replayed_second_turn(
    client: str, mode: str, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    model = make(client, scripted_proxy.base).bind_tools([weather()])
    from langchain_core.messages import HumanMessage, ToolMessage

    question = [HumanMessage("What is the weather in Paris?")]
    first = ask(model, mode, question)
    assert [(c["name"], c["args"]) for c in first.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert first.text == TOOL.answer
    visible = client != "ChatOpenAI"
    assert reasoning_of(first) == ([TOOL.reasoning] if visible else [])

    second = ask(model, mode, [*question, first, ToolMessage("sunny", tool_call_id=first.tool_calls[0]["id"])])
    assert second.text == FINAL.answer
    assert reasoning_of(second) == ([FINAL.reasoning] if visible else [])

    suffix, replayed = REPLAY[client]
    bodies = scripted.posts(suffix)
    assert len(bodies) == 2
    replayed(bodies[1], first)
