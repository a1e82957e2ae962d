"""A whole text's split known without the scan (``scanner.at_once``, ``Channels.at_once``) against
the scan itself: the same segments, counts and transcript whenever it answers, for every family
preset and every option that changes a block's edges; and it does answer for the shapes whole
answers have, so that the shortcut cannot silently stop applying."""

from __future__ import annotations

import itertools
import json
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import Segment, ThinkExtractConfig
from gateway_mw import channels as channels_module
from gateway_mw.channels import Channels, Transcripts
from gateway_mw.config import Surface
from gateway_mw.scanner import Scanner, at_once, merge_segments
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples
from .scanning import CONFIGS, FRAGMENTS, PIECES

# Whitespace of every kind str.isspace() knows (the edges are trimmed with it), and the halves of a
# character that a channel joins or replaces (a JSON string may hold them).
SAFE = ["x", "ab c", "Here", " ", "\n", "  \n", "\t", "é", "🙂", "*", "`", "```\n", "~~~"]
SAFE += ["\x1c", "\x85", "\u2028", "\u3000", "\ud83d", "\ude00"]
RISKY = ["[", "<", "◁", "</", "<|"]
PART = st.builds(
    lambda clean, risky, at: "".join(clean[:at] + risky + clean[at:]),
    st.lists(st.sampled_from(SAFE), max_size=6),
    st.one_of(st.just([]), st.just([]), st.lists(st.sampled_from(RISKY + FRAGMENTS), min_size=1, max_size=2)),
    st.integers(min_value=0, max_value=6),
)
"""Plain text, a third of the time with a character or fragment that may start a tag somewhere in it."""


def shaped(config: ThinkExtractConfig) -> st.SearchStrategy[str]:
    """Texts in the shapes the shortcut looks for with ``config``'s own tags (a reasoning block at
    the start, then an answer), their parts mostly plain, sometimes with a tag's fragment: it
    answers for many and must decline the others."""
    pairs = config.tag_pairs[:3]
    return st.builds(
        lambda lead, pair, opened, closed, end, reasoning, answer: (
            lead + (pair.open if opened else "") + reasoning + (pair.close if closed else end) + answer
        ),
        st.sampled_from(["", " ", "\n"]),
        st.sampled_from(pairs),
        st.booleans(),  # without it: as a template that writes the open tag leaves the answer
        st.sampled_from([True, True, False]),
        st.sampled_from(["", *config.tool_call_markers]),
        PART,
        PART,
    )


def clean(config: ThinkExtractConfig) -> st.SearchStrategy[str]:
    """A block of one of ``config``'s pairs at the very start, then an answer, both plain; or, as a
    template that writes the open tag leaves it, the block without its open tag."""
    plain = st.lists(st.sampled_from(SAFE), max_size=6).map("".join)
    pairs = st.sampled_from(config.tag_pairs[:3])
    return st.one_of(
        st.builds(lambda pair, reasoning, answer: pair.open + reasoning + pair.close + answer, pairs, plain, plain),
        st.builds(lambda pair, reasoning, answer: "I" + reasoning + pair.close + answer, pairs, plain, plain),
    )


def texts(config: ThinkExtractConfig) -> st.SearchStrategy[str]:
    return st.one_of(clean(config), shaped(config), PIECES.map("".join))


LIVE = st.builds(lambda c: c.replace(stream_mode="live"), CONFIGS)
AT_ONCE_CONFIGS = st.one_of(
    LIVE,
    LIVE,
    st.builds(lambda c: c.replace(start_with_reasoning=True), LIVE),
    CONFIGS,
    st.builds(lambda c: c.replace(strip_whitespace=True), CONFIGS),
    st.just(ThinkExtractConfig(protocol="harmony")),
)
"""Mostly the settings it answers for (live, no ``strip_whitespace``), the others too."""


def scanned(text: str, config: ThinkExtractConfig) -> tuple[list[Segment], tuple[int, int, bool, int]]:
    scanner = Scanner(config)
    out = merge_segments(scanner.feed(text) + scanner.finish())
    return out, (scanner.reasoning_blocks, scanner.reasoning_chars, scanner.unclosed, scanner.overflows)


