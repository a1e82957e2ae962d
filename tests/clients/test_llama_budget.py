"""A reasoning budget the gateway enforces, on the real ``llama-server``: the tiny model under a grammar
that thinks long (60 to 80 words) where it thinks, then answers. Through the middleware, a budget of N
gives the client N reasoning events and then an answer; the run prints what it cost (the reasoning
events, the wall time with and without the budget, the continuation's prompt tokens)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig
from gateway_mw.stats import ThinkExtractStats

from .llama import WORDS
from .thinking import BUDGET, Thinking, relaying


@pytest.fixture
async def front(
    thinker: Thinking, aiohttp_server: Callable[[web.Application], Awaitable[TestServer]]
) -> AsyncIterator[tuple[str, ThinkExtractStats]]:
    config = ThinkExtractConfig(upstream_server="llamacpp", reasoning_budget_enforcement="gateway")
    async with relaying(thinker.base, aiohttp_server, "/v1/chat/completions", config) as front:
        yield front


async def answer(url: str, question: str, budget: int | None) -> tuple[list[dict[str, Any]], float]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": question}], "stream": True}
    body["stream_options"] = {"include_usage": True}
    if budget is not None:
        body["reasoning"] = {"max_tokens": budget}
    start = time.perf_counter()
    async with aiohttp.ClientSession() as session, session.post(url + "/v1/chat/completions", json=body) as resp:
        raw = await resp.read()
    took = time.perf_counter() - start
    blocks = raw.decode().split("\n\n")[:-1]
    assert blocks[-1] == "data: [DONE]" and sum(b == "data: [DONE]" for b in blocks) == 1
    return [json.loads(b[len("data: ") :]) for b in blocks[:-1]], took


def texts(chunks: list[dict[str, Any]], name: str) -> list[str]:
    return [c["choices"][0]["delta"][name] for c in chunks if c["choices"] and c["choices"][0]["delta"].get(name)]


async def test_a_budget_on_the_real_server(front: tuple[str, ThinkExtractStats]) -> None:
    url, stats = front
    for k in range(100):  # a question the tiny model thinks on, under the server's seed (it may not)
        question = f"Question number {k}."
        free, free_took = await answer(url, question, None)
        free_reasoning = texts(free, "reasoning_content")
        if free_reasoning:
            break
    assert len(free_reasoning) > BUDGET  # where it thinks, it thinks long (the grammar)
    cut, cut_took = await answer(url, question, BUDGET)
    cut_reasoning = texts(cut, "reasoning_content")
    assert cut_reasoning == free_reasoning[:BUDGET]  # the same model, seed and prompt: the same start
    words = "".join(texts(cut, "content")).split()
    assert 3 <= len(words) <= 5 and set(words) <= set(WORDS)  # an answer after the closing tag
    # One id throughout (llama.cpp stamps each chunk with the second it wrote it in, and a busy
    # machine spreads one stream over several: ``created`` is not compared).
    assert len({c["id"] for c in cut}) == 1
    assert stats.surface("chat").budgets == {"continued": 1}
    body = {"model": "m", "messages": [{"role": "user", "content": question}], "reasoning": {"max_tokens": BUDGET}}
    async with aiohttp.ClientSession() as session, session.post(url + "/v1/chat/completions", json=body) as resp:
        whole = await resp.json()
    message = whole["choices"][0]["message"]  # asked for as a stream, given as the body it makes
    assert (message["reasoning_content"], message["content"]) == (
        "".join(cut_reasoning),
        "".join(texts(cut, "content")),
    )
    assert whole["choices"][0]["finish_reason"] == "stop"
    assert stats.surface("chat").budgets == {"continued": 2}
    usage_free, usage_cut = free[-1]["usage"], cut[-1]["usage"]
    print(
        f"\nreasoning events: {len(free_reasoning)} without a budget, {len(cut_reasoning)} with {BUDGET};"
        f" wall time {free_took * 1000:.0f} ms without, {cut_took * 1000:.0f} ms with;"
        f" prompt tokens {usage_free['prompt_tokens']} (the request),"
        f" {usage_cut['prompt_tokens']} (the continuation); completion tokens"
        f" {usage_free['completion_tokens']} without, {usage_cut['completion_tokens']} (the continuation)"
    )
