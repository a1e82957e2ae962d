"""A reasoning budget the gateway enforces on Anthropic messages, on the real ``llama-server`` (its
``/v1/messages``, which the pinned build serves): the tiny model under a grammar that thinks long where
it thinks. Through the middleware, a budget of N gives the client N ``thinking_delta`` events, the
thinking block signed and closed, then an answer after the closing tag, as one message, streamed or
not; the anthropic SDK's accumulator reads it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import anthropic
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig
from gateway_mw.marks import gateway_signature
from gateway_mw.stats import ThinkExtractStats

from ..controls.messages_thinker import assert_one_message
from .llama import WORDS
from .thinking import BUDGET, Thinking, relaying

ROUTE = "/v1/messages"


@pytest.fixture
async def front(
    thinker: Thinking, aiohttp_server: Callable[[web.Application], Awaitable[TestServer]]
) -> AsyncIterator[tuple[str, ThinkExtractStats]]:
    config = ThinkExtractConfig(
        upstream_server="llamacpp", reasoning_budget_enforcement="gateway", messages_policy="unsigned"
    )
    async with relaying(thinker.base, aiohttp_server, ROUTE, config) as front:
        yield front


def body(question: str, budget: int | None, stream: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "m", "max_tokens": 256, "stream": stream}
    out["messages"] = [{"role": "user", "content": question}]
    if budget is not None:
        out["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return out


async def streamed(url: str, request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    async with aiohttp.ClientSession() as session, session.post(url + ROUTE, json=request) as resp:
        assert resp.status == 200
        raw = (await resp.read()).decode()
    out = []
    for frame in raw.split("\n\n")[:-1]:
        name, data = frame.split("\n")
        out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def thinking_events(stream: list[tuple[str, dict[str, Any]]]) -> list[str]:
    deltas = [d["delta"] for _, d in stream if d["type"] == "content_block_delta"]
    return [d["thinking"] for d in deltas if d["type"] == "thinking_delta" and d["thinking"]]


async def question_it_thinks_on(url: str) -> tuple[str, list[str]]:
    """A question the tiny model thinks on, under the server's seed (it may not), and its thinking."""
    for k in range(100):
        question = f"Question number {k}."
        free = thinking_events(await streamed(url, body(question, None)))
        if free:
            return question, free
    raise AssertionError("the model thought on none of 100 questions")


def assert_answered(message: dict[str, Any], thinking: list[str]) -> None:
    """The thinking the client got, signed; then an answer of the grammar's words."""
    text = "".join(thinking)
    first, *rest = message["content"]
    assert first == {"type": "thinking", "thinking": text, "signature": gateway_signature(text)}
    words = "".join(b["text"] for b in rest if b["type"] == "text").split()
    assert 3 <= len(words) <= 5 and set(words) <= set(WORDS)  # an answer after the closing tag
    assert message["stop_reason"] == "end_turn"


async def test_a_budget_on_the_real_server_streamed(front: tuple[str, ThinkExtractStats]) -> None:
    url, stats = front
    question, free = await question_it_thinks_on(url)
    assert len(free) > BUDGET  # where it thinks, it thinks long (the grammar)
    start = time.perf_counter()
    whole = await streamed(url, body(question, None))
    free_took = time.perf_counter() - start
    start = time.perf_counter()
    stream = await streamed(url, body(question, BUDGET))
    cut_took = time.perf_counter() - start
    cut = thinking_events(stream)
    assert cut == free[:BUDGET]  # the same model, seed and prompt: the same start
    message = assert_one_message(stream)
    assert_answered(message, cut)
    assert stats.surface("messages").budgets == {"continued": 1}
    usage_free = assert_one_message(whole)["usage"]
    print(
        f"\nthinking events: {len(free)} without a budget, {len(cut)} with {BUDGET};"
        f" wall time {free_took * 1000:.0f} ms without, {cut_took * 1000:.0f} ms with;"
        f" usage without {usage_free}, with {message['usage']} (both requests' input summed)"
    )


async def test_a_budget_on_the_real_server_not_streamed(front: tuple[str, ThinkExtractStats]) -> None:
    url, stats = front
    question, free = await question_it_thinks_on(url)
    request = body(question, BUDGET, stream=False)
    async with aiohttp.ClientSession() as session, session.post(url + ROUTE, json=request) as resp:
        assert resp.status == 200 and resp.content_type == "application/json"
        message = await resp.json()
    assert_answered(message, free[:BUDGET])
    assert stats.surface("messages").budgets == {"continued": 1}


async def test_the_anthropic_sdk_reads_one_message_from_the_real_server(front: tuple[str, ThinkExtractStats]) -> None:
    url, stats = front
    question, free = await question_it_thinks_on(url)
    client = anthropic.AsyncAnthropic(base_url=url, api_key="x", max_retries=0)
    try:
        async with client.messages.stream(
            model="m",
            max_tokens=256,
            messages=[{"role": "user", "content": question}],
            thinking={"type": "enabled", "budget_tokens": BUDGET},
        ) as stream:
            message = await stream.get_final_message()
    finally:
        await client.close()
    assert_answered(message.model_dump(exclude_none=True), free[:BUDGET])
    assert stats.surface("messages").budgets == {"continued": 1}