@settings(max_examples=examples(1500), deadline=None)
@given(config=AT_ONCE_CONFIGS, data=st.data())
def test_a_whole_text_known_at_once_is_what_the_scan_gives(config: ThinkExtractConfig, data: st.DataObject) -> None:
    text = data.draw(texts(config))
    known = at_once(text, config)
    if known is not None:
        assert known == scanned(text, config)[0]


def _counts(channels: Channels) -> tuple[int, ...]:
    c = channels.counts
    return (c.reasoning_blocks, c.reasoning_chars, c.unclosed, c.overflows, c.native)


BEFORE = st.sampled_from(["", "", "", "native", "half"])
"""What a channel had before its whole text: nothing, the upstream's own reasoning, half a character."""


@settings(max_examples=examples(800), deadline=None)
@given(config=AT_ONCE_CONFIGS, parallel=st.booleans(), injected=st.booleans(), data=st.data())
def test_a_channel_given_its_text_at_once_is_one_given_it_and_ended(
    config: ThinkExtractConfig, parallel: bool, injected: bool, data: st.DataObject
) -> None:
    """Channel after channel (a template's injected open tag opens the first only, unless they are
    side by side; a channel may carry the upstream's reasoning, or hold half a character): segments,
    counts and the record's transcripts alike."""
    quick = Channels(config, parallel=parallel, injected=injected)
    scanned_ = Channels(config, parallel=parallel, injected=injected)
    quick.transcripts, scanned_.transcripts = Transcripts(), Transcripts()
    for at, (before, text) in enumerate(data.draw(st.lists(st.tuples(BEFORE, texts(config)), min_size=1, max_size=3))):
        if before == "native":
            assert quick.native(at) == scanned_.native(at) == []
        elif before == "half":
            assert quick.text(at, "\ud83d") == scanned_.text(at, "\ud83d")
        expected = merge_segments(scanned_.text(at, text) + scanned_.end(at))
        known = quick.at_once(at, text)
        if known is None:
            known = merge_segments(quick.text(at, text) + quick.end(at))
        assert known == expected
    assert _counts(quick) == _counts(scanned_)
    assert {ch: quick.transcripts.text(ch) for ch in quick.transcripts.texts} == {
        ch: scanned_.transcripts.text(ch) for ch in scanned_.transcripts.texts
    }


QWEN3 = ThinkExtractConfig().for_model("qwen3-32b")
MARKED = ThinkExtractConfig(tool_call_markers=("[call]", "</think>call:"))
R1 = ThinkExtractConfig().for_model("deepseek-r1")  # its template writes the open tag: start_with_reasoning


def test_the_shapes_of_whole_answers_are_known_at_once() -> None:
    reasoning, answer = Segment("reasoning", "I add.\n"), Segment("content", "It is 4.")
    known = [
        (QWEN3, "<think>\nI add.\n</think>\n\nIt is 4.", [reasoning, answer]),
        (QWEN3, "<thinking>I add.\n</thinking>It is 4.", [reasoning, answer]),
        (QWEN3, "It is 4.", [answer]),
        (QWEN3, "  \nIt is 4.\n", [Segment("content", "  \nIt is 4.\n")]),  # a tag-free answer's own edges
        (QWEN3, "<think>\n\n</think>\n\nIt is 4.", [answer]),  # an empty block emits nothing
        (QWEN3, "<think>I add.\n</think>", [reasoning]),
        (QWEN3, "", []),
        (R1, "I add.\n</think>\n\nIt is 4.", [reasoning, answer]),
        (
            QWEN3.replace(trim_tag_edges=False),
            "<think>\nI add.\n</think>\n\nIt is 4.",
            [
                Segment("reasoning", "\nI add.\n"),
                Segment("content", "\n\nIt is 4."),
            ],
        ),
    ]
    for config, text, segments in known:
        assert at_once(text, config) == segments, text
        assert scanned(text, config)[0] == segments, text


