"""Property-based proofs of the scanner invariants (design §3) across setting combinations."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import DEFAULT_TAG_PAIRS, Scanner, TagPair, ThinkExtractConfig, extract

from ..hypothesis_examples import examples
from .scanning import PAYLOAD, chunkings, merge, scan, trim_edges

OVERLAPPING = (TagPair("<w>", "]]>"), TagPair("<w>v", "</w>"), TagPair("aab", "aac"))
TAG_FRAGMENTS = sorted(
    {s for pair in DEFAULT_TAG_PAIRS + OVERLAPPING for tag in (pair.open, pair.close) for s in (tag, tag[:2], tag[1:])}
)
SOUP = st.lists(
    st.one_of(
        st.sampled_from(TAG_FRAGMENTS),
        st.sampled_from([" ", "\n", "  \n", "\t", "`", "``", "```", "~~~", "\n```\n", "a", "<", "[", "◁"]),
        st.text(alphabet=PAYLOAD, min_size=1, max_size=4),
    ),
    max_size=40,
).map("".join)

CONFIGS = st.builds(
    ThinkExtractConfig,
    tag_pairs=st.sampled_from([DEFAULT_TAG_PAIRS, DEFAULT_TAG_PAIRS + OVERLAPPING, OVERLAPPING]),
    stream_mode=st.sampled_from(["live", "buffered"]),
    start_with_reasoning=st.booleans(),
    separator=st.sampled_from(["", "\n", " | "]),
    placement=st.sampled_from(["anywhere", "leading"]),
    code_aware=st.booleans(),
    strip_whitespace=st.booleans(),
    trim_tag_edges=st.booleans(),
    trim_reasoning_tail=st.booleans(),
    max_buffer_bytes=st.sampled_from([1, 5, 16, 65536]),
)


@settings(max_examples=examples(600), deadline=None)
@given(data=st.data(), text=SOUP, config=CONFIGS)
def test_chunking_invariance_and_stream_equals_non_stream(
    data: st.DataObject, text: str, config: ThinkExtractConfig
) -> None:
    whole = scan([text], config)
    assert merge(extract(text, config)) == whole
    pieces = data.draw(chunkings(text))
    assert scan(pieces, config) == whole
    assert scan(list(text), config) == whole


@settings(max_examples=examples(600), deadline=None)
@given(data=st.data(), text=SOUP, config=CONFIGS)
def test_no_payload_character_is_ever_lost(data: st.DataObject, text: str, config: ThinkExtractConfig) -> None:
    out = "".join(t for _, t in scan(data.draw(chunkings(text)), config))
    assert [c for c in out if c in PAYLOAD] == [c for c in text if c in PAYLOAD]


# Texts built from known blocks, so the exact expected output is known.
BODY = st.text(alphabet="zq é\n\t日🙂", max_size=8)
PAIRS = st.sampled_from(DEFAULT_TAG_PAIRS)
PLAN = st.lists(st.tuples(st.sampled_from(["reasoning", "content"]), BODY, PAIRS), max_size=8)


def _expected(plan: list[tuple[str, str, TagPair]], trim: bool = False) -> list[tuple[str, str]]:
    """Whitespace-only blocks vanish; adjacent blocks of one kind merge (separator="")."""
    raw: list[tuple[str, str]] = []  # the text's real blocks: adjacent content pieces are one block
    for kind, body, _ in plan:
        if kind == "content" and raw and raw[-1][0] == "content":
            raw[-1] = (kind, raw[-1][1] + body)
        else:
            raw.append((kind, body))
    if trim:
        raw = trim_edges(raw)
    blocks: list[tuple[str, str]] = []
    for kind, body in raw:
        if body.strip() == "":
            continue
        if blocks and blocks[-1][0] == kind:
            blocks[-1] = (kind, blocks[-1][1] + body)
        else:
            blocks.append((kind, body))
    return blocks


def _render(plan: list[tuple[str, str, TagPair]]) -> str:
    return "".join(pair.open + body + pair.close if kind == "reasoning" else body for kind, body, pair in plan)


@settings(max_examples=examples(600), deadline=None)
@given(data=st.data(), plan=PLAN, mode=st.sampled_from(["live", "buffered"]), trim=st.booleans())
def test_lossless_on_known_blocks(
    data: st.DataObject, plan: list[tuple[str, str, TagPair]], mode: str, trim: bool
) -> None:
    """The output is the input without its tags, without whitespace-only blocks and, with
    ``trim_tag_edges``, without the whitespace that touches a tag (``trim_edges``)."""
    config = ThinkExtractConfig(separator="", stream_mode=mode, trim_tag_edges=trim, trim_reasoning_tail=trim)  # type: ignore[arg-type]
    text = _render(plan)
    assert scan(data.draw(chunkings(text)), config) == _expected(plan, trim)


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data(), plan=PLAN, cut=st.integers(min_value=0, max_value=20))
def test_buffered_unclosed_block_reproduces_the_input_exactly(
    data: st.DataObject, plan: list[tuple[str, str, TagPair]], cut: int
) -> None:
    """An unclosed buffered block is content, verbatim: no tag, no character, no space lost."""
    config = ThinkExtractConfig(separator="", stream_mode="buffered")
    tail = "<think>" + "zq 日\n"[: cut % 6] + "</thi"[: cut % 5]
    text = _render(plan) + tail
    blocks = scan(data.draw(chunkings(text)), config)
    assert blocks[-1][0] == "content"
    assert blocks[-1][1].endswith(tail)


@settings(max_examples=examples(200), deadline=None)
@given(text=SOUP, config=CONFIGS)
def test_live_holdback_is_bounded_by_the_longest_tag(text: str, config: ThinkExtractConfig) -> None:
    """Live mode holds back no more than a proper prefix of some tag between feeds."""
    longest = max(len(t) for p in config.tag_pairs for t in (p.open, p.close))
    scanner = Scanner(config.replace(stream_mode="live"))
    for ch in text:
        scanner.feed(ch)
        assert len(scanner._held) < longest


def _visible(blocks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Blocks with whitespace-only ones dropped (rule 4 lets a run past the cap out as one when
    trimming is off; trimming drops it) and their neighbours merged."""
    out: list[tuple[str, str]] = []
    for kind, text in blocks:
        if text.isspace():
            continue
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def _is_whitespace_deletion(short: str, long: str) -> bool:
    """Whether ``short`` is ``long`` with some whitespace characters deleted (and nothing else)."""
    i = 0
    for ch in long:
        if i < len(short) and short[i] == ch:
            i += 1
        elif not ch.isspace():
            return False
    return i == len(short)


