"""Messages over real HTTP: events passed on unread still fit the stream's numbering.

Each test serves a hostile upstream through the middleware on loopback and reads the answer twice:
as bytes (every event checked against the SDK's strict types, the whole list compared) and with
the strict ``anthropic`` SDK's ``messages.stream(...).get_final_message()``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anthropic
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway_mw import ThinkExtractConfig, setup

from ..messageswire import (
    MESSAGE_STOP,
    end,
    json_delta,
    message_delta,
    message_start,
    read_sse,
    replay,
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

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]
ROUTE = "/v1/messages"
ARGS: dict[str, Any] = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
MB = 1024 * 1024


def app_for(upstream: bytes, piece: int, **config: Any) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(0, len(upstream), piece):
            await resp.write(upstream[i : i + piece])
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig(**config))
    app.router.add_post(ROUTE, handler)
    return app


async def served(
    aiohttp_server: ServerFactory, upstream: bytes, piece: int = 13, **config: Any
) -> tuple[bytes, list[dict[str, Any]]]:
    """The bytes a client receives, and the content of the strict SDK's final message."""
    server = await aiohttp_server(app_for(upstream, piece, **config))
    url = str(server.make_url(""))
    async with aiohttp.ClientSession() as session, session.post(str(server.make_url(ROUTE)), json=ARGS) as resp:
        body = await resp.read()
    client = anthropic.AsyncAnthropic(api_key="x", base_url=url, max_retries=0, _strict_response_validation=True)
    async with client, client.messages.stream(**ARGS) as stream:
        final = await stream.get_final_message()
    content = []
    for block in final.content:
        dumped: dict[str, Any] = block.to_dict()
        dumped.pop("parsed_output", None)  # the stream helper's own attribute
        if dumped.get("citations", ()) is None:
            del dumped["citations"]
        content.append(dumped)
    return body, content


def raw_event(kind: str, data: str) -> bytes:
    return f"event: {kind}\ndata: {data}\n\n".encode()


# -- defect 2: an oversized opening event is counted ----------------------------------------------

BIG_TOOL = {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {"content": "x" * (1200 * 1024)}}
BIG_SEARCH = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://example.com/",
            "title": "Example",
            "encrypted_content": "E" * (1200 * 1024),
            "page_age": None,
        }
    ],
}


@pytest.mark.parametrize("block", [BIG_TOOL, BIG_SEARCH], ids=["tool_use", "web_search_tool_result"])
@pytest.mark.parametrize("tags", [True, False], ids=["reasoning", "tag-free"])
async def test_an_oversized_block_start_takes_its_own_index(
    aiohttp_server: ServerFactory, block: dict[str, Any], tags: bool
) -> None:
    first = "<think>Let me look.</think>Searching." if tags else "Searching."
    upstream = sse(
        message_start(), *text_block(0, first), start(1, block), stop(1), *text_block(2, "The answer is 4."), *end()
    )
    body, content = await served(aiohttp_server, upstream, piece=64 * 1024, messages_policy="unsigned")
    if tags:
        assert read_sse(body) == [
            message_start(),
            *thinking_block(0, "Let me look."),
            *text_block(1, "Searching."),
            start(2, block),
            stop(2),
            *text_block(3, "The answer is 4."),
            *end(thinking=1),
        ]
        assert content == [th("Let me look."), tb("Searching."), block, tb("The answer is 4.")]
    else:
        assert body == upstream  # nothing to translate: byte for byte
        assert content == [tb("Searching."), block, tb("The answer is 4.")]


# -- an oversized text delta of a scanned block lands on a text block ------------------------------


@pytest.mark.parametrize("sorted_keys", [False, True], ids=["type-first", "keys-sorted"])
async def test_an_oversized_text_delta_goes_on_a_text_block(aiohttp_server: ServerFactory, sorted_keys: bool) -> None:
    big_text = "A" * (1100 * 1024)
    big = text(0, big_text)
    big_bytes = raw_event("content_block_delta", json.dumps(big, sort_keys=sorted_keys, separators=(",", ":")))
    upstream = (
        sse(message_start(), start(0), text(0, "<think>plan"))
        + big_bytes
        + sse(text(0, "</think> done"), stop(0), *end())
    )
    body, content = await served(aiohttp_server, upstream, piece=64 * 1024, messages_policy="unsigned")
    assert read_sse(body) == [
        message_start(),
        *thinking_block(0, "plan"),
        start(1),
        text(1, big_text),  # passed on unread (not scanned), at the index of the text block opened for it
        text(1, "done"),  # the space right after </think> is trimmed (trim_tag_edges)
        stop(1),
        *end(thinking=1),
    ]
    assert content == [th("plan"), tb(big_text + "done")]


