"""The reasoning record and an answer the gateway's budget cut, over loopback, on every surface with a
budget side: the answer the client got (the cut reasoning, then the continuation's answer) is kept as
one answer, so that a client that does not send its reasoning back gets it replayed on its next
turn, where the upstream reads it, as for an answer no budget cut. The same conversation without a
budget is the oracle: the upstream's second request differs only by the reasoning being the cut one.

Each surface's upstream is its emulated server (:mod:`.thinker` and its siblings), which thinks
``think N`` tokens (``r0 r1 …``) and continues a final assistant message as its server does."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from yarl import URL

from gateway_mw import THINKEXTRACT_MODEL_INFO, ThinkExtractConfig, setup
from gateway_mw.config import Surface
from gateway_mw.controls import ModelInfo
from gateway_mw.record import ReasoningRecord, open_record
from gateway_mw.surfaces.registry import SURFACES

from ..relay import relay
from .messages_thinker import MessagesThinker
from .ollama_thinker import OllamaThinker, openai_app
from .responses_thinker import ResponsesThinker
from .thinker import Served, Thinker

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "m"  # a model of no known family: its reasoning goes back inline (Ollama: in `thinking`), every turn
FULL, CUT = "r0 r1 r2 ", "r0 r1 "  # what the model thinks (`think 3`), and what a budget of 2 leaves
ANSWERED = "The answer is 4."


@dataclass(frozen=True)
class Side:
    """One surface's server, its route and its client's requests."""

    server: str
    path: str
    make: Callable[[], Any]
    handler: str
    enforcement: str

    def upstream(self, thinker: Any) -> web.Application:
        if self.handler == "openai_app":  # Ollama's /v1, made of its /api/chat
            return openai_app(thinker)
        app = web.Application()
        app.router.add_post(self.path, getattr(thinker, self.handler))
        return app


SIDES: dict[Surface, Side] = {
    "chat": Side("sglang", "/v1/chat/completions", lambda: Thinker("sglang"), "chat", "auto"),
    "messages": Side("llamacpp", "/v1/messages", lambda: MessagesThinker("llamacpp"), "messages", "gateway"),
    "responses": Side("vllm", "/v1/responses", lambda: ResponsesThinker("vllm"), "responses", "auto"),
    "ollama": Side("ollama", "/api/chat", lambda: OllamaThinker(), "chat", "auto"),
}
BUDGETED = sorted(name for name, definition in SURFACES.items() if definition.budget is not None)
OLLAMA_V1 = Side("ollama", "/v1/chat/completions", lambda: OllamaThinker(), "openai_app", "auto")
"""Ollama's OpenAI-compatible chat, which it continues as its ``/api/chat``."""


def test_every_budget_side_is_held_here() -> None:
    assert sorted(SIDES) == BUDGETED


def first_turn(surface: Surface, stream: bool, budget: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "stream": stream}
    user = {"role": "user", "content": "think 3"}
    if surface == "responses":
        body["input"] = [user]
    else:
        body["messages"] = [user]
    if surface == "messages":
        body["max_tokens"] = 1000
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif budget is not None:
        body["reasoning"] = {"max_tokens": budget}
    return body


def replayed(surface: Surface, first: dict[str, Any], got: bytes) -> dict[str, Any]:
    """The client's next request: the answer it got, without its reasoning (its ids kept), then a
    new question. Asked for as a stream, without a budget."""
    then = {"role": "user", "content": "and then 0"}
    if surface == "responses":
        # The AI SDK's way: a reference to the reasoning item, the message item as it came.
        kept = [
            {"type": "item_reference", "id": item["id"]} if item["type"] == "reasoning" else item
            for item in output_of(got)
        ]
        return {"model": MODEL, "stream": True, "input": [*first["input"], *kept, then]}
    text = text_got(surface, got)
    answer: dict[str, Any] = {"role": "assistant", "content": text}
    if surface == "messages":
        answer["content"] = [{"type": "text", "text": text}]
    calls = calls_got(got) if surface == "chat" else []
    if calls:  # the calls as the client got them, and their results
        answer = {"role": "assistant", "content": text or None, "tool_calls": calls}
        results = [{"role": "tool", "tool_call_id": call["id"], "content": "sunny"} for call in calls]
        return {"model": MODEL, "stream": True, "messages": [*first["messages"], answer, *results]}
    body = {"model": MODEL, "stream": True, "messages": [*first["messages"], answer, then]}
    return body | ({"max_tokens": 1000} if surface == "messages" else {})


