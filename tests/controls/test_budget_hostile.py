"""A reasoning budget the gateway enforces, against an odd or hostile upstream and handler, on every
surface, over loopback: the middleware on a forwarding app in front of a scripted upstream (the
first answer thinks, the continuation answers as the test says). Whatever the continuation does,
the client gets one answer that ends once, well-formed, with everything it is owed, and the handler
does not fail."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_REQUEST_BODY, ThinkExtractConfig, setup
from gateway_mw.stats import ThinkExtractStats
from gateway_mw.surfaces.chat.budgetbody import ChatBody

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
BUDGET = 2
REASONING = ["r0 ", "r1 "]
"""What the client gets of the first answer's reasoning, the budget being 2."""


def _sse(kind: str | None, data: dict[str, Any]) -> bytes:
    named = b"event: " + kind.encode() + b"\n" if kind is not None else b""
    return named + b"data: " + json.dumps(data).encode() + b"\n\n"


# -- each surface: its request, an upstream answer as events, and what its client reads ----------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _sse(
        None, {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}
    )


def _chat_answer(texts: list[str]) -> list[bytes]:
    return [
        _chunk({"role": "assistant", "content": ""}),
        *(_chunk({"content": t}) for t in texts),
        _chunk({}, "stop"),
        b"data: [DONE]\n\n",
    ]


def _messages_answer(texts: list[str]) -> list[bytes]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}
    message |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 0}}
    text_delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}
    return [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        *(_sse("content_block_delta", text_delta | {"delta": {"type": "text_delta", "text": t}}) for t in texts),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": len(texts)},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]


def _responses_answer(texts: list[str]) -> list[bytes]:
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "m",
        "status": "in_progress",
        "output": [],
    }
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "text": "".join(texts), "annotations": []}
    done = item | {"status": "completed", "content": [part]}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": response}),
        ("response.output_item.added", {"output_index": 0, "item": item}),
        ("response.content_part.added", where | {"part": part | {"text": ""}}),
        *(("response.output_text.delta", where | {"delta": t}) for t in texts),
        ("response.output_text.done", where | {"text": part["text"]}),
        ("response.content_part.done", where | {"part": part}),
        ("response.output_item.done", {"output_index": 0, "item": done}),
        ("response.completed", {"response": response | {"status": "completed", "output": [done]}}),
    ]
    return [_sse(kind, {"type": kind, "sequence_number": seq, **data}) for seq, (kind, data) in enumerate(events)]


def _ollama_line(content: str, done: bool = False) -> bytes:
    line: dict[str, Any] = {"model": "m", "created_at": "2026-01-01T00:00:00Z"}
    line |= {"message": {"role": "assistant", "content": content}, "done": done}
    if done:
        line |= {"done_reason": "stop", "eval_count": 3}
    return json.dumps(line).encode() + b"\n"


def _ollama_answer(texts: list[str]) -> list[bytes]:
    return [*(_ollama_line(t) for t in texts), _ollama_line("", done=True)]


@dataclass(frozen=True)
class Surface:
    name: str
    route: str
    server: str
    content_type: str
    answer: Callable[[list[str]], list[bytes]]
    """An upstream answer of these texts, as the upstream's events (the last one its end)."""

    def request(self, stream: bool, budget: int = BUDGET) -> dict[str, Any]:
        body: dict[str, Any] = {"model": "m", "stream": stream}
        if self.name == "messages":
            return body | {
                "max_tokens": 1000,
                "messages": [{"role": "user", "content": "q"}],
                "thinking": {"type": "enabled", "budget_tokens": budget},
            }
        body["reasoning"] = {"max_tokens": budget}
        return body | ({"input": "q"} if self.name == "responses" else {"messages": [{"role": "user", "content": "q"}]})

    def thinking(self) -> list[bytes]:
        """A first answer that thinks (inline tags) past the budget, then answers."""
        return self.answer(["<think>", *(f"r{i} " for i in range(50)), "</think>", "First"])


SURFACES = [
    Surface("chat", "/v1/chat/completions", "vllm", "text/event-stream", _chat_answer),
    Surface("messages", "/v1/messages", "llamacpp", "text/event-stream", _messages_answer),
    Surface("responses", "/v1/responses", "vllm", "text/event-stream", _responses_answer),
    Surface("ollama", "/api/chat", "ollama", "application/x-ndjson", _ollama_answer),
]


