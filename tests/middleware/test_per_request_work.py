"""What one request costs the middleware besides its history: work done only when the request needs
it, and done once. Each test counts the calls of a step a request of that kind did not need (or
needed once) and checks that the request comes out as before."""

from __future__ import annotations

import gc
import json
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import msgspec
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_IDS, THINKEXTRACT_RECORD, THINKEXTRACT_SERVER, ThinkExtractConfig, setup
from gateway_mw import config as config_module
from gateway_mw import incoming as incoming_module
from gateway_mw.channels import Said
from gateway_mw.config import Surface
from gateway_mw.credentials import scope_for
from gateway_mw.history import Request, transform_request
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.registry import SURFACES

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}


class Upstream:
    """Answers each chat request with the next of ``answers`` (a tool call with it)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.bodies: list[dict[str, Any]] = []

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        message = {"role": "assistant", "content": self.answers[len(self.bodies) - 1], "tool_calls": [CALL]}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        answer = {"id": "c", "object": "chat.completion", "created": 1, "model": body["model"], "choices": [choice]}
        return web.json_response(answer)


async def _gateway(aiohttp_server: ServerFactory, answers: list[str]) -> tuple[str, Upstream, web.Application]:
    up = Upstream(answers)
    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/v1/chat/completions", up.chat)
    server = await aiohttp_server(app)
    return str(server.make_url("/v1/chat/completions")), up, app


async def _post(url: str, messages: list[dict[str, Any]], key: str, model: str = "llama-3.1-8b") -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        body = {"model": model, "messages": messages}
        async with session.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) as resp:
            assert resp.status == 200
            answer: dict[str, Any] = json.loads(await resp.read())
            return answer


@pytest.fixture
def digests(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every record scope digested from a request's keys."""
    made: list[bytes] = []

    def counted(keys: list[str]) -> bytes:
        made.append(scope_for(keys))
        return made[-1]

    monkeypatch.setattr(incoming_module, "scope_for", counted)
    return made


async def test_a_request_that_neither_reads_nor_writes_the_record_digests_no_key(
    aiohttp_server: ServerFactory, digests: list[bytes]
) -> None:
    """A first turn (nothing to recall) whose answer moved no reasoning: the record is not touched,
    and the client's key is not digested into a scope."""
    url, up, app = await _gateway(aiohttp_server, ["It is sunny."])
    question = [{"role": "user", "content": "Weather in Paris?"}]
    answer = await _post(url, question, "key-a")
    await app[THINKEXTRACT_RECORD].drain()
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "It is sunny.", "tool_calls": [CALL]}
    assert up.bodies == [{"model": "llama-3.1-8b", "messages": question}]
    assert digests == []
    assert app[THINKEXTRACT_RECORD].counts.written == 0