def test_what_the_scan_must_read_is_left_to_it() -> None:
    left = [
        (QWEN3, "Sure.<think>r</think>a"),  # a block after content: the separator
        (QWEN3, "<think>a < b</think>a"),  # a character that may start the close, inside
        (QWEN3, "<think>r</think>see [1]"),  # a character that may start a tag, after
        (QWEN3, "<think>r"),  # unclosed
        (QWEN3, "<think>r<tool_call>{}</tool_call>"),  # a tool-call marker ends the block
        (MARKED, "<think>r[call]{}</think>a"),  # one that starts unlike the close tag
        (MARKED, "<think>r</think>call:{}"),  # one that starts with the close tag
        (MARKED, "<think>r</think>cal"),  # ... or may still be one
        (QWEN3, "   "),  # whitespace only: held (rule 4)
        (R1, "<think>r</think>a"),  # the template's open tag written again: rule 3
        (R1, "\nr</think>a"),  # whitespace waited on for an open tag
        (QWEN3.replace(stream_mode="buffered"), "<think>r</think>a"),
        (QWEN3.replace(strip_whitespace=True), "<think>r</think>a"),
        (ThinkExtractConfig(protocol="harmony"), "<|channel|>analysis<|message|>r<|end|>"),
    ]
    for config, text in left:
        assert at_once(text, config) is None, text


def test_only_the_first_channel_starts_inside_the_injected_tag_however_it_was_read() -> None:
    """A first channel known at once counts as opened: the next reads from outside reasoning; and
    without an injected tag, the first does too."""
    for first in ("I add.</think>It is 4.", "I add.</think>It is <4."):  # known at once, then scanned
        channels = Channels(R1)
        head = channels.at_once(0, first)
        if head is None:
            head = merge_segments(channels.text(0, first) + channels.end(0))
        assert head[0] == Segment("reasoning", "I add.")
        assert channels.at_once(1, "r</think>a") is None  # not a block: the scan reads the tag as text
        assert merge_segments(channels.text(1, "r</think>a") + channels.end(1)) == [Segment("content", "r</think>a")]
        assert (channels.counts.reasoning_blocks, channels.counts.reasoning_chars) == (1, 6)
    # A server that never leaves its text inside an injected tag (Ollama): no channel starts inside one.
    assert Channels(R1, injected=False).at_once(0, "r</think>a") is None


def _body(surface: str, texts: list[str], model: str) -> bytes:
    """A non-stream answer of ``surface`` with one text channel per text."""
    if surface == "chat":
        choices = [{"index": i, "message": {"role": "assistant", "content": t}} for i, t in enumerate(texts)]
        return json.dumps({"id": "c", "object": "chat.completion", "model": model, "choices": choices}).encode()
    if surface == "messages":
        content = [{"type": "text", "text": t} for t in texts]
        return json.dumps({"id": "m", "type": "message", "model": model, "content": content}).encode()
    if surface == "responses":
        output = [
            {"type": "message", "id": f"msg_{i}", "role": "assistant", "content": [{"type": "output_text", "text": t}]}
            for i, t in enumerate(texts)
        ]
        return json.dumps({"id": "r", "object": "response", "model": model, "output": output}).encode()
    return json.dumps({"model": model, "message": {"role": "assistant", "content": texts[0]}}).encode()


def _translated(surface: Surface, body: bytes, config: ThinkExtractConfig) -> tuple[bytes | None, tuple[int, ...]]:
    ids = itertools.count()  # the ids a Responses answer makes up, alike in both runs
    out, counts = SURFACES[surface].transform_body(body, config, lambda prefix: f"{prefix}{next(ids)}")
    return out, tuple(getattr(counts, name) for name in type(counts).__slots__)


@settings(max_examples=examples(300), deadline=None)
@given(
    config=AT_ONCE_CONFIGS,
    surface=st.sampled_from(sorted(SURFACES)),
    model=st.sampled_from(["some-model", "deepseek-r1", "qwen3-8b"]),
    data=st.data(),
)
def test_a_body_translated_with_texts_known_at_once_is_the_body_scanned(
    config: ThinkExtractConfig, surface: Surface, model: str, data: st.DataObject
) -> None:
    """Each surface's non-stream body: the same bytes and counts as with every text scanned."""
    config = config.replace(messages_policy="unsigned")
    body = _body(surface, data.draw(st.lists(texts(config), min_size=1, max_size=3)), model)
    known = _translated(surface, body, config)
    with mock.patch.object(channels_module, "at_once", lambda text, config: None):
        assert known == _translated(surface, body, config)
