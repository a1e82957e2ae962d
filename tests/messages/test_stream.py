"""The Anthropic messages translator, sans-I/O: whole event lists in, whole event lists out."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_mw import ModelProfile, ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder, SSEEvent
from gateway_mw.surfaces.messages import MessagesStream, gateway_signature, transform_body, translate_stream

from ..hypothesis_examples import examples
from ..messageswire import (
    MESSAGE_STOP,
    PING,
    TOOL_USE,
    delta,
    end,
    json_delta,
    message,
    message_start,
    rd,
    read_message,
    read_sse,
    redacted_block,
    replay,
    sig,
    signature,
    sse,
    start,
    stop,
    tb,
    text,
    text_block,
    th,
    thinking,
    thinking_block,
    thinking_start,
    tool_start,
)

UNSIGNED = ThinkExtractConfig(messages_policy="unsigned")
REDACTED = ThinkExtractConfig(messages_policy="redacted")


def run(stream: bytes, config: ThinkExtractConfig = UNSIGNED, piece: int = 0) -> bytes:
    pipeline = StreamPipeline("messages", config)
    if piece:
        out = b"".join(pipeline.feed(stream[i : i + piece]) for i in range(0, len(stream), piece))
    else:
        out = pipeline.feed(stream)
    out += pipeline.finish()
    assert pipeline.error is None
    return out


def translate(stream: bytes, config: ThinkExtractConfig = UNSIGNED, piece: int = 0) -> list[Any]:
    return read_sse(run(stream, config, piece))  # every event validated as the SDK's strict mode does


def test_signature_format() -> None:
    assert gateway_signature("") == "gw1:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
    assert gateway_signature("Two plus two.") == signature("Two plus two.")
    assert gateway_signature("a") != gateway_signature("b")


# -- the three policies -------------------------------------------------------------------------

UPSTREAM = sse(message_start(), *text_block(0, "<think>Two plus", " two.</think>", "It is 4."), *end())


def test_unsigned_reasoning_becomes_a_signed_thinking_block() -> None:
    assert translate(UPSTREAM) == [
        message_start(),
        *thinking_block(0, "Two plus two.", "Two plus", " two."),
        *text_block(1, "It is 4."),
        *end(thinking=2),
    ]


def test_redacted_reasoning_becomes_one_whole_redacted_block() -> None:
    assert translate(UPSTREAM, REDACTED) == [
        message_start(),
        *redacted_block(0, "Two plus two."),
        *text_block(1, "It is 4."),
        *end(thinking=2),
    ]


def test_off_passes_byte_for_byte() -> None:
    assert run(UPSTREAM, ThinkExtractConfig()) == UPSTREAM


def test_gomodel_defect_10_signature_key_and_no_deltas_in_redacted_blocks() -> None:
    """Thinking starts carry ``"signature":""`` and get one signature_delta; redacted blocks carry
    ``data`` and never a ``text`` key nor a delta."""
    unsigned = translate(UPSTREAM)
    assert unsigned[1] == {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }
    assert [e["delta"]["type"] for e in unsigned if e["type"] == "content_block_delta" and e["index"] == 0] == [
        "thinking_delta",
        "thinking_delta",
        "signature_delta",
    ]
    redacted = translate(UPSTREAM, REDACTED)
    assert redacted[1:3] == [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "VHdvIHBsdXMgdHdvLg=="},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    assert [e for e in redacted if e["type"] == "content_block_delta" and e["index"] == 0] == []


# -- block layout -------------------------------------------------------------------------------


def test_text_before_between_and_after_reasoning() -> None:
    stream = sse(message_start(), *text_block(0, "Hi <thi", "nk>a</think>mid<think>b", "</think>end"), *end())
    assert translate(stream) == [
        message_start(),
        *text_block(0, "Hi "),
        *thinking_block(1, "a"),
        *text_block(2, "\nmid"),
        *thinking_block(3, "\nb"),
        *text_block(4, "\nend"),
        *end(thinking=1),
    ]
    assert translate(stream, REDACTED) == [
        message_start(),
        *text_block(0, "Hi "),
        *redacted_block(1, "a"),
        *text_block(2, "\nmid"),
        *redacted_block(3, "\nb"),
        *text_block(4, "\nend"),
        *end(thinking=1),
    ]


def test_tool_use_after_text_is_renumbered_with_its_json_deltas_intact() -> None:
    upstream = [
        message_start(),
        *text_block(0, "<think>I should add.</think>", "Let me add."),
        tool_start(1),
        json_delta(1, '{"a": 2'),
        json_delta(1, ', "b": 2}'),
        stop(1),
        *end("tool_use", thinking=1),
    ]
    expected_tool = [tool_start(2), json_delta(2, '{"a": 2'), json_delta(2, ', "b": 2}'), stop(2)]
    assert translate(sse(*upstream)) == [
        message_start(),
        *thinking_block(0, "I should add."),
        *text_block(1, "Let me add."),
        *expected_tool,
        *end("tool_use", thinking=1),
    ]
    out = translate(sse(*upstream), REDACTED)
    assert out == [
        message_start(),
        *redacted_block(0, "I should add."),
        *text_block(1, "Let me add."),
        *expected_tool,
        *end("tool_use", thinking=1),
    ]


def test_a_block_that_is_all_reasoning_leaves_no_text_block() -> None:
    stream = sse(message_start(), *text_block(0, "<think>only", " this</think>"), tool_start(1), stop(1), *end())
    assert translate(stream) == [
        message_start(),
        *thinking_block(0, "only this", "only", " this"),
        tool_start(1),
        stop(1),
        *end(thinking=2),
    ]


def test_empty_and_whitespace_text_blocks_stay_as_empty_text_blocks() -> None:
    stream = sse(message_start(), *text_block(0), *text_block(1, "  ", "\n"), *end())
    assert translate(stream) == [message_start(), *text_block(0), *text_block(1), *end()]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("live", [*thinking_block(0, "abc</thi", "abc", "</thi"), *end(thinking=1)]),
        ("buffered", [*text_block(0, "<think>abc</thi"), *end()]),  # held until the end: never reasoning
    ],
)
def test_unclosed_block_at_end_of_stream(mode: str, expected: list[Any]) -> None:
    config = UNSIGNED.replace(stream_mode=mode)
    stream = sse(message_start(), *text_block(0, "<think>abc", "</thi"), *end())
    assert translate(stream, config) == [message_start(), *expected]


def test_start_with_reasoning_by_model_profile() -> None:
    config = UNSIGNED.replace(profiles=(ModelProfile(match="deepseek-r1*", start_with_reasoning=True),))
    pieces = ("Let me think", "</think>Answer")
    r1 = sse(message_start("DeepSeek-R1-Distill"), *text_block(0, *pieces), *end())
    assert translate(r1, config) == [
        message_start("DeepSeek-R1-Distill"),
        *thinking_block(0, "Let me think"),
        *text_block(1, "Answer"),
        *end(thinking=1),
    ]
    plain = sse(message_start("other"), *text_block(0, *pieces), *end())
    assert run(plain, config) == plain  # no profile: no tag, nothing to change


def test_profile_disabling_the_model_passes_its_stream_untouched() -> None:
    config = UNSIGNED.replace(profiles=(ModelProfile(match="raw-*", enabled=False),))
    stream = sse(message_start("raw-1"), *text_block(0, "<think>x</think>y"), *end())
    assert run(stream, config) == stream


def test_global_off_wins_over_profiles() -> None:
    config = UNSIGNED.replace(enabled=False, profiles=(ModelProfile(match="*", enabled=True),))
    assert run(UPSTREAM, config) == UPSTREAM


def test_native_thinking_upstream_wins_for_the_whole_message() -> None:
    native = [
        message_start(),
        start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        thinking(0, "real"),
        delta(0, {"type": "signature_delta", "signature": "EqQBCkYIBx"}),
        stop(0),
        *text_block(1, "<think>literal</think> text"),
    ]
    # Passed on as it came; the server's one reasoning event counted where its usage has no count.
    assert run(sse(*native, *end())) == sse(*native, *end(thinking=1))


def test_tag_free_stream_passes_byte_for_byte() -> None:
    stream = sse(message_start(), PING, *text_block(0, "Plain ", "answer é日 🙂."), tool_start(1), stop(1), *end())
    assert run(stream) == stream
    assert run(stream, piece=5) == stream


def test_text_block_fields_ride_on_its_first_text_block() -> None:
    block = {"type": "text", "text": "", "citations": [], "x_extra": 1}
    stream = sse(message_start(), *text_block(0, "<think>r</think>", "ans", block=block), *end())
    assert translate(stream) == [
        message_start(),
        *thinking_block(0, "r"),
        start(1, block),
        text(1, "ans"),
        stop(1),
        *end(thinking=1),
    ]


def test_citation_delta_goes_on_a_text_block_after_the_text_before_it() -> None:
    citation = {
        "type": "char_location",
        "cited_text": "2+2=4",
        "document_index": 0,
        "document_title": "sums",
        "start_char_index": 0,
        "end_char_index": 5,
    }
    cite = delta(0, {"type": "citations_delta", "citation": citation})
    stream = sse(message_start(), start(0), text(0, "<think>r</think>It is <"), cite, text(0, "4."), stop(0), *end())
    assert translate(stream) == [
        message_start(),
        *thinking_block(0, "r"),
        start(1),
        text(1, "It is "),
        text(1, "<"),  # the held text goes first, so the citation follows the text it came after
        delta(1, {"type": "citations_delta", "citation": citation}),
        text(1, "4."),
        stop(1),
        *end(thinking=1),
    ]


def test_unknown_fields_of_a_rewritten_delta_are_kept_on_its_first_delta() -> None:
    odd = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "a<think>b", "x": 1},
        "y": 2,
    }
    stream = sse(message_start(), start(0), odd, text(0, "</think>c"), stop(0), *end())
    assert translate(stream) == [
        message_start(),
        start(0),
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a", "x": 1}, "y": 2},
        stop(0),
        thinking_start(1),
        thinking(1, "b"),
        sig(1, "b"),
        stop(1),
        *text_block(2, "\nc"),
        *end(thinking=1),
    ]


def test_data_only_upstream_gets_event_lines_on_every_frame() -> None:
    stream = sse(message_start(), *text_block(0, "<think>r</think>a"), *end(), event_lines=False)
    assert translate(stream) == [message_start(), *thinking_block(0, "r"), *text_block(1, "a"), *end(thinking=1)]


# -- held text, untranslated events, the end of the stream --------------------------------------


def test_unreadable_event_mid_stream_goes_after_the_held_text() -> None:
    broken = "event: content_block_delta\ndata: {not json\n\n"
    stream = (
        sse(message_start(), start(0), text(0, "Hi <thi"))
        + broken.encode()
        + sse(text(0, "nk>r</think>x"), stop(0), *end())
    )
    pipeline = StreamPipeline("messages", UNSIGNED)
    out = read_sse(pipeline.feed(stream) + pipeline.finish())
    assert out == [
        message_start(),
        start(0),
        text(0, "Hi "),
        text(0, "<thi"),  # flushed before the event it cannot read
        "{not json",
        text(0, "nk>r</think>x"),  # the tag was cut by that event: literal text from here
        stop(0),
        *end(),
    ]
    assert pipeline.counts.unreadable_events == 1


def test_unreadable_event_closes_a_redacted_run_that_goes_on_in_a_new_block() -> None:
    stream = sse(
        message_start(), start(0), text(0, "<think>abc"), '{"type": 5}', text(0, "def</think>ok"), stop(0), *end()
    )
    assert translate(stream, REDACTED) == [
        message_start(),
        *redacted_block(0, "abc"),
        {"type": 5},
        *redacted_block(1, "def"),
        *text_block(2, "ok"),
        *end(thinking=2),
    ]


def test_ping_passes_without_flushing_a_held_tag() -> None:
    stream = sse(message_start(), start(0), text(0, "Hi <thi"), PING, text(0, "nk>r</think>"), stop(0), *end())
    assert translate(stream) == [
        message_start(),
        start(0),
        text(0, "Hi "),
        PING,
        stop(0),
        *thinking_block(1, "r"),
        *end(thinking=1),
    ]


def test_error_event_closes_the_blocks_first() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    stream = sse(message_start(), start(0), text(0, "<think>abc</thi"), error)
    assert translate(stream) == [message_start(), *thinking_block(0, "abc</thi", "abc", "</thi"), error]


def test_end_of_stream_without_message_stop_closes_every_block() -> None:
    stream = sse(message_start(), start(0), text(0, "<think>abc"), text(0, "</think>par"))
    assert translate(stream) == [message_start(), *thinking_block(0, "abc"), start(1), text(1, "par"), stop(1)]
    assert translate(stream, REDACTED) == [
        message_start(),
        *redacted_block(0, "abc"),
        start(1),
        text(1, "par"),
        stop(1),
    ]


def test_flush_and_finish_directly() -> None:
    stream = MessagesStream(UNSIGNED)
    events = SSEDecoder().feed(sse(message_start(), start(0), text(0, "<think>ab</th")))
    out = [e for ev in events for e in stream.event(ev)]
    out += stream.flush()
    out += stream.event(SSEEvent(raw=b": keepalive\n\n"))
    out += stream.finish()
    assert read_sse(b"".join(e.raw for e in out)) == [message_start(), *thinking_block(0, "ab</th", "ab", "</th")]
    assert stream.fast_forward(b"data: {}\n\n") == (b"", 0)
    assert (stream.counts.reasoning_blocks, stream.counts.unclosed) == (1, 1)


def test_async_generator_form() -> None:
    async def events() -> Any:
        for ev in SSEDecoder().feed(UPSTREAM):
            yield ev

    async def collect() -> bytes:
        return b"".join([e.raw async for e in translate_stream(events(), UNSIGNED)])

    assert asyncio.run(collect()) == run(UPSTREAM)


@pytest.mark.parametrize("config", [UNSIGNED, REDACTED], ids=["unsigned", "redacted"])
def test_every_two_piece_cut_gives_identical_bytes(config: ThinkExtractConfig) -> None:
    stream = sse(
        message_start(),
        *text_block(0, "a<think>é日", "🙂</think>b"),
        tool_start(1),
        json_delta(1, "{}"),
        stop(1),
        *end(),
    )
    whole = run(stream, config)
    for cut in range(len(stream) + 1):
        pipeline = StreamPipeline("messages", config)
        assert pipeline.feed(stream[:cut]) + pipeline.feed(stream[cut:]) + pipeline.finish() == whole


# -- non-stream ---------------------------------------------------------------------------------


def body(config: ThinkExtractConfig, *content: dict[str, Any], **kw: Any) -> dict[str, Any] | None:
    new, _ = transform_body(json.dumps(message(*content, **kw)).encode(), config)
    return None if new is None else read_message(new)


def test_non_stream_splits_each_text_block_in_order() -> None:
    content = [tb("Hi <think>a</think>mid<think>b</think>end"), TOOL_USE, tb("<think>c</think>")]
    assert body(UNSIGNED, *content) == message(
        tb("Hi "), th("a"), tb("\nmid"), th("\nb"), tb("\nend"), TOOL_USE, th("c")
    )
    assert body(REDACTED, *content) == message(
        tb("Hi "), rd("a"), tb("\nmid"), rd("\nb"), tb("\nend"), TOOL_USE, rd("c")
    )


def test_non_stream_keeps_text_block_fields_on_its_first_text_block() -> None:
    assert body(UNSIGNED, tb("<think>r</think>ans", citations=None, x=1)) == message(
        th("r"), tb("ans", citations=None, x=1)
    )


def test_non_stream_leaves_unchanged_bodies_alone() -> None:
    assert body(UNSIGNED, tb("plain"), TOOL_USE, tb("")) is None
    assert body(UNSIGNED, th("native"), tb("<think>x</think>y")) is None  # upstream reasoning wins
    assert body(ThinkExtractConfig(), tb("<think>x</think>y")) is None  # policy off
    assert transform_body(b"{not json", UNSIGNED)[0] is None
    assert transform_body(b'{"type": "error", "content": []}', UNSIGNED)[0] is None


def test_non_stream_profile_and_counts() -> None:
    config = UNSIGNED.replace(profiles=(ModelProfile(match="r1", start_with_reasoning=True),))
    assert body(config, tb("r</think>a"), model="r1") == message(th("r"), tb("a"), model="r1")
    assert body(config, tb("r</think>a"), model="x") is None
    _, counts = transform_body(json.dumps(message(tb("<think>ab</think>c<think>d"))).encode(), UNSIGNED)
    assert (counts.reasoning_blocks, counts.reasoning_chars, counts.unclosed) == (2, 4, 1)


# -- stream = non-stream ------------------------------------------------------------------------

_ALPHABET = st.sampled_from(["<think>", "</think>", "<thi", "nk>", "</th", "a", "b c", "\n", " ", "é", "`", "🙂"])
_TEXT = st.lists(_ALPHABET, max_size=10).map("".join)


@st.composite
def upstream_message(draw: st.DrawFn) -> tuple[list[Any], list[dict[str, Any]]]:
    """Random content (text blocks and tool uses) as stream events and as non-stream blocks."""
    events: list[Any] = [message_start()]
    content: list[dict[str, Any]] = []
    for index in range(draw(st.integers(1, 3))):
        if draw(st.booleans()) or index == 0:
            value = draw(_TEXT)
            cuts = sorted(draw(st.lists(st.integers(0, len(value)), max_size=4)))
            pieces = [value[a:b] for a, b in zip([0, *cuts], [*cuts, len(value)], strict=True)]
            events += [start(index), *(text(index, p) for p in pieces if p), stop(index)]
            content.append(tb(value))
        else:
            events += [tool_start(index), json_delta(index, '{"a": 2, "b": 2}'), stop(index)]
            content.append(TOOL_USE)
    return events + end(), content


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    upstream_message(),
    st.sampled_from(["unsigned", "redacted"]),
    st.sampled_from(["live", "buffered"]),
    st.booleans(),
    st.integers(1, 64),
)
def test_stream_gives_the_message_of_the_non_stream_transform(
    upstream: tuple[list[Any], list[dict[str, Any]]], policy: str, mode: str, swr: bool, piece: int
) -> None:
    events, content = upstream
    config = ThinkExtractConfig(messages_policy=policy, stream_mode=mode, start_with_reasoning=swr)  # type: ignore[arg-type]
    final = replay(translate(sse(*events), config, piece))
    raw = json.dumps(message(*content)).encode()
    new, _ = transform_body(raw, config)
    assert final == json.loads(new if new is not None else raw)


def test_message_stop_only_stream_and_stray_events_do_not_break() -> None:
    stream = sse(MESSAGE_STOP, stop(7), text(9, "x"), {"type": "content_block_start", "index": 0})
    pipeline = StreamPipeline("messages", UNSIGNED)
    assert pipeline.feed(stream) + pipeline.finish() == stream
    assert pipeline.counts.unreadable_events == 3


def event_by_event(stream: bytes, config: ThinkExtractConfig) -> tuple[bytes, tuple[int, ...]]:
    """The translation without the pipeline's fast path: every event through ``event()``."""
    translator = MessagesStream(config)
    decoder = SSEDecoder()
    events = decoder.feed(stream)
    more, tail = decoder.finish()
    out = [e for ev in events + more for e in translator.event(ev)] + translator.finish()
    c = translator.counts
    return b"".join(e.raw for e in out) + tail, (c.reasoning_blocks, c.reasoning_chars, c.unclosed, c.unreadable_events)