async def test_a_request_that_reads_and_writes_the_record_digests_its_key_once(
    aiohttp_server: ServerFactory, digests: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request's key is digested once, however often its scope is used (the record read for its
    history, written with its answer), and each answer's entry encoded once, however many keys it is
    kept under; the answer's reasoning is kept under that scope alone."""
    encoded: list[bytes] = []
    encode = incoming_module._encode_entry

    def counted(entry: Any) -> bytes:
        encoded.append(encode(entry))
        return encoded[-1]

    monkeypatch.setattr(incoming_module, "_encode_entry", counted)
    written = "<think>I need the weather first.</think>Let me look."
    url, up, app = await _gateway(aiohttp_server, [written, "<think>Sunny.</think>It is sunny.", "It is sunny."])
    record = app[THINKEXTRACT_RECORD]
    question = [{"role": "user", "content": "Weather in Paris?"}]
    first = await _post(url, question, "key-a")
    await record.drain()
    assert digests == [scope_for(["key-a"])]  # written: the first answer moved reasoning
    assert record.counts.written == 3  # under its call's id, what it said and the conversation before it
    assert [msgspec.json.decode(e) for e in encoded] == [
        {"reasoning": "I need the weather first.", "original": written, "calls": ["call_1"]}
    ]
    turn = {"role": "assistant", "content": first["choices"][0]["message"]["content"], "tool_calls": [CALL]}
    history = [*question, turn, {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    await _post(url, history, "key-a")
    await record.drain()
    assert digests == [scope_for(["key-a"])] * 2  # read (its turn's reasoning) and written: once
    # The reasoning the client dropped came back from the record, in the model's own text.
    assert up.bodies[1]["messages"][1] == {"role": "assistant", "content": written, "tool_calls": [CALL]}
    assert (record.counts.written, record.counts.hits) == (6, 1)
    assert len(encoded) == 2
    await _post(url, history, "key-b")  # another key: its own scope, where nothing was kept
    assert up.bodies[2]["messages"][1] == turn
    assert digests[-1] == scope_for(["key-b"]) != scope_for(["key-a"])


def test_a_setting_replaced_alike_is_one_configuration() -> None:
    """What two requests change alike is one configuration, equal to a fresh copy; other changes
    (another value, another setting, another base) are their own."""
    base = ThinkExtractConfig(upstream_server="auto")
    vllm = base.replaced(upstream_server="vllm")
    assert vllm is base.replaced(upstream_server="vllm")
    assert vllm == base.replace(upstream_server="vllm")
    assert base.replaced(upstream_server="sglang") == base.replace(upstream_server="sglang") != vllm
    assert base.replaced(reasoning_exclude=True) == base.replace(reasoning_exclude=True)
    assert vllm.replaced(reasoning_exclude=True) == base.replace(upstream_server="vllm", reasoning_exclude=True)
    assert base.upstream_server == "auto" and not base.reasoning_exclude  # the base is left as it was


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every model's settings worked out (server, model): once per configuration and model. The
    values worked out start empty: the configurations earlier tests made may have filled them to
    their bound, which clears them on the way (when that happens is not what is tested here)."""
    monkeypatch.setattr(config_module, "_DERIVED", {})
    made: list[tuple[str, str]] = []
    resolve = ThinkExtractConfig._resolve

    def counted(self: ThinkExtractConfig, model: str) -> ThinkExtractConfig:
        made.append((self.upstream_server, model))
        return resolve(self, model)

    monkeypatch.setattr(ThinkExtractConfig, "_resolve", counted)
    return made


@web.middleware
async def _names_vllm(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> Any:
    request[THINKEXTRACT_SERVER] = "vllm"  # as a gateway that knows the server behind each upstream
    return await handler(request)


async def test_requests_whose_server_an_outer_middleware_names_share_its_settings(
    aiohttp_server: ServerFactory, resolved: list[tuple[str, str]]
) -> None:
    """A configuration for the server an outer middleware names is made once, not per request: the
    model's settings under it are worked out once, and every request is rewritten for that server."""
    up = Upstream(["It is sunny."] * 3)
    app = web.Application(middlewares=[_names_vllm])
    setup(app, ThinkExtractConfig(upstream_server="auto", reasoning_store="off"))
    app.router.add_post("/v1/chat/completions", up.chat)
    url = str((await aiohttp_server(app)).make_url("/v1/chat/completions"))
    turn = {
        "role": "assistant",
        "content": "<think>I need the weather first.</think>Let me look.",
        "tool_calls": [CALL],
    }
    history = [
        {"role": "user", "content": "Weather?"},
        turn,
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    body = {"model": "qwen3-8b", "messages": history}
    await _post(url, history, "key-a", model="qwen3-8b")
    first = list(resolved)  # what the first request worked out, for the server named and the base
    assert {server for server, _ in first} == {"auto", "vllm"}
    await _post(url, history, "key-a", model="qwen3-8b")
    await _post(url, history, "key-b", model="qwen3-8b")
    assert resolved == first  # the next requests work out nothing again
    expected = transform_request(
        SURFACES["chat"], json.dumps(body).encode(), ThinkExtractConfig(upstream_server="vllm")
    )
    assert expected is not None  # the vLLM form: the reasoning in its own field
    assert up.bodies == [json.loads(expected)] * 3


async def test_clients_that_keep_encrypted_reasoning_share_their_settings(
    aiohttp_server: ServerFactory, resolved: list[tuple[str, str]]
) -> None:
    """Responses clients that ask for ``reasoning.encrypted_content`` (Codex) get their answers
    translated under one configuration, not one per request: the model's settings are worked out
    once, and each answer's reasoning comes back as the first did."""

    async def responses(request: web.Request) -> web.Response:
        body = await request.json()
        text = {"type": "output_text", "text": "<think>Sunny.</think>It is sunny.", "annotations": []}
        item = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [text]}
        answer = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed"}
        return web.json_response({**answer, "model": body["model"], "output": [item]})

    app = web.Application()
    setup(app, ThinkExtractConfig(reasoning_store="off"))
    app[THINKEXTRACT_IDS] = lambda prefix: f"{prefix}1"  # each answer's ids alike
    app.router.add_post("/v1/responses", responses)
    url = str((await aiohttp_server(app)).make_url("/v1/responses"))
    request = {"model": "qwen3-8b", "input": "Weather?", "include": ["reasoning.encrypted_content"], "store": False}
    answers = []
    async with aiohttp.ClientSession() as session:
        for _ in range(3):
            async with session.post(url, json=request) as resp:
                answers.append(await resp.json())
            if len(answers) == 1:
                first = list(resolved)
    assert resolved == first
    reasoning = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Sunny."}],
        "content": [{"type": "reasoning_text", "text": "Sunny."}],
        "encrypted_content": "gw1:U3Vubnku",  # the client's to send back
        "status": "completed",
    }
    assert [answer["output"][0] for answer in answers] == [reasoning] * 3
    assert answers == [answers[0]] * 3


@pytest.fixture
def texts_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every time a request's texts were read for a text switch (``/no_think``)."""
    read: list[int] = []
    texts = Request.texts

    def counted(self: Request) -> list[Any] | None:
        read.append(self.count)
        return texts(self)

    monkeypatch.setattr(Request, "texts", counted)
    return read


async def test_the_texts_are_read_for_a_switch_only_when_no_field_says_anything(
    aiohttp_server: ServerFactory, texts_read: list[int]
) -> None:
    """A request whose field says what it wants of the thinking is not searched for a text switch
    (the field wins); one that says nothing in its fields is, and its switch is written as before."""
    up = Upstream(["It is sunny."] * 2)
    app = web.Application()
    setup(app, ThinkExtractConfig(upstream_server="vllm", reasoning_store="off"))
    app.router.add_post("/v1/chat/completions", up.chat)
    url = str((await aiohttp_server(app)).make_url("/v1/chat/completions"))
    async with aiohttp.ClientSession() as session:
        said = {"model": "qwen3-8b", "messages": [{"role": "user", "content": "Weather? /no_think"}]}
        for body in ({**said, "reasoning_effort": "high"}, said):
            async with session.post(url, json=body) as resp:
                assert resp.status == 200
    assert texts_read == [1]  # the second request only
    on = {"reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": True}}  # the field's
    assert up.bodies == [{**said, **on}, {**said, "chat_template_kwargs": {"enable_thinking": False}}]


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
async def test_a_request_is_freed_when_its_response_is_over(aiohttp_server: ServerFactory, stream: bool) -> None:
    """Once its response is over, nothing the middleware made holds a request (its body, what was read
    of it) in a cycle: it goes as soon as aiohttp lets it go, not at the garbage collector's next pass,
    as without the middleware."""
    requests: list[weakref.ref[web.Request]] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        requests.append(weakref.ref(request))
        await request.read()
        if not stream:
            message = {"role": "assistant", "content": "<think>Sunny.</think>It is sunny."}
            return web.json_response({"id": "c", "object": "chat.completion", "choices": [{"message": message}]})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b'data: {"choices":[{"index":0,"delta":{"content":"<think>Sunny.</think>It is"}}]}\n\n')
        await resp.write_eof(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/v1/chat/completions", chat)
    url = str((await aiohttp_server(app)).make_url("/v1/chat/completions"))
    bodies = []
    gc.collect()
    gc.disable()
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(2):  # the connection's handler may hold its latest request: the first is asked of
                body = {"model": "m", "messages": [{"role": "user", "content": "Weather?"}]}
                async with session.post(url, json=body) as resp:
                    bodies.append(await resp.read())
        first = requests[0]()
    finally:
        gc.enable()
    assert first is None
    if stream:  # translated all the same
        assert bodies[0] == (
            b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"Sunny.","reasoning":"Sunny."}}]}\n\n'
            b'data: {"choices":[{"index":0,"delta":{"content":"It is"},"logprobs":null,"finish_reason":null}]}\n\n'
            b"data: [DONE]\n\n"
        )
    else:
        message = {"role": "assistant", "content": "It is sunny.", "reasoning_content": "Sunny.", "reasoning": "Sunny."}
        assert json.loads(bodies[0])["choices"] == [{"message": message}]
    assert bodies[1] == bodies[0]


