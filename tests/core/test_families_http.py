"""Acceptance: every family's answer through the middleware over real HTTP, read by the official SDKs.

One upstream on loopback (its own thread, one for the module) answers with the text and the cuts the
request names; the middleware in front of it runs the default config (families on) with
``messages_policy="unsigned"``. For each family, the non-stream answer and streams cut into single
characters and into random pieces give the same reasoning and content, as the family's own server
parser would. gpt-oss also goes through ``/v1/messages`` and ``/v1/responses`` with whole blocks and
items checked; every other family goes through them too, stream equal to non-stream.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig, setup

from .. import messageswire as mw
from .. import responseswire as rw
from ..chatwire import chunk, completion, sse
from ..hypothesis_examples import examples
from .familycases import CASES, NEGATIVE, Case

ALL = CASES + NEGATIVE
HARMONY_CASES = [c for c in CASES if c.id in ("gpt-oss-tool-call", "gpt-oss-constrain", "gpt-oss-no-end")]


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < len(text)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


async def _chat(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    text, model = body["x_text"], body["model"]
    native = body.get("x_native")
    if not body.get("stream"):
        doc = completion(text, **({"reasoning_content": native} if native else {}))
        doc["model"] = model
        return web.json_response(doc)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    first: dict[str, Any] = {"role": "assistant", "content": ""}
    if native:
        first["reasoning_content"] = native
    await resp.write(sse(chunk(delta=first, model=model)))
    for piece in _pieces(text, body["x_cuts"]):
        await resp.write(sse(chunk(piece, model=model)))
    await resp.write(sse(chunk("", finish="stop", model=model), "[DONE]"))
    await resp.write_eof()
    return resp


async def _messages(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    text, model = body["x_text"], body["model"]
    if not body.get("stream"):
        return web.json_response(mw.message(mw.tb(text), model=model))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    events = [mw.message_start(model), *mw.text_block(0, *_pieces(text, body["x_cuts"])), *mw.end()]
    await resp.write(mw.sse(*events))
    await resp.write_eof()
    return resp


async def _responses(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    events = rw.upstream(_pieces(body["x_text"], body.get("x_cuts", [])), model=body["model"])
    if not body.get("stream"):
        return web.json_response(events[-1]["response"])
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(rw.sse(events))
    await resp.write_eof()
    return resp


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    ready = threading.Event()
    state: dict[str, Any] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        app = web.Application()
        setup(app, ThinkExtractConfig(messages_policy="unsigned"))
        app.router.add_post("/v1/chat/completions", _chat)
        app.router.add_post("/v1/messages", _messages)
        app.router.add_post("/v1/responses", _responses)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        state.update(loop=loop, port=runner.addresses[0][1])
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield f"http://127.0.0.1:{state['port']}/v1"
    state["loop"].call_soon_threadsafe(state["loop"].stop)
    thread.join(10)


def _openai(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="x", base_url=base_url, max_retries=0, _strict_response_validation=True)


def _anthropic(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="x", base_url=base_url.removesuffix("/v1"), max_retries=0, _strict_response_validation=True
    )


USER: Any = [{"role": "user", "content": "What is 2+2?"}]


# -- chat completions: every family ---------------------------------------------------------------


def chat_non_stream(base_url: str, case: Case, **extra: Any) -> dict[str, Any]:
    completion = _openai(base_url).chat.completions.create(
        model=case.model, messages=USER, extra_body={"x_text": case.text, **extra}
    )
    return completion.choices[0].message.model_dump(exclude_none=True)


def chat_stream(base_url: str, case: Case, cuts: list[int], **extra: Any) -> tuple[str, str, list[str | None]]:
    stream = _openai(base_url).chat.completions.create(
        model=case.model, messages=USER, stream=True, extra_body={"x_text": case.text, "x_cuts": cuts, **extra}
    )
    reasoning, content, finishes = [], [], []
    for item in stream:
        assert item.model == case.model
        for choice in item.choices:
            extra = choice.delta.model_extra or {}
            assert extra.get("reasoning") == extra.get("reasoning_content")  # the default: both names, one text
            reasoning.append(extra.get("reasoning_content") or "")
            content.append(choice.delta.content or "")
            finishes.append(choice.finish_reason)
    return "".join(reasoning), "".join(content), [f for f in finishes if f is not None]


def expected_message(case: Case) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": case.content}
    if case.reasoning:  # under both names (the default), a server's own reasoning_content mirrored too
        message["reasoning_content"] = message["reasoning"] = case.reasoning
    return message


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_chat_non_stream_and_single_characters(base_url: str, case: Case) -> None:
    assert chat_non_stream(base_url, case) == expected_message(case)
    every_char = list(range(1, len(case.text)))
    assert chat_stream(base_url, case, every_char) == (case.reasoning, case.content, ["stop"])


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
@settings(
    max_examples=examples(5),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_chat_random_chunkings(base_url: str, case: Case, data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=max(1, len(case.text) - 1)), max_size=12))
    assert chat_stream(base_url, case, cuts) == (case.reasoning, case.content, ["stop"])


NATIVE = Case(
    "native",
    "gpt-oss-120b",
    "<|channel|>final<|message|>left as sent<|return|>",
    "parsed by the server",
    "<|channel|>final<|message|>left as sent<|return|>",
)


def test_a_native_reasoning_field_is_left_alone(base_url: str) -> None:
    """A server that parsed the reasoning itself: nothing in the answer is touched, for any family
    (its reasoning_content is also given as reasoning)."""
    assert chat_non_stream(base_url, NATIVE, x_native=NATIVE.reasoning) == expected_message(NATIVE)
    every_char = list(range(1, len(NATIVE.text)))
    assert chat_stream(base_url, NATIVE, every_char, x_native=NATIVE.reasoning) == (
        NATIVE.reasoning,
        NATIVE.content,
        ["stop"],
    )


# -- gpt-oss through the Anthropic messages and Responses surfaces -----------------------------


def messages_blocks(content: list[Any]) -> list[dict[str, Any]]:
    return [block.model_dump(exclude_none=True) for block in content]


def expected_blocks(case: Case) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": case.reasoning, "signature": mw.signature(case.reasoning)},
        {"type": "text", "text": case.content},
    ]


@pytest.mark.parametrize("case", HARMONY_CASES, ids=[c.id for c in HARMONY_CASES])
def test_gpt_oss_through_messages(base_url: str, case: Case) -> None:
    client = _anthropic(base_url)
    resp = client.messages.create(model=case.model, max_tokens=100, messages=USER, extra_body={"x_text": case.text})
    assert messages_blocks(resp.content) == expected_blocks(case)
    for cuts in (list(range(1, len(case.text))), [7, 30, 31, 64, 100, 101, 102]):
        with client.messages.stream(
            model=case.model, max_tokens=100, messages=USER, extra_body={"x_text": case.text, "x_cuts": cuts}
        ) as stream:
            final = stream.get_final_message()
        assert messages_blocks(final.content) == expected_blocks(case)


@pytest.mark.parametrize("case", HARMONY_CASES, ids=[c.id for c in HARMONY_CASES])
def test_gpt_oss_through_responses(base_url: str, case: Case) -> None:
    client = _openai(base_url)
    resp = client.responses.create(model=case.model, input="What is 2+2?", extra_body={"x_text": case.text})
    items = [item.model_dump(exclude_none=True) for item in resp.output]
    assert [item["type"] for item in items] == ["reasoning", "message"]
    assert items[0]["content"] == [{"type": "reasoning_text", "text": case.reasoning}]
    assert resp.output_text == case.content
    for cuts in (list(range(1, len(case.text))), [7, 30, 31, 64, 100, 101, 102]):
        with client.responses.stream(
            model=case.model, input="What is 2+2?", extra_body={"x_text": case.text, "x_cuts": cuts}
        ) as stream:
            deltas = [e.delta for e in stream if e.type == "response.reasoning_text.delta"]  # type: ignore[union-attr]
            final = stream.get_final_response()
        assert "".join(deltas) == case.reasoning
        streamed = [item.model_dump(exclude_none=True) for item in final.output]
        assert [item["type"] for item in streamed] == ["reasoning", "message"]
        assert streamed[0]["content"] == [{"type": "reasoning_text", "text": case.reasoning}]
        assert final.output_text == case.content


# -- every family through the other two surfaces: the same texts, stream = non-stream -----------


def _texts(blocks: list[dict[str, Any]], reasoning_key: str, text_key: str) -> tuple[str, str]:
    return (
        "".join(b.get(reasoning_key, "") for b in blocks if reasoning_key in b),
        "".join(b.get(text_key, "") for b in blocks if text_key in b),
    )


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_every_family_through_messages(base_url: str, case: Case) -> None:
    client = _anthropic(base_url)
    resp = client.messages.create(model=case.model, max_tokens=100, messages=USER, extra_body={"x_text": case.text})
    blocks = messages_blocks(resp.content)
    assert _texts(blocks, "thinking", "text") == (case.reasoning, case.content)
    for block in blocks:
        if block["type"] == "thinking":
            assert block["signature"] == mw.signature(block["thinking"])
    with client.messages.stream(
        model=case.model,
        max_tokens=100,
        messages=USER,
        extra_body={"x_text": case.text, "x_cuts": list(range(1, len(case.text)))},
    ) as stream:
        assert messages_blocks(stream.get_final_message().content) == blocks


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_every_family_through_responses(base_url: str, case: Case) -> None:
    client = _openai(base_url)
    resp = client.responses.create(model=case.model, input="What is 2+2?", extra_body={"x_text": case.text})
    reasoning = "".join(part.text for item in resp.output if item.type == "reasoning" for part in (item.content or []))
    assert (reasoning, resp.output_text) == (case.reasoning, case.content)
    with client.responses.stream(
        model=case.model,
        input="What is 2+2?",
        extra_body={"x_text": case.text, "x_cuts": list(range(1, len(case.text)))},
    ) as stream:
        final = stream.get_final_response()

    def shape(output: list[Any]) -> list[Any]:  # reasoning ids are random per response
        return [{k: v for k, v in item.model_dump(exclude_none=True).items() if k != "id"} for item in output]

    assert shape(final.output) == shape(resp.output)