def through_pipeline(stream: bytes, config: ThinkExtractConfig, groups: list[int]) -> tuple[bytes, tuple[int, ...]]:
    """The pipeline fed whole events, ``groups[k % len(groups)]`` of them per write, as model
    servers send tokens (so that its fast path gets whole spans of events)."""
    frames = [e.raw for e in SSEDecoder().feed(stream)]
    pipeline = StreamPipeline("messages", config)
    out, i, k = b"", 0, 0
    while i < len(frames):
        n = groups[k % len(groups)]
        out += pipeline.feed(b"".join(frames[i : i + n]))
        i, k = i + n, k + 1
    out += pipeline.finish()
    c = pipeline.counts
    return out, (c.reasoning_blocks, c.reasoning_chars, c.unclosed, c.unreadable_events)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    upstream_message(),
    st.sampled_from(["unsigned", "redacted"]),
    st.sampled_from(["live", "buffered"]),
    st.lists(st.integers(1, 4), min_size=1, max_size=5),
)
def test_fast_path_gives_the_bytes_and_counts_of_event_by_event_translation(
    upstream: tuple[list[Any], list[dict[str, Any]]], policy: str, mode: str, groups: list[int]
) -> None:
    events, _ = upstream
    config = ThinkExtractConfig(messages_policy=policy, stream_mode=mode)  # type: ignore[arg-type]
    stream = sse(*events)
    assert through_pipeline(stream, config, groups) == event_by_event(stream, config)