@settings(max_examples=examples(600), deadline=None)
@given(data=st.data(), text=SOUP, config=CONFIGS.map(lambda c: c.replace(strip_whitespace=False)))
def test_trim_tag_edges_only_deletes_whitespace(data: st.DataObject, text: str, config: ThinkExtractConfig) -> None:
    """On any text, trimming on gives the blocks of trimming off, kind for kind, each with some of
    its whitespace deleted and nothing else changed; and a text that opens no block passes whole."""
    on = scan(data.draw(chunkings(text)), config.replace(trim_tag_edges=True, trim_reasoning_tail=True))
    off = scan([text], config.replace(trim_tag_edges=False))
    if not config.start_with_reasoning and not any(pair.open in text for pair in config.tag_pairs):
        assert on == off  # no tag: byte for byte, its own edges included
    on, off = _visible(on), _visible(off)
    assert [k for k, _ in on] == [k for k, _ in off]
    assert all(_is_whitespace_deletion(a, b) for (_, a), (_, b) in zip(on, off, strict=True))


@settings(max_examples=examples(300), deadline=None)
@given(
    data=st.data(),
    words=st.lists(st.text(alphabet="zq日", min_size=1, max_size=3), min_size=1, max_size=4),
    space=st.text(alphabet=" \n\t\u3000", min_size=1, max_size=12),
    cap=st.integers(min_value=1, max_value=12),
    closed=st.booleans(),
)
def test_held_trailing_whitespace_is_bounded_and_released(
    data: st.DataObject, words: list[str], space: str, cap: int, closed: bool
) -> None:
    """Trailing whitespace in reasoning waits for a close tag only up to ``max_buffer_bytes``:
    a longer run goes out (the same at every split); at ``finish()`` with no close it goes out."""
    body = " ".join(words)
    text = "<think>" + body + space + ("</think>x" if closed else "")
    config = ThinkExtractConfig(max_buffer_bytes=cap, trim_reasoning_tail=True)
    kept = len(space.encode()) > cap or not closed
    expected = [("reasoning", body + space if kept else body)] + ([("content", "x")] if closed else [])
    assert scan(data.draw(chunkings(text)), config) == expected
    scanner = Scanner(config)
    for piece in data.draw(chunkings(text)):
        scanner.feed(piece)
        assert scanner._pending_bytes + len(scanner._ws.encode()) <= cap
