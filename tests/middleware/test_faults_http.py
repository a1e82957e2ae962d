"""A hostile upstream over real HTTP: truncated tails, unreadable events, giant events, BOMs, CRLF.

Each test sends what an upstream sends on a bad day through the middleware and asserts the exact
bytes the client receives, and what an SSE parser recovers from them, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from gateway_mw import THINKEXTRACT_STATS, ThinkExtractConfig, setup
from gateway_mw.sse import BOM

from ..chatwire import ENVELOPE, choice, chunk, read_sse, sse
from ..lossless import parse_sse, recovered

ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]
ROUTE = "/v1/chat/completions"


def scripted(*pieces: bytes, delay: float = 0.0) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """An upstream that writes exactly these pieces, then ends the response."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in pieces:
            await resp.write(piece)
            if delay:
                await asyncio.sleep(delay)
        await resp.write_eof()
        return resp

    return handler


async def through(aiohttp_client: ClientFactory, handler: Any, **config: Any) -> tuple[bytes, dict[str, Any]]:
    app = web.Application()
    setup(app, ThinkExtractConfig(**config))
    app.router.add_post(ROUTE, handler)
    client = await aiohttp_client(app)
    resp = await client.post(ROUTE)
    body = await resp.read()
    return body, client.app[THINKEXTRACT_STATS].snapshot()["chat"]


def held(text: str) -> dict[str, Any]:
    """The chunk the middleware writes for text a scanner held."""
    return {**ENVELOPE, "choices": [choice(0, {"content": text})]}


# -- 1. held text at an unfinished tail ---------------------------------------------------------


