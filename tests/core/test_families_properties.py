"""Property-based proofs of the design §3 invariants for the family mechanisms: the harmony channel
protocol, tool-call markers that end a block, answer wrappers, and an open tag after leading
whitespace under ``start_with_reasoning``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import DEFAULT_TAG_PAIRS, Scanner, Segment, TagPair, ThinkExtractConfig, extract
from gateway_mw.harmony import _H_HEADER_MAX, HarmonyScanner

from ..hypothesis_examples import examples
from .scanning import PAYLOAD, chunkings, merge, scan, trim_edges

HARMONY = [
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|constrain|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "assistant",
    "analysis",
    "final",
    "commentary",
    " to=functions.f",
    " json",
]
MARKER_SETS = [(), ("<tool_call>",), ("<tool_call>", "[TOOL_CALLS]", "</th", "<｜tool▁calls▁begin｜>")]
WRAPPER_SETS = [(), (TagPair("<answer>", "</answer>"),), (TagPair("<response>", "</response>"), TagPair("<a", "a>"))]
STRINGS = sorted(
    {t for p in DEFAULT_TAG_PAIRS for t in (p.open, p.close)}
    | {m for ms in MARKER_SETS for m in ms}
    | {t for ws in WRAPPER_SETS for w in ws for t in (w.open, w.close)}
    | set(HARMONY)
)
FRAGMENTS = sorted({s for t in STRINGS for s in (t, t[:2], t[1:], t[:-1])})
SOUP = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.sampled_from([" ", "\n", "  \n", "\t", "`", "```", "\n```\n", "<", "<|", "|>"]),
        st.text(alphabet=PAYLOAD, min_size=1, max_size=4),
    ),
    max_size=40,
).map("".join)

CONFIGS = st.builds(
    ThinkExtractConfig,
    protocol=st.sampled_from(["tags", "harmony"]),
    tool_call_markers=st.sampled_from(MARKER_SETS),
    content_wrappers=st.sampled_from(WRAPPER_SETS),
    stream_mode=st.sampled_from(["live", "buffered"]),
    start_with_reasoning=st.booleans(),
    separator=st.sampled_from(["", "\n"]),
    placement=st.sampled_from(["anywhere", "leading"]),
    code_aware=st.booleans(),
    strip_whitespace=st.booleans(),
    trim_tag_edges=st.booleans(),
    trim_reasoning_tail=st.booleans(),
    max_buffer_bytes=st.sampled_from([1, 5, 16, 65536]),
)


@settings(max_examples=examples(800), deadline=None)
@given(data=st.data(), text=SOUP, config=CONFIGS)
def test_chunking_invariance_and_stream_equals_non_stream(
    data: st.DataObject, text: str, config: ThinkExtractConfig
) -> None:
    whole = scan([text], config)
    assert merge(extract(text, config)) == whole
    assert scan(data.draw(chunkings(text)), config) == whole
    assert scan(list(text), config) == whole


@settings(max_examples=examples(500), deadline=None)
@given(data=st.data(), text=SOUP, config=CONFIGS.map(lambda c: c.replace(protocol="tags")))
def test_tags_mode_never_loses_a_payload_character(data: st.DataObject, text: str, config: ThinkExtractConfig) -> None:
    """Markers end blocks, wrappers vanish: every character in none of them survives, in order."""
    out = "".join(t for _, t in scan(data.draw(chunkings(text)), config))
    assert [c for c in out if c in PAYLOAD] == [c for c in text if c in PAYLOAD]


@settings(max_examples=examples(500), deadline=None)
@given(data=st.data(), text=SOUP, config=CONFIGS)
def test_the_fast_path_contract_holds(data: st.DataObject, text: str, config: ThinkExtractConfig) -> None:
    """While ``steady`` is a kind, a chunk free of ``triggers`` may skip ``feed`` (``pass_steady``
    instead) and come out whole as that kind: the result and the counters are the same."""
    pieces = data.draw(chunkings(text))
    fed, skipping = Scanner(config), Scanner(config)
    expected = [seg for piece in pieces for seg in fed.feed(piece)] + fed.finish()
    out: list[Segment] = []
    for piece in pieces:
        kind = skipping.steady
        if kind is not None and skipping.triggers.isdisjoint(piece):
            out.append(Segment(kind, piece))
            skipping.pass_steady(piece)
        else:
            out += skipping.feed(piece)
    out += skipping.finish()
    assert merge(out) == merge(expected)
    counters = ("reasoning_blocks", "reasoning_chars", "unclosed", "overflows")
    assert [getattr(skipping, c) for c in counters] == [getattr(fed, c) for c in counters]


@settings(max_examples=examples(800), deadline=None)
@given(data=st.data(), text=SOUP, config=CONFIGS)
def test_take_steady_is_feed_for_trigger_free_text(data: st.DataObject, text: str, config: ThinkExtractConfig) -> None:
    """While ``steady`` or ``starting`` is a kind, a chunk free of ``triggers`` may go through
    ``take_steady`` instead of ``feed``: one segment of that kind (or nothing, when the block's edge
    swallows it), and the same result and counters in the end."""
    pieces = data.draw(chunkings(text))
    fed, taking = Scanner(config), Scanner(config)
    expected = [seg for piece in pieces for seg in fed.feed(piece)] + fed.finish()
    out: list[Segment] = []
    for piece in pieces:
        kind = taking.steady or taking.starting
        if kind is not None and taking.triggers.isdisjoint(piece):
            taken = taking.take_steady(piece)
            out += [Segment(kind, taken)] if taken else []
        else:
            out += taking.feed(piece)
    out += taking.finish()
    assert merge(out) == merge(expected)
    counters = ("reasoning_blocks", "reasoning_chars", "unclosed", "overflows")
    assert [getattr(taking, c) for c in counters] == [getattr(fed, c) for c in counters]


@settings(max_examples=examples(300), deadline=None)
@given(text=SOUP, config=CONFIGS)
def test_holdback_is_bounded(text: str, config: ThinkExtractConfig) -> None:
    """Live mode holds no more than a proper prefix of one marker; a harmony header at most
    ``_H_HEADER_MAX`` characters; leading whitespace at most ``max_buffer_bytes`` (plus one feed)."""
    cfg = config.replace(stream_mode="live")
    longest = max(len(s) for s in STRINGS)
    scanner = Scanner(cfg)
    for ch in text:
        scanner.feed(ch)
        assert len(scanner._held) < longest
        assert len(scanner._lead.encode()) <= cfg.max_buffer_bytes + 4
        if isinstance(scanner, HarmonyScanner):
            assert scanner._header_len <= _H_HEADER_MAX


@settings(max_examples=examples(50), deadline=None)
@given(data=st.data(), at=st.integers(min_value=1000, max_value=1030))
def test_an_overlong_harmony_header_is_text(data: st.DataObject, at: int) -> None:
    """A header that reaches no ``<|message|>`` within 1024 characters is text, cut at the same
    place whatever the chunking; the scan goes on after it."""
    cfg = ThinkExtractConfig(protocol="harmony")
    head = "<|channel|>" + "x" * (at - len("<|channel|>"))
    text = head + "<|message|>y<|channel|>analysis<|message|>r"
    whole = scan([text], cfg)
    shown = head + "<|message|>y" if at > 1024 else "y"  # an unknown channel's body is content
    assert whole == [("content", shown), ("reasoning", "r")]
    assert scan(data.draw(chunkings(text)), cfg) == whole


@settings(max_examples=examples(400), deadline=None)
@given(data=st.data(), text=SOUP, config=CONFIGS.map(lambda c: c.replace(protocol="tags")))
def test_flush_never_loses_a_payload_character(data: st.DataObject, text: str, config: ThinkExtractConfig) -> None:
    scanner = Scanner(config)
    out: list[Segment] = []
    for piece in data.draw(chunkings(text)):
        out += scanner.feed(piece)
        if data.draw(st.booleans()):
            out += scanner.flush()
    out += scanner.finish()
    assert [c for s in out for c in s.text if c in PAYLOAD] == [c for c in text if c in PAYLOAD]


# -- exact results for texts built from known parts ---------------------------------------------

BODY = st.text(alphabet="zq é\n\t日🙂", max_size=8)


def _expected(raw: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Blocks with separator="": whitespace-only blocks vanish, adjacent blocks of one kind merge."""
    blocks: list[tuple[str, str]] = []
    for kind, body in raw:
        if body.strip() == "":
            continue
        if blocks and blocks[-1][0] == kind:
            blocks[-1] = (kind, blocks[-1][1] + body)
        else:
            blocks.append((kind, body))
    return blocks


