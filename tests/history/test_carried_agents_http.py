"""An agent's requests over real HTTP through the middleware, its reasoning record in memory: every
body the handler receives is the one the same requests give when no reading is carried from one
request to the next (whatever the agent sends back, rewinds to, or writes in another key order)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_mw import THINKEXTRACT_RECORD, ThinkExtractConfig, incoming, setup
from gateway_mw.history.carry import CARRIED_BYTES, CarriedStates

from .strategies import configs

SYSTEM = {"role": "system", "content": "Be brief. " + "." * CARRIED_BYTES}  # every body carries its reading
CALL = {"id": "call_{n}", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}


def _answer(turn: int, calls: bool) -> dict[str, Any]:
    """What the upstream answers on ``turn``: its reasoning in the model's tags, maybe a tool call."""
    message: dict[str, Any] = {"role": "assistant", "content": f"<think>Reason {turn}.</think>Answer {turn}."}
    if calls:
        message["tool_calls"] = [{**CALL, "id": f"call_{turn}"}]
    return message


def _sent_back(answer: dict[str, Any], turn: int, shape: str) -> dict[str, Any]:
    """The answer as the agent sends it back: without its reasoning, with its tags, or in a field."""
    message = {key: value for key, value in answer.items() if key != "content"}
    if shape == "dropped":
        message["content"] = f"Answer {turn}."
    elif shape == "tagged":
        message["content"] = answer["content"]
    else:
        message["reasoning_content"] = f"Reason {turn}."
        message["content"] = f"Answer {turn}."
    return message


@st.composite
def agents(draw: st.DrawFn) -> list[tuple[int, bool, list[dict[str, Any]]]]:
    """An agent's requests: (turn, whether the upstream calls a tool, the messages sent)."""
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": "Weather?"}]
    requests = []
    for turn in range(draw(st.integers(2, 6))):
        calls = draw(st.booleans())
        requests.append((turn, calls, list(messages)))
        if draw(st.integers(0, 5)) == 0 and len(messages) > 3:  # it rewinds to an earlier point
            messages = messages[: draw(st.integers(2, len(messages) - 1))]
        if draw(st.integers(0, 5)) == 0:  # it rebuilds its history, each message's keys in another order
            messages = [dict(reversed(message.items())) for message in messages]
        shape = draw(st.sampled_from(["dropped", "tagged", "field"]))
        messages.append(_sent_back(_answer(turn, calls), turn, shape))
        if calls:
            messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "Sunny."})
        else:
            messages.append({"role": "user", "content": f"And then {turn}?"})
    return requests


def _carry_in(states: CarriedStates) -> CarriedStates:
    """Make ``states`` the readings the middleware carries (the one it replaces returned)."""
    kept: CarriedStates = getattr(incoming, "STATES")  # noqa: B009 (not exported: read where it is used)
    setattr(incoming, "STATES", states)  # noqa: B010
    return kept


async def _received(
    config: ThinkExtractConfig, model: str, requests: list[tuple[int, bool, list[dict[str, Any]]]], carried: bool
) -> list[bytes]:
    """The bodies the handler receives for ``requests`` (``carried``: the scope's readings carried
    from one to the next; else each request finds none)."""
    seen: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.read())
        turn, calls = int(request.headers["x-turn"]), request.headers["x-calls"] == "1"
        choice = {"index": 0, "message": _answer(turn, calls), "finish_reason": "stop"}
        return web.json_response(
            {"id": "c", "object": "chat.completion", "created": 1, "model": model, "choices": [choice]}
        )

    app = web.Application()
    setup(app, config)
    app.router.add_post("/v1/chat/completions", handler)
    server = TestServer(app)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as session:
            for turn, calls, messages in requests:
                if not carried:
                    _carry_in(CarriedStates())
                headers = {"Authorization": "Bearer sk-agent", "x-turn": str(turn), "x-calls": "1" if calls else "0"}
                body = {"model": model, "messages": messages}
                async with session.post(server.make_url("/v1/chat/completions"), json=body, headers=headers) as resp:
                    assert resp.status == 200
                    await resp.read()
                await incoming.entries_handed_over()
                await app[THINKEXTRACT_RECORD].drain()
    finally:
        await server.close()
    return seen


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=agents(),
    model=st.sampled_from(["qwen3-8b", "llama-3.1-8b", "gpt-oss-20b", "deepseek-r1"]),
    config=configs(),
)
def test_an_agents_requests_reach_the_handler_as_they_do_without_carried_readings(
    requests: list[tuple[int, bool, list[dict[str, Any]]]], model: str, config: ThinkExtractConfig
) -> None:
    kept = _carry_in(CarriedStates())
    try:
        with_carry = asyncio.run(_received(config, model, requests, carried=True))
        without = asyncio.run(_received(config, model, requests, carried=False))
    finally:
        _carry_in(kept)
    assert with_carry == without
