"""What a stream keeps for the reasoning record is bounded: the model's text is kept as it goes by
only while one entry of the record could hold it (an entry over the cap is never stored), so a long
streamed answer takes the memory of the pieces in flight, not of the answer."""

from __future__ import annotations

import json
import tracemalloc

from gateway_mw import ThinkExtractConfig
from gateway_mw.channels import Said
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.record import DEFAULT_MAX_ENTRY_BYTES

PIECE = 64 * 1024


def event(content: str) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}  # fmt: skip
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def stream(pipeline: StreamPipeline, pieces: int) -> int:
    """Feed ``<think>…</think>`` and ``pieces`` pieces of answer; the peak of memory allocated meanwhile."""
    tracemalloc.start()
    try:
        pipeline.feed(event("<think>I plan.</think>"))
        for i in range(pieces):
            pipeline.feed(event(chr(ord("a") + i % 26) * PIECE))
        pipeline.feed(b"data: [DONE]\n\n")
        pipeline.finish()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_streamed_answer_longer_than_an_entry_is_not_kept() -> None:
    pieces = 8 * DEFAULT_MAX_ENTRY_BYTES // PIECE  # an 8 MiB answer
    pipeline = StreamPipeline("chat", ThinkExtractConfig(), keep=True)
    peak = stream(pipeline, pieces)
    assert peak < 3 * DEFAULT_MAX_ENTRY_BYTES  # what it kept until it passed the cap, and pieces in flight
    assert pipeline.said() == [Said("")]  # nothing kept of it: the entry would be over the cap


def test_a_streamed_answer_within_an_entry_is_kept_whole() -> None:
    pipeline = StreamPipeline("chat", ThinkExtractConfig(), keep=True)
    stream(pipeline, 4)
    text = "".join(chr(ord("a") + i) * PIECE for i in range(4))
    [said] = pipeline.said()
    assert said.original == "<think>I plan.</think>" + text and said.call_ids == ()


def test_the_cap_is_the_records() -> None:
    pipeline = StreamPipeline("chat", ThinkExtractConfig(), keep=True, keep_limit=2 * PIECE)
    stream(pipeline, 4)
    assert pipeline.said() == [Said("")]
