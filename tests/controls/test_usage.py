"""Reasoning tokens in every usage, over real HTTP: where a chat stream's usage chunk lacks
``completion_tokens_details.reasoning_tokens``, a Responses stream's ``response.completed`` lacks
``output_tokens_details.reasoning_tokens``, or a messages stream's ``message_delta`` lacks
``output_tokens_details.thinking_tokens``, the gateway writes its own count of the upstream events
that carried reasoning; a count the server wrote is never changed; without a token counter, a
non-stream body is left as the server wrote it (with one: ``test_usage_bodies.py``). Each server's
layout (vLLM, SGLang, llama.cpp, Ollama's /v1), one event per read and all in one; the official SDK
reads the count through its strict models; and the count does not depend on where the network cut
the bytes."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder

from .. import chatlayouts, responseswire
from .. import messageswire as mw
from ..chatwire import read_sse
from ..httpcuts import bytes_at_every_cut
from ..responses.support import layout_body

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]

REASONING = ["Two", " plus", " two"]  # one token per event, as servers stream
ANSWER = ["It", " is", " 4."]
COUNTED = len(REASONING)

# -- chat completions: each server's chunks and usage ----------------------------------------------

# The usage each server writes when its reasoning parser did not split (or count) the answer.
USAGES: dict[str, dict[str, Any]] = {
    "vllm": {"prompt_tokens": 12, "total_tokens": 20, "completion_tokens": 8},
    "sglang": {
        "prompt_tokens": 12,
        "total_tokens": 20,
        "completion_tokens": 8,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
    },
    "llamacpp": {"completion_tokens": 8, "prompt_tokens": 12, "total_tokens": 20},
    "ollama": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
}
LAYOUTS = list(USAGES)


def chat_events(layout: str, usage: dict[str, Any], native: bool = False) -> list[bytes]:
    """A chat stream as ``layout``'s server writes it: the role, the reasoning (in tags, or in the
    server's own field), the answer, the finish, the usage chunk, ``[DONE]``."""

    def one(text: str | None, finish: str | None = None, first: bool = False, reasoning: bool = False) -> bytes:
        body = chatlayouts.body(layout, None if reasoning else text, finish, first)
        if reasoning:
            body["choices"][0]["delta"]["reasoning_content"] = text
        return b"data: " + chatlayouts.dumps(body, layout).encode() + b"\n\n"

    events = [one("" if layout == "ollama" else None, first=True)]
    if native:
        events += [one(t, reasoning=True) for t in REASONING]
    else:
        events += [one(t) for t in ["<think>", *REASONING, "</think>"]]
    events += [one(t) for t in ANSWER]
    events.append(one(None, "stop"))
    last = chatlayouts.body(layout, None)
    last["choices"] = []
    last["usage"] = usage
    if layout == "llamacpp":  # its timings ride on the usage chunk
        last["timings"] = {"prompt_n": 12, "prompt_ms": 9.5, "predicted_n": 8, "predicted_ms": 41.2}
    events.append(b"data: " + chatlayouts.dumps(last, layout).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


def filled(usage: dict[str, Any], tokens: int) -> dict[str, Any]:
    details = usage.get("completion_tokens_details") or {}
    return {**usage, "completion_tokens_details": {**details, "reasoning_tokens": tokens}}


def events_of(data: bytes) -> list[bytes]:
    decoder = SSEDecoder()
    return [e.raw for e in decoder.feed(data) + decoder.finish()[0]]


# -- the upstream and the gateway ------------------------------------------------------------------

STREAMS: dict[str, tuple[str, list[bytes]]] = {}  # name → content type, the pieces written one by one


async def upstream(request: web.Request) -> web.StreamResponse:
    """Writes the answer named by ``X-Upstream``, one write per piece."""
    content_type, pieces = STREAMS[request.headers["X-Upstream"]]
    resp = web.StreamResponse(headers={"Content-Type": content_type})
    await resp.prepare(request)
    for piece in pieces:
        await resp.write(piece)
    await resp.write_eof()
    return resp


def gateway_app(config: ThinkExtractConfig | None = None) -> web.Application:
    app = web.Application()
    setup(app, config or ThinkExtractConfig())
    for path in ("/v1/chat/completions", "/v1/responses"):
        app.router.add_post(path, upstream)
    return app


async def post(base: str, path: str, name: str, content_type: str, pieces: list[bytes]) -> bytes:
    STREAMS[name] = (content_type, pieces)
    async with (
        aiohttp.ClientSession() as session,
        session.post(base + path, json={"model": "m", "stream": True}, headers={"X-Upstream": name}) as resp,
    ):
        assert resp.status == 200
        return await resp.read()


@pytest.fixture
async def url(aiohttp_server: ServerFactory) -> str:
    return str((await aiohttp_server(gateway_app())).make_url(""))


def usage_chunk(out: bytes) -> Any:
    """The chunk that carries the usage: the last but ``[DONE]``."""
    items = read_sse(out)  # every chunk validated as the SDK's strict mode does
    assert items[-1] == "[DONE]"
    return items[-2]


# -- chat: the gateway's count where the server wrote none -------------------------------------------


@pytest.mark.parametrize("reads", ["one event per read", "all in one read"])
@pytest.mark.parametrize("native", [False, True], ids=["tags", "server's field"])
@pytest.mark.parametrize("layout", LAYOUTS)
async def test_chat_stream_usage_gets_the_reasoning_events_counted(
    url: str, layout: str, native: bool, reads: str
) -> None:
    events = chat_events(layout, USAGES[layout], native)
    pieces = events if reads == "one event per read" else [b"".join(events)]
    out = await post(url, "/v1/chat/completions", f"chat-{layout}", "text/event-stream", pieces)
    sent = json.loads(events[-2][6:])
    assert usage_chunk(out) == {**sent, "usage": filled(USAGES[layout], COUNTED)}


@pytest.mark.parametrize(
    ("layout", "usage", "tokens"),
    [
        # SGLang's own count, outside the API's field: where clients read it, its own kept as it was.
        ("sglang", {**USAGES["sglang"], "reasoning_tokens": 5}, 5),
        # A details object whose count is null (LiteLLM's spelling of "not known"): its other members kept.
        (
            "vllm",
            {**USAGES["vllm"], "completion_tokens_details": {"audio_tokens": None, "reasoning_tokens": None}},
            COUNTED,
        ),
    ],
    ids=["sglang-own-top-level", "null-count"],
)
async def test_chat_stream_usage_filled_from_what_the_server_said(
    url: str, layout: str, usage: dict[str, Any], tokens: int
) -> None:
    events = chat_events(layout, usage)
    out = await post(url, "/v1/chat/completions", f"chat-{layout}-said", "text/event-stream", events)
    assert usage_chunk(out) == {**json.loads(events[-2][6:]), "usage": filled(usage, tokens)}


OWN = {
    "vllm": {**USAGES["vllm"], "completion_tokens_details": {"reasoning_tokens": 4}},
    "openai": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20,
               "completion_tokens_details": {"accepted_prediction_tokens": 0, "audio_tokens": 0,
                                             "reasoning_tokens": 0, "rejected_prediction_tokens": 0}},
}  # fmt: skip