@pytest.mark.parametrize(
    "tail",
    [b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"nk>', b": keepal", b"data: [DONE]"],
    ids=["half-event", "comment", "done-without-blank-line"],
)
async def test_held_text_reaches_the_client_before_an_unfinished_tail(
    aiohttp_client: ClientFactory, tail: bytes
) -> None:
    body, _ = await through(aiohttp_client, scripted(sse(chunk("Hello <thi")), tail))
    assert body == sse(chunk("Hello "), held("<thi")) + tail
    assert recovered(body) == [("content", "Hello "), ("content", "<thi")]


async def test_a_held_buffered_block_reaches_the_client_before_an_unfinished_tail(
    aiohttp_client: ClientFactory,
) -> None:
    tail = b'data: {"choices":[{"index":0,"delta":{"content":"</thi'
    body, stats = await through(
        aiohttp_client, scripted(sse(chunk("Hi <think>a long"), chunk(" thought")), tail), stream_mode="buffered"
    )
    assert body == sse(chunk("Hi "), held("<think>a long thought")) + tail
    assert "".join(text for _, text in recovered(body)) == "Hi <think>a long thought"
    assert stats["unclosed_blocks"] == 1


# -- 2. held text before an event passed through untouched --------------------------------------

UNREADABLE = [
    b'data: {"choices":[{"index":0,"delta":{"content":-Infinity}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":NaN}}]}\n\n',
    b'data: {"choices":[{"index":1e999,"delta":{"content":"x"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"\xff\xfe"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"x"}]}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"x"}}\n\n',
]


@pytest.mark.parametrize("bad", UNREADABLE, ids=["-inf", "nan", "1e999", "bad-utf8", "parts", "truncated"])
async def test_held_text_goes_out_before_an_unreadable_event(aiohttp_client: ClientFactory, bad: bytes) -> None:
    upstream = sse(chunk("Hello <thi")) + bad + sse(chunk("nk>r</think>answer"), "[DONE]")
    body, stats = await through(aiohttp_client, scripted(upstream))
    # The partial tag cannot wait across an event nobody can read: it goes out as text, first.
    assert body == sse(chunk("Hello "), held("<thi")) + bad + sse(chunk("nk>r</think>answer"), "[DONE]")
    assert stats["unreadable_events"] == 1


async def test_an_error_event_without_an_error_key_comes_after_the_held_text(aiohttp_client: ClientFactory) -> None:
    error = b'event: error\ndata: {"message":"upstream overloaded"}\n\n'
    body, _ = await through(aiohttp_client, scripted(sse(chunk("Hello <thi")), error))
    assert body == sse(chunk("Hello "), held("<thi")) + error
    assert parse_sse(body)[-1] == '{"message":"upstream overloaded"}'


# -- 3. fail open per event -----------------------------------------------------------------------


async def test_one_odd_event_does_not_switch_translation_off(aiohttp_client: ClientFactory) -> None:
    deep = b"data: " + b"[" * 3000 + b"]" * 3000 + b"\n\n"
    odd_number = b'data: {"created":1e999,"model":"m","choices":[{"index":0,"delta":{"content":"<think>a"}}]}\n\n'
    upstream = sse(chunk("x")) + deep + odd_number + sse(chunk("</think>b"), chunk("<think>c</think>d"), "[DONE]")
    body, stats = await through(aiohttp_client, scripted(upstream))
    assert recovered(body) == [
        ("content", "x"),
        ("reasoning", "a"),  # the odd number stays as it was written, and the event is translated
        ("content", "\nb"),
        ("reasoning", "\nc"),
        ("content", "\nd"),
    ]
    assert b'"created":1e999' in body.split(b"\n\n")[2]
    assert (stats["unreadable_events"], stats["translation_errors"]) == (1, 0)


# -- 4/5. giant events and "\r\n" streams ---------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
async def test_an_event_over_the_cap_streams_through_raw_and_translation_resumes(
    aiohttp_client: ClientFactory, eol: bytes
) -> None:
    giant = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"g" * 5000 + b'"}}]}' + eol + eol
    before = sse(chunk("Hello <thi")).replace(b"\n", eol)
    after = sse(chunk("<think>r</think>a")).replace(b"\n", eol)
    pieces = [before, *(giant[i : i + 700] for i in range(0, len(giant), 700)), after]
    body, stats = await through(aiohttp_client, scripted(*pieces), max_event_bytes=1024)
    expected = sse(chunk("Hello "), held("<thi")).replace(b"\n", eol) + giant
    expected += sse(chunk(delta={"reasoning_content": "r", "reasoning": "r"}), chunk("\na")).replace(b"\n", eol)
    assert body == expected
    assert recovered(body) == [
        ("content", "Hello "),
        ("content", "<thi"),
        ("content", "g" * 5000),
        ("reasoning", "r"),
        ("content", "\na"),  # content re-entered: the separator
    ]
    assert stats["oversized_events"] == 1


async def test_a_megabyte_crlf_event_in_network_pieces_arrives_intact(aiohttp_client: ClientFactory) -> None:
    text = "y" * 1_000_000
    upstream = (sse(chunk("<think>" + text + "</think>done")) + b"data: [DONE]\n\n").replace(b"\n", b"\r\n")
    pieces = [upstream[i : i + 1460] for i in range(0, len(upstream), 1460)]
    body, _ = await through(aiohttp_client, scripted(*pieces), max_event_bytes=4 << 20)
    assert recovered(body) == [("reasoning", text), ("content", "done")]
    assert b"\n" not in body.replace(b"\r\n", b"")  # every line the middleware wrote ends in \r\n


# -- 7. a client gone while a body is held ------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "config"),
    [("text/event-stream", {"stream_mode": "buffered"}), ("application/json", {})],
    ids=["buffered-sse", "json"],
)
async def test_a_gone_client_stops_the_handler_on_a_production_runner(content_type: str, config: Any) -> None:
    """``web.run_app`` does not cancel handlers when the client goes: the write must fail instead."""
    written_after_gone = 0
    gone = asyncio.Event()
    finished = asyncio.Event()
    outcome: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal written_after_gone
        resp = web.StreamResponse(headers={"Content-Type": content_type})
        await resp.prepare(request)
        try:
            first = sse(chunk("<think>")) if content_type == "text/event-stream" else b'{"choices":['
            await resp.write(first)
            for _ in range(400):
                await asyncio.sleep(0.005)
                if gone.is_set():
                    written_after_gone += 1
                piece = sse(chunk("more reasoning")) if content_type == "text/event-stream" else b" " * 10
                await resp.write(piece)
            outcome.append("wrote everything")
        except ConnectionResetError:
            outcome.append("stopped")
            raise
        finally:
            finished.set()
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig(**config))
    app.router.add_post(ROUTE, handler)
    runner = web.AppRunner(app)  # configured as web.run_app configures it
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as session:
            # A JSON body's headers are held until its end: the client gives up before it sees them.
            request = asyncio.ensure_future(session.post(f"http://127.0.0.1:{port}{ROUTE}"))
            await asyncio.sleep(0.1)
            if request.done():
                request.result().close()
            else:
                request.cancel()
            gone.set()
        await asyncio.wait_for(finished.wait(), 60)
    finally:
        await runner.cleanup()
    assert outcome == ["stopped"]
    assert written_after_gone <= 5  # without the check: all 400 pieces, read from the upstream for nothing


