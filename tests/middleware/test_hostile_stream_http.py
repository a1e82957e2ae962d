"""Hostile upstreams, round three: streams that are legal (or that real servers send) and that the
translated stream must still give the official SDKs whole. Each test serves the upstream's exact bytes
over loopback HTTP through the middleware, one write per event, and reads them with the SDK's own
stream accumulator in strict mode."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, setup

from .. import messageswire as mw
from .. import responseswire as rw
from ..chatwire import chunk
from ..conftest import Closing

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]


async def replay(aiohttp_server: ServerFactory, writes: list[bytes], **config: Any) -> str:
    """A model server behind the middleware that answers every surface with ``writes``, one write each."""

    async def handle(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in writes:
            await resp.write(piece)
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig(**config))
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/messages"):
        app.router.add_post(path, handle)
    server = await aiohttp_server(app)
    return str(server.make_url(""))


def lines(data: str, event: str | None = None) -> bytes:
    """One event whose data spans one ``data:`` line per line of ``data`` (legal SSE)."""
    head = f"event: {event}\n" if event is not None else ""
    return (head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n").encode()


def oai(base: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="x", base_url=base + "/v1", max_retries=0, _strict_response_validation=True)


async def chat_final(base: str, n: int = 1) -> list[tuple[str, str]]:
    """(reasoning_content, content) of every choice, as the SDK's chat stream accumulator has them."""
    messages: Any = [{"role": "user", "content": "hi"}]
    async with oai(base).chat.completions.stream(model="m", messages=messages, n=n) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    out = []
    for choice in final.choices:
        extra = choice.message.model_extra or {}
        out.append((extra.get("reasoning_content") or "", choice.message.content or ""))
    return out


# -- 1. chat: a chunk whose JSON spans several data: lines ----------------------------------------


async def test_chat_chunk_spread_over_data_lines_reaches_the_sdk(aiohttp_server: ServerFactory) -> None:
    texts = ["<think>Two", " plus two.", "</think>It is", " 4."]
    writes = [lines(json.dumps(chunk("", delta={"role": "assistant"}), indent=1))]
    writes += [lines(json.dumps(chunk(text), indent=1)) for text in texts]
    writes += [lines(json.dumps(chunk("", finish="stop"), indent=2)), b"data: [DONE]\n\n"]
    base = await replay(aiohttp_server, writes)
    assert await chat_final(base) == [("Two plus two.", "It is 4.")]


# -- 2. Responses: pretty-printed events ------------------------------------------------------------


async def test_responses_pretty_printed_events_reach_the_sdk(aiohttp_server: ServerFactory) -> None:
    events = rw.upstream(["<think>Two plus", " two.</think>It", " is 4."])
    writes = [lines(json.dumps(e, indent=2), e["type"]) for e in events]
    base = await replay(aiohttp_server, writes)
    async with oai(base).responses.stream(model="m", input="hi") as stream:
        deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert "".join(deltas) == "It is 4."
    reasoning_item, message_item = final.output
    assert reasoning_item.type == "reasoning" and message_item.type == "message"
    assert [c.text for c in reasoning_item.content or []] == ["Two plus two."]
    assert final.output_text == "It is 4."


# -- 3. chat: n=2, no role chunks, choice 0 opens with a bare tag ----------------------------------


async def test_chat_two_choices_keep_the_order_in_which_they_first_appear(aiohttp_server: ServerFactory) -> None:
    def one(index: int, text: str, finish: str | None = None) -> bytes:
        body = chunk(choices=[{"index": index, "delta": {"content": text}, "logprobs": None, "finish_reason": finish}])
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    writes = [
        one(0, "<think>"),
        one(1, "B answer"),
        one(0, "A thinks</think>A answer"),
        one(0, "", "stop"),
        one(1, "", "stop"),
        b"data: [DONE]\n\n",
    ]
    base = await replay(aiohttp_server, writes)
    assert await chat_final(base, n=2) == [("A thinks", "A answer"), ("", "B answer")]


# -- 4. chat: a surrogate pair split across two deltas inside reasoning ----------------------------


async def test_chat_surrogate_pair_split_across_deltas_is_one_character(aiohttp_server: ServerFactory) -> None:
    writes = [
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{"role":"assistant","content":"<think>smile "},"finish_reason":null}]}\n\n',
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{"content":"\\ud83d"},"finish_reason":null}]}\n\n',
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{"content":"\\ude00 good</think>answer"},"finish_reason":null}]}\n\n',
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    base = await replay(aiohttp_server, writes)
    assert await chat_final(base) == [("smile \U0001f600 good", "answer")]


# -- 5. messages: message_start already holds a content block -------------------------------------


async def test_messages_start_holding_a_block_keeps_the_upstream_numbering(
    aiohttp_server: ServerFactory, closing: Closing
) -> None:
    head = {"type": "text", "text": "Preface. "}
    writes = [
        mw.sse(
            mw.message_start(content=[head]),
            *mw.text_block(1, "<think>Two plus", " two.</think>It is", " 4."),
            mw.tool_start(2),
            mw.json_delta(2, '{"a": 2, "b": 2}'),
            mw.stop(2),
            *mw.end("tool_use"),
        )
    ]
    base = await replay(aiohttp_server, writes, messages_policy="unsigned")
    client = closing(
        anthropic.AsyncAnthropic(api_key="x", base_url=base, max_retries=0, _strict_response_validation=True)
    )
    messages: Any = [{"role": "user", "content": "hi"}]
    async with client.messages.stream(model="m", max_tokens=64, messages=messages) as stream:
        final = await stream.get_final_message()
    assert [b.model_dump(exclude_none=True) for b in final.content] == [
        head,
        {"type": "thinking", "thinking": "Two plus two.", "signature": mw.signature("Two plus two.")},
        {"type": "text", "text": "It is 4."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 2}, "caller": {"type": "direct"}}
        if "caller" in final.content[3].model_dump(exclude_none=True)
        else {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 2}},
    ]