HEADERS = {
    "analysis": ["<|channel|>analysis<|message|>", "<|start|>assistant<|channel|>analysis<|message|>"],
    "final": [
        "<|channel|>final<|message|>",
        "<|start|>assistant<|channel|>final<|message|>",
        "<|start|>assistant<|channel|>final <|constrain|>json<|message|>",
    ],
    "commentary": ["<|channel|>commentary<|message|>", "<|start|>assistant<|channel|>commentary<|message|>"],
    "tool": [
        "<|channel|>commentary to=functions.f <|constrain|>json<|message|>",
        "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>",
        "<|start|>assistant<|channel|>analysis to=browser.search<|message|>",
    ],
}
MESSAGES = st.lists(
    st.tuples(
        st.sampled_from(sorted(HEADERS)),
        st.integers(min_value=0, max_value=2),
        BODY,
        st.sampled_from(["<|end|>", "<|return|>", "<|call|>", ""]),
    ),
    max_size=6,
)


@settings(max_examples=examples(600), deadline=None)
@given(data=st.data(), messages=MESSAGES, lead=BODY, mode=st.sampled_from(["live", "buffered"]), trim=st.booleans())
def test_harmony_messages_come_out_exactly(
    data: st.DataObject, messages: list[tuple[str, int, str, str]], lead: str, mode: str, trim: bool
) -> None:
    """Analysis → reasoning, final and commentary → content without markers, a tool call →
    content verbatim; a missing terminator is ended by the next header; text before is content.
    With ``trim_tag_edges``: an analysis body loses the whitespace at both its ends, a final or
    commentary body the whitespace after its header; the body the text ends in keeps its end."""
    config = ThinkExtractConfig(
        protocol="harmony",
        separator="",
        stream_mode=mode,  # type: ignore[arg-type]
        trim_tag_edges=trim,
        trim_reasoning_tail=trim,
    )
    text, raw = lead, [("content", lead)]
    for number, (channel, variant, body, end) in enumerate(messages, start=1):
        header = HEADERS[channel][variant % len(HEADERS[channel])]
        text += header + body + end
        unclosed = number == len(messages) and not end
        if channel == "analysis" and unclosed and mode == "buffered" and number == 1:
            # a buffered analysis the text ends inside (rule 6): verbatim content, continuing the
            # text before it (the block it interrupted)
            raw[-1] = ("content", raw[-1][1] + header + body)
        elif channel == "tool" or (channel == "analysis" and unclosed and mode == "buffered"):
            # a tool call, or a buffered analysis the text ends inside after another message
            raw.append(("content", header + body + end))
        elif not trim:
            raw.append(("reasoning" if channel == "analysis" else "content", body))
        elif channel == "analysis":
            raw.append(("reasoning", body.lstrip() if unclosed else body.strip()))
        else:
            raw.append(("content", body.lstrip()))
    expected = _expected(raw)
    assert scan(data.draw(chunkings(text)), config) == expected
    assert merge(extract(text, config)) == expected