# -- 8. smaller points ------------------------------------------------------------------------------


async def test_a_byte_order_mark_is_passed_on_and_the_stream_still_translated(aiohttp_client: ClientFactory) -> None:
    body, _ = await through(aiohttp_client, scripted(BOM + sse(chunk("<think>r</think>a"), "[DONE]")))
    assert body == BOM + sse(chunk(delta={"reasoning_content": "r", "reasoning": "r"}), chunk("a"), "[DONE]")
    assert recovered(body) == [("reasoning", "r"), ("content", "a")]


async def test_events_written_into_a_crlf_stream_end_their_lines_in_crlf(aiohttp_client: ClientFactory) -> None:
    upstream = sse(chunk("<think>r</think>a <thi"), "[DONE]").replace(b"\n", b"\r\n")
    body, _ = await through(aiohttp_client, scripted(upstream))
    expected = sse(chunk(delta={"reasoning_content": "r", "reasoning": "r"}), chunk("a "), held("<thi"), "[DONE]")
    assert body == expected.replace(b"\n", b"\r\n")


async def test_a_partial_content_response_passes_untouched(aiohttp_client: ClientFactory) -> None:
    upstream = sse(chunk("<think>r</think>a"))

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=206, body=upstream, content_type="text/event-stream")

    body, stats = await through(aiohttp_client, handler)
    assert (body, stats["passed_through"]) == (upstream, {"partial": 1})


@pytest.mark.parametrize(
    ("values", "translated"),
    [
        (["off"], False),
        ([" OFF "], False),
        (["False"], False),
        (["0"], False),
        (["no"], False),
        (["on"], True),
        (["yes", "off"], False),
        (["on, off"], False),
        (["on"], True),
        (["maybe"], True),
    ],
)
async def test_the_opt_out_header_takes_every_false_value_and_any_off_wins(
    aiohttp_client: ClientFactory, values: list[str], translated: bool
) -> None:
    upstream = sse(chunk("<think>r</think>a"))
    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post(ROUTE, scripted(upstream))
    client = await aiohttp_client(app)
    headers = [("X-Think-Extract", v) for v in values]
    body = await (await client.post(ROUTE, headers=headers)).read()
    expected = (
        [chunk(delta={"reasoning_content": "r", "reasoning": "r"}), chunk("a")] if translated else read_sse(upstream)
    )
    assert read_sse(body) == expected


@pytest.mark.parametrize(
    ("route", "answer"),
    [
        ("/v1/chat/completions", b'{"id":"c","choices":5}'),
        ("/v1/messages", b'{"type":"message","content":5}'),
        ("/v1/responses", b'{"object":"response","output":5}'),
    ],
)
@pytest.mark.parametrize("handler_kind", ["response", "stream"])
async def test_an_answer_whose_list_is_no_list_passes_as_it_came_with_the_record_on(
    aiohttp_client: ClientFactory, route: str, answer: bytes, handler_kind: str
) -> None:
    """The record reads what a JSON answer said after translating it: a ``choices``, ``content`` or
    ``output`` that is no list gives it nothing to keep, and the answer goes out as it came (it failed
    the response before: the reading met an ``int`` where it looked for a list)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        if handler_kind == "response":
            return web.Response(body=answer, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(answer)
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig(messages_policy="unsigned", reasoning_store="memory"))
    app.router.add_post(route, handler)
    client = await aiohttp_client(app)
    resp = await client.post(route, json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert (resp.status, await resp.read()) == (200, answer)
