"""A reasoning budget the gateway enforces on Anthropic messages (``/v1/messages``): through the
middleware, over real HTTP, to an emulated messages endpoint that thinks until it is stopped. The
client gets at most N ``thinking_delta`` events, the thinking block closed with the gateway's
signature of its text, then the continuation's answer, as one message."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import anthropic
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import BUDGET_MESSAGE
from gateway_mw.controls import read_intent, read_with_texts, write_controls
from gateway_mw.marks import gateway_signature
from gateway_mw.surfaces.registry import SURFACES

from ..relay import Front as AnyFront
from ..relay import Fronts
from .messages_thinker import MessagesThinker, assert_one_message
from .thinker import ANSWER, token

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "Qwen/Qwen3-8B"
ROUTE = "/v1/messages"


Front = AnyFront[MessagesThinker]
Start = Callable[..., Awaitable[Front]]


@pytest.fixture
async def start(aiohttp_server: ServerFactory) -> AsyncIterator[Start]:
    async with Fronts(aiohttp_server) as fronts:

        async def make(thinker: MessagesThinker, whole: bool = False, **settings: Any) -> Front:
            back = web.Application()
            back.router.add_post(ROUTE, thinker.messages)
            settings = {"messages_policy": "unsigned", "reasoning_budget_enforcement": "gateway"} | settings
            config = ThinkExtractConfig(upstream_server=thinker.server, reasoning_store="off", **settings)
            return await fronts.make(thinker, back, config, [ROUTE], whole=whole)

        yield make


def request(think: str, budget: int | None, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 1000, "stream": True}
    body["messages"] = [{"role": "user", "content": think}]
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return body | more


async def events(front: Front, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The client's stream: each event's name and data."""
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert resp.status == 200
        raw = await resp.read()
    assert raw.endswith(b"\n\n")
    out = []
    for block in raw.decode().split("\n\n")[:-1]:
        name, data = block.split("\n")
        assert name.startswith("event: ") and data.startswith("data: "), block
        out.append((name[len("event: ") :], json.loads(data[len("data: ") :])))
    return out


def thought(budget: int) -> str:
    return "".join(token(i) for i in range(budget))


def prefill(budget: int) -> str:
    return "<think>" + thought(budget) + BUDGET_MESSAGE + "</think>"


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("budget", [0, 1, 5, 32])
async def test_a_budget_ends_the_thinking_and_the_model_answers(start: Start, native: bool, budget: int) -> None:
    front = await start(MessagesThinker("llamacpp", native=native))
    stream = await events(front, request("think", budget))
    thinking = [d["delta"]["thinking"] for n, d in stream if d.get("delta", {}).get("type") == "thinking_delta"]
    assert thinking == [token(i) for i in range(budget)]
    message = assert_one_message(stream)
    assert message["content"] == [
        {"type": "thinking", "thinking": thought(budget), "signature": gateway_signature(thought(budget))},
        {"type": "text", "text": "".join(ANSWER)},
    ]
    assert (message["id"], message["model"], message["stop_reason"]) == ("msg_1", MODEL, "end_turn")

    first, second = await front.thinker.over()
    assert first.stopped and budget <= first.generated < 100_000  # the model stopped generating
    assert not second.stopped and second.generated == len(ANSWER)
    asked = [*first.body["messages"], {"role": "assistant", "content": prefill(budget)}]
    assert second.body == first.body | {"messages": asked, "max_tokens": 1000 - budget}
    assert "thinking" not in first.body  # llama.cpp's own budget would cut first
    # The usage: both requests' input, and what the servers reported of the output (the cut one none).
    assert message["usage"] == {
        "input_tokens": 1 + 1 + len(prefill(budget).split()),
        "output_tokens": second.generated,
    }
    stats = front.stats.surface("messages")
    assert (stats.budgets, stats.budget_reasoning_events) == ({"continued": 1}, budget)


async def test_a_client_that_asks_for_no_stream_gets_one_body(start: Start) -> None:
    front = await start(MessagesThinker("llamacpp"))
    body = request("think", 3, stream=False)
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert resp.status == 200 and resp.content_type == "application/json"
        body = await resp.json()
    first, second = await front.thinker.over()
    assert first.body["stream"] is True and second.body["stream"] is True  # asked for as streams
    assert body == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            {"type": "thinking", "thinking": thought(3), "signature": gateway_signature(thought(3))},
            {"type": "text", "text": "".join(ANSWER)},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 2 + len(prefill(3).split()), "output_tokens": second.generated},
    }