@dataclass
class Read:
    """What the client read: the reasoning pieces, the answer's text, and how the answer ended."""

    reasoning: list[str]
    text: str
    ends: int
    """Terminal events (``[DONE]``, ``message_stop``, the response's end, a done line); a body: 1."""
    last_is_end: bool
    stop: Any
    """Why it stopped: chat's last ``finish_reason``, messages' ``stop_reason``, the response's
    ``status``, Ollama's ``done_reason``."""


def _events(raw: bytes) -> list[dict[str, Any] | str]:
    out: list[dict[str, Any] | str] = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.split("\n") if line.startswith("data:"))
        if data == "[DONE]":
            out.append(data)
        elif data:
            out.extend(_doc(data))
    return out


def _doc(data: str) -> list[dict[str, Any]]:
    """An event's or a line's object; none for one nested too deep to read (passed as it came)."""
    try:
        return [json.loads(data)]
    except RecursionError:
        return []


def read_stream(surface: str, raw: bytes) -> Read:
    if surface == "ollama":
        lines = [doc for line in raw.decode().splitlines() if line.strip() for doc in _doc(line)]
        ends = [i for i, line in enumerate(lines) if line.get("done") is True]
        return Read(
            [line["message"]["thinking"] for line in lines if line["message"].get("thinking")],
            "".join(line["message"].get("content", "") for line in lines),
            len(ends),
            bool(ends) and ends[-1] == len(lines) - 1,
            lines[ends[-1]].get("done_reason") if ends else None,
        )
    events = _events(raw)
    reasoning: list[str] = []
    text: list[str] = []
    stops: list[Any] = []
    ends: list[int] = []
    for i, event in enumerate(events):
        if surface == "chat":
            if event == "[DONE]":
                ends.append(i)
                continue
            assert isinstance(event, dict)
            for choice in event["choices"]:
                delta = choice["delta"]
                if delta.get("reasoning_content"):
                    reasoning.append(delta["reasoning_content"])
                text.append(delta.get("content") or "")
                if choice.get("finish_reason"):
                    stops.append(choice["finish_reason"])
            continue
        assert isinstance(event, dict)
        kind = event["type"]
        if surface == "messages":
            delta = event.get("delta", {})
            if kind == "content_block_delta" and delta["type"] == "thinking_delta":
                reasoning.append(delta["thinking"])
            elif kind == "content_block_delta" and delta["type"] == "text_delta":
                text.append(delta["text"])
            elif kind == "message_delta":
                stops.append(delta["stop_reason"])
            elif kind == "message_stop":
                ends.append(i)
        elif kind == "response.reasoning_text.delta":
            reasoning.append(event["delta"])
        elif kind == "response.output_text.delta":
            text.append(event["delta"])
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            ends.append(i)
            stops.append(event["response"]["status"])
    if surface == "chat":  # one finish, or the client reads two answers' ends
        assert len(stops) <= 1, stops
    return Read(
        reasoning, "".join(text), len(ends), bool(ends) and ends[-1] == len(events) - 1, stops[-1] if stops else None
    )


def read_body(surface: str, raw: bytes) -> Read:
    body = json.loads(raw)
    if surface == "chat":
        message = body["choices"][0]["message"]
        reasoning, text, stop = (
            message.get("reasoning_content", ""),
            message["content"],
            body["choices"][0]["finish_reason"],
        )
    elif surface == "messages":
        blocks = body["content"]
        reasoning = "".join(b["thinking"] for b in blocks if b["type"] == "thinking")
        text, stop = "".join(b["text"] for b in blocks if b["type"] == "text"), body["stop_reason"]
    elif surface == "responses":
        output = body["output"]
        reasoning = "".join(p["text"] for i in output if i["type"] == "reasoning" for p in i["content"])
        text = "".join(p["text"] for i in output if i["type"] == "message" for p in i["content"])
        stop = body["status"]
    else:
        reasoning, text, stop = body["message"].get("thinking", ""), body["message"]["content"], body.get("done_reason")
        assert body["done"] is True
    return Read([reasoning] if reasoning else [], text, 1, True, stop)


STOPPED = {"chat": "stop", "messages": "end_turn", "responses": "completed", "ollama": "stop"}
"""How each surface says the answer ended by itself."""
LIMITED = {"chat": "length", "messages": "max_tokens", "responses": "incomplete", "ollama": "length"}
"""How each surface says a limit ended it: the answer the gateway ends when no continuation does."""