_STREAMS: dict[Surface, tuple[bytes, bytes]] = {
    "chat": (
        b'data: {"choices":[{"index":0,"delta":{"content":"<think>Sunny.</think>It is sunny."}}]}\n\ndata: [DONE]\n\n',
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"Sunny.","reasoning":"Sunny."}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"It is sunny."},"logprobs":null,"finish_reason":null}]}\n\n'
        b"data: [DONE]\n\n",
    ),
    "ollama": (
        b'{"model":"m","message":{"role":"assistant","content":"<think>Sunny.</think>It is sunny."},"done":false}\n'
        b'{"model":"m","message":{"role":"assistant","content":""},"done":true}\n',
        b'{"model":"m","message":{"role":"assistant","content":"","thinking":"Sunny."},"done":false}\n'
        b'{"model":"m","message":{"role":"assistant","content":"It is sunny."},"done":false}\n'
        b'{"model":"m","message":{"role":"assistant","content":""},"done":true}\n',
    ),
}


@pytest.mark.parametrize("keep", [False, True], ids=["no record", "record"])
@pytest.mark.parametrize("surface", list(_STREAMS))
def test_a_stream_s_pipeline_leaves_nothing_for_the_garbage_collector(surface: Surface, keep: bool) -> None:
    """What translates a stream (the pipeline, its translator, the transcripts the record keeps) makes
    no cycle: it goes when the response is done with it, not at the collector's next pass."""
    stream, translated = _STREAMS[surface]
    gc.collect()
    gc.disable()
    try:
        outs, said = [], []
        for _ in range(3):
            pipeline = StreamPipeline(surface, ThinkExtractConfig(), keep=keep)
            outs.append(pipeline.feed(stream) + pipeline.finish())
            said.append(pipeline.said())
        del pipeline
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0
    assert outs == [translated] * 3
    kept = [Said(original="<think>Sunny.</think>It is sunny.")]
    assert said == [kept if keep else []] * 3


