"""The chat completions translator, sans-I/O: whole event lists in, whole event lists out."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from gateway_mw import ModelProfile, ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.chat import ChatStream, transform_body

from ..chatwire import ENVELOPE, choice, chunk, completion, read_sse, sse, texts
from ..hypothesis_examples import examples

# One name: these tests are about what moves where; the default's two names are test_fields.py's.
CFG = ThinkExtractConfig(chat_reasoning_field="reasoning_content")


def translate(stream: bytes, config: ThinkExtractConfig = CFG, piece: int = 0) -> list[Any]:
    pipeline = StreamPipeline("chat", config)
    if piece:
        out = b"".join(pipeline.feed(stream[i : i + piece]) for i in range(0, len(stream), piece))
    else:
        out = pipeline.feed(stream)
    assert pipeline.error is None
    return read_sse(out + pipeline.finish())  # validates every chunk as the SDK's strict mode does


def test_reasoning_moves_to_reasoning_content() -> None:
    stream = sse(
        chunk("", delta={"role": "assistant"}),
        chunk("<think>I add"),
        chunk(" 2 and 2</think>"),
        chunk("It is 4."),
        chunk("", finish="stop"),
        "[DONE]",
    )
    assert translate(stream) == [
        chunk("", delta={"role": "assistant"}),
        chunk(delta={"reasoning_content": "I add"}),
        chunk(delta={"reasoning_content": " 2 and 2"}),
        chunk("It is 4."),
        chunk("", finish="stop"),
        "[DONE]",
    ]


def test_one_delta_with_both_kinds_gives_one_chunk_per_run_in_order() -> None:
    stream = sse(chunk("Hi <think>r</think>there<think>s"), chunk("</think>!", finish="stop"), "[DONE]")
    assert translate(stream) == [
        chunk("Hi "),
        chunk(delta={"reasoning_content": "r"}),
        chunk("\nthere"),
        chunk(delta={"reasoning_content": "\ns"}),
        chunk("\n!", finish="stop"),
        "[DONE]",
    ]


def test_absorbed_chunks_are_not_sent_and_held_text_rides_with_finish_reason() -> None:
    stream = sse(chunk("<thi"), chunk("nk>"), chunk("r</th"), chunk("ink>answer <thi", finish="length"), "[DONE]")
    assert translate(stream) == [
        chunk(delta={"reasoning_content": "r"}),
        chunk("answer <thi", finish="length"),
        "[DONE]",
    ]


@pytest.mark.parametrize(
    "end",
    [
        ["[DONE]"],
        [{"error": {"message": "upstream failed"}}],
        [chunk(choices=[], usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})],
        [],
    ],
    ids=["done", "error", "usage", "eof"],
)
def test_held_text_is_flushed_before_the_end(end: list[Any]) -> None:
    stream = sse(chunk("<think>r</think>answer <th"), *end)
    flushed = {**ENVELOPE, "choices": [choice(0, {"content": "<th"})]}
    if end and "usage" in end[0]:  # one event carried reasoning: the gateway's count, in the usage
        end = [chunk(choices=[], usage={**end[0]["usage"], "completion_tokens_details": {"reasoning_tokens": 1}})]
    assert translate(stream) == [
        chunk(delta={"reasoning_content": "r"}),
        chunk("answer "),
        flushed,
        *end,
    ]


def test_unclosed_block_at_finish_reason_stays_reasoning_live_and_becomes_content_buffered() -> None:
    stream = sse(chunk("<think>a long"), chunk(" thought", finish="length"), "[DONE]")
    assert translate(stream) == [
        chunk(delta={"reasoning_content": "a long"}),
        chunk(delta={"reasoning_content": " thought"}, finish="length"),
        "[DONE]",
    ]
    assert translate(stream, CFG.replace(stream_mode="buffered")) == [
        chunk("<think>a long thought", finish="length"),
        "[DONE]",
    ]


def test_role_tool_calls_logprobs_usage_and_unknown_fields_are_kept() -> None:
    tool = [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]
    logprobs = {"content": [{"token": "x", "logprob": -0.1, "bytes": [120], "top_logprobs": []}]}
    upstream = {
        **ENVELOPE,
        "system_fingerprint": "fp",
        "choices": [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": "<think>r</think>a", "tool_calls": tool, "x_extra": 1},
                "logprobs": logprobs,
                "finish_reason": None,
                "x_choice": True,
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
        "x_vendor": "v",
    }
    base = {**ENVELOPE, "system_fingerprint": "fp"}
    assert translate(sse(upstream)) == [
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "tool_calls": tool, "x_extra": 1, "reasoning_content": "r"},
                    "logprobs": logprobs,
                    "finish_reason": None,
                    "x_choice": True,
                }
            ],
        },
        {
            **base,
            "choices": [{"index": 0, "delta": {"content": "a"}, "logprobs": None, "finish_reason": None}],
            "usage": {  # a usage on a chunk of text (continuous usage stats): the reasoning so far counted
                "prompt_tokens": 3,
                "completion_tokens": 4,
                "total_tokens": 7,
                "completion_tokens_details": {"reasoning_tokens": 1},
            },
            "x_vendor": "v",
        },
    ]


def test_defect3_several_choices_are_independent_and_never_duplicated() -> None:
    stream = sse(
        chunk(choices=[choice(0, {"content": "<think>a"}), choice(1, {"content": "plain"})]),
        chunk(choices=[choice(0, {"content": "</think>A"}), choice(1, {"content": "<think>b</think>B"})]),
        chunk(choices=[choice(0, {}, "stop"), choice(1, {}, "stop")]),
        "[DONE]",
    )
    assert translate(stream) == [
        chunk(choices=[choice(0, {"reasoning_content": "a"}), choice(1, {"content": "plain"})]),
        chunk(choices=[choice(0, {"content": "A"}), choice(1, {"reasoning_content": "b"})]),
        chunk(choices=[choice(1, {"content": "\nB"})]),
        chunk(choices=[choice(0, {}, "stop"), choice(1, {}, "stop")]),
        "[DONE]",
    ]


def test_upstream_reasoning_wins_per_choice() -> None:
    stream = sse(
        chunk(choices=[choice(0, {"reasoning_content": "native"}), choice(1, {"content": "<think>x</think>"})]),
        chunk(choices=[choice(0, {"content": "<think>kept</think>"}), choice(1, {"content": "y"})]),
        "[DONE]",
    )
    assert translate(stream) == [
        chunk(choices=[choice(0, {"reasoning_content": "native"}), choice(1, {"reasoning_content": "x"})]),
        chunk(choices=[choice(0, {"content": "<think>kept</think>"}), choice(1, {"content": "y"})]),
        "[DONE]",
    ]


@pytest.mark.parametrize("mirror", [True, False])
def test_native_reasoning_arriving_late_flushes_what_was_held_first(mirror: bool) -> None:
    stream = sse(chunk("a <thi"), chunk(delta={"reasoning": "native"}), chunk("<think>literal"), "[DONE]")
    native = {"reasoning": "native", "reasoning_content": "native"} if mirror else {"reasoning": "native"}
    assert translate(stream, CFG.replace(chat_mirror_reasoning=mirror)) == [
        chunk("a "),
        {**ENVELOPE, "choices": [choice(0, {"content": "<thi"})]},
        chunk(delta=native),
        chunk("<think>literal"),
        "[DONE]",
    ]


def test_reasoning_field_is_configurable() -> None:
    stream = sse(chunk("<think>r</think>a"), "[DONE]")
    assert translate(stream, CFG.replace(chat_reasoning_field="reasoning")) == [
        chunk(delta={"reasoning": "r"}),
        chunk("a"),
        "[DONE]",
    ]


def test_model_profile_applies_by_model_name() -> None:
    cfg = CFG.replace(profiles=(ModelProfile(match="r1-*", start_with_reasoning=True), ModelProfile(match="raw")))
    cfg = cfg.replace(profiles=(*cfg.profiles, ModelProfile(match="off-*", enabled=False)))
    assert translate(sse(chunk("r</think>a", model="r1-7b")), cfg) == [
        chunk(delta={"reasoning_content": "r"}, model="r1-7b"),
        chunk("a", model="r1-7b"),
    ]
    raw = sse(chunk("<think>r</think>a", model="off-1"))
    assert translate(raw, cfg) == read_sse(raw)


def test_unchanged_events_are_forwarded_byte_for_byte() -> None:
    stream = (
        b": keepalive\n\n"
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"plain [x] < y"},"finish_reason":null}]}\r\n\r\n'
        b"data: not json\n\n"
        b'data: {"unexpected": "shape"}\n\n'
        b'data: {"choices": "not a list"}\n\n'
        b"event: custom\nid: 9\ndata: {}\n\n"
        b"data: [DONE]\n\n"
    )
    pipeline = StreamPipeline("chat", CFG)
    assert pipeline.feed(stream) + pipeline.finish() == stream


def test_rewritten_events_keep_their_other_sse_fields() -> None:
    stream = b'event: chunk\nid: 4\ndata: {"model":"m","choices":[{"index":0,"delta":{"content":"<think>r"}}]}\n\n'
    pipeline = StreamPipeline("chat", CFG)
    assert pipeline.feed(stream) == (
        b'event: chunk\nid: 4\ndata: {"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"r"}}]}\n\n'
    )


def test_defect1_a_chunked_stream_never_leaks_reasoning_into_content() -> None:
    reasoning, answer = "Let me think about <b>tags</b> and [THINK] words.", "The answer is `<think>`."
    text = f"<think>{reasoning}</think>{answer}"
    pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
    out = translate(sse(*[chunk(p) for p in pieces], chunk("", finish="stop"), "[DONE]"))
    assert texts(out) == (reasoning, answer)
    for item in out[:-1]:
        delta = item["choices"][0]["delta"]
        assert set(delta) <= {"content", "reasoning_content"}
        assert not (delta.get("content") and delta.get("reasoning_content"))


def test_defect11_flush_chunk_has_envelope_and_comes_before_done_in_choice_order() -> None:
    stream = sse(chunk(choices=[choice(1, {"content": "b <"}), choice(0, {"content": "a <"})]), "[DONE]")
    assert translate(stream) == [
        chunk(choices=[choice(1, {"content": "b "}), choice(0, {"content": "a "})]),
        {**ENVELOPE, "choices": [choice(0, {"content": "<"})]},
        {**ENVELOPE, "choices": [choice(1, {"content": "<"})]},
        "[DONE]",
    ]


def test_translate_stream_async_generator() -> None:
    import asyncio

    from gateway_mw.surfaces.chat import translate_stream

    async def events() -> Any:
        decoder = SSEDecoder()
        for event in decoder.feed(sse(chunk("<think>r</think>a"), "[DONE]")):
            yield event

    async def collect() -> list[bytes]:
        return [e.raw async for e in translate_stream(events(), CFG)]

    out = asyncio.run(collect())
    assert read_sse(b"".join(out)) == [chunk(delta={"reasoning_content": "r"}), chunk("a"), "[DONE]"]


# -- non-stream ------------------------------------------------------------------------------


def test_body_transform() -> None:
    new, counts = transform_body(json.dumps(completion("<think>r</think>\n\nanswer")).encode(), CFG)
    assert new is not None
    assert json.loads(new) == completion("answer", reasoning_content="r")  # trim_tag_edges
    ChatCompletion.model_validate(json.loads(new), strict=True)
    assert (counts.reasoning_blocks, counts.reasoning_chars) == (1, 1)


@pytest.mark.parametrize(
    "body",
    [
        completion("no tags here"),
        completion("<think>x</think>y", reasoning_content="native"),
        completion(None, tool_calls=[]),
        {"object": "list", "data": []},
        [1, 2],
    ],
)
def test_body_transform_leaves_alone(body: Any) -> None:
    assert transform_body(json.dumps(body).encode(), CFG)[0] is None


def test_body_transform_invalid_json() -> None:
    assert transform_body(b'{"choices": [', CFG)[0] is None


# -- stream = non-stream --------------------------------------------------------------------

TEXT = st.lists(
    st.sampled_from(["<think>", "</think>", "<thi", "nk>", "</th", "a", "b c", "\n", " ", "`", "```\n", "é", "🙂"]),
    max_size=25,
).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(text=TEXT, sizes=st.lists(st.integers(1, 7), min_size=1, max_size=5), piece=st.integers(0, 40))
def test_stream_and_non_stream_agree(text: str, sizes: list[int], piece: int) -> None:
    pieces, pos, k = [], 0, 0
    while pos < len(text):
        pieces.append(text[pos : pos + sizes[k % len(sizes)]])
        pos += sizes[k % len(sizes)]
        k += 1
    stream = sse(*[chunk(p) for p in pieces], chunk("", finish="stop"), "[DONE]")
    streamed = texts(translate(stream, piece=piece))
    new, _ = transform_body(json.dumps(completion(text)).encode(), CFG)
    message = json.loads(new)["choices"][0]["message"] if new else {"content": text}
    assert streamed == (message.get("reasoning_content", ""), message["content"])


def test_chat_stream_exposes_counts() -> None:
    stream = ChatStream(CFG)
    for event in SSEDecoder().feed(sse(chunk("<think>abc</think>x<think>de"), "[DONE]")):
        stream.event(event)
    assert (stream.counts.reasoning_blocks, stream.counts.reasoning_chars, stream.counts.unclosed) == (2, 6, 1)


def test_an_absorbed_delta_keeps_usage_and_logprobs() -> None:
    logprobs = {"content": [{"token": "<thi", "logprob": -0.5, "bytes": [60], "top_logprobs": []}]}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    upstream = {**ENVELOPE, "choices": [{**choice(0, {"content": "<thi"}), "logprobs": logprobs}], "usage": usage}
    assert translate(sse(upstream, chunk("nk>r</think>a"))) == [
        {**ENVELOPE, "choices": [{**choice(0, {}), "logprobs": logprobs}], "usage": usage},
        chunk(delta={"reasoning_content": "r"}),
        chunk("a"),
    ]
    assert translate(sse(chunk("<thi", usage=usage))) == [
        {**ENVELOPE, "choices": [], "usage": usage},
        {**ENVELOPE, "choices": [choice(0, {"content": "<thi"})]},
    ]


@settings(max_examples=examples(200), deadline=None)
@given(
    text_a=TEXT,
    text_b=TEXT,
    size_a=st.integers(1, 6),
    size_b=st.integers(1, 6),
    piece=st.integers(0, 60),
)
def test_two_choices_stream_like_their_non_stream_forms(
    text_a: str, text_b: str, size_a: int, size_b: int, piece: int
) -> None:
    """n=2: each choice, interleaved in shared chunks, reads as its own non-stream transform."""
    a = [text_a[i : i + size_a] for i in range(0, len(text_a), size_a)]
    b = [text_b[i : i + size_b] for i in range(0, len(text_b), size_b)]
    chunks = []
    for k in range(max(len(a), len(b))):
        row = [choice(i, {"content": parts[k]}) for i, parts in ((0, a), (1, b)) if k < len(parts)]
        chunks.append(chunk(choices=row))
    chunks.append(chunk(choices=[choice(0, {}, "stop"), choice(1, {}, "stop")]))
    out = translate(sse(*chunks, "[DONE]"), piece=piece)
    for index, text in ((0, text_a), (1, text_b)):
        reasoning = "".join(
            c["delta"].get("reasoning_content") or ""
            for item in out[:-1]
            for c in item["choices"]
            if c["index"] == index
        )
        content = "".join(
            c["delta"].get("content") or "" for item in out[:-1] for c in item["choices"] if c["index"] == index
        )
        new, _ = transform_body(json.dumps(completion(text)).encode(), CFG)
        message = json.loads(new)["choices"][0]["message"] if new else {"content": text}
        assert (reasoning, content) == (message.get("reasoning_content", ""), message["content"])


FRAGMENTS = st.sampled_from(
    [
        sse(chunk("plain text")),
        sse(chunk(None, finish="stop")),
        sse(chunk(choices=[], usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})),
        b"data: {not json\n\n",
        b'data: {"choices": [{"delta": {"content": 5}}]}\n\n',
        b'data: {"choices": null}\n\n',
        b"data: [1, 2]\n\n",
        b"data: \xff\xfe\n\n",
        b": keepalive\r\n\r\n",
        b"event: x\rdata: y\r\r",
        b"\n",
        b"data: [DONE]\n\n",
        b"data: trailing without blank line",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(parts=st.lists(FRAGMENTS, max_size=10), cuts=st.lists(st.integers(0, 400), max_size=6))
@example(parts=[sse(chunk("plain text")), sse(chunk(None, finish="stop")), b"\n"], cuts=[])  # a lone blank line
def test_malformed_and_tagless_streams_pass_through_byte_for_byte(parts: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(parts)
    bounds = sorted({0, len(stream), *[c for c in cuts if c < len(stream)]})
    pipeline = StreamPipeline("chat", CFG)
    out = b"".join(pipeline.feed(stream[a:b]) for a, b in itertools.pairwise(bounds)) + pipeline.finish()
    assert pipeline.error is None
    assert out == stream
