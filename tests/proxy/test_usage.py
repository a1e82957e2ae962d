"""Token usage read from the answers the gateway relays: each API's ``usage`` shape, streamed or not,
and the tap that keeps only the start and the end of a body (whatever the pieces it arrives in)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.proxy.usage import UsageTap, read_usage


def sse(*events: tuple[str | None, Any]) -> bytes:
    out = b""
    for name, data in events:
        if name is not None:
            out += b"event: " + name.encode() + b"\n"
        out += b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"
    return out


CHAT_BODY = {
    "id": "c1",
    "object": "chat.completion",
    "model": "qwen3-8b",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": 'the "usage": {"prompt_tokens": 999}'}}],
    "usage": {
        "prompt_tokens": 12,
        "completion_tokens": 40,
        "total_tokens": 52,
        "completion_tokens_details": {"reasoning_tokens": 31},
    },
}
CHAT_STREAM = sse(
    (
        None,
        {
            "object": "chat.completion.chunk",
            "model": "qwen3-8b",
            "choices": [{"delta": {"content": "x"}}],
            "usage": None,
        },
    ),
    (None, {"object": "chat.completion.chunk", "model": "qwen3-8b", "choices": [], "usage": CHAT_BODY["usage"]}),
    (None, b"[DONE]"),
)
RESPONSES_STREAM = sse(
    ("response.created", {"type": "response.created", "response": {"model": "gpt-oss-20b", "usage": None}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "hi"}),
    (
        "response.completed",
        {
            "type": "response.completed",
            "response": {
                "model": "gpt-oss-20b",
                "usage": {
                    "input_tokens": 20,
                    "input_tokens_details": {"cached_tokens": 4},
                    "output_tokens": 9,
                    "output_tokens_details": {"reasoning_tokens": 5},
                    "total_tokens": 29,
                },
            },
        },
    ),
)
MESSAGES_STREAM = sse(
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "model": "claude-x",
                "usage": {
                    "input_tokens": 7,
                    "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 3,
                    "output_tokens": 1,
                },
            },
        },
    ),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 15}}),
    ("message_stop", {"type": "message_stop"}),
)
OLLAMA_STREAM = (
    b'{"model":"qwen3","message":{"role":"assistant","content":"<think>"},"done":false}\n'
    b'{"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"total_duration":5,'
    b'"prompt_eval_count":26,"eval_count":290}\n'
)


def test_each_apis_usage_shape_gives_prompt_completion_and_reasoning() -> None:
    assert read_usage(json.dumps(CHAT_BODY)) == {"prompt": 12, "completion": 40, "reasoning": 31}
    assert read_usage(CHAT_STREAM.decode()) == {"prompt": 12, "completion": 40, "reasoning": 31}
    assert read_usage(RESPONSES_STREAM.decode()) == {"prompt": 20, "completion": 9, "reasoning": 5}
    # Anthropic counts cached input apart: the prompt is all of it. message_delta's output is the total.
    assert read_usage(MESSAGES_STREAM.decode()) == {"prompt": 110, "completion": 15}
    assert read_usage(OLLAMA_STREAM.decode()) == {"prompt": 26, "completion": 290}


def test_no_usage_is_nothing_counted() -> None:
    no_usage = {"choices": [{"message": {"content": '"usage": {"prompt_tokens": 5}'}}], "usage": None}
    assert read_usage(json.dumps(no_usage)) == {}
    assert read_usage(sse((None, {"choices": [], "usage": None}), (None, b"[DONE]")).decode()) == {}
    assert read_usage('{"usage": {"prompt_tokens": -1, "completion_tokens": true}}') == {}
    assert read_usage('data: {"usage": {"prompt_tokens": 1') == {}  # cut off


def test_the_model_is_the_first_the_body_names() -> None:
    for body, model in [
        (CHAT_STREAM, "qwen3-8b"),
        (RESPONSES_STREAM, "gpt-oss-20b"),
        (MESSAGES_STREAM, "claude-x"),
        (OLLAMA_STREAM, "qwen3"),
        (b'{"model": "a\\"b\\u00e9"}', 'a"bé'),
        (b'{"id": 1}', None),
    ]:
        tap = UsageTap()
        tap.feed(body)
        assert tap.model() == model


BODIES = [json.dumps(CHAT_BODY).encode(), CHAT_STREAM, RESPONSES_STREAM, MESSAGES_STREAM, OLLAMA_STREAM]


@given(
    body=st.sampled_from(BODIES),
    filler=st.integers(min_value=0, max_value=3000),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=40),
)
def test_the_tap_reads_what_the_whole_body_says_whatever_its_pieces(body: bytes, filler: int, cuts: list[int]) -> None:
    """Usage sits at a body's start or end: with the middle let go, the counts are the same."""
    if body.startswith(b"{"):  # a JSON body: filler inside it, before its usage
        padded = body.replace(b'"choices"', b'"pad": "' + b"x" * filler + b'", "choices"', 1)
    else:  # a stream: filler events in the middle
        middle = body.index(b"\n\n") + 2 if b"\n\n" in body else body.index(b"\n") + 1
        pad = (b"data: " + json.dumps({"pad": "x" * 50}).encode() + b"\n\n") * (filler // 50)
        padded = body[:middle] + pad + body[middle:]
    tap = UsageTap(cap=600)
    start = 0
    for cut in cuts:
        tap.feed(padded[start : start + cut])
        start += cut
    tap.feed(padded[start:])
    assert tap.usage() == read_usage(padded.decode())
    assert tap.usage() == read_usage(body.decode())