async def test_the_handler_is_handed_the_body_it_reads_once(
    aiohttp_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The body the middleware read is handed back to the handler once, as the upstream is to read
    it: as it came when nothing changes it, rewritten when the history or a reasoning control does
    (never first as it came, then again rewritten)."""
    handed: list[bytes] = []
    hand_over = incoming_module.hand_over

    def counted(request: web.BaseRequest, body: bytes) -> None:
        handed.append(body)
        hand_over(request, body)

    monkeypatch.setattr(incoming_module, "hand_over", counted)
    up = Upstream(["It is sunny."] * 2)
    app = web.Application()
    setup(app, ThinkExtractConfig(upstream_server="vllm"))
    app.router.add_post("/v1/chat/completions", up.chat)
    url = str((await aiohttp_server(app)).make_url("/v1/chat/completions"))
    question = [{"role": "user", "content": "Weather in Paris?"}]
    await _post(url, question, "key-a")
    async with aiohttp.ClientSession() as session:  # a control the upstream reads otherwise: rewritten
        body = {"model": "qwen3-8b", "messages": question, "reasoning_effort": "none"}
        async with session.post(url, json=body) as resp:
            assert resp.status == 200
    assert [json.loads(b) for b in handed] == up.bodies
    assert up.bodies[0] == {"model": "llama-3.1-8b", "messages": question}
    assert up.bodies[1] == {**body, "chat_template_kwargs": {"enable_thinking": False}}  # as vLLM reads "off"
