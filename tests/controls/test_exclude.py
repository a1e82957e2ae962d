"""``reasoning_exclude`` over real HTTP: the client's answer carries no reasoning on any surface,
streamed or not, whether the gateway took it out of the model's tags or the server wrote it in its
own field; every event it did not touch arrives byte for byte; the official SDKs' strict
accumulators read a well-formed answer; and the reasoning record still keeps what the model wrote."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anthropic
import ollama
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_RECORD, ThinkExtractConfig, setup
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.chat import ChatStream

from .. import chatwire, messageswire, responseswire
from ..chatwire import chunk
from ..conftest import Closing
from ..core.matrix import CASES
from ..history.test_record_http import CALL, WRITTEN, Upstream, two_turns
from ..messages.test_sdk import blocks
from ..messageswire import TOOL_USE, json_delta, message_start, start, stop, tb, text, tool_start
from ..ollama import wire as ollama_wire

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

REASONING = ["Two plus two", " is four."]
ANSWER = ["It is", " 4."]
EXCLUDE = ThinkExtractConfig(reasoning_exclude=True, messages_policy="unsigned")

# -- the upstream: each answer by name, as a server writes it --------------------------------------

Wire = tuple[str, bytes]  # content type, bytes
ANSWERS: dict[str, Wire] = {}


def answer(name: str, content_type: str, data: bytes) -> bytes:
    ANSWERS[name] = (content_type, data)
    return data


def raw_events(data: bytes) -> list[bytes]:
    """A stream's events (or lines), each as its bytes."""
    if data.startswith((b"data:", b"event:")):
        decoder = SSEDecoder()
        return [e.raw for e in decoder.feed(data)]
    return data.splitlines(keepends=True)


async def upstream(request: web.Request) -> web.StreamResponse:
    """Answers with the bytes named by ``X-Upstream`` (or ``-stream`` appended when the body asks
    for a stream), one write per event."""
    body = await request.json()
    name = request.headers["X-Upstream"] + ("-stream" if body.get("stream", request.path.startswith("/api")) else "")
    content_type, data = ANSWERS[name]
    resp = web.StreamResponse(headers={"Content-Type": content_type})
    await resp.prepare(request)
    for piece in raw_events(data) if content_type != "application/json" else [data]:
        await resp.write(piece)
    await resp.write_eof()
    return resp


def gateway_app(config: ThinkExtractConfig) -> web.Application:
    app = web.Application()
    setup(app, config)
    for path in ("/v1/chat/completions", "/v1/messages", "/v1/responses", "/api/chat", "/api/generate"):
        app.router.add_post(path, upstream)
    return app


@pytest.fixture
async def url(aiohttp_server: ServerFactory) -> str:
    server = await aiohttp_server(gateway_app(EXCLUDE))
    return str(server.make_url(""))


async def post(base: str, path: str, name: str, stream: bool) -> bytes:
    async with (
        aiohttp.ClientSession() as session,
        session.post(base + path, json={"model": "m", "stream": stream}, headers={"X-Upstream": name}) as resp,
    ):
        assert resp.status == 200
        return await resp.read()


def sse_of(items: list[Any]) -> list[bytes]:
    """Chat events (dicts, ``"[DONE]"``) as their bytes."""
    return [chatwire.sse(item) for item in items]


def docs(events: list[bytes]) -> list[Any]:
    """Each event's data (or each line) as JSON, with its ``event:`` name when it has one."""
    out: list[Any] = []
    for raw in events:
        decoded = SSEDecoder().feed(raw) if raw.startswith((b"data:", b"event:")) else None
        if decoded is None:
            out.append(json.loads(raw))
        elif decoded[0].data == b"[DONE]":
            out.append("[DONE]")
        else:
            out.append((decoded[0].event, json.loads(decoded[0].data or b"")))
    return out


