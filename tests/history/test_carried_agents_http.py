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

from ..hypothesis_examples import examples
from .strategies import configs

SYSTEM = "Be brief. " + "." * CARRIED_BYTES  # every body carries its reading
PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages"}


def _answer(surface: str, turn: int, calls: bool, model: str) -> dict[str, Any]:
    """What the upstream answers on ``turn``: its reasoning in the model's tags, maybe a tool call."""
    text = f"<think>Reason {turn}.</think>Answer {turn}."
    if surface == "messages":
        content: list[Any] = [{"type": "text", "text": text}]
        if calls:
            content.append({"type": "tool_use", "id": f"toolu_{turn}", "name": "weather", "input": {"city": "Paris"}})
        usage = {"input_tokens": 1, "output_tokens": 1}
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "usage": usage,
        }
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        function = {"name": "weather", "arguments": '{"city":"Paris"}'}
        message["tool_calls"] = [{"id": f"call_{turn}", "type": "function", "function": function}]
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {"id": "c", "object": "chat.completion", "created": 1, "model": model, "choices": [choice]}


def _sent_back(surface: str, turn: int, calls: bool, shape: str) -> list[dict[str, Any]]:
    """The answer as the agent sends it back (without its reasoning, with its tags, or in a field),
    and what it says next (the tool's result, or another question)."""
    text = f"<think>Reason {turn}.</think>Answer {turn}." if shape == "tagged" else f"Answer {turn}."
    if surface == "messages":
        content: list[Any] = [{"type": "text", "text": text}]
        if shape == "field":
            content.insert(0, {"type": "thinking", "thinking": f"Reason {turn}.", "signature": "sig"})
        if calls:
            content.append({"type": "tool_use", "id": f"toolu_{turn}", "name": "weather", "input": {"city": "Paris"}})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": "Sunny."}
        after = [result] if calls else f"And then {turn}?"
        return [{"role": "assistant", "content": content}, {"role": "user", "content": after}]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if shape == "field":
        message["reasoning_content"] = f"Reason {turn}."
    if calls:
        function = {"name": "weather", "arguments": '{"city":"Paris"}'}
        message["tool_calls"] = [{"id": f"call_{turn}", "type": "function", "function": function}]
        return [message, {"role": "tool", "tool_call_id": f"call_{turn}", "content": "Sunny."}]
    return [message, {"role": "user", "content": f"And then {turn}?"}]


@st.composite
def agents(draw: st.DrawFn, surface: str) -> list[tuple[int, bool, list[dict[str, Any]]]]:
    """An agent's requests: (turn, whether the upstream calls a tool, the messages sent)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather?"}]
    if surface == "chat":
        messages.insert(0, {"role": "system", "content": SYSTEM})
    requests = []
    for turn in range(draw(st.integers(2, 6))):
        calls = draw(st.booleans())
        requests.append((turn, calls, list(messages)))
        if draw(st.integers(0, 5)) == 0 and len(messages) > 3:  # it rewinds to an earlier point
            messages = messages[: draw(st.integers(1, len(messages) - 1))]
        if draw(st.integers(0, 2)) == 0:  # it rebuilds its history, each message's keys in another order
            messages = [dict(reversed(message.items())) for message in messages]
        messages += _sent_back(surface, turn, calls, draw(st.sampled_from(["dropped", "tagged", "field"])))
    return requests


def _carry_in(states: CarriedStates) -> CarriedStates:
    """Make ``states`` the readings the middleware carries (the one it replaces returned)."""
    kept: CarriedStates = getattr(incoming, "STATES")  # noqa: B009 (not exported: read where it is used)
    setattr(incoming, "STATES", states)  # noqa: B010
    return kept


async def _received(
    surface: str,
    config: ThinkExtractConfig,
    model: str,
    requests: list[tuple[int, bool, list[dict[str, Any]]]],
    carried: bool,
) -> list[bytes]:
    """The bodies the handler receives for ``requests`` (``carried``: the scope's readings carried
    from one to the next; else each request finds none)."""
    seen: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.read())
        turn, calls = int(request.headers["x-turn"]), request.headers["x-calls"] == "1"
        return web.json_response(_answer(surface, turn, calls, model))

    app = web.Application()
    setup(app, config)
    app.router.add_post(PATHS[surface], handler)
    server = TestServer(app)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as session:
            for turn, calls, messages in requests:
                if not carried:
                    _carry_in(CarriedStates())
                headers = {"Authorization": "Bearer sk-agent", "x-turn": str(turn), "x-calls": "1" if calls else "0"}
                body: dict[str, Any] = {"model": model, "messages": messages}
                if surface == "messages":
                    body.update(system=SYSTEM, max_tokens=64)
                async with session.post(server.make_url(PATHS[surface]), json=body, headers=headers) as resp:
                    assert resp.status == 200
                    await resp.read()
                await incoming.entries_handed_over()
                await app[THINKEXTRACT_RECORD].drain()
    finally:
        await server.close()
    return seen


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    surface=st.sampled_from(list(PATHS)),
    model=st.sampled_from(["qwen3-8b", "llama-3.1-8b", "gpt-oss-20b", "deepseek-r1"]),
    config=configs(),
)
def test_an_agents_requests_reach_the_handler_as_they_do_without_carried_readings(
    data: st.DataObject, surface: str, model: str, config: ThinkExtractConfig
) -> None:
    requests = data.draw(agents(surface))
    config = config.replace(messages_policy="unsigned")  # the messages surface on, its blocks unsigned
    kept = _carry_in(CarriedStates())
    try:
        with_carry = asyncio.run(_received(surface, config, model, requests, carried=True))
        without = asyncio.run(_received(surface, config, model, requests, carried=False))
    finally:
        _carry_in(kept)
    assert with_carry == without