async def test_the_anthropic_sdk_reads_one_message(start: Start) -> None:
    """The SDK's accumulator (``get_final_message``) and its non-stream ``create`` read one message."""
    front = await start(MessagesThinker("llamacpp"))
    client = anthropic.AsyncAnthropic(base_url=front.url, api_key="x", max_retries=0)
    try:
        async with client.messages.stream(
            model=MODEL,
            max_tokens=1000,
            messages=[{"role": "user", "content": "think"}],
            thinking={"type": "enabled", "budget_tokens": 4},
        ) as stream:
            streamed = await stream.get_final_message()
        created = await client.messages.create(
            model=MODEL,
            max_tokens=1000,
            messages=[{"role": "user", "content": "think"}],
            thinking={"type": "enabled", "budget_tokens": 4},
        )
    finally:
        await client.close()
    for message in (streamed, created):
        assert [block.model_dump(exclude_none=True) for block in message.content] == [
            {"type": "thinking", "thinking": thought(4), "signature": gateway_signature(thought(4))},
            {"type": "text", "text": "".join(ANSWER)},
        ]
        assert message.stop_reason == "end_turn"
    assert front.stats.surface("messages").budgets == {"continued": 2}


async def test_a_thinking_within_the_budget_goes_as_without_one(start: Start) -> None:
    front = await start(MessagesThinker("llamacpp"))
    free = await events(front, request("think 3", None))
    within = await events(front, request("think 3", 10))
    strip = {"message_start"}  # each answer its own id
    assert [e for e in within if e[0] not in strip] == [e for e in free if e[0] not in strip]
    assert len(front.thinker.served) == 2
    assert front.stats.surface("messages").budgets == {"within": 1}


@pytest.mark.parametrize("fault", ["refused", "dropped"])
async def test_a_continuation_that_fails_ends_the_message_where_it_was(start: Start, fault: str) -> None:
    thinker = MessagesThinker("llamacpp", fail=503 if fault == "refused" else None, drop=fault == "dropped")
    front = await start(thinker)
    stream = await events(front, request("think", 2))
    message = assert_one_message(stream)
    said = "".join(ANSWER[:1]) if fault == "dropped" else ""
    blocks = [{"type": "thinking", "thinking": thought(2), "signature": gateway_signature(thought(2))}]
    if said:
        blocks.append({"type": "text", "text": said})
    assert message["content"] == blocks
    assert message["stop_reason"] == "max_tokens"
    assert front.stats.surface("messages").budgets == {"continuation_failed": 1}


async def test_a_model_that_thinks_again_is_not_cut_twice(start: Start) -> None:
    front = await start(MessagesThinker("llamacpp", reopen=True))
    message = assert_one_message(await events(front, request("think", 2)))
    assert [b["type"] for b in message["content"]] == ["thinking", "thinking", "text"]
    assert message["content"][1]["thinking"] == "more "
    assert message["content"][1]["signature"] == gateway_signature("more ")


async def test_reads_that_hold_several_events_are_cut_at_the_budget(start: Start) -> None:
    """The model wrote past the budget before the gateway could stop it: the client gets N."""
    front = await start(MessagesThinker("llamacpp", batch=7))
    stream = await events(front, request("think", 3))
    message = assert_one_message(stream)
    assert message["content"][0]["thinking"] == thought(3)
    first, second = await front.thinker.over()
    assert first.generated > 3
    assert second.body["messages"][-1] == {"role": "assistant", "content": prefill(3)}


async def test_a_limit_the_thinking_used_up_is_not_continued(start: Start) -> None:
    front = await start(MessagesThinker("llamacpp"))
    message = assert_one_message(await events(front, request("think", 4, max_tokens=4)))
    assert message["stop_reason"] == "max_tokens" and message["content"][0]["thinking"] == thought(4)
    assert len(await front.thinker.over()) == 1
    assert front.stats.surface("messages").budgets == {"not_continued": 1}


@pytest.mark.parametrize("server", ["vllm", "sglang"])
async def test_servers_whose_messages_endpoint_cannot_continue_get_no_gateway_budget(start: Start, server: str) -> None:
    """vLLM's and SGLang's messages endpoints build their chat request with no
    ``continue_final_message``: the gateway does not cut what it could not continue."""
    front = await start(MessagesThinker(server))
    message = assert_one_message(await events(front, request("think 12", 3)))
    assert message["content"][0]["thinking"] == thought(12)
    assert front.stats.surface("messages").budgets == {}


async def test_under_the_redacted_policy_the_server_keeps_its_budget(start: Start) -> None:
    """Redacted thinking reaches the client whole when it ends: nothing to count as it streams."""
    front = await start(MessagesThinker("llamacpp"), messages_policy="redacted", reasoning_budget_enforcement="auto")
    stream = await events(front, request("think 5", 3))
    (served,) = await front.thinker.over()
    assert served.body["thinking"] == {"type": "enabled", "budget_tokens": 3}  # llama.cpp's own
    assert [d["content_block"]["type"] for n, d in stream if n == "content_block_start"] == [
        "redacted_thinking",
        "text",
    ]
    assert front.stats.surface("messages").budgets == {}


