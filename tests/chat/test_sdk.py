"""Conformance: the official openai SDK (strict validation) and aiohttp-sse-client as real clients."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from aiohttp_sse_client import client as sse_client

from gateway_mw import ThinkExtractConfig, setup

from ..chatwire import chunk, sse

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

REASONING = "The user asks for 2+2. Adding: 2+2=4. Check <b>tags</b> and [brackets] stay."
ANSWER = "It is **4**. Use `<think>` literally in code."
TEXT = f"<think>{REASONING}</think>{ANSWER}"
PIECES = [TEXT[i : i + 4] for i in range(0, len(TEXT), 4)]  # 4-character deltas


def upstream_app(config: ThinkExtractConfig) -> web.Application:
    """A model server answering in inline tags, behind the middleware."""

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": "chatcmpl-9",
                    "object": "chat.completion",
                    "created": 1730000000,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": TEXT},
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 30, "total_tokens": 35},
                }
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse(chunk("", delta={"role": "assistant"})))
        for piece in PIECES:
            await resp.write(sse(chunk(piece)))
        await resp.write(sse(chunk("", finish="stop")))
        usage = {"prompt_tokens": 5, "completion_tokens": 30, "total_tokens": 35}
        await resp.write(sse(chunk(choices=[], usage=usage), "[DONE]"))
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, config)
    app.router.add_post("/v1/chat/completions", completions)
    return app


@pytest.fixture
async def base_url(aiohttp_server: ServerFactory) -> str:
    server = await aiohttp_server(upstream_app(ThinkExtractConfig()))
    return str(server.make_url("/v1"))


MESSAGES: Any = [{"role": "user", "content": "What is 2+2?"}]


def sync_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="x", base_url=base_url, max_retries=0, _strict_response_validation=True)


def async_client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="x", base_url=base_url, max_retries=0, _strict_response_validation=True)


def message_of(completion: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = completion.choices[0].message.model_dump(exclude_none=True)
    return dumped


# The default chat_reasoning_field="both": the same text under each name, for the SDK's users to read either.
EXPECTED_MESSAGE = {"role": "assistant", "content": ANSWER, "reasoning_content": REASONING, "reasoning": REASONING}


async def test_non_stream_sync_and_async(base_url: str) -> None:
    def sync() -> Any:
        return sync_client(base_url).chat.completions.create(model="m", messages=MESSAGES)

    assert message_of(await asyncio.to_thread(sync)) == EXPECTED_MESSAGE
    completion = await async_client(base_url).chat.completions.create(model="m", messages=MESSAGES)
    assert message_of(completion) == EXPECTED_MESSAGE
    assert completion.choices[0].message.model_extra == {"reasoning_content": REASONING, "reasoning": REASONING}


async def test_stream_helper_sync_and_async(base_url: str) -> None:
    def sync() -> Any:
        with sync_client(base_url).chat.completions.stream(model="m", messages=MESSAGES) as stream:
            return stream.get_final_completion()

    final = await asyncio.to_thread(sync)
    assert message_of(final) == EXPECTED_MESSAGE
    async with async_client(base_url).chat.completions.stream(model="m", messages=MESSAGES) as stream:
        final = await stream.get_final_completion()
    assert message_of(final) == EXPECTED_MESSAGE


def deltas(chunks: list[Any]) -> list[tuple[str | None, str | None]]:
    """(reasoning, content) of every chunk with a choice; the reasoning the same under both names."""
    out = []
    for c in chunks:
        assert c.object == "chat.completion.chunk" and c.id == "chatcmpl-1"
        if c.choices:
            delta = c.choices[0].delta
            extra = delta.model_extra or {}
            assert extra.get("reasoning_content") == extra.get("reasoning")
            out.append((extra.get("reasoning_content"), delta.content))
    return out


async def test_raw_stream_never_mixes_or_duplicates(base_url: str) -> None:
    def sync() -> list[Any]:
        return list(sync_client(base_url).chat.completions.create(model="m", messages=MESSAGES, stream=True))

    sync_chunks = await asyncio.to_thread(sync)
    stream = await async_client(base_url).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    async_chunks = [c async for c in stream]
    for chunks in (sync_chunks, async_chunks):
        pairs = deltas(chunks)
        assert "".join(r or "" for r, _ in pairs) == REASONING
        assert "".join(c or "" for _, c in pairs) == ANSWER
        assert all(not (r and c) for r, c in pairs)  # one kind per chunk
        assert chunks[-1].usage is not None and chunks[-1].choices == []
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


async def test_aiohttp_sse_client_consumer(base_url: str) -> None:
    received: list[dict[str, Any]] = []
    async with sse_client.EventSource(
        base_url + "/chat/completions",
        option={"method": "POST"},
        json={"model": "m", "messages": MESSAGES, "stream": True},
        reconnection_time=__import__("datetime").timedelta(seconds=0),
        max_connect_retry=0,
    ) as source:
        async for event in source:
            if event.data == "[DONE]":
                break
            received.append(json.loads(event.data))
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in received if c["choices"])
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in received if c["choices"])
    assert (reasoning, content) == (REASONING, ANSWER)
