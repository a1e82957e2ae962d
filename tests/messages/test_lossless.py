"""Property: whatever a messages upstream sends, a client reads every character the model wrote, in order.

Random messages streams, with random unreadable events mixed in, random line endings, cut into
random network pieces and truncated at a random byte, go through the pipeline. An SSE parser
written from the standard reads the bytes; the text it recovers (text, thinking and decoded
redacted data, in wire order) must be the upstream's text with only whole tags taken out, never
crossing an event the translator could not read; and the blocks it sees are well formed.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import DEFAULT_TAG_PAIRS, ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline

from ..hypothesis_examples import examples
from ..lossless import only_tags_removed, parse_sse
from ..messageswire import end, message_start, sse, start, stop, text

PIECE = st.lists(st.sampled_from(["<think>", "</think>", "<thi", "nk>", "</th", "ink>", "<", "a", "bc", "é", "🙂"]))
BAD = st.sampled_from(
    [
        b"event: content_block_delta\ndata: {not json\n\n",
        b"event: content_block_delta\ndata: "
        b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}\n\n',
        b"data: \xff\xfe\n\n",
        b": keepalive\n\n",
        b'event: error\ndata: {"message":"hiccup"}\n\n',
        b"data: " + b"[" * 100 + b"]" * 100 + b"\n\n",
    ]
)


@st.composite
def upstreams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    events = [sse(message_start(), start(0))]
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 4)) == 0:
            events.append(draw(BAD))
        else:
            events.append(sse(text(0, "".join(draw(PIECE.map(lambda p: p[:4]))))))
    if draw(st.booleans()):
        events.append(sse(stop(0), *end()))
    stream = b"".join(events)
    if draw(st.booleans()):
        stream = stream.replace(b"\n", b"\r\n")
    if draw(st.booleans()):  # the upstream drops mid-stream
        stream = stream[: draw(st.integers(0, len(stream)))]
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(stream) - 1)), max_size=8))))
    return stream, cuts


def readable(data: str) -> dict[str, Any] | None:
    """The event, if it is one of the messages surface (a text delta must carry a string)."""
    try:
        item = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        return None
    delta = item.get("delta")
    if isinstance(delta, dict) and delta.get("type") == "text_delta" and not isinstance(delta.get("text"), str):
        return None
    return item


def segments(body: bytes) -> list[str]:
    """The model text a client reads, cut at every event it cannot read as a messages event."""
    out = [""]
    for data in parse_sse(body):
        item = readable(data)
        if item is None:
            out.append("")
            continue
        if item["type"] == "content_block_delta" and isinstance(item.get("delta"), dict):
            delta = item["delta"]
            value = delta.get("text") if delta.get("type") == "text_delta" else delta.get("thinking")
            out[-1] += value if isinstance(value, str) else ""
        elif item["type"] == "content_block_start" and item["content_block"]["type"] == "redacted_thinking":
            out[-1] += base64.b64decode(item["content_block"]["data"]).decode()
    return out


def well_formed(body: bytes) -> None:
    """Blocks start at contiguous indexes, each delta and stop names the block open at its index."""
    started: list[str] = []
    open_: set[int] = set()
    for data in parse_sse(body):
        item = readable(data)
        if item is None or not item["type"].startswith("content_block"):
            continue
        index = item["index"]
        if item["type"] == "content_block_start":
            assert index == len(started) and not open_
            started.append(item["content_block"]["type"])
            open_.add(index)
        elif item["type"] == "content_block_delta":
            assert index in open_
            kind = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "thinking"}
            assert kind[item["delta"]["type"]] == started[index]
        else:
            open_.remove(index)


@pytest.mark.parametrize("policy", ["unsigned", "redacted"])
@pytest.mark.parametrize("mode", ["live", "buffered"])
@settings(max_examples=examples(75), deadline=None)
@given(upstream=upstreams())
def test_no_character_is_lost_or_reordered(policy: str, mode: str, upstream: tuple[bytes, list[int]]) -> None:
    stream, cuts = upstream
    config = ThinkExtractConfig(
        messages_policy=policy,  # type: ignore[arg-type]
        stream_mode=mode,  # type: ignore[arg-type]
        separator="",
        tag_pairs=DEFAULT_TAG_PAIRS[:2],
    )
    pipeline = StreamPipeline("messages", config)
    body = b"".join(pipeline.feed(stream[a:b]) for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True))
    body += pipeline.finish()
    assert pipeline.error is None
    well_formed(body)
    sent, received = segments(stream), segments(body)
    assert len(sent) == len(received)
    for original, arrived in zip(sent, received, strict=True):
        assert only_tags_removed(original, arrived), (original, arrived)
    # Events nobody could read reach the client unchanged, in the order they were sent.
    assert [d for d in parse_sse(body) if readable(d) is None] == [d for d in parse_sse(stream) if readable(d) is None]