@pytest.mark.parametrize("trim", [False, True])
@pytest.mark.parametrize("policy", ["unsigned", "redacted"])
@pytest.mark.parametrize("per_write", [1, 3])
def test_fast_path_runs_match_event_by_event_translation(
    policy: str, per_write: int, trim: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events written one or a few at a time, as model servers send tokens. With
    ``trim_tag_edges`` whitespace is a trigger in reasoning: these reasoning events are all read,
    and only the answer's runs take the fast path."""
    hits: list[bool] = []
    original = MessagesStream.fast_forward

    def spy(self: MessagesStream, span: bytes) -> tuple[bytes, int]:
        out = original(self, span)
        hits.append(out[1] > 0)
        return out

    monkeypatch.setattr(MessagesStream, "fast_forward", spy)
    words = ["step é", " 日 by", " step 🙂", " a/b", " c\u2028d"]
    reasoning = [words[i % len(words)] for i in range(40)]
    answer = [*(words[i % len(words)] for i in range(20)), " x<y", ' "quoted"\n', *words, " `code`", " end"]
    stream = sse(message_start(), *text_block(0, "<think>", *reasoning, "</think>", *answer), *end())
    invalid_utf8 = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\xff"}}'
    stream += b"event: content_block_delta\ndata: " + invalid_utf8 + b"\n\n"
    config = ThinkExtractConfig(messages_policy=policy, trim_tag_edges=trim, trim_reasoning_tail=trim)  # type: ignore[arg-type]
    out, counts = through_pipeline(stream, config, [per_write])
    assert (out, counts) == event_by_event(stream, config)
    assert counts[3] == 1  # the invalid UTF-8 event, by either path
    assert hits.count(True) >= (20 if trim else 40) // per_write and not all(hits)
    final = replay(read_sse(out))
    reasoning_block = th("".join(reasoning)) if policy == "unsigned" else rd("".join(reasoning))
    assert final["content"] == [reasoning_block, tb("".join(answer))]


def test_a_ping_before_message_start_does_not_hide_the_model_from_profiles() -> None:
    config = UNSIGNED.replace(profiles=(ModelProfile(match="raw-*", enabled=False),))
    stream = sse(PING, message_start("raw-1"), *text_block(0, "<think>x</think>y"), *end())
    assert run(stream, config) == stream
    policy_off = sse(PING, *text_block(0, "<think>x</think>y"), *end())  # no message_start at all
    assert run(policy_off, ThinkExtractConfig()) == policy_off


def test_crlf_stream_is_answered_in_crlf() -> None:
    stream = sse(message_start(), *text_block(0, "Hi <thi", "nk>r</think>", "ok"), *end()).replace(b"\n", b"\r\n")
    out = run(stream, piece=7)
    assert b"\n" not in out.replace(b"\r\n", b"")
    assert read_sse(out) == [
        message_start(),
        *text_block(0, "Hi "),
        *thinking_block(1, "r"),
        *text_block(2, "\nok"),
        *end(thinking=1),
    ]


def test_oversized_event_passes_raw_after_the_held_text() -> None:
    big = text(0, "x" * 600)
    stream = sse(message_start(), start(0), text(0, "Hi <thi"), big, text(0, "nk>r</think>"), stop(0), *end())
    pipeline = StreamPipeline("messages", UNSIGNED.replace(max_event_bytes=400))
    out = read_sse(b"".join(pipeline.feed(stream[i : i + 50]) for i in range(0, len(stream), 50)) + pipeline.finish())
    assert out == [
        message_start(),
        start(0),
        text(0, "Hi "),
        text(0, "<thi"),  # flushed before the event too big to read
        big,
        text(0, "nk>r</think>"),  # the tag was cut by that event: literal text from here
        stop(0),
        *end(),
    ]
    assert pipeline.counts.oversized_events == 1


def test_unknown_event_type_passes_after_the_held_text() -> None:
    odd = {"type": "content_block_annotation", "index": 0, "note": "x"}
    stream = sse(message_start(), start(0), text(0, "<think>ab</thi"), odd, text(0, "nk>c"), stop(0), *end())
    assert translate(stream) == [
        message_start(),
        thinking_start(0),
        thinking(0, "ab"),
        thinking(0, "</thi"),
        odd,
        thinking(0, "nk>c"),
        sig(0, "ab</think>c"),
        stop(0),
        *end(thinking=2),
    ]


def test_events_with_data_in_several_lines() -> None:
    def two_lines(item: dict[str, Any]) -> bytes:
        body = json.dumps(item, separators=(",", ":"))
        cut = body.index(",") + 1
        return f"event: {item['type']}\ndata: {body[:cut]}\ndata: {body[cut:]}\n\n".encode()

    stream = (
        sse(message_start())
        + two_lines(start(0))
        + sse(text(0, "<think>r</think>"))
        + two_lines(text(0, "answer"))
        + sse(stop(0), *end())
    )
    assert translate(stream) == [message_start(), *thinking_block(0, "r"), *text_block(1, "answer"), *end(thinking=1)]
    plain = sse(message_start()) + two_lines(start(0)) + two_lines(text(0, "answer")) + sse(stop(0), *end())
    assert run(plain) == plain


def test_non_stream_keeps_the_bytes_of_every_value_it_does_not_own() -> None:
    raw = (
        b'{"id":"msg_1","type":"message","x_score":1.50,"x_name":"caf\\u00e9","model":"m",'
        b'"content":[{"type":"text","text":"<think>r</think>a","x_n":1e3},{"type":"tool_use","id":"t","input":{"v":2.0}}],'
        b'"usage":{"input_tokens":1,"output_tokens":2}}'
    )
    new, _ = transform_body(raw, UNSIGNED)
    assert new == (
        b'{"id":"msg_1","type":"message","x_score":1.50,"x_name":"caf\\u00e9","model":"m",'
        b'"content":[{"type":"thinking","thinking":"r","signature":"' + signature("r").encode() + b'"},'
        b'{"type":"text","text":"a","x_n":1e3},{"type":"tool_use","id":"t","input":{"v":2.0}}],'
        b'"usage":{"input_tokens":1,"output_tokens":2}}'
    )


def test_renumbered_events_keep_the_bytes_of_every_value_they_do_not_own() -> None:
    data = b'{"index":1,"type":"content_block_start","content_block":{"type":"tool_use","x":1.50}}'
    tool = b"event: content_block_start\ndata: " + data + b"\n\n"
    stream = sse(message_start(), *text_block(0, "<think>r</think>a")) + tool + sse(stop(1), *end())
    out = run(stream)
    assert out == sse(message_start(), *thinking_block(0, "r"), *text_block(1, "a")) + tool.replace(
        b'"index":1', b'"index":2'
    ) + sse(stop(2), *end(thinking=1))


def test_a_text_block_start_carrying_text() -> None:
    stream = sse(message_start(), start(0, tb("<think>r</think>a")), text(0, "b"), stop(0), *end())
    assert translate(stream) == [message_start(), *thinking_block(0, "r"), *text_block(1, "a", "b"), *end()]
    plain = sse(message_start(), start(0, tb("a")), text(0, "b"), stop(0), *end())
    assert translate(plain) == [message_start(), *text_block(0, "a", "b"), *end()]


def test_start_with_reasoning_opens_only_the_first_text_block_of_a_message() -> None:
    """A template injects <think> once per turn: a text block after a tool call is answer text."""
    config = UNSIGNED.replace(profiles=(ModelProfile(match="r1*", start_with_reasoning=True),))
    stream = sse(
        message_start("r1"),
        *text_block(0, "plan</think>Let me call"),
        start(1, TOOL_USE | {"input": {}}),
        json_delta(1, '{"a": 2, "b": 2}'),
        stop(1),
        *text_block(2, "The result is 4."),
        *end("tool_use"),
    )
    final = replay(translate(stream, config))
    assert final["content"] == [th("plan"), tb("Let me call"), TOOL_USE, tb("The result is 4.")]
    body = message(tb("plan</think>Let me call"), TOOL_USE, tb("The result is 4."), model="r1")
    new, _ = transform_body(json.dumps(body).encode(), config)
    assert new is not None
    assert read_message(new)["content"] == final["content"]


@pytest.mark.parametrize("piece", [0, 64])
def test_a_long_redacted_run_is_written_in_blocks_bounded_by_the_cap(piece: int) -> None:
    """Redacted blocks cannot stream deltas: past max_buffer_bytes the block so far goes out whole."""
    reasoning = "".join(f"step {i:03d}. " for i in range(100))  # 1,000 characters
    config = REDACTED.replace(max_buffer_bytes=256)
    pieces = [reasoning[i : i + 10] for i in range(0, len(reasoning), 10)]
    stream = sse(message_start(), *text_block(0, "<think>", *pieces, "</think>answer"), *end())
    items = translate(stream, config) if not piece else read_sse(run(stream, config, piece))
    final = replay(items)
    blocks = final["content"]
    assert [b["type"] for b in blocks] == ["redacted_thinking"] * 4 + ["text"]
    decoded = [base64.b64decode(b["data"]).decode() for b in blocks[:-1]]
    # the reasoning's own last space stays: trim_reasoning_tail is off by default
    assert "".join(decoded) == reasoning and all(len(d) <= 256 + 10 for d in decoded)
    assert blocks[-1] == tb("answer")