def as_events(items: list[Any], named: bool = True) -> list[Any]:
    """Expected events as :func:`docs` reads them."""
    return [
        "[DONE]" if item == "[DONE]" else (item["type"] if named else None, item) if isinstance(item, dict) else item
        for item in items
    ]


# -- chat completions -------------------------------------------------------------------------------

TOOL_DELTA = {"tool_calls": [{"index": 0, **CALL}]}
USAGE = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
CHAT_TAIL = [chunk(delta=TOOL_DELTA), chunk(finish="tool_calls"), chunk(choices=[], usage=USAGE), "[DONE]"]
CHAT_FIRST = chunk("", delta={"role": "assistant"})

CHAT_TAGS = [CHAT_FIRST, chunk("<think>"), chunk(REASONING[0]), chunk(REASONING[1] + "</think>"),
             *(chunk(a) for a in ANSWER), *CHAT_TAIL]  # fmt: skip
answer("chat-tags-stream", "text/event-stream", b"".join(sse_of(CHAT_TAGS)))
CHAT_NATIVE = [
    CHAT_FIRST,
    chunk(delta={"reasoning": REASONING[0]}),  # vLLM's name
    chunk(delta={"reasoning": REASONING[1], "reasoning_details": [{"type": "reasoning.text", "text": REASONING[1]}]}),
    chunk(delta={"reasoning_content": "!", "content": ANSWER[0]}),  # the chunk that ends the reasoning opens the answer
    chunk(ANSWER[1]),
    *CHAT_TAIL,
]
answer("chat-native-stream", "text/event-stream", b"".join(sse_of(CHAT_NATIVE)))
CHAT_MESSAGE = {"role": "assistant", "content": "".join(ANSWER), "tool_calls": [CALL]}
answer("chat-tags", "application/json", json.dumps(chatwire.completion(
    f"<think>{''.join(REASONING)}</think>{''.join(ANSWER)}", tool_calls=[CALL])).encode())  # fmt: skip
answer("chat-native", "application/json", json.dumps(chatwire.completion(
    "".join(ANSWER), reasoning_content="".join(REASONING), tool_calls=[CALL])).encode())  # fmt: skip


