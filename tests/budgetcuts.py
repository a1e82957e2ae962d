"""What the property tests of budgets the gateway enforces draw and cut: text into tokens (a cut may
fall between a surrogate pair's halves), a stream into reads, and a stream fed through a budget
counter as a relaying handler feeds it."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import example, given
from hypothesis import strategies as st

from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.budgeting import BudgetCounter, StreamFilter

__all__ = [
    "BUDGETS",
    "CUTS",
    "READS",
    "TEXT",
    "assert_cut_at_the_budget",
    "budgeted",
    "echoes",
    "filtered",
    "paired",
    "pieces",
    "tokens",
    "unbudgeted",
    "units",
]

Test = TypeVar("Test", bound=Callable[..., Any])

TEXT = st.text(
    alphabet=st.sampled_from(["a", "b", " ", "<", ">", "/", "t", "h", "i", "n", "k", "\n", "😀"]), max_size=40
)
"""Reasoning and answers: tags and their pieces, white space, a character outside the BMP."""
CUTS = st.lists(st.integers(0, 120), max_size=40)
"""Where the upstream's text is cut into tokens (code units: see :func:`tokens`)."""
READS = st.lists(st.integers(0, 6000), max_size=12)
"""Where the upstream's stream is cut into reads (bytes: see :func:`pieces`)."""
BUDGETS = st.integers(0, 12)


def units(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def tokens(text: str, cuts: list[int], whole: bool = False) -> list[str]:
    """``text`` cut into tokens at code-unit offsets: a cut may fall between a pair's halves, unless
    ``whole`` (characters whole)."""
    coded = units(text)
    points = sorted({2 * c for c in cuts if 0 < 2 * c < len(coded) and not (whole and _low(coded, 2 * c))})
    edges = [0, *points, len(coded)]
    return [coded[a:b].decode("utf-16-le", "surrogatepass") for a, b in itertools.pairwise(edges)]


def _low(coded: bytes, at: int) -> bool:
    return 0xDC00 <= int.from_bytes(coded[at : at + 2], "little") <= 0xDFFF


def pieces(raw: bytes, reads: list[int]) -> list[bytes]:
    """``raw`` as the reads of a stream, cut at the offsets ``reads``."""
    edges = [0, *sorted({r for r in reads if 0 < r < len(raw)}), len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(edges)]


def paired(text: str) -> str:
    """Surrogate halves that came apart joined, a lone one as U+FFFD (what the prefill can carry)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def unbudgeted(pipeline: StreamPipeline, raw: bytes, reads: list[int]) -> bytes:
    """What the client gets of ``raw``, read in ``reads``, without a budget."""
    return b"".join(pipeline.feed(p) for p in pieces(raw, reads)) + pipeline.finish()


def budgeted(count: BudgetCounter, pipeline: StreamPipeline, raw: bytes, reads: list[int]) -> bytes:
    """What the client gets of ``raw``, read in ``reads``, through ``count``: the handler's next
    write after the cut fails, so nothing more is fed."""
    passed = b""
    for piece in pieces(raw, reads):
        passed += count.feed(pipeline.feed(piece))
        if count.cut:
            return passed
    return passed + count.feed(pipeline.finish()) + count.finish()


def filtered(stream_filter: StreamFilter, raw: bytes, reads: list[int]) -> bytes:
    """``raw``, read in ``reads``, through ``stream_filter`` to its end."""
    return b"".join(stream_filter.feed(p) for p in pieces(raw, reads)) + stream_filter.finish()


def assert_cut_at_the_budget(
    count: BudgetCounter, budget: int, whole: bytes, passed: bytes, reasoning: Callable[[bytes], list[str]]
) -> None:
    """``passed`` (what ``count`` let through) is ``whole`` (the stream without a budget) up to the
    reasoning event that would go over ``budget``, and ``count`` says so; ``reasoning`` reads a
    stream's reasoning events."""
    expected = reasoning(whole)
    assert count.cut == (len(expected) > budget)
    assert reasoning(passed) == expected[:budget]
    assert count.counted == min(budget, len(expected))
    assert count.reasoning == paired("".join(expected[:budget]))
    if count.cut:
        assert whole.startswith(passed)
    else:
        assert passed == whole  # a stream the budget does not cut goes as it would without one


def echoes(test: Test) -> Test:
    """The cases of a test of the prefill's echo: a prefill, an answer, the tokens and reads the
    upstream's text comes in, and whether the server echoes the prefill before the answer."""
    test = example(prefill="<<", answer="<", cuts=[], reads=[], echoed=False)(
        test
    )  # the answer begins as the prefill did
    test = example(prefill="<<<<<😀", answer="", cuts=[6], reads=[], echoed=True)(test)  # the echo cut inside a pair
    test = example(prefill="<", answer="<😀", cuts=[3], reads=[], echoed=True)(test)
    cases = given(
        prefill=TEXT.filter(bool),
        answer=TEXT,
        cuts=st.lists(st.integers(0, 120), max_size=30),
        reads=st.lists(st.integers(0, 4000), max_size=8),
        echoed=st.booleans(),
    )
    return cases(test)
