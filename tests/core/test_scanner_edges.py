"""The scanner at its edges: a text that is only a block, reasoning streamed live and held back by
less than a tag, the cap of a buffered block, whitespace trimmed at tags only, self-overlapping
harmony tags cut anywhere, an open tag the chat template wrote. Each was a defect of another
implementation (GoModel's Go ``thinkextract``)."""

from __future__ import annotations

from gateway_mw import DEFAULT_TAG_PAIRS, Scanner, Segment, ThinkExtractConfig, extract

from .scanning import chunk, merge, scan

HARMONY = DEFAULT_TAG_PAIRS[8]


def test_text_made_only_of_a_block_is_only_reasoning() -> None:
    assert extract("<think>x</think>") == [Segment("reasoning", "x")]
    assert scan(list("<think>x</think>")) == [("reasoning", "x")]


def test_reasoning_streams_live() -> None:
    s = Scanner()
    assert s.feed("<think>") == []
    assert s.feed("step one") == [Segment("reasoning", "step one")]
    assert s.feed(", step two") == [Segment("reasoning", ", step two")]


def test_cap_keeps_the_open_tag_and_stays_bounded() -> None:
    cap = 64
    s = Scanner(ThinkExtractConfig(stream_mode="buffered", max_buffer_bytes=cap))
    out = s.feed("<think>")
    for _ in range(1000):
        out += s.feed("abcd")
        assert s._body_bytes <= cap
    out += s.feed("</think>tail") + s.finish()
    assert merge(out) == [("content", "<think>" + "abcd" * 1000 + "</think>tail")]
    assert (s.overflows, s.reasoning_chars) == (1, 0)


def test_large_block_in_small_chunks_has_bounded_holdback() -> None:
    """1 MB of reasoning (16 times ``max_buffer_bytes``) in 4-character chunks: output lags input by
    less than one tag at every chunk."""
    s = Scanner()
    body = "abc<" * 250_000  # every chunk ends in a possible close-tag start
    assert s.feed("<think>") == []
    emitted = 0
    for i in range(0, len(body), 4):
        for seg in s.feed(body[i : i + 4]):
            assert seg.kind == "reasoning"
            emitted += len(seg.text)
        assert len(s._held) < len("</think>")
        assert i + 4 - emitted == len(s._held)
    assert s.feed("</think>") == [Segment("reasoning", "<")]  # the last held "<" was not a close
    assert s.finish() == []
    assert emitted + 1 == len(body)


def test_whitespace_is_trimmed_only_at_tags_and_stream_matches_non_stream() -> None:
    text = "<think>\nplan\n</think>\n\nanswer\n"
    for config, expected in (
        (None, [("reasoning", "plan\n"), ("content", "answer\n")]),  # trim_tag_edges, the default
        (ThinkExtractConfig(trim_reasoning_tail=True), [("reasoning", "plan"), ("content", "answer\n")]),
        (ThinkExtractConfig(trim_tag_edges=False), [("reasoning", "\nplan\n"), ("content", "\n\nanswer\n")]),
    ):
        assert merge(extract(text, config)) == expected
        for size in range(1, len(text) + 1):
            assert scan(chunk(text, [size]), config) == expected


def test_self_overlapping_harmony_tags_at_every_split() -> None:
    text = HARMONY.open + "analysis <|end|><|start|>x" + HARMONY.close + "final answer"
    expected = [("reasoning", "analysis <|end|><|start|>x"), ("content", "final answer")]
    for cut in range(len(text) + 1):
        assert scan([text[:cut], text[cut:]]) == expected, cut
    assert scan(list(text)) == expected


def test_template_injected_open_tag() -> None:
    cfg = ThinkExtractConfig(start_with_reasoning=True)
    for pieces in (["I reason</think>The answer"], list("I reason</think>The answer")):
        assert scan(pieces, cfg) == [("reasoning", "I reason"), ("content", "The answer")]


def test_a_lone_surrogate_in_a_held_block_is_measured_not_refused() -> None:
    """Buffered mode measures the block it holds in UTF-8 bytes: half a character (JSON can spell
    one; a surface joins or replaces them, the scanner itself takes any text) is measured as the
    three bytes its replacement takes, and the block goes out as in live mode."""
    text = "<think>a\ud800b</think>c"
    expected = [Segment("reasoning", "a\ud800b"), Segment("content", "c")]
    assert extract(text, ThinkExtractConfig(stream_mode="buffered")) == expected == extract(text)
    capped = ThinkExtractConfig(stream_mode="buffered", max_buffer_bytes=4)  # "a", the half, "b": 5 bytes
    assert extract(text, capped) == [Segment("content", "<think>a\ud800b</think>c")]  # released verbatim (rule 7)
    assert extract("<think>é\ud800é</think>", capped.replace(max_buffer_bytes=5)) == [
        Segment("content", "<think>é\ud800é</think>")
    ]