WRAPPED = st.lists(
    st.tuples(st.sampled_from(["reasoning", "content", "wrapped"]), BODY, st.sampled_from(DEFAULT_TAG_PAIRS)),
    max_size=6,
)


@settings(max_examples=examples(500), deadline=None)
@given(
    data=st.data(),
    plan=WRAPPED,
    tool=st.one_of(st.none(), BODY),
    mode=st.sampled_from(["live", "buffered"]),
    trim=st.booleans(),
)
def test_wrappers_vanish_and_a_tool_call_ends_an_unclosed_block(
    data: st.DataObject, plan: list[tuple[str, str, TagPair]], tool: str | None, mode: str, trim: bool
) -> None:
    """With ``trim_tag_edges`` a tool-call marker ends a block as its close tag would: the
    reasoning before it loses its trailing whitespace; the call itself is kept verbatim."""
    config = ThinkExtractConfig(
        separator="",
        stream_mode=mode,  # type: ignore[arg-type]
        tool_call_markers=("<tool_call>",),
        content_wrappers=(TagPair("<answer>", "</answer>"),),
        trim_tag_edges=trim,
        trim_reasoning_tail=trim,
    )
    text, raw = "", []
    for kind, body, pair in plan:
        if kind == "reasoning":
            text += pair.open + body + pair.close
            raw.append(("reasoning", body))
        else:
            text += f"<answer>{body}</answer>" if kind == "wrapped" else body
            if raw and raw[-1][0] == "content":  # one content block, however it was written
                raw[-1] = ("content", raw[-1][1] + body)
            else:
                raw.append(("content", body))
    if tool is not None:
        call = f"<tool_call>{tool}<think>{tool}</tool_call>"
        text += "<think>" + tool + call
        raw += [("reasoning", tool), ("content", call)]
    expected = _expected(trim_edges(raw) if trim else raw)
    assert scan(data.draw(chunkings(text)), config) == expected


@settings(max_examples=examples(300), deadline=None)
@given(
    data=st.data(),
    space=st.text(alphabet=" \n\t", max_size=6),
    pair=st.sampled_from(DEFAULT_TAG_PAIRS),
    body=BODY,
    rest=BODY,
    mode=st.sampled_from(["live", "buffered"]),
    trim=st.booleans(),
)
def test_start_with_reasoning_consumes_an_open_tag_after_leading_whitespace(
    data: st.DataObject, space: str, pair: TagPair, body: str, rest: str, mode: str, trim: bool
) -> None:
    config = ThinkExtractConfig(
        start_with_reasoning=True,
        separator="",
        stream_mode=mode,  # type: ignore[arg-type]
        trim_tag_edges=trim,
        trim_reasoning_tail=trim,
    )
    text = space + pair.open + body + pair.close + rest
    raw = [("reasoning", body), ("content", rest)]
    assert scan(data.draw(chunkings(text)), config) == _expected(trim_edges(raw) if trim else raw)