@pytest.mark.parametrize("native", [False, True], ids=["tags", "server's field"])
@pytest.mark.parametrize("server", list(OWN))
async def test_chat_stream_a_count_the_server_wrote_arrives_byte_for_byte(url: str, server: str, native: bool) -> None:
    events = chat_events("vllm", OWN[server], native)
    out = await post(url, "/v1/chat/completions", f"chat-own-{server}", "text/event-stream", [b"".join(events)])
    assert events_of(out)[-2:] == events[-2:]


async def test_chat_stream_a_usage_on_every_chunk_counts_the_reasoning_so_far(url: str) -> None:
    """vLLM's and SGLang's ``continuous_usage_stats``: each chunk's usage is the answer so far."""
    usage = USAGES["vllm"]
    events = chat_events("vllm", usage)
    with_usage = [b"data: " + json.dumps({**json.loads(e[6:]), "usage": usage}).encode() + b"\n\n" for e in events[:-1]]
    out = await post(url, "/v1/chat/completions", "chat-continuous", "text/event-stream", [*with_usage, events[-1]])
    items = read_sse(out)
    counts = [(item["usage"].get("completion_tokens_details") or {}).get("reasoning_tokens") for item in items[:-1]]
    # role, <think>: none yet; each reasoning event one more; then the answer, the finish, the usage chunk.
    assert counts == [None, None, 1, 2, 3, *[3] * (len(ANSWER) + 3)]