async def test_a_continuation_answered_with_one_body_is_the_rest_of_the_stream(start: Start) -> None:
    front = await start(MessagesThinker("llamacpp", whole=True))
    message = assert_one_message(await events(front, request("think", 3)))
    assert message["content"] == [
        {"type": "thinking", "thinking": thought(3), "signature": gateway_signature(thought(3))},
        {"type": "text", "text": "".join(ANSWER)},
    ]
    assert front.stats.surface("messages").budgets == {"continued": 1}


async def test_a_client_gone_before_the_continuation_gets_none(start: Start) -> None:
    """The client leaves after N thinking events while the model goes on: no continuation."""
    budget = 2
    thinker = MessagesThinker("llamacpp", wait_at=budget)
    front = await start(thinker)
    thinker.wait = front.client_gone
    seen = 0
    async with aiohttp.ClientSession() as session:
        resp = await session.post(front.url + ROUTE, json=request("think", budget))
        async for line in resp.content:
            seen += b'"thinking_delta"' in line
            if seen == budget:
                break
        resp.connection.transport.close()  # type: ignore[union-attr]
        resp.close()
    served = await thinker.over()
    assert len(served) == 1 and served[0].stopped


ON = "chat_template_kwargs.enable_thinking=true, chat_template_kwargs.thinking=true"
SWITCH = {"chat_template_kwargs": b'{"enable_thinking":true,"thinking":true}'}
REMOVED = SWITCH | {"thinking": None}


@pytest.mark.parametrize(
    ("server", "enforcement", "policy", "stream", "expected"),
    [
        # auto: llama.cpp's own budget (the client's thinking.budget_tokens, left as it came)
        ("llamacpp", "auto", "unsigned", True, (ON, "applied", False, SWITCH)),
        # gateway: the client's thinking would be llama.cpp's budget, and it would cut first
        (
            "llamacpp",
            "gateway",
            "unsigned",
            True,
            (
                f"{ON}, thinking removed, budget 64 enforced by the gateway",
                "applied",
                True,
                SWITCH | {"thinking": None},
            ),
        ),
        (
            "llamacpp",
            "gateway",
            "unsigned",
            False,
            (
                f"{ON}, thinking removed, budget 64 enforced by the gateway, stream=true",
                "applied",
                True,
                SWITCH | {"thinking": None, "stream": b"true"},
            ),
        ),
        # redacted: nothing to count as it streams, so the server's
        ("llamacpp", "gateway", "redacted", True, (ON, "applied", False, SWITCH)),
        # vLLM's messages endpoint continues no final assistant message: thinking on, no budget
        ("vllm", "gateway", "unsigned", True, (ON, "nearest", False, SWITCH)),
        # off: no one's budget, llama.cpp's neither
        (
            "llamacpp",
            "off",
            "unsigned",
            True,
            (f"{ON}, thinking removed", "nearest", False, SWITCH | {"thinking": None}),
        ),
    ],
)
def test_who_enforces_a_budget_on_messages(
    server: str, enforcement: str, policy: str, stream: bool, expected: tuple[str, str, bool, dict[str, Any]]
) -> None:
    body = json.dumps(request("Hi", 64, stream=stream)).encode()
    both = read_with_texts(body, SURFACES["messages"].controls)
    assert both is not None
    fields, texts = both
    config = ThinkExtractConfig(
        upstream_server=server,  # type: ignore[arg-type]
        reasoning_budget_enforcement=enforcement,  # type: ignore[arg-type]
        messages_policy=policy,  # type: ignore[arg-type]
    )
    intent = read_intent(body, SURFACES["messages"], fields, texts)
    controlled = write_controls(intent, fields, SURFACES["messages"], server, config.for_model(None))
    assert (controlled.written, controlled.outcome, controlled.by_gateway, dict(controlled.edits)) == expected


@pytest.mark.parametrize("whole", [False, True])
async def test_a_thinking_within_the_budget_not_streamed_is_the_message(start: Start, whole: bool) -> None:
    """A client that asks for no stream, a thinking within the budget (or a handler that returns the
    whole stream, which the gateway cannot cut): the body the stream makes, its block signed as the
    translator signs it."""
    front = await start(MessagesThinker("llamacpp"), whole=whole)
    body = request("think 3", 2 if whole else 10, stream=False)
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert (resp.status, resp.content_type) == (200, "application/json")
        message = await resp.json()
    assert message["content"] == [
        {"type": "thinking", "thinking": thought(3), "signature": gateway_signature(thought(3))},
        {"type": "text", "text": "".join(ANSWER)},
    ]
    # The server counts no thinking of its own: the gateway's count of the 3 thinking events is written.
    details = {"output_tokens_details": {"thinking_tokens": 3}}
    assert message["usage"] == {"input_tokens": 2, "output_tokens": 3 + 2 + len(ANSWER)} | details
    assert front.stats.surface("messages").budgets == {"not_relayed" if whole else "within": 1}