def _tail(reasoning_tokens: int) -> list[Any]:
    """The stream's tail, its usage with the reasoning tokens the gateway counted: the model spent
    them, whoever reads its reasoning."""
    usage = {**USAGE, "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}}
    return [*CHAT_TAIL[:2], chunk(choices=[], usage=usage), "[DONE]"]


async def test_chat_stream_tags_and_native_the_other_chunks_byte_for_byte(url: str) -> None:
    kept = [CHAT_FIRST, *(chunk(a) for a in ANSWER), *_tail(2)]  # the reasoning chunks gone
    assert raw_events(await post(url, "/v1/chat/completions", "chat-tags", True)) == sse_of(kept)
    out = raw_events(await post(url, "/v1/chat/completions", "chat-native", True))
    # The chunk that carried both loses its reasoning, the rest of it as it was; the others as they came.
    assert docs(out) == [*docs(sse_of([CHAT_FIRST])), (None, chunk(delta={"content": ANSWER[0]})),
                         *docs(sse_of([chunk(ANSWER[1]), *_tail(3)]))]  # fmt: skip
    assert [out[0], *out[2:]] == sse_of([CHAT_FIRST, chunk(ANSWER[1]), *_tail(3)])


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_chat_body(url: str, source: str) -> None:
    body = json.loads(await post(url, "/v1/chat/completions", f"chat-{source}", False))
    assert body == chatwire.completion("".join(ANSWER), tool_calls=[CALL])


CHAT_CHOICES = [
    chunk(choices=[chatwire.choice(0, {"reasoning_content": "a"})]),
    chunk(choices=[chatwire.choice(1, {"reasoning_content": "b"})]),
    chunk(choices=[chatwire.choice(1, {"content": "B"})]),
    chunk(choices=[chatwire.choice(0, {"content": "A"})]),
    chunk(choices=[chatwire.choice(0, {"reasoning_content": "c"})]),
    chunk(choices=[chatwire.choice(0, {}, "stop"), chatwire.choice(1, {}, "stop")]),
    "[DONE]",
]
answer("chat-choices-stream", "text/event-stream", b"".join(sse_of(CHAT_CHOICES)))


async def test_chat_each_choice_first_seen_in_order_even_when_it_began_with_reasoning(
    url: str, closing: Closing
) -> None:
    """A choice whose first chunks were reasoning is still first shown before a later choice (an
    empty delta), as the SDKs' accumulators file choices by first appearance; after that, a chunk
    left empty is dropped."""
    out = raw_events(await post(url, "/v1/chat/completions", "chat-choices", True))
    empty = [chunk(choices=[chatwire.choice(i, {})]) for i in (0, 1)]
    assert docs(out) == as_events([*empty, *CHAT_CHOICES[2:4], *CHAT_CHOICES[5:]], named=False)
    assert out[2:] == sse_of([*CHAT_CHOICES[2:4], *CHAT_CHOICES[5:]])
    client = closing(
        openai.AsyncOpenAI(api_key="x", base_url=url + "/v1", max_retries=0, _strict_response_validation=True)
    )
    async with client.chat.completions.stream(
        model="m", messages=[], n=2, extra_headers={"X-Upstream": "chat-choices"}
    ) as stream:
        final = await stream.get_final_completion()
    assert [(c.index, c.message.content, c.message.model_extra) for c in final.choices] == [(0, "A", {}), (1, "B", {})]


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_chat_the_openai_sdk_reads_the_answer_and_no_reasoning(url: str, source: str, closing: Closing) -> None:
    client = closing(
        openai.AsyncOpenAI(api_key="x", base_url=url + "/v1", max_retries=0, _strict_response_validation=True)
    )
    args: Any = {"model": "m", "messages": [], "extra_headers": {"X-Upstream": f"chat-{source}"}}
    async with client.chat.completions.stream(**args) as stream:
        final = await stream.get_final_completion()
    whole = await client.chat.completions.create(**args)
    streamed = {**CHAT_MESSAGE, "tool_calls": [{"index": 0, **CALL}]}  # the stream helper keeps the index
    for completion, expected in ((final, streamed), (whole, CHAT_MESSAGE)):
        message = completion.choices[0].message
        assert message.model_dump(exclude_none=True, exclude={"parsed"}) == expected
        assert message.model_extra == {}
    chunks = [c async for c in await client.chat.completions.create(**args, stream=True)]
    assert [c.choices[0].delta.model_extra for c in chunks if c.choices] == [{}] * 5


# -- Anthropic messages -------------------------------------------------------------------------------

SIGNATURE = {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkBq"}
MESSAGES_TAIL = [
    tool_start(1),
    json_delta(1, '{"a": 2'),
    json_delta(1, ', "b": 2}'),
    stop(1),
    *messageswire.end("tool_use"),
]
MESSAGES_TAGS = [message_start(), start(0), text(0, "<think>" + REASONING[0]), text(0, REASONING[1] + "</think>"),
                 *(text(0, a) for a in ANSWER), stop(0), *MESSAGES_TAIL]  # fmt: skip
answer("messages-tags-stream", "text/event-stream", messageswire.sse(*MESSAGES_TAGS))


def _renumbered(items: list[dict[str, Any]], by: int) -> list[dict[str, Any]]:
    return [{**i, "index": i["index"] + by} if "index" in i else i for i in items]


MESSAGES_NATIVE = [
    message_start(),
    messageswire.thinking_start(0),
    *(messageswire.thinking(0, r) for r in REASONING),
    messageswire.delta(0, SIGNATURE),
    stop(0),
    messageswire.redacted_start(1, "secret"),
    stop(1),
    *_renumbered([start(0), *(text(0, a) for a in ANSWER), stop(0), *MESSAGES_TAIL], 2),
]
answer("messages-native-stream", "text/event-stream", messageswire.sse(*MESSAGES_NATIVE))
TAGGED = f"<think>{''.join(REASONING)}</think>{''.join(ANSWER)}"
THINKING_BLOCK = {"type": "thinking", "thinking": "".join(REASONING), "signature": SIGNATURE["signature"]}
REDACTED_BLOCK = {"type": "redacted_thinking", "data": "c2VjcmV0"}
answer("messages-tags", "application/json",
       json.dumps(messageswire.message(tb(TAGGED), TOOL_USE, stop_reason="tool_use")).encode())  # fmt: skip
answer("messages-native", "application/json", json.dumps(messageswire.message(
    THINKING_BLOCK, REDACTED_BLOCK, tb("".join(ANSWER)), TOOL_USE, stop_reason="tool_use")).encode())  # fmt: skip
# The reasoning left out is counted all the same: its two events, in the message_delta's usage.
COUNTED_TAIL = [*MESSAGES_TAIL[:-2], *messageswire.end("tool_use", thinking=len(REASONING))]
MESSAGES_EXPECTED = [message_start(), start(0), *(text(0, a) for a in ANSWER), stop(0), *COUNTED_TAIL]


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_messages_stream_the_blocks_renumbered_from_zero(url: str, source: str) -> None:
    out = raw_events(await post(url, "/v1/messages", f"messages-{source}", True))
    assert docs(out) == as_events(MESSAGES_EXPECTED)
    if source == "native":  # the events before the first block left out go as they came
        assert out[:1] == raw_events(messageswire.sse(message_start()))


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_messages_body(url: str, source: str) -> None:
    body = json.loads(await post(url, "/v1/messages", f"messages-{source}", False))
    assert body == messageswire.message(tb("".join(ANSWER)), TOOL_USE, stop_reason="tool_use")


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_messages_the_anthropic_sdk_accumulates_a_well_formed_answer(
    url: str, source: str, closing: Closing
) -> None:
    client = closing(
        anthropic.AsyncAnthropic(api_key="x", base_url=url, max_retries=0, _strict_response_validation=True)
    )
    args: Any = {"model": "m", "max_tokens": 64, "messages": [], "extra_headers": {"X-Upstream": f"messages-{source}"}}
    async with client.messages.stream(**args) as stream:
        final = await stream.get_final_message()
    whole = await client.messages.create(**args)
    for msg in (final, whole):
        assert blocks(msg) == [tb("".join(ANSWER)), TOOL_USE]
    events = [e.to_dict() async for e in await client.messages.create(**args, stream=True)]
    assert events == MESSAGES_EXPECTED


# -- OpenAI Responses ---------------------------------------------------------------------------------

R = responseswire
RESPONSES_TAGS = R.upstream(["<think>", *REASONING, "</think>", *ANSWER], msg_id="msg_1")
answer("responses-tags-stream", "text/event-stream", R.sse(RESPONSES_TAGS))
REASONING_PART = {"type": "reasoning_text", "text": "".join(REASONING)}
REASONING_ITEM = {"id": "rs_0", "type": "reasoning", "summary": [], "content": [REASONING_PART], "status": "completed"}
MESSAGE_ITEM = R.message("msg_1", ["".join(ANSWER)])
FUNCTION_ITEM = R.function_call()
at_r = {"item_id": "rs_0", "output_index": 0, "content_index": 0}
RESPONSES_NATIVE = R.numbered([
    R.created(), R.in_progress(),
    R.added(0, {**REASONING_ITEM, "content": [], "status": "in_progress"}),
    R.ev("response.content_part.added", **at_r, part={"type": "reasoning_text", "text": ""}),  # vLLM's
    *(R.ev("response.reasoning_text.delta", **at_r, delta=r) for r in REASONING),
    R.ev("response.reasoning_text.done", **at_r, text="".join(REASONING)),
    R.ev("response.content_part.done", **at_r, part=REASONING_ITEM["content"][0]),
    R.item_done(0, REASONING_ITEM),
    *R.message_events("msg_1", 1, ANSWER),
    R.added(2, {**FUNCTION_ITEM, "status": "in_progress"}), R.item_done(2, FUNCTION_ITEM),
    R.completed([REASONING_ITEM, MESSAGE_ITEM, FUNCTION_ITEM]),
])  # fmt: skip
answer("responses-native-stream", "text/event-stream", R.sse(RESPONSES_NATIVE))
answer("responses-tags", "application/json", json.dumps(RESPONSES_TAGS[-1]["response"]).encode())
answer("responses-native", "application/json", json.dumps(RESPONSES_NATIVE[-1]["response"]).encode())


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_responses_stream_items_and_sequence_renumbered_from_zero(url: str, source: str) -> None:
    out = raw_events(await post(url, "/v1/responses", f"responses-{source}", True))
    if source == "tags":
        expected = R.upstream(ANSWER, msg_id="msg_1")  # as if the model had written only its answer
    else:
        after = [R.added(1, {**FUNCTION_ITEM, "status": "in_progress"}), R.item_done(1, FUNCTION_ITEM)]
        expected = R.numbered([R.created(), R.in_progress(), *R.message_events("msg_1", 0, ANSWER), *after,
                               R.completed([MESSAGE_ITEM, FUNCTION_ITEM])])  # fmt: skip
    assert docs(out) == as_events(expected)
    # The events before the first item left out go as they came.
    assert out[:2] == raw_events(R.sse((RESPONSES_TAGS if source == "tags" else RESPONSES_NATIVE)[:2]))


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_responses_body(url: str, source: str) -> None:
    body = json.loads(await post(url, "/v1/responses", f"responses-{source}", False))
    output = [MESSAGE_ITEM, FUNCTION_ITEM] if source == "native" else [MESSAGE_ITEM]
    assert body == {**RESPONSES_NATIVE[-1]["response"], "output": output}


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_responses_the_openai_sdk_accumulates_a_well_formed_answer(
    url: str, source: str, closing: Closing
) -> None:
    client = closing(
        openai.AsyncOpenAI(api_key="x", base_url=url + "/v1", max_retries=0, _strict_response_validation=True)
    )
    args: Any = {"model": "m", "input": "2+2?", "extra_headers": {"X-Upstream": f"responses-{source}"}}
    async with client.responses.stream(**args) as stream:
        types = [event.type async for event in stream]
        final = await stream.get_final_response()
    whole = await client.responses.create(**args)
    items = [MESSAGE_ITEM, FUNCTION_ITEM] if source == "native" else [MESSAGE_ITEM]
    for response in (final, whole):
        dumped = [i.model_dump(mode="json", exclude_unset=True) for i in response.output]
        for item in dumped:
            item.pop("parsed_arguments", None)  # the stream helper's own attributes
            for part in item.get("content") or []:
                part.pop("parsed", None)
        assert dumped == items
        assert response.output_text == "".join(ANSWER)
    assert not [t for t in types if "reasoning" in t]


# -- Ollama's native API --------------------------------------------------------------------------------

for kind in ("chat", "generate"):
    native = ollama_wire.native_stream(kind, "m", REASONING, ANSWER, joined=True)
    answer(f"ollama-{kind}-tags-stream", "application/x-ndjson",
           ollama_wire.stream(kind, "m", ["<think>" + REASONING[0], REASONING[1] + "</think>", *ANSWER]))  # fmt: skip
    answer(
        f"ollama-{kind}-native-stream",
        "application/x-ndjson",
        ollama_wire.native_stream(kind, "m", REASONING, ANSWER, joined=True),
    )
    answer(f"ollama-{kind}-tags", "application/json",
           json.dumps(ollama_wire.body(kind, "m", TAGGED)).encode())  # fmt: skip
    answer(f"ollama-{kind}-native", "application/json",
           json.dumps(ollama_wire.native_body(kind, "m", "".join(REASONING), "".join(ANSWER))).encode())  # fmt: skip


@pytest.mark.parametrize("kind", ["chat", "generate"])
async def test_ollama_stream_lines(url: str, kind: str) -> None:
    out = raw_events(await post(url, f"/api/{kind}", f"ollama-{kind}-tags", True))
    assert out == raw_events(ollama_wire.stream(kind, "m", ANSWER))  # the answer's lines and the done line as they came
    out = raw_events(await post(url, f"/api/{kind}", f"ollama-{kind}-native", True))
    line = ollama_wire.native_chat_line if kind == "chat" else ollama_wire.native_generate_line
    assert docs(out) == [line("m", ANSWER[0]), line("m", ANSWER[1]), line("m", "", done=True)]
    assert out[1:] == raw_events(ollama_wire.ndjson([line("m", ANSWER[1]), line("m", "", done=True)]))


@pytest.mark.parametrize("kind", ["chat", "generate"])
@pytest.mark.parametrize("source", ["tags", "native"])
async def test_ollama_body(url: str, kind: str, source: str) -> None:
    body = json.loads(await post(url, f"/api/{kind}", f"ollama-{kind}-{source}", False))
    if source == "tags":
        assert body == ollama_wire.body(kind, "m", "".join(ANSWER))
    else:
        assert body == (ollama_wire.native_chat_line if kind == "chat" else ollama_wire.native_generate_line)(
            "m", "".join(ANSWER), done=True
        )


@pytest.mark.parametrize("source", ["tags", "native"])
async def test_ollama_the_ollama_client_reads_no_thinking(url: str, source: str, closing: Closing) -> None:
    client = closing(ollama.AsyncClient(host=url, headers={"X-Upstream": f"ollama-chat-{source}"}))
    parts = [part async for part in await client.chat(model="m", messages=[], stream=True)]
    assert ("".join(p.message.content or "" for p in parts), [p.message.thinking for p in parts]) == (
        "".join(ANSWER),
        [None] * len(parts),
    )
    whole = await client.chat(model="m", messages=[], stream=False)
    assert (whole.message.content, whole.message.thinking) == ("".join(ANSWER), None)


# -- the reasoning record ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
async def test_the_record_keeps_what_the_model_wrote(aiohttp_server: ServerFactory, stream: bool) -> None:
    """The client was shown no reasoning, and sends none back: the upstream still gets the model's
    own text on the next turn, from the record."""
    up = Upstream()
    app = web.Application()
    setup(app, ThinkExtractConfig(reasoning_exclude=True))
    app.router.add_post("/v1/chat/completions", up.chat)
    server = await aiohttp_server(app)
    await two_turns(str(server.make_url("/v1/chat/completions")), stream, "key-a", "key-a", "llama-3.1-8b")
    await app[THINKEXTRACT_RECORD].drain()
    assert up.bodies[1]["messages"][1] == {"role": "assistant", "content": WRITTEN, "tool_calls": [CALL]}


async def test_without_the_setting_the_reasoning_is_there(aiohttp_server: ServerFactory) -> None:
    """The same upstream answers behind a gateway without ``reasoning_exclude``: the reasoning the
    tests above see left out is there to be left out."""
    server = await aiohttp_server(gateway_app(ThinkExtractConfig(messages_policy="unsigned")))
    base = str(server.make_url(""))
    routes = [("/v1/chat/completions", "chat"), ("/v1/messages", "messages"), ("/v1/responses", "responses"),
              ("/api/chat", "ollama-chat"), ("/api/generate", "ollama-generate")]  # fmt: skip
    for path, name in routes:
        for source in ("tags", "native"):
            for stream in (False, True):
                out = await post(base, path, f"{name}-{source}", stream)
                assert b"Two plus two" in out, (path, source, stream)


def test_the_record_of_a_stream_is_the_models_text_not_the_clients() -> None:
    """What a stream's translator keeps for the record is what the model wrote, reasoning and all."""
    pipeline = StreamPipeline("chat", EXCLUDE, keep=True)
    data = ANSWERS["chat-tags-stream"][1]
    out = pipeline.feed(data) + pipeline.finish()
    assert b"Two plus" not in out
    (said,) = pipeline.said()
    assert said.original == f"<think>{''.join(REASONING)}</think>{''.join(ANSWER)}"


# -- an event over max_event_bytes --------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("piece", [1, 97, 100_000])
def test_an_oversized_reasoning_event_is_read_whole_and_left_out(name: str, piece: int) -> None:
    """An event over ``max_event_bytes`` passes unread when nothing is left out; with
    ``reasoning_exclude`` it is held (up to ``max_body_bytes``) and read whole: it may be reasoning.
    However the stream is cut, the client reads the answer and none of the reasoning."""
    case = CASES[name]
    long = "why " * 400  # an event of some 1.6 kB, over the cap below
    layout = case.native_layouts[0]
    stream = case.native_stream(layout, "m", ["a", long], ANSWER)
    config = case.config.replace(reasoning_exclude=True, max_event_bytes=1024)
    pipeline = StreamPipeline(case.surface, config)
    out = b"".join(pipeline.feed(stream[i : i + piece]) for i in range(0, len(stream), piece)) + pipeline.finish()
    assert pipeline.error is None
    assert pipeline.counts.oversized_events >= 1
    assert case.read_stream(out) == ("", "".join(ANSWER))
    assert b"why why" not in out
    held = StreamPipeline(case.surface, config.replace(max_body_bytes=1024))  # too large to hold: it passes
    passed = b"".join(held.feed(stream[i : i + piece]) for i in range(0, len(stream), piece)) + held.finish()
    assert b"why why" in passed


def test_an_oversized_event_rewritten_keeps_the_streams_line_ending() -> None:
    long = "why " * 400
    items = [CHAT_FIRST, chunk(delta={"reasoning_content": long, "content": ANSWER[0]}), chunk(ANSWER[1]), "[DONE]"]
    stream = b"".join(sse_of(items)).replace(b"\n", b"\r\n")
    pipeline = StreamPipeline("chat", ThinkExtractConfig(reasoning_exclude=True, max_event_bytes=1024))
    out = b"".join(pipeline.feed(stream[i : i + 100]) for i in range(0, len(stream), 100)) + pipeline.finish()
    expected = [CHAT_FIRST, chunk(delta={"content": ANSWER[0]}), chunk(ANSWER[1]), "[DONE]"]
    assert docs(raw_events(out.replace(b"\r\n", b"\n"))) == as_events(expected, named=False)
    assert b"\n" not in out.replace(b"\r\n", b"")


def test_a_fault_in_an_oversized_event_loses_and_reorders_no_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    """The translator fails on the second piece of an event it holds: what it held goes out first,
    then that piece and the rest as they come, as the pipeline passes a piece after a fault."""
    original = ChatStream.oversized
    calls = 0

    def flaky(self: ChatStream, piece: bytes, more: bool) -> bytes:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("boom")
        return original(self, piece, more)

    monkeypatch.setattr(ChatStream, "oversized", flaky)
    stream = b"".join(sse_of([CHAT_FIRST, chunk("why " * 400), "[DONE]"]))
    pipeline = StreamPipeline("chat", ThinkExtractConfig(reasoning_exclude=True, max_event_bytes=1024))
    out = b"".join(pipeline.feed(stream[i : i + 100]) for i in range(0, len(stream), 100)) + pipeline.finish()
    assert out == stream
    assert calls > 2