@dataclass
class Front:
    url: str
    stats: ThinkExtractStats
    asked: list[dict[str, Any]]


Start = Callable[..., Awaitable[Front]]


@pytest.fixture
async def start(aiohttp_server: ServerFactory) -> AsyncIterator[Start]:
    sessions: list[aiohttp.ClientSession] = []

    async def make(
        surface: Surface,
        continuation: list[bytes],
        end: bool = True,
        first: list[bytes] | None = None,
        compress: bool = False,
    ) -> Front:
        """``continuation``: the events the continuation is answered with; ``end``: the handler ends
        its response itself (``write_eof``), else it returns it for aiohttp to end; ``compress``:
        the handler has aiohttp compress its response (``enable_compression``)."""
        answers = [first if first is not None else surface.thinking(), continuation]
        asked: list[dict[str, Any]] = []

        async def upstream(request: web.Request) -> web.StreamResponse:
            asked.append(json.loads(await request.read()))
            resp = web.StreamResponse(headers={"Content-Type": surface.content_type})
            await resp.prepare(request)
            for event in answers[min(len(asked), 2) - 1]:
                await resp.write(event)
            await resp.write_eof()
            return resp

        back = web.Application()
        back.router.add_post(surface.route, upstream)
        back_server = await aiohttp_server(back)
        session = aiohttp.ClientSession()
        sessions.append(session)
        front_app = web.Application()
        config = ThinkExtractConfig(
            upstream_server=surface.server,
            reasoning_store="off",
            reasoning_budget_enforcement="gateway",
            messages_policy="unsigned",
        )
        stats = setup(front_app, config)

        async def forward(request: web.Request) -> web.StreamResponse:
            body = request.get(THINKEXTRACT_REQUEST_BODY) or await request.read()
            upstream = await session.post(back_server.make_url(surface.route), data=body)
            resp = web.StreamResponse(status=upstream.status)
            resp.content_type = upstream.content_type
            if compress:
                resp.enable_compression()
            await resp.prepare(request)
            try:
                async for piece in upstream.content.iter_any():
                    await resp.write(piece)
                if end:
                    await resp.write_eof()
            except ConnectionResetError:
                pass
            finally:
                upstream.close()
            return resp

        front_app.router.add_post(surface.route, forward)
        url = str((await aiohttp_server(front_app)).make_url(surface.route))
        return Front(url, stats, asked)

    yield make
    for session in sessions:
        await session.close()


async def ask(front: Front, surface: Surface, stream: bool) -> Read:
    # A bound for a hang (a body whose length its header misstates), not a speed.
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,
        session.post(front.url, json=surface.request(stream), headers={"Accept-Encoding": "gzip"}) as resp,
    ):
        assert resp.status == 200
        raw = await resp.read()
    return read_stream(surface.name, raw) if stream else read_body(surface.name, raw)


def expected(surface: Surface, stream: bool, text: str, stop: str) -> Read:
    reasoning = REASONING if stream else ["".join(REASONING)]
    return Read(reasoning, text, 1, True, stop)


ANSWERED = pytest.mark.parametrize("surface", SURFACES, ids=[s.name for s in SURFACES])
STREAM = pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])


@ANSWERED
@STREAM
async def test_a_handler_that_leaves_the_end_to_aiohttp_ends_the_answer_once(
    start: Start, surface: Surface, stream: bool
) -> None:
    """aiohttp ends a response its handler returned (``write_eof``): most handlers leave it to it.
    The continuation's end is then the answer's, not a failure: before, chat's client got a
    ``finish_reason: "length"`` chunk after ``[DONE]``, a body said ``length`` though the model
    had finished, and every surface counted the continuation failed."""
    front = await start(surface, surface.answer(["Ans"]), end=False)
    assert await ask(front, surface, stream) == expected(surface, stream, "Ans", STOPPED[surface.name])
    assert front.stats.surface(surface.name).budgets == {"continued": 1}