def events(got: bytes) -> list[dict[str, Any]]:
    """An SSE stream's data, or NDJSON lines, or one body: as JSON objects."""
    if got.lstrip().startswith(b"{"):
        return [json.loads(line) for line in got.splitlines() if line.strip()]
    data = [line[5:].strip() for line in got.splitlines() if line.startswith(b"data:")]
    return [json.loads(d) for d in data if d != b"[DONE]"]


def calls_got(got: bytes) -> list[dict[str, Any]]:
    """A chat answer's tool calls, as the client got them (a stream's put together by index)."""
    calls: dict[int, dict[str, Any]] = {}
    for doc in events(got):
        for choice in doc["choices"]:
            if "message" in choice:
                return list(choice["message"].get("tool_calls") or [])
            for part in choice["delta"].get("tool_calls") or []:
                call = calls.setdefault(part["index"], {"type": "function", "function": {"name": "", "arguments": ""}})
                call["id"] = part.get("id", call.get("id"))
                for key in ("name", "arguments"):
                    call["function"][key] += part.get("function", {}).get(key) or ""
    return [calls[i] for i in sorted(calls)]


def text_got(surface: Surface, got: bytes) -> str:
    """The answer's text the client got (its reasoning elsewhere)."""
    if surface == "responses":
        messages = [item for item in output_of(got) if item["type"] == "message"]
        return "".join(part["text"] for item in messages for part in item["content"] if part["type"] == "output_text")
    out = []
    for doc in events(got):
        if surface == "chat":
            out += [c.get("delta", c.get("message", {})).get("content") or "" for c in doc["choices"]]
        elif surface == "messages":
            if doc.get("type") == "content_block_delta" and doc["delta"]["type"] == "text_delta":
                out.append(doc["delta"]["text"])
            elif doc.get("type") == "message":
                out += [block["text"] for block in doc["content"] if block["type"] == "text"]
        else:
            out.append(doc["message"].get("content", ""))
    return "".join(out)


def output_of(got: bytes) -> list[dict[str, Any]]:
    """A Responses answer's output items, as the client got them (the stream's terminal event)."""
    docs = events(got)
    whole = [d["response"] for d in docs if d.get("type") == "response.completed"]
    whole += [d for d in docs if d.get("object") == "response"]  # a body
    assert len(whole) == 1
    items: list[dict[str, Any]] = whole[0]["output"]
    return items


@pytest.fixture
async def converse(aiohttp_server: ServerFactory) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    sessions: list[aiohttp.ClientSession] = []
    runners: list[web.AppRunner] = []

    async def run(
        surface: Surface,
        stream: bool,
        budget: int | None,
        thinker: Any = None,
        then_key: str = "key-a",
        leave: bool = False,
        on_ollama: bool = False,
    ) -> tuple[bytes, dict[str, Any]]:
        """Two turns of one conversation: what the client got on the first, and what the upstream
        (``thinker``, by default the surface's) was asked on the second. ``leave``: the client leaves
        the first once it has ``budget`` reasoning events, before the model's next (a chat stream);
        ``on_ollama``: the chat surface on Ollama's ``/v1``."""
        side = OLLAMA_V1 if on_ollama else SIDES[surface]
        thinker = thinker or side.make()
        back = await aiohttp_server(side.upstream(thinker))
        session = aiohttp.ClientSession()
        sessions.append(session)
        record: ReasoningRecord = open_record("memory")
        front = web.Application()
        config = ThinkExtractConfig(
            upstream_server=side.server, reasoning_budget_enforcement=side.enforcement, messages_policy="unsigned"
        )
        stats = setup(front, config, record=record)
        requests: list[web.Request] = []
        if leave:
            thinker.wait_at = budget
            thinker.wait = lambda: requests[0].transport is None or requests[0].transport.is_closing()

        async def model_info(model: str) -> ModelInfo:
            return ModelInfo(thinking=True, version=(0, 33, 0))  # Ollama's /api/show and /api/version

        front[THINKEXTRACT_MODEL_INFO] = model_info

        forward = relay(session, str(back.make_url("")).rstrip("/"), seen=requests)
        front.router.add_post(side.path, forward)
        if leave:  # aiohttp's default: a handler whose client left is not cancelled, its writes fail
            runner = web.AppRunner(front, handler_cancellation=False)
            runners.append(runner)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            host, port = runner.addresses[0][:2]
            url = URL(f"http://{host}:{port}{side.path}")
        else:
            url = (await aiohttp_server(front)).make_url(side.path)
        first = first_turn(surface, stream, budget)
        async with aiohttp.ClientSession() as client:
            async with client.post(url, json=first, headers={"Authorization": "Bearer key-a"}) as resp:
                assert resp.status == 200
                if leave:
                    got = b""
                    while reasoning_got(surface, got + b"data: [DONE]\n\n") != CUT:
                        got += await resp.content.readline()
                    assert resp.connection is not None and resp.connection.transport is not None
                    resp.connection.transport.close()
                    while not stats.surface(surface).budgets:  # until the middleware is done with it
                        await asyncio.sleep(0)
                else:
                    got = await resp.read()
            await record.drain()  # the record is written in the background
            then = replayed(surface, first, got)
            async with client.post(url, json=then, headers={"Authorization": f"Bearer {then_key}"}) as resp:
                assert resp.status == 200
                await resp.read()
        await record.close()
        served = await thinker.over()
        return got, served[-1].body

    yield run
    for session in sessions:
        await session.close()
    for runner in runners:
        await runner.cleanup()


