"""What every surface's budget side (:class:`~gateway_mw.surfaces.budgeting.BudgetSide`) holds to,
whatever the surface: parametrized over the registry, so that a surface that declares one is held to
it without being named here."""

from __future__ import annotations

import json

import pytest

from gateway_mw.config import Surface
from gateway_mw.surfaces.budgeting import BudgetSide
from gateway_mw.surfaces.registry import SURFACES

SIDES: list[tuple[Surface, BudgetSide]] = [
    (name, side) for name, definition in SURFACES.items() if (side := definition.budget) is not None
]
MAX = 1 << 20


@pytest.mark.parametrize(("surface", "side"), SIDES, ids=[name for name, _ in SIDES])
def test_a_stream_that_says_nothing_is_not_cut(surface: Surface, side: BudgetSide) -> None:
    counter = side.counter(0, MAX)
    assert (counter.feed(b""), counter.finish(), counter.cut, counter.counted, counter.reasoning) == (
        b"",
        b"",
        False,
        0,
        "",
    )


@pytest.mark.parametrize(("surface", "side"), SIDES, ids=[name for name, _ in SIDES])
def test_a_request_without_a_conversation_is_not_continued(surface: Surface, side: BudgetSide) -> None:
    """Nowhere to put the final assistant turn: no continuation (the answer ends as for a refused one)."""
    assert side.continued({}, "<think>r</think>", 0) is None


@pytest.mark.parametrize(("surface", "side"), SIDES, ids=[name for name, _ in SIDES])
@pytest.mark.parametrize("body", [b"", b"[", b"[]", b"null", b'"text"'])
def test_a_body_that_is_no_answer_is_no_stream(surface: Surface, side: BudgetSide, body: bytes) -> None:
    assert side.as_stream(body) is None


@pytest.mark.parametrize(("surface", "side"), SIDES, ids=[name for name, _ in SIDES])
def test_the_body_of_an_empty_stream_is_a_json_object(surface: Surface, side: BudgetSide) -> None:
    assert isinstance(json.loads(side.collector(MAX).body()), dict)
