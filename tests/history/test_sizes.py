"""What a reading's decoded values hold, measured once per value (``carry.Sizes`` of a list,
``carry.Known`` of facts by index), held to the plain sum over the values (``carry.held`` of each)
whatever was measured before: values replaced, added, taken from an earlier reading as they are or as
equal values at the same indices."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw.history.carry import Known, Sizes, held

from ..hypothesis_examples import examples

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


@settings(max_examples=examples(200))
@given(first=st.lists(_VALUES, max_size=8), steps=_steps(), mapping=st.booleans())
def test_what_values_hold_is_their_plain_sum_after_any_edits(
    first: list[Any], steps: list[tuple[str, int, Any]], mapping: bool
) -> None:
    """A list measured by :class:`Sizes`; facts by index put in a :class:`Known` (added or replaced,
    its total asked for after any of the steps, or only at the end)."""
    values: list[Any] | dict[int, Any] = _known(enumerate(first)) if mapping else list(first)
    sizes = Sizes()
    assert _measured(sizes, values) == _plain(values)
    for step in steps:
        _edit(values, step)
        if step[0] == "measure" or step is steps[-1]:
            assert _measured(sizes, values) == _plain(values)


def _known(facts: Any) -> Known:
    known = Known()
    for at, fact in facts:
        known[at] = fact
    return known


def _measured(sizes: Sizes, values: list[Any] | dict[int, Any]) -> int:
    return values.held() if isinstance(values, Known) else sizes.of(values)


@settings(max_examples=examples(200))
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
    if mapping:  # the very facts, as many as are shared (Known.upto)
        facts = _known(enumerate(first))
        facts.held()
        copied = facts.upto(shared)
        assert dict(copied) == dict(enumerate(first[:shared]))
        assert copied.held() == _plain(copied)
        for value in more:
            copied[len(copied)] = value
            assert copied.held() == _plain(copied)
        assert facts.held() == _plain(facts)  # the earlier facts as they were
        return
    measured = Sizes()
    measured.of(first)
    later = first[:shared] if same else [_copy(value) for value in first[:shared]]
    sizes = Sizes()
    sizes.carried_from(measured, later, shared, same=same and shared == len(first))
    assert sizes.of(later) == _plain(later)
    for value in more:
        _edit(later, ("append", len(later), value))
        assert sizes.of(later) == _plain(later)


@settings(max_examples=examples(200))
@given(
    first=st.lists(_VALUES, min_size=1, max_size=8),
    shared=st.integers(0, 8),
    steps=_steps(),
    measured=st.booleans(),
)
def test_facts_copied_from_facts_being_added_to_sum_to_the_plain_sum(
    first: list[Any], shared: int, steps: list[tuple[str, int, Any]], measured: bool
) -> None:
    """A copy (:meth:`Known.upto`) made while facts put in since the last total wait to be measured,
    or after the earlier facts were replaced: each side's total is its own facts' plain sum."""
    facts = _known(enumerate(first))
    if measured:
        facts.held()
    for step in steps[: len(steps) // 2]:
        _edit(facts, step)
    copied = facts.upto(shared)
    assert dict(copied) == {at: fact for at, fact in facts.items() if at < shared}
    for step in steps[len(steps) // 2 :]:
        _edit(facts, step)
        _edit(copied, step)
    assert copied.held() == _plain(copied)
    assert facts.held() == _plain(facts)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


@settings(max_examples=examples(200))
@given(first=st.lists(_VALUES, max_size=8), steps=_steps(), shared=st.integers(0, 8))
def test_lists_made_whole_sum_to_the_plain_sum(
    first: list[Any], steps: list[tuple[str, int, Any]], shared: int
) -> None:
    """A reading's items are a list made whole, never changed in place (:meth:`Sizes.of_whole`): each
    step makes a new list (an edit of the last one), measured once or twice; a later reading takes
    the measures of the first ``shared`` of its earlier one's very values, then measures its own list."""
    values = list(first)
    sizes = Sizes()
    assert sizes.of_whole(values) == sizes.of_whole(values) == _plain(values)
    for step in steps:
        values = list(values)
        _edit(values, step)
        assert sizes.of_whole(values) == _plain(values)
        if step[0] == "measure":
            assert sizes.of_whole(values) == _plain(values)
    shared = min(shared, len(values))
    later = Sizes()
    later.carried_from(sizes, values, shared, same=shared == len(values))
    more = values[:shared] + [_copy(value) for value in first]
    assert later.of_whole(more) == later.of_whole(more) == _plain(more)
