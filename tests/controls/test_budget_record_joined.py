"""The answer a cut one is kept as reads, to the record, as an uncut answer's text would: the
reasoning the client got, and the continuation's answer, whether the model writes its open tag or its
template injects it (``start_with_reasoning``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.channels import Said
from gateway_mw.history.text import split_written
from gateway_mw.surfaces.budgeting import joined_said

WORDS = st.text(st.sampled_from("abc xyz.,!?é😀\n"), max_size=40).filter(lambda t: t.strip() == t)
"""(Whitespace around a reasoning is the scanner's to keep or not, for an uncut answer alike.)"""


@given(
    reasoning=WORDS,
    answer=st.text(st.sampled_from("abc xyz.,!?é😀"), min_size=1, max_size=40).filter(lambda t: t[0] != " "),
    injected=st.booleans(),
)
def test_the_joined_answer_reads_as_the_reasoning_the_client_got_then_the_answer(
    reasoning: str, answer: str, injected: bool
) -> None:
    config = ThinkExtractConfig(start_with_reasoning=injected)
    pair = config.tag_pairs[0]
    first = [Said("ignored: the counter's reasoning is what the client got", (), ("rs_1",))]
    then = [Said(answer, ("call_2",), ("msg_2", "rs_1"))]
    [said] = joined_said("" if injected else pair.open, reasoning, pair.close, first, then)
    assert said == Said(
        ("" if injected else pair.open) + reasoning + pair.close + answer, ("call_2",), ("rs_1", "msg_2")
    )
    assert split_written(said.original, config) == (reasoning, answer)


def test_nothing_continued_is_the_reasoning_alone() -> None:
    assert joined_said("<think>", "r0 r1 ", "</think>", [], []) == [Said("<think>r0 r1 </think>")]
