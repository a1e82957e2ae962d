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

from gateway_mw import Scanner, Segment, ThinkExtractConfig, extract
from gateway_mw.scanner import merge_segments

from ..hypothesis_examples import examples
from .scanning import CONFIGS, PIECES


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


@settings(max_examples=examples(600), deadline=None)
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
