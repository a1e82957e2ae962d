"""LangChain's chat models against the proxy: what ``content_blocks`` shows, and what a tool turn sends back.

LangChain's reasoning place is ``content_blocks``: ``{"type": "reasoning", "reasoning": text}``. Its
answer is ``.text``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Proxy, require
from .expect import FINAL, TOOL, llama_accepts_reasoning_item, turn_for
from .scripted import ScriptedUpstream


def _models() -> Any:
    try:
        from langchain_anthropic import ChatAnthropic
        from langchain_deepseek import ChatDeepSeek
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        require(False, f"the LangChain clients are not installed ({exc}): pip install -e '.[clients]'")
    return ChatOpenAI, ChatDeepSeek, ChatAnthropic


def make(client: str, base: str, model: str = "demo") -> Any:
    chat_openai, chat_deepseek, chat_anthropic = _models()
    common: dict[str, Any] = {"model": model, "api_key": "unused", "max_retries": 0, "timeout": 60}
    if client == "ChatOpenAI":
        return chat_openai(base_url=f"{base}/v1", **common)
    if client == "ChatOpenAI(responses)":
        return chat_openai(base_url=f"{base}/v1", use_responses_api=True, **common)
    if client == "ChatDeepSeek":
        return chat_deepseek(api_base=f"{base}/v1", **common)
    return chat_anthropic(base_url=base, max_tokens=512, **common)


def reasoning_of(message: Any) -> list[str]:
    return [b["reasoning"] for b in message.content_blocks if b.get("type") == "reasoning" and "reasoning" in b]


def ask(model: Any, mode: str, messages: Any) -> Any:
    if mode == "invoke":
        return model.invoke(messages)
    merged = None
    for chunk in model.stream(messages):
        merged = chunk if merged is None else merged + chunk
    return merged


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


def _weather() -> Any:
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    return get_weather


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
    model = make(client, scripted_proxy.base).bind_tools([_weather()])
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