# -- defect 3: events only a lenient parser reads ------------------------------------------------


async def test_float_indexes_and_a_surrogate_pair_split_across_deltas(aiohttp_server: ServerFactory) -> None:
    def delta_event(index: str, value: str) -> bytes:
        return raw_event("content_block_delta", f'{{"type":"content_block_delta","index":{index},"delta":{value}}}')

    upstream = (
        sse(message_start(), start(0), text(0, "<think>Smile"))
        + delta_event("0.0", r'{"type":"text_delta","text":" \ud83d"}')
        + delta_event("0", r'{"type":"text_delta","text":"\ude00 done</think>It is "}')
        + delta_event("0.0", r'{"type":"text_delta","text":"4 \ud83d"}')
        + delta_event("0", r'{"type":"text_delta","text":"\ude00."}')
        + raw_event("content_block_stop", '{"type":"content_block_stop","index":0.0}')
        + raw_event("content_block_start", json.dumps(tool_start(1)).replace('"index": 1', '"index": 1.0'))
        + delta_event("1.0", r'{"type":"input_json_delta","partial_json":"{\"a\": 2"}')
        + delta_event("1", r'{"type":"input_json_delta","partial_json":", \"b\": 2}"}')
        + raw_event("content_block_stop", '{"type":"content_block_stop","index":1.0}')
        + sse(*end("tool_use"))
    )
    tool = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 2}}
    expected = [th("Smile 😀 done"), tb("It is 4 😀."), tool]
    body, content = await served(aiohttp_server, upstream, messages_policy="unsigned")
    assert content == expected
    final = replay(read_sse(body))  # indexes contiguous, in start order
    assert final["content"] == expected


# -- defect 6: a duplicate "index" key -----------------------------------------------------------


async def test_a_duplicate_index_key_is_rewritten_as_parsers_read_it(aiohttp_server: ServerFactory) -> None:
    def twice(event: dict[str, Any]) -> bytes:
        data = json.dumps(event, separators=(",", ":"))
        return raw_event(event["type"], data[:-1] + f',"index":{event["index"]}}}')

    upstream = (
        sse(message_start(), *text_block(0, "<think>r</think>Let me add."))
        + twice(tool_start(1))
        + twice(json_delta(1, '{"a": 2'))
        + twice(json_delta(1, ', "b": 2}'))
        + twice(stop(1))
        + sse(message_delta("tool_use"), MESSAGE_STOP)
    )
    body, content = await served(aiohttp_server, upstream, messages_policy="unsigned")
    assert read_sse(body) == [
        message_start(),
        *thinking_block(0, "r"),
        *text_block(1, "Let me add."),
        tool_start(2),
        json_delta(2, '{"a": 2'),
        json_delta(2, ', "b": 2}'),
        stop(2),
        *end("tool_use", thinking=1),
    ]
    tool = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 2}}
    assert content == [th("r"), tb("Let me add."), tool]


# -- defect 7: redacted blocks do not depend on the cuts -----------------------------------------


async def test_redacted_block_boundaries_do_not_depend_on_the_cuts(aiohttp_client: ClientFactory) -> None:
    """Long enough for the pipeline's fast path to take windows of 8 KiB of deltas at once."""
    reasoning = "".join(f"step{i:03d}." for i in range(240))  # 8 characters a delta
    pieces = [reasoning[i : i + 8] for i in range(0, len(reasoning), 8)]
    upstream = sse(message_start(), *text_block(0, "<think>", *pieces, "</think>answer"), *end())
    assert len(upstream) > 3 * 8192
    cut = 0

    async def split_writer(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(upstream[:cut])
        await resp.write(upstream[cut:])
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig(messages_policy="redacted", max_buffer_bytes=256))
    app.router.add_post(ROUTE, split_writer)
    client = await aiohttp_client(app)
    outputs = set()
    for cut in [*range(0, len(upstream), 61), len(upstream)]:  # noqa: B007  (read by the handler)
        outputs.add(await (await client.post(ROUTE)).read())
    assert len(outputs) == 1
    blocks = replay(read_sse(outputs.pop()))["content"]
    # A block ends after the delta that takes it past the cap: 33 deltas (264 bytes), whatever the cuts.
    assert [base64.b64decode(b["data"]).decode() for b in blocks[:-1]] == [
        "".join(pieces[i : i + 33]) for i in range(0, len(pieces), 33)
    ]
    assert blocks[-1] == tb("answer")
