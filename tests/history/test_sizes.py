"""What a reading's decoded values hold, measured once per value (``carry.Sizes``), held to the plain
sum over the values (``carry.held`` of each) whatever was measured before: values replaced, added,
taken from an earlier reading as they are or as equal values at the same indices."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw.history.carry import Sizes, held

_VALUES = st.recursive(
    st.none() | st.integers() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


def _plain(values: dict[int, Any] | list[Any]) -> int:
    return sum(held((value,)) for value in (values.values() if isinstance(values, dict) else values))


@st.composite
def _steps(draw: st.DrawFn) -> list[tuple[str, int, Any]]:
    """Edits of a list of values between measures: replace one, append, drop the last."""
    kinds = st.sampled_from(["replace", "append", "pop", "measure"])
    return draw(st.lists(st.tuples(kinds, st.integers(0, 20), _VALUES), max_size=12))


def _edit(values: list[Any] | dict[int, Any], step: tuple[str, int, Any]) -> None:
    kind, at, value = step
    if isinstance(values, dict):
        if kind in ("replace", "append"):
            values[at] = value  # a mapping's fact added or replaced, never removed
        return
    if kind == "replace" and values:
        values[at % len(values)] = value
    elif kind == "append":
        values.append(value)
    elif kind == "pop" and values:
        values.pop()


@settings(max_examples=200)
@given(first=st.lists(_VALUES, max_size=8), steps=_steps(), mapping=st.booleans())
def test_what_values_hold_is_their_plain_sum_after_any_edits(
    first: list[Any], steps: list[tuple[str, int, Any]], mapping: bool
) -> None:
    values: list[Any] | dict[int, Any] = dict(enumerate(first)) if mapping else list(first)
    sizes = Sizes()
    assert sizes.of(values) == _plain(values)
    for step in steps:
        _edit(values, step)
        assert sizes.of(values) == _plain(values)


@settings(max_examples=200)
@given(
    first=st.lists(_VALUES, min_size=1, max_size=8),
    shared=st.integers(0, 8),
    more=st.lists(_VALUES, max_size=4),
    same=st.booleans(),
    mapping=st.booleans(),
)
def test_measures_taken_from_an_earlier_reading_sum_to_the_plain_sum(
    first: list[Any], shared: int, more: list[Any], same: bool, mapping: bool
) -> None:
    """A later reading takes the measures of its first ``shared`` values: the earlier reading's very
    values (a continued reading), or values equal to them read again; then adds its own."""
    shared = min(shared, len(first))
    earlier: list[Any] | dict[int, Any] = dict(enumerate(first)) if mapping else list(first)
    measured = Sizes()
    measured.of(earlier)
    taken = first[:shared] if same else [_copy(value) for value in first[:shared]]
    later: list[Any] | dict[int, Any] = dict(enumerate(taken)) if mapping else list(taken)
    sizes = Sizes()
    sizes.carried_from(measured, later, shared, same=same and shared == len(first))
    assert sizes.of(later) == _plain(later)
    for value in more:
        _edit(later, ("append", len(later), value))
        assert sizes.of(later) == _plain(later)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
