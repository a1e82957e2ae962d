"""What the chat fast-path tests share: the default settings, the texts and extra members Hypothesis
draws, and a pipeline fed one event at a time, on the fast paths or the full path."""

from __future__ import annotations

from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.chat import ChatReference

CFG = ThinkExtractConfig()

TEXT = st.lists(
    st.sampled_from(["abc", " ", "é", "🙂", '"q"', "\\", "<think>", "</think>", "<", "`", "\n", "[THINK]", "x"]),
    min_size=1,
    max_size=4,
).map("".join)
WORDS = st.sampled_from([" step", " by", " the", "ü", "数", "🙂", ' "q"', " a\\b", " x/y", " tab\t", "word"])
EXTRA = st.sampled_from([None, "", [], {}, 0, False, "x", [1], {"a": None}])


def run_events(events: list[bytes], full: bool, config: ThinkExtractConfig = CFG) -> tuple[bytes, tuple[int, ...]]:
    """``events`` fed one by one (each may be any piece of the stream): the bytes out, and the counts."""
    pipeline = StreamPipeline("chat", config)
    if full:
        pipeline._translator = ChatReference(config)
    out = b"".join(pipeline.feed(event) for event in events) + pipeline.finish()
    counts = pipeline.counts
    return out, (counts.reasoning_blocks, counts.reasoning_chars, counts.unclosed, counts.overflows)