@ANSWERED
@STREAM
@pytest.mark.parametrize("cut", ["no_end", "empty"])
async def test_a_continuation_that_does_not_end_its_answer_is_ended_by_the_gateway(
    start: Start, surface: Surface, stream: bool, cut: str
) -> None:
    """A continuation whose stream stops without its terminal event (or is empty) still gives the
    client one well-formed end: what came of it, then the end a limit gives."""
    answer = surface.answer(["Ans"])
    continuation = answer[:-1] if cut == "no_end" else []
    front = await start(surface, continuation)
    read = await ask(front, surface, stream)
    text = "Ans" if cut == "no_end" else ""
    # a chat or messages answer whose stop came keeps it: only its end is added
    kept = cut == "no_end" and surface.name in ("chat", "messages")
    assert read == expected(surface, stream, text, STOPPED[surface.name] if kept else LIMITED[surface.name])
    assert front.stats.surface(surface.name).budgets == {"continuation_failed": 1}


@ANSWERED
@STREAM
async def test_nothing_after_the_continuation_s_end_reaches_the_client(
    start: Start, surface: Surface, stream: bool
) -> None:
    """An upstream that goes on after its stream's end (a second answer, a second terminal event):
    the client's answer ends at the first end, once."""
    continuation = surface.answer(["Ans"]) + surface.answer(["Again"])
    front = await start(surface, continuation)
    assert await ask(front, surface, stream) == expected(surface, stream, "Ans", STOPPED[surface.name])


@ANSWERED
@STREAM
@pytest.mark.parametrize("budget", [BUDGET, 1000], ids=["cut", "within"])
async def test_a_handler_that_compresses_its_response(
    start: Start, surface: Surface, stream: bool, budget: int
) -> None:
    """aiohttp compresses what the writer gives it. Before, a body made of the stream was sent with
    the length of its uncompressed bytes (the client waited for bytes that never came), and the
    continuation's response, saying ``Content-Encoding`` though its bytes come plain, was taken for
    one the gateway cannot read: never continued."""
    front = await start(surface, surface.answer(["Ans"]), compress=True)
    body = surface.request(stream, budget)
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,
        session.post(front.url, json=body, headers={"Accept-Encoding": "gzip"}) as resp,
    ):
        assert (resp.status, resp.headers["Content-Encoding"]) == (200, "gzip")
        raw = await resp.read()
    read = read_stream(surface.name, raw) if stream else read_body(surface.name, raw)
    if budget == BUDGET:
        assert read == expected(surface, stream, "Ans", STOPPED[surface.name])
        assert front.stats.surface(surface.name).budgets == {"continued": 1}
    else:  # the first answer whole: its reasoning, its text
        thought = [f"r{i} " for i in range(50)]
        assert read == Read(thought if stream else ["".join(thought)], "First", 1, True, STOPPED[surface.name])
        assert front.stats.surface(surface.name).budgets == {"within": 1}


def _nested(surface: Surface) -> bytes:
    """An event whose JSON nests deeper than a parser goes (the translator passes it as it came)."""
    deep = b"[" * 5000 + b"]" * 5000
    if surface.name == "ollama":
        return b'{"model":"m","x":' + deep + b"}\n"
    kind = {"messages": "ping", "responses": "response.in_progress"}.get(surface.name)
    head = b'{"type":"' + kind.encode() + b'",' if kind is not None else b'{"id":"chatcmpl-1","choices":[],'
    return b"data: " + head + b'"x":' + deep + b"}\n\n"


@ANSWERED
@STREAM
async def test_an_event_nested_too_deep_to_read_does_not_fail_the_handler(
    start: Start, surface: Surface, stream: bool
) -> None:
    """Before, the budget's reader raised ``RecursionError`` on it: the handler failed after the
    headers went out (a stream cut without its end; a body without the answer)."""
    first = surface.thinking()
    first.insert(3, _nested(surface))
    front = await start(surface, surface.answer(["Ans"]), first=first)
    assert await ask(front, surface, stream) == expected(surface, stream, "Ans", STOPPED[surface.name])
    assert front.stats.surface(surface.name).budgets == {"continued": 1}


@pytest.mark.parametrize("index", [None, "a", [0]])
def test_a_tool_call_whose_index_is_no_integer_does_not_fail_the_body(index: Any) -> None:
    """A chat answer asked for as a stream and given as a body: a tool call whose ``index`` is no
    integer is taken as the first call, as the SDKs' accumulators cannot place it elsewhere."""
    body = ChatBody(1 << 20)
    call = {"index": index, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body.feed(_chunk({"tool_calls": [call]}) + _chunk({}, "tool_calls"))
    message = json.loads(body.body())["choices"][0]["message"]
    assert message["tool_calls"] == [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