async def test_messages_tag_free_stream_after_a_started_block_passes_as_it_came(
    aiohttp_server: ServerFactory, closing: Closing
) -> None:
    body = mw.sse(mw.message_start(content=[{"type": "text", "text": "A"}]), *mw.text_block(1, "B", "C"), *mw.end())
    base = await replay(aiohttp_server, [body], messages_policy="unsigned")
    client = closing(
        anthropic.AsyncAnthropic(api_key="x", base_url=base, max_retries=0, _strict_response_validation=True)
    )
    messages: Any = [{"role": "user", "content": "hi"}]
    async with client.messages.stream(model="m", max_tokens=64, messages=messages) as stream:
        final = await stream.get_final_message()
    assert [b.model_dump(exclude_none=True) for b in final.content] == [
        {"type": "text", "text": "A"},
        {"type": "text", "text": "BC"},
    ]


# -- 6. Responses: text carried by content_part.added ----------------------------------------------


async def test_responses_text_in_content_part_added_is_scanned(aiohttp_server: ServerFactory) -> None:
    text = "<think>Two plus two.</think>It is 4."
    events = rw.numbered(
        [
            rw.created(),
            rw.added(0, rw.message("msg_1", None, "in_progress")),
            rw.part_added("msg_1", 0, rw.output_text("<think>Two plus")),
            rw.text_delta("msg_1", 0, " two.</think>It is"),
            rw.text_delta("msg_1", 0, " 4."),
            rw.text_done("msg_1", 0, text),
            rw.part_done("msg_1", 0, rw.output_text(text)),
            rw.item_done(0, rw.message("msg_1", [text])),
            rw.completed([rw.message("msg_1", [text])]),
        ]
    )
    base = await replay(aiohttp_server, [rw.sse([e]) for e in events])
    async with oai(base).responses.stream(model="m", input="hi") as stream:
        seen = [e async for e in stream]
        final = await stream.get_final_response()
    parts = [e.part.model_dump() for e in seen if e.type == "response.content_part.added"]
    assert parts == [
        {"type": "reasoning_text", "text": ""},
        {"type": "output_text", "text": "", "annotations": [], "logprobs": []},
    ]
    assert "".join(e.delta for e in seen if e.type == "response.output_text.delta") == "It is 4."
    reasoning_item, message_item = final.output
    assert [c.text for c in reasoning_item.content or []] == ["Two plus two."]
    assert message_item.type == "message" and [c.text for c in message_item.content] == ["It is 4."]  # type: ignore[union-attr]
    assert final.output_text == "It is 4."


# -- 8. Responses: a text delta far over max_event_bytes streams through ----------------------------


def peak_rss(pid: int) -> int:
    """The process's peak resident set so far, in bytes (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads peak memory from /proc (Linux)")
async def test_responses_giant_text_delta_streams_through_in_bounded_memory(aiohttp_server: ServerFactory) -> None:
    cap = 1024 * 1024
    giant = "y" * (20 * cap)  # one 20 MiB delta
    text = "<think>short</think>Head " + giant + " tail"
    events = rw.numbered(
        [
            rw.created(),
            *rw.message_events("msg_1", 0, ["<think>short</think>Head ", giant, " tail"]),
            rw.completed([rw.message("msg_1", [text])]),
        ]
    )
    body = rw.sse(events)
    writes = [body[i : i + 64 * 1024] for i in range(0, len(body), 64 * 1024)]  # as a socket delivers it

    small = rw.sse(rw.upstream(["<think>a</think>b"]))

    async def handle(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in writes if (await request.json())["input"] == "hi" else [small]:
            await resp.write(piece)
        await resp.write_eof()
        return resp

    upstream = web.Application()
    upstream.router.add_post("/v1/responses", handle)
    server = await aiohttp_server(upstream)
    cmd = [sys.executable, "-m", "gateway_mw", "--port", "0", "--drain-delay", "0"]
    cmd += ["--upstream", str(server.make_url(""))]
    env = {**os.environ, "THINK_EXTRACT_MAX_EVENT_BYTES": str(cap)}
    gateway = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert gateway.stdout is not None
        first = await asyncio.to_thread(gateway.stdout.readline)
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert found, first
        base = found.group(0)
        async with oai(base).responses.stream(model="m", input="warm up") as stream:  # imports, pools
            assert (await stream.get_final_response()).output_text == "b"
        before = peak_rss(gateway.pid)
        async with oai(base).responses.stream(model="m", input="hi") as stream:
            seen = [e async for e in stream]
            final = await stream.get_final_response()
        grown = peak_rss(gateway.pid) - before
    finally:
        gateway.terminate()
        gateway.wait(10)
    added = [e.item.type for e in seen if e.type == "response.output_item.added"]
    reasoning = [e.delta for e in seen if e.type == "response.reasoning_text.delta"]
    answer = [e.delta for e in seen if e.type == "response.output_text.delta"]
    assert (added, "".join(reasoning), "".join(answer)) == (
        ["reasoning", "message"],
        "short",
        "Head " + giant + " tail",
    )
    # The events that repeat the 20 MiB text are over the cap too: they stream through as the
    # upstream wrote them (renumbered), not held to be translated.
    assert final.output_text == text
    # The stream's own cost: a few copies of one event's cap, never of the 20 MiB delta.
    assert grown < 8 * cap, f"the gateway's peak memory grew by {grown / cap:.1f} MiB for one stream"
