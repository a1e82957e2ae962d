"""What every surface's budget pieces hold, whatever the surface: each surface that declares a
:class:`~gateway_mw.surfaces.budgeting.BudgetSide` is taken from the registry, so that a surface
that gains one gets these tests without being named here."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.surfaces.budgeting import BudgetSide
from gateway_mw.surfaces.registry import SURFACES

SIDES = {name: definition.budget for name, definition in SURFACES.items() if definition.budget is not None}
BYTES = st.binary(max_size=300) | st.text(alphabet='data: {}"\n:ab', max_size=200).map(str.encode)
READS = st.lists(st.integers(0, 300), max_size=6)


def pieces(raw: bytes, reads: list[int]) -> list[bytes]:
    edges = [0, *sorted({r for r in reads if 0 < r < len(raw)}), len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(edges)]


def test_some_surface_has_a_budget() -> None:
    assert "chat" in SIDES  # the tests below run on at least one


@pytest.mark.parametrize("side", SIDES.values(), ids=list(SIDES))
@given(raw=BYTES, reads=READS)
def test_a_counter_passes_what_it_cannot_read_whole(side: BudgetSide, raw: bytes, reads: list[int]) -> None:
    """Bytes that hold no reasoning (noise, broken events) go to the client as they came, in any reads."""
    counter = side.counter(3, 1024)
    out = b"".join(counter.feed(p) for p in pieces(raw, reads)) + counter.finish()
    assert not counter.cut and counter.counted == 0
    assert out == raw


@pytest.mark.parametrize("side", SIDES.values(), ids=list(SIDES))
@given(raw=BYTES, reads=READS)
def test_an_echo_of_nothing_passes_everything(side: BudgetSide, raw: bytes, reads: list[int]) -> None:
    echo = side.echo("", 1024)
    assert b"".join(echo.feed(p) for p in pieces(raw, reads)) + echo.finish() == raw


@pytest.mark.parametrize("side", SIDES.values(), ids=list(SIDES))
def test_a_request_with_nowhere_to_put_the_prefill_is_not_continued(side: BudgetSide) -> None:
    assert side.continued({}, "<think>x</think>", 0) is None


@pytest.mark.parametrize("side", SIDES.values(), ids=list(SIDES))
@pytest.mark.parametrize("body", [b"", b"not json", b"[]", b"{}", b'{"choices": 3, "content": 3, "output": 3}'])
def test_a_body_that_is_no_answer_is_no_stream(side: BudgetSide, body: bytes) -> None:
    assert side.as_stream(body) is None


@pytest.mark.parametrize("side", SIDES.values(), ids=list(SIDES))
def test_a_collector_fed_nothing_still_gives_a_json_object(side: BudgetSide) -> None:
    assert isinstance(json.loads(side.collector(1024).body()), dict)
