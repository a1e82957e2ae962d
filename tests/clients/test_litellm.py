"""LiteLLM's ``completion`` against the proxy on its three provider routes to a self-hosted server.

LiteLLM's reasoning place is ``message.reasoning_content`` (streamed: ``delta.reasoning_content``), and
``message.thinking_blocks`` on the Anthropic route. The remote cost map is never fetched
(``LITELLM_LOCAL_MODEL_COST_MAP=True``) and telemetry is off.
"""

from __future__ import annotations

import json

import pytest

from .conftest import Proxy
from .drive_litellm import ROUTES, WEATHER, complete
from .expect import FINAL, TOOL, turn_for
from .scripted import ScriptedUpstream


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("upstream", ["demo", "scripted"])
def test_one_turn_shows_reasoning_and_clean_answer(
    upstream: str, route: str, stream: bool, demo_proxy: Proxy, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    proxy = demo_proxy if upstream == "demo" else scripted_proxy
    turn = turn_for(upstream)
    message, streamed = complete(route, proxy.base, [{"role": "user", "content": "What is 2+2?"}], stream)
    assert message.content == turn.answer
    assert message.reasoning_content == turn.reasoning
    assert streamed == (turn.reasoning if stream else "")
    if route == "anthropic/":
        (block,) = message.thinking_blocks
        assert block["type"] == "thinking" and block["thinking"] == turn.reasoning
        assert block["signature"].startswith("gw1:")


@pytest.mark.parametrize("route", list(ROUTES))
def test_tool_turn_and_replayed_second_turn(route: str, scripted_proxy: Proxy, scripted: ScriptedUpstream) -> None:
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    first, _ = complete(route, scripted_proxy.base, question, tools=[WEATHER])
    assert first.content == TOOL.answer and first.reasoning_content == TOOL.reasoning
    ((call_id, name, args),) = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in first.tool_calls]
    assert (name, args) == ("get_weather", {"city": "Paris"})

    turn = [*question, first.model_dump(), {"role": "tool", "tool_call_id": call_id, "content": "sunny"}]
    second, _ = complete(route, scripted_proxy.base, turn, tools=[WEATHER])
    assert second.content == FINAL.answer and second.reasoning_content == FINAL.reasoning

    if route == "anthropic/":
        (body,) = scripted.posts("/messages")[1:]
        signature = first.thinking_blocks[0]["signature"]
        assert body["messages"][1:] == [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": TOOL.reasoning, "signature": signature},
                    {"type": "text", "text": TOOL.answer},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
        ]
    else:
        (body,) = scripted.posts("/chat/completions")[1:]
        # LiteLLM sends the reasoning back in reasoning_content, the field it read it from, and the name
        # it did not read (the gateway writes both) in its provider_specific_fields, which it sends too.
        assert body["messages"][1:] == [
            {
                "content": TOOL.answer,
                "role": "assistant",
                "tool_calls": [
                    {
                        "function": {"arguments": json.dumps({"city": "Paris"}), "name": "get_weather"},
                        "id": "call_1",
                        "type": "function",
                    }
                ],
                "reasoning_content": TOOL.reasoning,
                "provider_specific_fields": {"reasoning": TOOL.reasoning},
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ]
