"""Conformance: the official anthropic SDK, strict validation, against the middleware over HTTP."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, setup

from ..conftest import Closing
from ..messageswire import (
    TOOL_USE,
    end,
    json_delta,
    message,
    message_start,
    rd,
    redacted_block,
    signature,
    sse,
    start,
    stop,
    tb,
    text,
    th,
    thinking_block,
    tool_start,
)

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

# A tag cut across deltas at both ends, and a tag in inline code that stays literal text.
PIECES = ["<thi", "nk>The user", " asks for 2+2 (é 日).", " 2+2=4.</th", "ink>It is **4**", ". Use `<think>` in code."]
REASONING = "The user asks for 2+2 (é 日). 2+2=4."
ANSWER = "It is **4**. Use `<think>` in code."
TOOL_JSON = ['{"a": 2', ', "b": 2}']
MODEL = "local-model"


def upstream_app(config: ThinkExtractConfig) -> web.Application:
    """A model server answering in inline tags, then calling a tool, behind the middleware."""

    async def messages(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            return web.json_response(
                message(tb("".join(PIECES)), TOOL_USE, model=body["model"], stop_reason="tool_use")
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse(message_start(body["model"]), start(0)))
        for piece in PIECES:
            await resp.write(sse(text(0, piece)))
        await resp.write(sse(stop(0), tool_start(1), *(json_delta(1, p) for p in TOOL_JSON), stop(1)))
        await resp.write(sse(*end("tool_use")))
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, config)
    app.router.add_post("/v1/messages", messages)
    return app


@pytest.fixture(params=["unsigned", "redacted"])
async def served(request: pytest.FixtureRequest, aiohttp_server: ServerFactory) -> tuple[str, str]:
    policy: str = request.param
    server = await aiohttp_server(upstream_app(ThinkExtractConfig(messages_policy=policy)))  # type: ignore[arg-type]
    return policy, str(server.make_url(""))


def sync_client(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="x", base_url=base_url, max_retries=0, _strict_response_validation=True)


def async_client(closing: Closing, base_url: str) -> anthropic.AsyncAnthropic:
    return closing(
        anthropic.AsyncAnthropic(api_key="x", base_url=base_url, max_retries=0, _strict_response_validation=True)
    )


ARGS: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "What is 2+2?"}]}

TOOL_BLOCK = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 2}}
EXPECTED_CONTENT = {
    "unsigned": [th(REASONING), tb(ANSWER), TOOL_BLOCK],
    "redacted": [rd(REASONING), tb(ANSWER), TOOL_BLOCK],
}
REASONING_FRAMES = {
    "unsigned": thinking_block(0, REASONING, "The user", " asks for 2+2 (é 日).", " 2+2=4."),
    "redacted": redacted_block(0, REASONING),
}
EXPECTED_FRAMES = [
    start(1),
    text(1, "It is **4**"),
    text(1, ". Use `<think>` in code."),
    stop(1),
    tool_start(2),
    *(json_delta(2, p) for p in TOOL_JSON),
    stop(2),
    *end("tool_use", thinking=3),  # the gateway's count of the reasoning events
]


def blocks(msg: Any) -> list[dict[str, Any]]:
    out = []
    for block in msg.content:
        dumped: dict[str, Any] = block.to_dict()
        dumped.pop("parsed_output", None)  # the stream helper's own attribute
        if dumped.get("citations", ()) is None:
            del dumped["citations"]
        out.append(dumped)
    return out


def check_message(policy: str, msg: Any) -> None:
    assert blocks(msg) == EXPECTED_CONTENT[policy]
    assert (msg.model, msg.stop_reason, msg.usage.output_tokens) == (MODEL, "tool_use", 20)
    reasoning = msg.content[0]
    if policy == "unsigned":
        assert reasoning.signature == signature(REASONING) and reasoning.signature.startswith("gw1:")
    else:
        assert base64.b64decode(reasoning.data).decode() == REASONING


async def test_create_non_stream_sync_and_async(served: tuple[str, str], closing: Closing) -> None:
    policy, url = served
    check_message(policy, await asyncio.to_thread(lambda: sync_client(url).messages.create(**ARGS)))
    check_message(policy, await async_client(closing, url).messages.create(**ARGS))


async def test_create_stream_frames_sync_and_async(served: tuple[str, str], closing: Closing) -> None:
    policy, url = served

    def sync() -> list[Any]:
        return list(sync_client(url).messages.create(**ARGS, stream=True))

    async_events = [e async for e in await async_client(closing, url).messages.create(**ARGS, stream=True)]
    expected = [message_start(MODEL), *REASONING_FRAMES[policy], *EXPECTED_FRAMES]
    for events in (await asyncio.to_thread(sync), async_events):
        assert [e.to_dict() for e in events] == expected


async def test_stream_helper_final_message_sync_and_async(served: tuple[str, str], closing: Closing) -> None:
    policy, url = served

    def sync() -> Any:
        with sync_client(url).messages.stream(**ARGS) as stream:
            return stream.get_final_message()

    check_message(policy, await asyncio.to_thread(sync))
    async with async_client(closing, url).messages.stream(**ARGS) as stream:
        final = await stream.get_final_message()
    check_message(policy, final)
    whole = await async_client(closing, url).messages.create(**ARGS)
    assert blocks(final)[0] == blocks(whole)[0]  # same signature (or data) stream and non-stream
