"""The reasoning record and a budget the gateway enforces, over loopback: an answer the budget did
not cut is one upstream answer, kept as it is without a budget, so that a client that does not send
its reasoning back gets it restored on its next turn all the same."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_REQUEST_BODY, ThinkExtractConfig, setup
from gateway_mw.record import ReasoningRecord, open_record

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
ROUTE = "/v1/chat/completions"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


ANSWER = [
    _chunk({"role": "assistant", "content": ""}),
    *(_chunk({"content": text}) for text in ("<think>", "r0 ", "r1 ", "r2 ", "</think>", "Four.")),
    _chunk({}, "stop"),
    b"data: [DONE]\n\n",
]


@pytest.mark.parametrize("budget", [None, 100], ids=["no_budget", "within"])
async def test_an_answer_within_its_budget_is_kept_in_the_record(
    aiohttp_server: ServerFactory, budget: int | None
) -> None:
    asked: list[dict[str, Any]] = []

    async def upstream(request: web.Request) -> web.StreamResponse:
        asked.append(json.loads(await request.read()))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for event in ANSWER:
            await resp.write(event)
        await resp.write_eof()
        return resp

    back = web.Application()
    back.router.add_post(ROUTE, upstream)
    back_server = await aiohttp_server(back)
    record: ReasoningRecord = open_record("memory")
    front = web.Application()
    config = ThinkExtractConfig(upstream_server="vllm", reasoning_budget_enforcement="gateway")
    setup(front, config, record=record)

    async def forward(request: web.Request) -> web.StreamResponse:
        body = request.get(THINKEXTRACT_REQUEST_BODY) or await request.read()
        async with aiohttp.ClientSession() as session, session.post(back_server.make_url(ROUTE), data=body) as up:
            resp = web.StreamResponse(status=up.status)
            resp.content_type = up.content_type
            await resp.prepare(request)
            async for piece in up.content.iter_any():
                await resp.write(piece)
            await resp.write_eof()
            return resp

    front.router.add_post(ROUTE, forward)
    url = (await aiohttp_server(front)).make_url(ROUTE)
    first: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "2+2?"}], "stream": True}
    if budget is not None:
        first["reasoning"] = {"max_tokens": budget}
    answered = {"role": "assistant", "content": "Four."}  # the reasoning not sent back
    then = {"model": "m", "stream": True, "messages": [*first["messages"], answered, {"role": "user", "content": "?"}]}
    async with aiohttp.ClientSession() as client:
        async with client.post(url, json=first) as resp:
            await resp.read()
        await record.drain()  # the record is written in the background
        async with client.post(url, json=then) as resp:
            await resp.read()
    await record.close()
    restored = {"role": "assistant", "content": "<think>r0 r1 r2 </think>Four."}
    assert asked[-1]["messages"] == [then["messages"][0], restored, then["messages"][2]]
