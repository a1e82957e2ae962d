"""Chat completions: random streams with hostile events mixed in, read by the openai SDK's own chat
stream accumulator, every chunk validated strictly. Whatever the upstream sends, the client's final
message holds what the model wrote (tags aside), in order, in the two fields."""

from __future__ import annotations

import itertools
import json
from typing import Any

import openai
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib.streaming.chat._completions import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.scanner import CONTENT, Scanner
from gateway_mw.sse import SSEDecoder

from .chatwire import chunk

CONFIG = ThinkExtractConfig(separator="", max_event_bytes=2048)
BIG = "x" * 3000  # a chunk over max_event_bytes: streamed through unread
FRAGMENTS = st.sampled_from(["<think>", "</think>", "<thi", "nk>", "</th", "ink>", "a", "b c", "é", "🙂", "ok."])
HOSTILE = st.sampled_from(["unreadable", "duplicate_key", "float_index", "big", "late", None])


def _sse(data: dict[str, Any] | str) -> bytes:
    return b"data: " + (data if isinstance(data, str) else json.dumps(data)).encode() + b"\n\n"


def build(deltas: list[tuple[str, str | None]]) -> tuple[bytes, str, str]:
    """The upstream's stream, and the reasoning and content a client must end up with: what one
    scanner fed the same text gives, flushed where the upstream sent something it cannot read."""
    out = [_sse(chunk("", delta={"role": "assistant"}))]
    scanner = Scanner(CONFIG)
    fields = {"reasoning": "", CONTENT: ""}
    late: list[str] = []

    def take(segments: list[Any]) -> None:
        for seg in segments:
            fields["reasoning" if seg.kind != CONTENT else CONTENT] += seg.text

    for text, trouble in deltas:
        raw = _sse(chunk(text))
        if trouble == "duplicate_key":  # parsers read the last value
            raw = raw.replace(b'"content": ', b'"content": "JUNK", "content": ', 1)
        elif trouble == "float_index":
            raw = raw.replace(b'"index": 0', b'"index": 0.0', 1)
        out.append(raw)
        take(scanner.feed(text))
        if trouble == "unreadable":
            out.append(b"data: {not json\n\n")
            take(scanner.flush())
        elif trouble == "big":
            take(scanner.flush())
            out.append(_sse(chunk(BIG)))
            fields[CONTENT] += BIG
        elif trouble == "late":
            late.append("late")
    out.append(_sse(chunk("", finish="stop")))
    take(scanner.finish())
    for text in late:  # after the choice finished: a new channel
        out.append(_sse(chunk(text)))
        fields[CONTENT] += text
    out.append(_sse("[DONE]"))
    return b"".join(out), fields["reasoning"], fields[CONTENT]


def client_final(stream: bytes) -> tuple[str, str]:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState(input_tools=openai.omit)
    decoder = SSEDecoder()
    frames = decoder.feed(stream)
    assert decoder.finish() == ([], b"")
    for frame in frames:
        assert frame.data is not None
        if frame.data in (b"[DONE]", b"{not json"):
            continue
        state.handle_chunk(ChatCompletionChunk.model_validate(json.loads(frame.data), strict=False))
    message = state.get_final_completion().choices[0].message
    extra = message.model_extra or {}
    return extra.get("reasoning_content") or "", message.content or ""


@settings(max_examples=150, deadline=None)
@given(
    deltas=st.lists(st.tuples(FRAGMENTS, HOSTILE), min_size=1, max_size=10),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_hostile_streams_reach_the_client_whole_and_in_order(
    deltas: list[tuple[str, str | None]], cuts: list[int]
) -> None:
    body, reasoning, content = build(deltas)
    pipeline = StreamPipeline("chat", CONFIG)
    points = [0, *sorted({c % len(body) for c in cuts}), len(body)]
    out = b"".join(pipeline.feed(body[a:b]) for a, b in itertools.pairwise(points)) + pipeline.finish()
    assert pipeline.error is None
    assert client_final(out) == (reasoning, content)
