"""The messages surface over real HTTP on loopback, through the middleware: streams and bodies."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from gateway_mw import THINKEXTRACT_STATS, ModelProfile, ThinkExtractConfig, setup

from ..httpcuts import bytes_at_every_cut
from ..messageswire import (
    TOOL_USE,
    end,
    json_delta,
    message,
    message_start,
    rd,
    read_message,
    read_sse,
    redacted_block,
    sse,
    start,
    stop,
    tb,
    text,
    text_block,
    th,
    thinking_block,
    tool_start,
)

ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]
ROUTE = "/v1/messages"


def make_app(
    stream: bytes, body: dict[str, Any] | None = None, style: str = "writes", **config: Any
) -> web.Application:
    """An app whose handler answers ``stream`` (SSE) or ``body`` (JSON) in the given style."""
    raw = json.dumps(body).encode() if body is not None else b""

    async def handler(request: web.Request) -> web.StreamResponse:
        if body is not None:
            if style == "json_response":
                return web.json_response(body)
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.content_length = len(raw)
            await resp.prepare(request)
            await resp.write(raw[:20])
            await resp.write(raw[20:])
            await resp.write_eof()
            return resp
        if style == "body":
            return web.Response(body=stream, content_type="text/event-stream")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(0, len(stream), 13):  # odd pieces: events and characters are cut anywhere
            await resp.write(stream[i : i + 13])
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig(**config))
    app.router.add_post(ROUTE, handler)
    return app


async def fetch(aiohttp_client: ClientFactory, app: web.Application) -> tuple[aiohttp.ClientResponse, bytes]:
    client = await aiohttp_client(app)
    resp = await client.post(ROUTE, json={"model": "m", "max_tokens": 64, "messages": []})
    assert resp.status == 200
    return resp, await resp.read()


async def stream_events(aiohttp_client: ClientFactory, stream: bytes, **config: Any) -> list[Any]:
    _, body = await fetch(aiohttp_client, make_app(stream, **config))
    return read_sse(body)


async def message_body(aiohttp_client: ClientFactory, doc: dict[str, Any], **config: Any) -> dict[str, Any]:
    resp, body = await fetch(aiohttp_client, make_app(b"", doc, **config))
    assert int(resp.headers["Content-Length"]) == len(body)  # corrected for the new body
    return read_message(body)


# -- the three policies, every handler style ----------------------------------------------------

UPSTREAM = sse(message_start(), *text_block(0, "<think>Two plus", " two.</think>", "It is 4."), *end())
BODY = message(tb("<think>Two plus two.</think>It is 4."))
EXPECTED = {
    "unsigned": [
        message_start(),
        *thinking_block(0, "Two plus two.", "Two plus", " two."),
        *text_block(1, "It is 4."),
        *end(thinking=2),
    ],
    "redacted": [message_start(), *redacted_block(0, "Two plus two."), *text_block(1, "It is 4."), *end(thinking=2)],
}
EXPECTED_BODY = {
    "unsigned": message(th("Two plus two."), tb("It is 4.")),
    "redacted": message(rd("Two plus two."), tb("It is 4.")),
}


@pytest.mark.parametrize("style", ["writes", "body"])
@pytest.mark.parametrize("policy", ["unsigned", "redacted"])
async def test_stream_by_policy(aiohttp_client: ClientFactory, policy: str, style: str) -> None:
    client = await aiohttp_client(make_app(UPSTREAM, style=style, messages_policy=policy))
    resp = await client.post(ROUTE)
    assert read_sse(await resp.read()) == EXPECTED[policy]
    stats = client.app[THINKEXTRACT_STATS].snapshot()["messages"]
    assert (stats["seen"], stats["translated"], stats["reasoning_blocks"], stats["reasoning_chars"]) == (1, 1, 1, 13)


@pytest.mark.parametrize("style", ["writes", "json_response"])
@pytest.mark.parametrize("policy", ["unsigned", "redacted"])
async def test_body_by_policy(aiohttp_client: ClientFactory, policy: str, style: str) -> None:
    assert await message_body(aiohttp_client, BODY, style=style, messages_policy=policy) == EXPECTED_BODY[policy]


@pytest.mark.parametrize("style", ["writes", "body", "json"])
async def test_off_is_byte_identical(aiohttp_client: ClientFactory, style: str) -> None:
    body = BODY if style == "json" else None
    client = await aiohttp_client(make_app(UPSTREAM, body, style=style))
    resp = await client.post(ROUTE)
    assert await resp.read() == (json.dumps(BODY).encode() if body else UPSTREAM)
    assert client.app[THINKEXTRACT_STATS].snapshot()["messages"]["passed_through"] == {"disabled": 1}


async def test_global_off_wins_over_the_policy(aiohttp_client: ClientFactory) -> None:
    _, body = await fetch(aiohttp_client, make_app(UPSTREAM, enabled=False, messages_policy="unsigned"))
    assert body == UPSTREAM


# -- layouts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected", "expected_body"),
    [
        (
            "unsigned",
            [*text_block(0, "Hi "), *thinking_block(1, "a"), *text_block(2, "\nmid"), *thinking_block(3, "\nb")],
            [tb("Hi "), th("a"), tb("\nmid"), th("\nb")],
        ),
        (
            "redacted",
            [*text_block(0, "Hi "), *redacted_block(1, "a"), *text_block(2, "\nmid"), *redacted_block(3, "\nb")],
            [tb("Hi "), rd("a"), tb("\nmid"), rd("\nb")],
        ),
    ],
)
async def test_text_before_between_and_after_reasoning(
    aiohttp_client: ClientFactory, policy: str, expected: list[Any], expected_body: list[Any]
) -> None:
    pieces = ("Hi <thi", "nk>a</think>mid<think>b", "</think>end")
    events = await stream_events(
        aiohttp_client, sse(message_start(), *text_block(0, *pieces), *end()), messages_policy=policy
    )
    assert events == [message_start(), *expected, *text_block(4, "\nend"), *end(thinking=1)]
    doc = message(tb("".join(pieces)))
    assert await message_body(aiohttp_client, doc, messages_policy=policy) == message(*expected_body, tb("\nend"))


async def test_tool_use_after_text_is_renumbered(aiohttp_client: ClientFactory) -> None:
    upstream = sse(
        message_start(),
        *text_block(0, "<think>I should add.</think>Let me", " add."),
        tool_start(1),
        json_delta(1, '{"a": 2'),
        json_delta(1, ', "b": 2}'),
        stop(1),
        *end("tool_use"),
    )
    assert await stream_events(aiohttp_client, upstream, messages_policy="unsigned") == [
        message_start(),
        *thinking_block(0, "I should add."),
        *text_block(1, "Let me", " add."),
        tool_start(2),
        json_delta(2, '{"a": 2'),
        json_delta(2, ', "b": 2}'),
        stop(2),
        *end("tool_use", thinking=1),
    ]
    doc = message(tb("<think>I should add.</think>Let me add."), TOOL_USE, stop_reason="tool_use")
    assert await message_body(aiohttp_client, doc, messages_policy="redacted") == message(
        rd("I should add."), tb("Let me add."), TOOL_USE, stop_reason="tool_use"
    )


@pytest.mark.parametrize(
    ("mode", "expected", "expected_body"),
    [
        ("live", [*thinking_block(0, "abc</thi", "abc", "</thi"), *end(thinking=1)], message(th("abc</thi"))),
        ("buffered", [*text_block(0, "<think>abc</thi"), *end()], None),  # never was a block: the body is unchanged
    ],
)
async def test_unclosed_block_at_end(
    aiohttp_client: ClientFactory, mode: str, expected: list[Any], expected_body: dict[str, Any] | None
) -> None:
    upstream = sse(message_start(), *text_block(0, "<think>abc", "</thi"), *end())
    events = await stream_events(aiohttp_client, upstream, messages_policy="unsigned", stream_mode=mode)
    assert events == [message_start(), *expected]
    doc = message(tb("<think>abc</thi"))
    _, body = await fetch(aiohttp_client, make_app(b"", doc, messages_policy="unsigned", stream_mode=mode))
    assert read_message(body) == (expected_body or doc)


async def test_start_with_reasoning_by_profile(aiohttp_client: ClientFactory) -> None:
    config: dict[str, Any] = {
        "messages_policy": "unsigned",
        "profiles": (ModelProfile(match="deepseek-r1*", start_with_reasoning=True),),
    }
    model = "deepseek-r1-distill-qwen"
    upstream = sse(message_start(model), *text_block(0, "Step one", "</think>Answer"), *end())
    assert await stream_events(aiohttp_client, upstream, **config) == [
        message_start(model),
        *thinking_block(0, "Step one"),
        *text_block(1, "Answer"),
        *end(thinking=1),
    ]
    doc = message(tb("Step one</think>Answer"), model=model)
    assert await message_body(aiohttp_client, doc, **config) == message(th("Step one"), tb("Answer"), model=model)


async def test_gomodel_defect_10_regression(aiohttp_client: ClientFactory) -> None:
    """GoModel sent thinking blocks without a ``signature`` key, and redacted streams that opened
    ``{"type":"redacted_thinking","text":""}`` followed by thinking deltas. Here: the SDK's strict
    types accept every event, thinking starts carry ``"signature":""`` and one signature_delta
    before their stop, redacted blocks carry their data in the start and get no delta at all."""
    for policy, block in (("unsigned", thinking_block(0, "r")), ("redacted", redacted_block(0, "r"))):
        upstream = sse(message_start(), *text_block(0, "<think>r</think>"), *end())
        assert await stream_events(aiohttp_client, upstream, messages_policy=policy) == [
            message_start(),
            *block,
            *end(thinking=1),
        ]
    assert block == [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "cg=="}},
        {"type": "content_block_stop", "index": 0},
    ]


# -- cuts, faults, the end of the stream --------------------------------------------------------


async def test_every_byte_offset_cut_gives_identical_bytes(aiohttp_client: ClientFactory) -> None:
    start_event = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "m",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }
    body = sse(start_event, *text_block(0, "a<think>é日", "🙂</think>b"), tool_start(1), stop(1), *end())

    async def client_for(handler: Any) -> Any:
        app = web.Application()
        setup(app, ThinkExtractConfig(messages_policy="unsigned"))
        app.router.add_post(ROUTE, handler)
        return await aiohttp_client(app)

    outputs = await bytes_at_every_cut(client_for, ROUTE, body)
    assert len(outputs) == 1
    assert read_sse(outputs.pop()) == [
        start_event,
        *text_block(0, "a"),
        *thinking_block(1, "é日🙂", "é日", "🙂"),
        *text_block(2, "\nb"),
        tool_start(3),
        stop(3),
        *end(thinking=2),
    ]


async def test_unreadable_event_mid_stream_goes_after_the_held_text(aiohttp_client: ClientFactory) -> None:
    broken = b"event: content_block_delta\ndata: {oops\n\n"
    upstream = sse(message_start(), start(0), text(0, "<think>abc")) + broken + sse(text(0, "</think>ok"), stop(0))
    client = await aiohttp_client(make_app(upstream + sse(*end()), messages_policy="redacted"))
    events = read_sse(await (await client.post(ROUTE)).read())
    assert events == [message_start(), *redacted_block(0, "abc"), "{oops", *text_block(1, "ok"), *end(thinking=1)]
    stats = client.app[THINKEXTRACT_STATS].snapshot()["messages"]
    assert (stats["translated"], stats["translation_errors"], stats["unreadable_events"]) == (1, 0, 1)


async def test_dropped_upstream_still_closes_what_was_open(aiohttp_client: ClientFactory) -> None:
    async def dropping(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse(message_start(), start(0), text(0, "<think>partial</thi")))
        raise aiohttp.ClientPayloadError("upstream went away")

    app = web.Application()
    setup(app, ThinkExtractConfig(messages_policy="unsigned"))
    app.router.add_post(ROUTE, dropping)
    client = await aiohttp_client(app)
    resp = await client.post(ROUTE)
    received = b""
    with pytest.raises(aiohttp.ClientPayloadError):
        async for piece in resp.content.iter_any():
            received += piece
    assert read_sse(received) == [message_start(), *thinking_block(0, "partial</thi", "partial", "</thi")]
