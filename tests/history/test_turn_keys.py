"""The turn keys of a conversation's prefixes, each line digested once, are the plain digest of each
prefix (:func:`turn_key`, the oracle), in any order they are asked for."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.history.recall import TurnKeys, turn_key

LINES = st.lists(st.text(max_size=20), max_size=12)


@given(lines=LINES, asked=st.lists(st.integers(0, 12), max_size=8))
def test_each_prefix_key_is_the_plain_digest_of_that_prefix(lines: list[str], asked: list[int]) -> None:
    keys = TurnKeys(lines)
    wanted = [n for n in asked if n <= len(lines)]
    assert [keys.upto(n) for n in wanted] == [turn_key(lines[:n]) for n in wanted]


def test_a_longer_conversation_keeps_every_earlier_key() -> None:
    lines = ["user\x1fhi\x1f\x1f", "assistant\x1fhello\x1f\x1f", "user\x1fmore\x1f\x1f"]
    assert [TurnKeys(lines).upto(n) for n in (1, 2)] == [TurnKeys(lines[:2]).upto(n) for n in (1, 2)]