def reasoning_got(surface: Surface, got: bytes) -> str:
    """The reasoning text the client got, wherever its surface puts it."""
    out = []
    for doc in events(got):
        if surface == "chat":
            out += [c.get("delta", c.get("message", {})).get("reasoning_content") or "" for c in doc["choices"]]
        elif surface == "messages":
            if doc.get("type") == "content_block_delta" and doc["delta"]["type"] == "thinking_delta":
                out.append(doc["delta"]["thinking"])
            elif doc.get("type") == "message":
                out += [block["thinking"] for block in doc["content"] if block["type"] == "thinking"]
        elif surface == "responses":
            if doc.get("type") == "response.reasoning_text.delta":
                out.append(doc["delta"])
            elif doc.get("object") == "response":  # a body
                out += [p["text"] for item in doc["output"] if item["type"] == "reasoning" for p in item["content"]]
        else:
            out.append(doc["message"].get("thinking", ""))
    return "".join(out)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize(
    ("surface", "on_ollama"), [*((s, False) for s in BUDGETED), ("chat", True)], ids=[*BUDGETED, "chat-ollama-v1"]
)
async def test_a_cut_answer_is_replayed_as_the_client_got_it(
    converse: Callable[..., Awaitable[Any]], surface: Surface, on_ollama: bool, stream: bool
) -> None:
    uncut, asked_uncut = await converse(surface, True, None, on_ollama=on_ollama)
    cut, asked_cut = await converse(surface, stream, 2, on_ollama=on_ollama)
    assert reasoning_got(surface, uncut) == FULL and reasoning_got(surface, cut) == CUT  # the budget cut it
    assert text_got(surface, cut) == text_got(surface, uncut) == ANSWERED
    # The turn's reasoning reaches the upstream in both, once, where its server reads it.
    assert json.dumps(asked_uncut).count(FULL) == 1
    assert asked_cut == cut_of(surface, asked_uncut, uncut, cut)


def cut_of(surface: Surface, asked: dict[str, Any], uncut: bytes, cut: bytes) -> dict[str, Any]:
    """The second request of the conversation whose first answer was ``uncut``, had it been ``cut``:
    its reasoning the cut one, and (Responses) the ids of the cut answer's items."""
    spelled = json.dumps(asked)
    if surface == "responses":  # the ids differ: each answer's own, as its client got them
        ids = {i["id"]: j["id"] for i, j in zip(output_of(uncut), output_of(cut), strict=True)}
        assert ids
        for before, after in ids.items():
            spelled = spelled.replace(before, after)
    loaded: dict[str, Any] = json.loads(spelled.replace(FULL, CUT))
    return loaded


NATIVE: dict[Surface, Callable[[], Any]] = {
    "chat": lambda: Thinker("sglang", native=True),
    "messages": lambda: MessagesThinker("llamacpp", native=True),
    "responses": lambda: ResponsesThinker("vllm", native=True),
    "ollama": lambda: OllamaThinker(native=True),
}


@pytest.mark.parametrize("surface", BUDGETED)
async def test_a_cut_answer_whose_reasoning_the_server_split_is_kept_as_an_uncut_one(
    converse: Callable[..., Awaitable[Any]], surface: Surface
) -> None:
    """The server's own reasoning field: an uncut answer leaves no reasoning in the record (the
    gateway moved none), and a cut one none either: the client's next turn goes as it would have."""
    uncut, asked_uncut = await converse(surface, True, None, NATIVE[surface]())
    cut, asked_cut = await converse(surface, True, 2, NATIVE[surface]())
    assert reasoning_got(surface, uncut) == FULL and reasoning_got(surface, cut) == CUT
    assert FULL not in json.dumps(asked_uncut)
    assert asked_cut == cut_of(surface, asked_uncut, uncut, cut)