async def test_chat_stream_every_cut_of_the_bytes_gives_one_answer_with_the_count(
    aiohttp_client: ClientFactory,
) -> None:
    body = b"".join(chat_events("vllm", USAGES["vllm"]))

    async def client_for(handler: Any) -> TestClient[web.Request, web.Application]:
        app = web.Application()
        setup(app, ThinkExtractConfig())
        app.router.add_post("/v1/chat/completions", handler)
        return await aiohttp_client(app)

    outputs = await bytes_at_every_cut(client_for, "/v1/chat/completions", body)
    assert len(outputs) == 1
    assert usage_chunk(outputs.pop())["usage"] == filled(USAGES["vllm"], COUNTED)


async def test_chat_non_stream_usage_is_left_as_the_server_wrote_it(url: str) -> None:
    """A body is one piece of text: the gateway cannot count its tokens without the model's tokenizer."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1730000000,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": "<think>" + "".join(REASONING) + "</think>It is 4."}}],
        "usage": USAGES["vllm"],
    }  # fmt: skip
    STREAMS["chat-body"] = ("application/json", [json.dumps(body).encode()])
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/chat/completions", json={"model": "m"}, headers={"X-Upstream": "chat-body"}) as resp,
    ):
        out = await resp.json()
    assert out["choices"][0]["message"]["reasoning_content"] == "".join(REASONING)  # translated
    assert out["usage"] == USAGES["vllm"]


async def test_chat_with_reasoning_excluded_the_usage_still_counts_it(aiohttp_server: ServerFactory) -> None:
    """The client asked for no reasoning; the model spent the tokens all the same."""
    server = await aiohttp_server(gateway_app(ThinkExtractConfig(reasoning_exclude=True)))
    events = chat_events("vllm", USAGES["vllm"])
    out = await post(str(server.make_url("")), "/v1/chat/completions", "chat-exclude", "text/event-stream", events)
    items = read_sse(out)
    assert all("reasoning_content" not in c["delta"] for item in items[:-1] for c in item["choices"])
    assert items[-2]["usage"] == filled(USAGES["vllm"], COUNTED)


async def test_chat_the_openai_sdk_reads_the_count(url: str) -> None:
    STREAMS["chat-sdk"] = ("text/event-stream", chat_events("ollama", USAGES["ollama"]))
    client = openai.AsyncOpenAI(api_key="x", base_url=url + "/v1", max_retries=0, _strict_response_validation=True)
    args: Any = {"model": "m", "messages": [], "extra_headers": {"X-Upstream": "chat-sdk"}}
    async with client:
        chunks = [
            c
            async for c in await client.chat.completions.create(
                **args, stream=True, stream_options={"include_usage": True}
            )
        ]
        async with client.chat.completions.stream(**args) as stream:
            final = await stream.get_final_completion()
    last = chunks[-1].usage
    assert last is not None and last.completion_tokens_details is not None
    assert last.completion_tokens_details.reasoning_tokens == COUNTED
    assert final.usage is not None and final.usage.completion_tokens_details is not None
    assert final.usage.completion_tokens_details.reasoning_tokens == COUNTED
    assert final.choices[0].message.content == "".join(ANSWER)


# -- chat: the count is the reasoning events', wherever the bytes were cut ---------------------------

TEXT = st.text("ab ", min_size=1, max_size=4).filter(str.strip)  # a token with a letter: no edge trims it all
HOSTILE = st.text("ab <>/thinkTHINK\n", min_size=1, max_size=6)  # tags cut across tokens, held text


def through(events: list[bytes], cuts: list[int]) -> bytes:
    stream = b"".join(events)
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    pipeline = StreamPipeline("chat", ThinkExtractConfig())
    out = b"".join(pipeline.feed(stream[a:b]) for a, b in itertools.pairwise(bounds)) + pipeline.finish()
    assert pipeline.error is None
    return out


def stream_of(layout: str, texts: list[str], native_from: int | None) -> list[bytes]:
    """``texts`` as one event each; from ``native_from`` on, in the server's own field."""
    out = []
    for i, text in enumerate(texts):
        native = native_from is not None and i >= native_from
        body = chatlayouts.body(layout, None if native else text)
        if native:
            body["choices"][0]["delta"]["reasoning_content"] = text
        out.append(b"data: " + chatlayouts.dumps(body, layout).encode() + b"\n\n")
    last = {**chatlayouts.body(layout, None), "choices": [], "usage": USAGES[layout]}
    return [*out, b"data: " + chatlayouts.dumps(last, layout).encode() + b"\n\n", b"data: [DONE]\n\n"]


