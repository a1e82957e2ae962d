"""The reasoning record over real HTTP: a client that does not send the reasoning back (LangChain's
ChatOpenAI, the AI SDK's item references) still has it reach the upstream on its next turn, from the
record; only in requests made with the same API key; and the model's own text comes back byte for
byte when the form is inline."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_RECORD, ThinkExtractConfig, setup
from gateway_mw.history import chat

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

WRITTEN = "<think>\nI need the weather first.\n</think>\n\nLet me look."  # as Qwen3-style models write it
CALL = {"id": "call_x7Yq2", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}


class Upstream:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        tools = body.get("tools") and not any(m["role"] == "tool" for m in body["messages"])
        message: dict[str, Any] = {
            "role": "assistant",
            "content": WRITTEN if tools else "<think>Sunny.</think>It is sunny.",
        }
        if tools:
            message["tool_calls"] = [CALL]
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if tools else "stop"}
            return web.json_response(
                {"id": "c", "object": "chat.completion", "created": 1, "model": body["model"], "choices": [choice]}
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}
        text = message["content"]
        for i in range(0, len(text), 4):
            delta = {"content": text[i : i + 4]}
            await resp.write(
                b"data: "
                + json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}).encode()
                + b"\n\n"
            )
        if tools:
            delta = {"tool_calls": [{"index": 0, **CALL}]}
            await resp.write(
                b"data: "
                + json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}).encode()
                + b"\n\n"
            )
        await resp.write(
            b"data: "
            + json.dumps({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).encode()
            + b"\n\n"
        )
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


async def gateway(aiohttp_server: ServerFactory, **config: Any) -> tuple[str, Upstream, web.Application]:
    up = Upstream()
    app = web.Application()
    setup(app, ThinkExtractConfig(**config))
    app.router.add_post("/v1/chat/completions", up.chat)
    server = await aiohttp_server(app)
    return str(server.make_url("/v1/chat/completions")), up, app


async def two_turns(url: str, stream: bool, first_key: str, second_key: str, model: str) -> dict[str, Any]:
    """A tool loop whose client keeps only content and tool calls (no reasoning); the second request's body."""
    question = [{"role": "user", "content": "Weather in Paris?"}]
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
    async with aiohttp.ClientSession() as session:
        body = {"model": model, "messages": question, "tools": tools, "stream": stream}
        async with session.post(url, json=body, headers={"Authorization": f"Bearer {first_key}"}) as resp:
            raw = await resp.read()
        if stream:
            chunks = [json.loads(line[6:]) for line in raw.split(b"\n\n") if line.startswith(b"data: {")]
            content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
        else:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        replay = [*question, {"role": "assistant", "content": content, "tool_calls": [CALL]},
                  {"role": "tool", "tool_call_id": CALL["id"], "content": "sunny"}]  # fmt: skip
        body = {"model": model, "messages": replay, "tools": tools, "stream": stream}
        async with session.post(url, json=body, headers={"Authorization": f"Bearer {second_key}"}) as resp:
            await resp.read()
    return body


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
async def test_a_client_that_drops_the_reasoning_gets_it_back_byte_for_byte(
    aiohttp_server: ServerFactory, stream: bool
) -> None:
    url, up, app = await gateway(aiohttp_server)
    await two_turns(url, stream, "key-a", "key-a", "llama-3.1-8b")
    await app[THINKEXTRACT_RECORD].drain()
    assistant = up.bodies[1]["messages"][1]
    # A model of no known family: the inline form, and the record holds the model's exact text.
    assert assistant == {"role": "assistant", "content": WRITTEN, "tool_calls": [CALL]}


async def test_the_field_form_from_the_record(aiohttp_server: ServerFactory) -> None:
    url, up, _ = await gateway(aiohttp_server, upstream_server="vllm")
    await two_turns(url, True, "key-a", "key-a", "qwen3-8b")
    assistant = up.bodies[1]["messages"][1]
    reasoning = "I need the weather first.\n"  # as the client was shown it
    assert assistant == {"role": "assistant", "content": "Let me look.", "reasoning": reasoning, "tool_calls": [CALL]}


async def test_another_key_gets_nothing(aiohttp_server: ServerFactory) -> None:
    url, up, app = await gateway(aiohttp_server)
    await two_turns(url, True, "key-a", "key-b", "llama-3.1-8b")
    assistant = up.bodies[1]["messages"][1]
    assert assistant == {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL]}  # as the client sent it
    counts = app[THINKEXTRACT_RECORD].counts
    # Each answer written under key-a, twice: by its call's id (or its text) and by the conversation
    # before it; key-b read none.
    assert (counts.written, counts.hits) == (4, 0)


async def test_the_record_off_keeps_nothing(aiohttp_server: ServerFactory) -> None:
    url, up, app = await gateway(aiohttp_server, reasoning_store="off")
    await two_turns(url, True, "key-a", "key-a", "llama-3.1-8b")
    assert THINKEXTRACT_RECORD not in app
    assert up.bodies[1]["messages"][1] == {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL]}


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
async def test_each_body_is_read_once_the_record_entries_included(
    aiohttp_server: ServerFactory, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """The record's entries of an answer take the request side's reading of the body: no request
    body is decoded twice, and the record works all the same."""
    decode = chat._decode_request
    bodies: list[bytes] = []

    def counted(body: bytes) -> Any:
        bodies.append(body)
        return decode(body)

    monkeypatch.setattr(chat, "_decode_request", counted)
    url, up, app = await gateway(aiohttp_server)
    await two_turns(url, stream, "key-a", "key-a", "llama-3.1-8b")
    await app[THINKEXTRACT_RECORD].drain()
    assert up.bodies[1]["messages"][1] == {"role": "assistant", "content": WRITTEN, "tool_calls": [CALL]}
    assert [json.loads(b)["messages"][-1]["role"] for b in bodies] == ["user", "tool"]