class ToolCaller:
    """A chat server (SGLang's way of continuing) whose model thinks ``r0 r1 …`` until stopped, and
    whose continuation calls a tool; any other request is answered ``ok``."""

    def __init__(self) -> None:
        self.served: list[dict[str, Any]] = []

    async def over(self) -> list[dict[str, Any]]:
        return [Served(body) for body in self.served]

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.served.append(body)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        async def send(delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 9, "model": body["model"]}
            chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

        messages = body["messages"]
        await send({"role": "assistant", "content": ""})
        try:
            if body.get("continue_final_message"):
                call = {"index": 0, "id": "call_w1", "type": "function"}
                await send({"tool_calls": [call | {"function": {"name": "weather", "arguments": '{"city": "Paris"}'}}]})
                await send({}, "tool_calls")
            elif messages[-1]["role"] == "user" and len(messages) == 1:
                await send({"content": "<think>"})
                for i in range(100):
                    await send({"content": f"r{i} "})
                await send({"content": "</think>ok"})
                await send({}, "stop")
            else:
                await send({"content": "ok"})
                await send({}, "stop")
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        except ConnectionResetError:
            pass  # stopped by the budget
        return resp


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize(
    ("thinker", "client_got", "upstream_gets"),
    [
        pytest.param(lambda: Thinker("sglang", fail=500), "", "<think>r0 r1 </think>", id="continuation_refused"),
        pytest.param(lambda: Thinker("sglang", drop=True), "The", "<think>r0 r1 </think>The", id="continuation_broke"),
        pytest.param(
            lambda: Thinker("sglang", reopen=True),
            ANSWERED,
            "<think>r0 r1 </think><think>more </think>" + ANSWERED,
            id="reasoning_reopened",
        ),
    ],
)
async def test_what_the_client_got_of_a_cut_answer_is_kept(
    converse: Callable[..., Awaitable[Any]],
    stream: bool,
    thinker: Callable[[], Thinker],
    client_got: str,
    upstream_gets: str,
) -> None:
    """A continuation that failed keeps what the client got: the cut reasoning, and whatever of the
    continuation reached it; a reasoning the continuation reopened is kept as the model wrote it."""
    got, asked = await converse("chat", stream, 2, thinker())
    assert text_got("chat", got) == client_got
    then = {"role": "user", "content": "and then 0"}
    restored = {"role": "assistant", "content": upstream_gets}
    assert asked == {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": "think 3"}, restored, then],
    }


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
async def test_a_tool_call_of_the_continuation_finds_the_cut_reasoning(
    converse: Callable[..., Awaitable[Any]], stream: bool
) -> None:
    """Found by the id of the call the client got (the continuation's), in its conversation."""
    caller = ToolCaller()
    got, asked = await converse("chat", stream, 2, caller)
    call = {"id": "call_w1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
    assert calls_got(got) == [call]
    assert reasoning_got("chat", got) == CUT
    restored = {"role": "assistant", "content": "<think>r0 r1 </think>", "tool_calls": [call]}
    tool = {"role": "tool", "tool_call_id": "call_w1", "content": "sunny"}
    assert asked == {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": "think 3"}, restored, tool],
    }


async def test_a_cut_answer_is_found_only_in_its_scope(converse: Callable[..., Awaitable[Any]]) -> None:
    """Another client's key finds nothing: its next turn goes as it was sent."""
    got, asked = await converse("chat", True, 2, then_key="key-b")
    assert reasoning_got("chat", got) == CUT and text_got("chat", got) == ANSWERED
    answer = {"role": "assistant", "content": ANSWERED}
    then = {"role": "user", "content": "and then 0"}
    assert asked == {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "think 3"}, answer, then]}


async def test_a_client_gone_before_the_continuation_finds_the_cut_reasoning(
    converse: Callable[..., Awaitable[Any]],
) -> None:
    """No continuation is asked for; what the client got is kept all the same: the cut reasoning,
    closed (a stream ended without the budget, by a handler that was cancelled, keeps its reasoning
    unclosed, as it came)."""
    got, asked = await converse("chat", True, 2, Thinker("sglang"), leave=True)
    assert reasoning_got("chat", got + b"data: [DONE]\n\n") == CUT
    restored = {"role": "assistant", "content": "<think>r0 r1 </think>"}
    then = {"role": "user", "content": "and then 0"}
    assert asked == {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": "think 3"}, restored, then],
    }
