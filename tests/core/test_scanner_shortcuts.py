"""The scanner's shortcuts against its scan, for the settings the other property tests leave out.

``Scanner.feed`` takes a text that is exactly a tag without the scan (``_whole_tag``), and a block
that has not emitted yet takes a trigger-free text through ``take_steady``. Both must be what the
scan gives: the tests elsewhere compare two scanners that both take the whole-tag step, so here the
reference has it off. The settings are the family presets (tags that are prefixes of other tags
and of tool-call markers, answer wrappers, ``start_with_reasoning``, ``strip_whitespace``) and
hand-made pair sets, with every option that changes a block's edges. Scanner settings are cached
per configuration: configurations made and freed on the fly each get their own.
"""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import Scanner, Segment, TagPair, ThinkExtractConfig, extract
from gateway_mw.scanner import merge_segments

NAMES = [
    "qwq-32b",
    "qwen3-235b-a22b-thinking-2507",
    "qwen3-8b",
    "kimi-k2",
    "hunyuan-a13b",
    "ernie-4.5-21b-thinking",
    "granite-3.2-8b",
    "command-a-reasoning",
    "seed-oss-36b",
    "gemma-4-27b",
    "minimax-m2",
    "magistral-small",
    "deepseek-r1",
]
HANDMADE = [
    ThinkExtractConfig(tag_pairs=(TagPair("<think>", "</think>"), TagPair("<thinking>", "</thinking>"))),
    ThinkExtractConfig(tag_pairs=(TagPair("<t>", "</t>"), TagPair("<think>", "</think>")), tool_call_markers=("<t>x",)),
    ThinkExtractConfig(tool_call_markers=("</th", "<think>x", "</think><tool")),
    ThinkExtractConfig(content_wrappers=(TagPair("<think", "k>"), TagPair("<thinking>", "</t>"))),
]
BASES = [ThinkExtractConfig().for_model(name) for name in NAMES] + HANDMADE


def strings(config: ThinkExtractConfig) -> set[str]:
    out = {t for p in config.tag_pairs for t in (p.open, p.close)} | set(config.tool_call_markers)
    return out | {t for w in config.content_wrappers for t in (w.open, w.close)}


STRINGS = sorted(set().union(*(strings(c) for c in BASES)))
FRAGMENTS = sorted({s for t in STRINGS for s in (t, t[:3], t[3:], t[:-1], t[1:])} - {""})
PIECES = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.sampled_from([" ", "\n", "  ", "x", "`", "```", "ab c", " \n", "Here", "thought\n"]),
    ),
    max_size=30,
)
CONFIGS = st.builds(
    lambda base, **changes: base.replace(**changes),
    st.sampled_from(BASES),
    stream_mode=st.sampled_from(["live", "buffered"]),
    separator=st.sampled_from(["", "\n"]),
    placement=st.sampled_from(["anywhere", "leading"]),
    code_aware=st.booleans(),
    trim_tag_edges=st.booleans(),
    trim_reasoning_tail=st.booleans(),
    max_buffer_bytes=st.sampled_from([5, 16, 65536]),
)


class Scanning(Scanner):
    """The scanner with its whole-tag step off: every text through the scan."""

    def _whole_tag(self, text: str) -> bool:
        return False


def drive(scanner: Scanner, pieces: list[str], take: bool) -> tuple[list[Segment], tuple[int, int, bool, int]]:
    """The merged segments of ``pieces`` (through ``take_steady`` where it applies, with ``take``)."""
    out: list[Segment] = []
    for piece in pieces:
        kind = (scanner.steady or scanner.starting) if take else None
        if kind is not None and scanner.triggers.isdisjoint(piece):
            taken = scanner.take_steady(piece)
            out += [Segment(kind, taken)] if taken else []
        else:
            out += scanner.feed(piece)
    out += scanner.finish()
    counters = (scanner.reasoning_blocks, scanner.reasoning_chars, scanner.unclosed, scanner.overflows)
    return merge_segments(out), counters


@settings(max_examples=600, deadline=None)
@given(pieces=PIECES, config=CONFIGS)
def test_the_whole_tag_step_and_take_steady_are_the_scan(pieces: list[str], config: ThinkExtractConfig) -> None:
    reference = drive(Scanning(config), pieces, take=False)
    assert drive(Scanner(config), pieces, take=False) == reference
    assert drive(Scanner(config), pieces, take=True) == reference
    assert drive(Scanning(config), ["".join(pieces)], take=False) == reference  # and the text in one piece


def test_configurations_made_on_the_fly_each_get_their_own_settings() -> None:
    """The scanner's settings are kept with their configuration, never by its id: a configuration freed
    and another made at the same address (CPython reuses it at once) must not find the old one's."""
    for i in range(600):
        separator = "\n" * (i % 3) + "-" * (i % 5)
        config = ThinkExtractConfig(separator=separator, strip_whitespace=i % 7 == 0, trim_tag_edges=False)
        expected = [Segment("content", "a"), Segment("reasoning", "r"), Segment("content", separator + "b")]
        reasoning = "r" if config.strip_whitespace else " r "  # strip_whitespace trims the block's edges
        spaced = [Segment("content", "a"), Segment("reasoning", reasoning), Segment("content", separator + "b")]
        assert extract("a<think>r</think>b", config) == expected, i
        assert extract("a<think> r </think>b", config) == spaced, i
        del config
        if i % 100 == 0:
            gc.collect()  # what a cycle held: rarely, as a collection of the whole suite's heap is slow
