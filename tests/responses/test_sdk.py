"""Conformance: the official openai SDK, strict validation, as the client of the Responses surface."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, setup

from ..responseswire import message, normalize, reasoning, sse, upstream

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

REASONING = "The user asks for 2+2. Adding: 2+2=4. Check <b>tags</b> and [brackets] stay."
ANSWER = "It is **4**. Use `<think>` literally in code."
TEXT = f"<think>{REASONING}</think>{ANSWER}"
PIECES = [TEXT[i : i + 4] for i in range(0, len(TEXT), 4)]  # 4-character deltas
SPLIT_TEXT = f"Quick answer: 4.<think>{REASONING}</think>{ANSWER}"
SPLIT_PIECES = [SPLIT_TEXT[i : i + 5] for i in range(0, len(SPLIT_TEXT), 5)]


def upstream_app(config: ThinkExtractConfig, pieces: list[str]) -> web.Application:
    """A model server answering in inline tags, behind the middleware."""
    events = upstream(pieces, model="local-model")

    async def responses(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            return web.json_response(events[-1]["response"])
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for event in events:
            await resp.write(sse([event]))
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, config)
    app.router.add_post("/v1/responses", responses)
    return app


async def serve(aiohttp_server: ServerFactory, pieces: list[str] = PIECES, **config: Any) -> str:
    server = await aiohttp_server(upstream_app(ThinkExtractConfig(**config), pieces))
    return str(server.make_url("/v1"))


def sync_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="x", base_url=base_url, max_retries=0, _strict_response_validation=True)


def async_client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="x", base_url=base_url, max_retries=0, _strict_response_validation=True)


def dump(output: list[Any]) -> Any:
    """Output items as the JSON they came from, reasoning ids normalized (``parsed: None`` is added
    by the stream helper's ParsedResponse to every output_text part: not on the wire)."""
    items = [item.model_dump(mode="json", exclude_unset=True) for item in output]
    for item in items:
        for part in item.get("content") or []:
            if part.get("parsed", 0) is None:
                del part["parsed"]
    return normalize(items)


def expected(fmt: str = "both") -> list[Any]:
    return [reasoning("rs_1", REASONING, fmt=fmt), message("msg_1", [ANSWER])]


ARGS: Any = {"model": "local-model", "input": "What is 2+2?"}


# -- sync (in a thread: the server runs on this loop) ---------------------------------------------


def sync_create(base_url: str) -> tuple[Any, str]:
    resp = sync_client(base_url).responses.create(**ARGS)
    return dump(resp.output), resp.output_text


def sync_create_stream(base_url: str) -> tuple[Any, list[str]]:
    with sync_client(base_url).responses.create(**ARGS, stream=True) as stream:
        events = list(stream)
    final = events[-1]
    assert final.type == "response.completed"
    return dump(final.response.output), [e.type for e in events]


def sync_stream_helper(base_url: str) -> tuple[Any, str, dict[str, str]]:
    """The final output, its text, and the reasoning streamed in each form (content, summary)."""
    kinds = {"response.reasoning_text.delta": "content", "response.reasoning_summary_text.delta": "summary"}
    streamed: dict[str, str] = {}
    with sync_client(base_url).responses.stream(**ARGS) as stream:
        for event in stream:
            if event.type in kinds:
                form = kinds[event.type]
                streamed[form] = streamed.get(form, "") + event.delta  # type: ignore[union-attr]
        final = stream.get_final_response()
    return dump(final.output), final.output_text, streamed


FORMATS = ["both", "content", "summary"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_sync_create(aiohttp_server: ServerFactory, fmt: str) -> None:
    base_url = await serve(aiohttp_server, responses_reasoning_format=fmt)
    output, text = await asyncio.to_thread(sync_create, base_url)
    assert (output, text) == (expected(fmt), ANSWER)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_sync_create_stream(aiohttp_server: ServerFactory, fmt: str) -> None:
    base_url = await serve(aiohttp_server, responses_reasoning_format=fmt)
    output, types = await asyncio.to_thread(sync_create_stream, base_url)
    assert output == expected(fmt)
    assert types[:2] == ["response.created", "response.in_progress"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_sync_stream_helper(aiohttp_server: ServerFactory, fmt: str) -> None:
    base_url = await serve(aiohttp_server, responses_reasoning_format=fmt)
    output, text, streamed = await asyncio.to_thread(sync_stream_helper, base_url)
    forms = {"both": ["content", "summary"], "content": ["content"], "summary": ["summary"]}[fmt]
    assert (output, text, streamed) == (expected(fmt), ANSWER, dict.fromkeys(forms, REASONING))


# -- async ----------------------------------------------------------------------------------------


async def test_async_create_stream_and_helper(aiohttp_server: ServerFactory) -> None:
    base_url = await serve(aiohttp_server)
    client = async_client(base_url)
    resp = await client.responses.create(**ARGS)
    assert (dump(resp.output), resp.output_text) == (expected(), ANSWER)
    stream = await client.responses.create(**ARGS, stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    assert dump(events[-1].response.output) == expected()
    async with client.responses.stream(**ARGS) as helper:
        final = await helper.get_final_response()
    assert (dump(final.output), final.output_text) == (expected(), ANSWER)


async def test_split_message_through_the_stream_helper(aiohttp_server: ServerFactory) -> None:
    base_url = await serve(aiohttp_server, SPLIT_PIECES)
    client = async_client(base_url)
    async with client.responses.stream(**ARGS) as helper:
        final = await helper.get_final_response()
    want = [message("msg_1", ["Quick answer: 4."]), reasoning("rs_1", REASONING), message("msg_1_1", ["\n" + ANSWER])]
    assert dump(final.output) == want
    assert final.output_text == "Quick answer: 4.\n" + ANSWER
    resp = await client.responses.create(**ARGS)
    assert (dump(resp.output), resp.output_text) == (want, final.output_text)


@pytest.mark.parametrize("pieces", [PIECES, SPLIT_PIECES])
async def test_completed_output_equals_the_non_stream_transform(aiohttp_server: ServerFactory, pieces: Any) -> None:
    base_url = await serve(aiohttp_server, pieces)
    client = async_client(base_url)
    stream = await client.responses.create(**ARGS, stream=True)
    events = [event async for event in stream]
    non_stream = await client.responses.create(**ARGS)
    assert dump(events[-1].response.output) == dump(non_stream.output)
    # And the streamed items, as the SDK read them from output_item.done, are the completed ones.
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert dump(done) == dump(events[-1].response.output)
