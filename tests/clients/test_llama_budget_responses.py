"""A reasoning budget the gateway enforces on the Responses surface, on the real ``llama-server``
(its ``/v1/responses``, which the pinned build serves): the tiny model under the grammar that thinks
long where it thinks. Through the middleware, a budget of N gives the client N reasoning deltas and
then an answer, stream and non-stream, read by the openai SDK's strict accumulator; the run prints
what it cost."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig
from gateway_mw.stats import ThinkExtractStats

from .llama import WORDS
from .thinking import BUDGET, Thinking, relaying

ROUTE = "/v1/responses"


@pytest.fixture
async def front(
    thinker: Thinking, aiohttp_server: Callable[[web.Application], Awaitable[TestServer]]
) -> AsyncIterator[tuple[str, ThinkExtractStats]]:
    config = ThinkExtractConfig(upstream_server="llamacpp", reasoning_budget_enforcement="gateway")
    async with relaying(thinker.base, aiohttp_server, ROUTE, config) as front:
        yield front


async def streamed(client: openai.AsyncOpenAI, question: str, budget: int | None) -> tuple[list[Any], Any, float]:
    """The events of one streamed response, its final response (the SDK's accumulator), the time."""
    extra = {} if budget is None else {"reasoning": {"max_tokens": budget}}
    start = time.perf_counter()
    async with client.responses.stream(model="m", input=question, extra_body=extra) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    return events, final, time.perf_counter() - start


def reasoning_deltas(events: list[Any]) -> list[str]:
    return [e.delta for e in events if e.type == "response.reasoning_text.delta"]


async def test_a_budget_on_the_real_server_s_responses(front: tuple[str, ThinkExtractStats]) -> None:
    url, stats = front
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    try:
        for k in range(100):  # a question the tiny model thinks on, under the server's seed (it may not)
            question = f"Question number {k}."
            free, free_final, free_took = await streamed(client, question, None)
            free_reasoning = reasoning_deltas(free)
            if free_reasoning:
                break
        assert len(free_reasoning) > BUDGET  # where it thinks, it thinks long (the grammar)
        cut, final, cut_took = await streamed(client, question, BUDGET)
        body = await client.responses.create(
            model="m", input=question, extra_body={"reasoning": {"max_tokens": BUDGET}}
        )
    finally:
        await client.close()
    assert reasoning_deltas(cut) == free_reasoning[:BUDGET]  # the same model, seed and prompt: the same start
    for response in (final, body):
        kinds = [item.type for item in response.output]
        assert kinds[0] == "reasoning" and kinds[-1] == "message"
        reasoning = response.output[0]
        assert reasoning.type == "reasoning" and reasoning.content is not None
        assert [c.text for c in reasoning.content] == ["".join(free_reasoning[:BUDGET])]
        words = response.output_text.split()
        assert 3 <= len(words) <= 5 and set(words) <= set(WORDS)  # an answer after the closing tag
        assert response.status == "completed"
    assert [e.type for e in cut].count("response.created") == 1
    assert [e.sequence_number for e in cut] == list(range(len(cut)))
    assert final.id == cut[0].response.id
    assert stats.surface("responses").budgets == {"continued": 2}
    usage_free, usage_cut = free_final.usage, final.usage
    assert usage_free is not None and usage_cut is not None
    print(
        f"\nResponses: reasoning deltas {len(free_reasoning)} without a budget, {len(reasoning_deltas(cut))} with"
        f" {BUDGET}; wall time {free_took * 1000:.0f} ms without, {cut_took * 1000:.0f} ms with;"
        f" input tokens {usage_free.input_tokens} (the request), {usage_cut.input_tokens} (the continuation);"
        f" output tokens {usage_free.output_tokens} without, {usage_cut.output_tokens} (the continuation)"
    )