def counted(out: bytes) -> int:
    usage = usage_chunk(out)["usage"]
    return int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0))


@given(
    layout=st.sampled_from(LAYOUTS),
    reasoning=st.lists(TEXT, max_size=8),
    answer=st.lists(TEXT, min_size=1, max_size=4),
    native=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_chat_the_count_is_the_reasoning_events_at_every_cut(
    layout: str, reasoning: list[str], answer: list[str], native: bool, cuts: list[int]
) -> None:
    if native:  # the server's own field, then its answer
        events = stream_of(layout, [*reasoning, *answer], None)
        events[: len(reasoning)] = stream_of(layout, reasoning, 0)[: len(reasoning)]
    else:
        events = stream_of(layout, ["<think>", *reasoning, "</think>", *answer], None)
    assert counted(through(events, cuts)) == counted(through(events, [])) == len(reasoning)


@given(layout=st.sampled_from(LAYOUTS), texts=st.lists(HOSTILE, max_size=12), cuts=st.lists(st.integers(0, 10_000)))
def test_chat_any_text_is_counted_alike_however_the_bytes_were_cut(
    layout: str, texts: list[str], cuts: list[int]
) -> None:
    events = stream_of(layout, texts, None)
    one_by_one = through(events, list(itertools.accumulate(map(len, events))))
    assert through(events, cuts) == through(events, []) == one_by_one


COUNTS = {k: st.integers(0, 99) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
OWN_COUNTS = {  # the server's own count, in the API's field or (SGLang) at the top
    "completion_tokens_details": st.fixed_dictionaries({"reasoning_tokens": st.integers(0, 99)}),
    "reasoning_tokens": st.integers(1, 99),
}


@given(usage=st.fixed_dictionaries(COUNTS, optional=OWN_COUNTS), cuts=st.lists(st.integers(0, 10_000), max_size=4))
def test_chat_a_count_the_server_wrote_is_never_changed(usage: dict[str, Any], cuts: list[int]) -> None:
    events = stream_of("vllm", ["<think>", *REASONING, "</think>", *ANSWER], None)
    events[-2] = b"data: " + json.dumps({**json.loads(events[-2][6:]), "usage": usage}).encode() + b"\n\n"
    out = usage_chunk(through(events, cuts))["usage"]
    if "completion_tokens_details" in usage:
        assert out == usage
    else:
        assert out == filled(usage, usage.get("reasoning_tokens", COUNTED))


# -- Responses -------------------------------------------------------------------------------------

RESPONSES_USAGES: dict[str, dict[str, Any]] = {
    # llama-server: the three counts, nothing else.
    "llamacpp": {"input_tokens": 12, "output_tokens": 8, "total_tokens": 20},
    # What the SDK's strict model requires, but the reasoning count.
    "openai": {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
               "output_tokens": 8, "total_tokens": 20},
}  # fmt: skip


def responses_events(layout: str, usage: dict[str, Any], reads: str) -> list[bytes]:
    events = responseswire.upstream(["<think>", *REASONING, "</think>", *ANSWER])
    events[-1]["response"]["usage"] = usage
    if layout == "llamacpp":
        events = [layout_body("llamacpp", e) for e in events]
    wire = [responseswire.sse([e]) for e in events]
    return wire if reads == "one event per read" else [b"".join(wire)]


def completed_usage(out: bytes, layout: str) -> Any:
    """The usage of ``response.completed``; every event validated as the SDK's strict mode does,
    but llama-server's (its usage lacks what the strict model requires, the gateway's count or not)
    and those of a stream without reasoning (``"plain"``: no count, and the strict model requires one)."""
    if layout in ("llamacpp", "plain"):
        decoder = SSEDecoder()
        last = json.loads(next(e.data for e in reversed(decoder.feed(out)) if e.data is not None))
    else:
        last = responseswire.read_events(out, event_lines=None)[-1]
    assert last["type"] == "response.completed"
    return last["response"]["usage"]


@pytest.mark.parametrize("reads", ["one event per read", "all in one read"])
@pytest.mark.parametrize("layout", list(RESPONSES_USAGES))
async def test_responses_stream_completed_usage_gets_the_count(url: str, layout: str, reads: str) -> None:
    usage = RESPONSES_USAGES[layout]
    pieces = responses_events(layout, usage, reads)
    out = await post(url, "/v1/responses", f"responses-{layout}", "text/event-stream", pieces)
    assert completed_usage(out, layout) == {**usage, "output_tokens_details": {"reasoning_tokens": COUNTED}}


async def test_responses_stream_a_count_the_server_wrote_is_kept(url: str) -> None:
    """vLLM counts reasoning tokens on /v1/responses itself (0 where its parser saw no open tag)."""
    usage = {**RESPONSES_USAGES["openai"], "output_tokens_details": {"reasoning_tokens": 0}}
    pieces = responses_events("vllm", usage, "all in one read")
    out = await post(url, "/v1/responses", "responses-own", "text/event-stream", pieces)
    assert completed_usage(out, "vllm") == usage


async def test_responses_native_reasoning_events_are_counted(url: str) -> None:
    """A server that writes reasoning items itself but no count: each reasoning delta is a token."""
    usage = RESPONSES_USAGES["openai"]
    msg = responseswire.message_events("msg_1", 1, ANSWER)
    events = [
        responseswire.created(),
        *responseswire.reasoning_events("rs_1", 0, REASONING, fmt="content"),
        *msg,
        responseswire.ev("response.completed", response=responseswire.response(
            "completed", [responseswire.reasoning("rs_1", "".join(REASONING), fmt="content"),
                          responseswire.message("msg_1", ["".join(ANSWER)])], usage=usage)),
    ]  # fmt: skip
    numbered: list[dict[str, Any] | str] = [*responseswire.numbered(events)]
    out = await post(url, "/v1/responses", "responses-native", "text/event-stream", [responseswire.sse(numbered)])
    assert completed_usage(out, "native") == {**usage, "output_tokens_details": {"reasoning_tokens": COUNTED}}


async def test_responses_the_openai_sdk_reads_the_count(url: str) -> None:
    STREAMS["responses-sdk"] = (
        "text/event-stream",
        responses_events("openai", RESPONSES_USAGES["openai"], "all in one read"),
    )
    client = openai.AsyncOpenAI(api_key="x", base_url=url + "/v1", max_retries=0, _strict_response_validation=True)
    async with client:
        stream = await client.responses.create(
            model="m", input="q", stream=True, extra_headers={"X-Upstream": "responses-sdk"}
        )
        events = [e async for e in stream]
    done = events[-1]
    assert done.type == "response.completed"
    assert done.response.usage is not None
    assert done.response.usage.output_tokens_details.reasoning_tokens == COUNTED
    assert done.response.output_text == "".join(ANSWER)


@given(
    layout=st.sampled_from(["openai", "llamacpp"]),
    reasoning=st.lists(TEXT, max_size=40),
    answer=st.lists(TEXT, min_size=1, max_size=4),
    cuts=st.lists(st.integers(0, 20_000), max_size=8),
)
def test_responses_the_count_is_the_reasoning_events_at_every_cut(
    layout: str, reasoning: list[str], answer: list[str], cuts: list[int]
) -> None:
    events = responseswire.upstream(["<think>", *reasoning, "</think>", *answer])
    events[-1]["response"]["usage"] = RESPONSES_USAGES[layout]
    if layout == "llamacpp":
        events = [layout_body("llamacpp", e) for e in events]
    stream = responseswire.sse([*events])
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    pipeline = StreamPipeline("responses", ThinkExtractConfig())
    out = b"".join(pipeline.feed(stream[a:b]) for a, b in itertools.pairwise(bounds)) + pipeline.finish()
    assert pipeline.error is None
    usage = completed_usage(out, layout if reasoning else "plain")
    if reasoning:
        assert usage == {**RESPONSES_USAGES[layout], "output_tokens_details": {"reasoning_tokens": len(reasoning)}}
    else:  # nothing counted, nothing written
        assert usage == RESPONSES_USAGES[layout]


async def test_responses_non_stream_usage_is_left_as_the_server_wrote_it(url: str) -> None:
    """As a chat body: one text, no tokenizer, no count."""
    usage = RESPONSES_USAGES["llamacpp"]
    body = responseswire.response(
        "completed",
        [responseswire.message("msg_1", ["<think>" + "".join(REASONING) + "</think>It is 4."])],
        usage=usage,
    )
    STREAMS["responses-body"] = ("application/json", [json.dumps(body).encode()])
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/responses", json={"model": "m"}, headers={"X-Upstream": "responses-body"}) as resp,
    ):
        out = await resp.json()
    assert [item["type"] for item in out["output"]] == ["reasoning", "message"]  # translated
    assert out["usage"] == usage


# -- messages: the message_delta's usage --------------------------------------------------------------

MESSAGES = ThinkExtractConfig(messages_policy="unsigned")


def messages_events(reasoning: list[str], answer: list[str], usage: dict[str, Any], native: bool = False) -> bytes:
    """A messages stream: the reasoning in tags in one text block (or in the server's own thinking
    block), one event per piece, the answer, then ``message_delta`` carrying ``usage``."""
    if native:
        blocks = [mw.thinking_start(0), *(mw.thinking(0, r) for r in reasoning), mw.stop(0), *mw.text_block(1, *answer)]
    else:
        blocks = mw.text_block(0, *(["<think>", *reasoning, "</think>"] if reasoning else []), *answer)
    delta = {**mw.message_delta(), "usage": usage}
    return mw.sse(mw.message_start(), *blocks, delta, mw.MESSAGE_STOP)


def thinking_of(out: bytes) -> Any:
    """The usage of the ``message_delta``; every event validated as the SDK's strict mode does."""
    items = mw.read_sse(out)
    assert [i["type"] for i in items[-2:]] == ["message_delta", "message_stop"]
    return items[-2]["usage"]


@pytest.fixture
async def messages_url(aiohttp_server: ServerFactory) -> str:
    app = web.Application()
    setup(app, MESSAGES)
    app.router.add_post("/v1/messages", upstream)
    return str((await aiohttp_server(app)).make_url(""))


@pytest.mark.parametrize("reads", ["one event per read", "all in one read"])
@pytest.mark.parametrize("native", [False, True], ids=["tags", "server's thinking block"])
async def test_messages_stream_message_delta_gets_the_reasoning_events_counted(
    messages_url: str, native: bool, reads: str
) -> None:
    usage = {"output_tokens": 8}
    stream = messages_events(REASONING, ANSWER, usage, native)
    pieces = [e + b"\n\n" for e in stream.split(b"\n\n")[:-1]] if reads == "one event per read" else [stream]
    out = await post(messages_url, "/v1/messages", f"messages-{native}-{reads}", "text/event-stream", pieces)
    assert thinking_of(out) == {**usage, "output_tokens_details": {"thinking_tokens": COUNTED}}


@pytest.mark.parametrize(
    "usage",
    [
        {"output_tokens": 8, "output_tokens_details": {"thinking_tokens": 6}},  # the server's own count
        {"output_tokens": 8, "output_tokens_details": "n/a"},  # not an object: not ours to rewrite
    ],
)
async def test_messages_stream_a_count_the_server_wrote_arrives_byte_for_byte(
    messages_url: str, usage: dict[str, Any]
) -> None:
    stream = messages_events(REASONING, ANSWER, usage)
    out = await post(messages_url, "/v1/messages", "messages-own", "text/event-stream", [stream])
    assert events_of(out)[-2:] == events_of(stream)[-2:]


async def test_messages_stream_without_reasoning_passes_byte_for_byte(messages_url: str) -> None:
    stream = messages_events([], ANSWER, {"output_tokens": 3})
    out = await post(messages_url, "/v1/messages", "messages-plain", "text/event-stream", [stream])
    assert out == stream


async def test_messages_the_anthropic_sdk_reads_the_count(messages_url: str) -> None:
    STREAMS["messages-sdk"] = ("text/event-stream", [messages_events(REASONING, ANSWER, {"output_tokens": 8})])
    client = anthropic.AsyncAnthropic(
        api_key="x", base_url=messages_url.rstrip("/"), max_retries=0, _strict_response_validation=True
    )
    args: Any = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "2+2?"}]}
    async with client, client.messages.stream(**args, extra_headers={"X-Upstream": "messages-sdk"}) as stream:
        deltas = [event async for event in stream if event.type == "message_delta"]
        final = await stream.get_final_message()
    # Read as the SDK parsed the event (an SDK older than the field keeps it as an extra member) ...
    assert [event.usage.model_dump()["output_tokens_details"] for event in deltas] == [{"thinking_tokens": COUNTED}]
    # ... and carried into the final message by an SDK that has the field.
    if "output_tokens_details" in type(final.usage).model_fields:
        assert final.usage.model_dump()["output_tokens_details"] == {"thinking_tokens": COUNTED}
    assert [block.type for block in final.content] == ["thinking", "text"]


@given(
    reasoning=st.lists(TEXT, max_size=12),
    answer=st.lists(TEXT, min_size=1, max_size=4),
    native=st.booleans(),
    cuts=st.lists(st.integers(0, 20_000), max_size=8),
)
def test_messages_the_count_is_the_reasoning_events_at_every_cut(
    reasoning: list[str], answer: list[str], native: bool, cuts: list[int]
) -> None:
    """The fast path (runs of text events passed whole) and the reference count alike."""
    stream = messages_events(reasoning, answer, {"output_tokens": 8}, native)
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    pipeline = StreamPipeline("messages", MESSAGES)
    out = b"".join(pipeline.feed(stream[a:b]) for a, b in itertools.pairwise(bounds)) + pipeline.finish()
    assert pipeline.error is None
    usage = thinking_of(out)
    if reasoning:
        assert usage == {"output_tokens": 8, "output_tokens_details": {"thinking_tokens": len(reasoning)}}
    else:  # nothing counted, nothing written
        assert usage == {"output_tokens": 8}
