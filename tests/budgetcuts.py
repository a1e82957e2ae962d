"""What the property tests of budgets the gateway enforces draw and cut: text into tokens (a cut may
fall between a surrogate pair's halves), a stream into reads, and a stream fed through a budget
counter as a relaying handler feeds it."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.budgeting import BudgetCounter

__all__ = ["TEXT", "budgeted", "paired", "pieces", "tokens", "unbudgeted", "units"]

TEXT = st.text(
    alphabet=st.sampled_from(["a", "b", " ", "<", ">", "/", "t", "h", "i", "n", "k", "\n", "😀"]), max_size=40
)
"""Reasoning and answers: tags and their pieces, white space, a character outside the BMP."""


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
