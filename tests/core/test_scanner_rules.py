"""One table per scanner rule (docs/scanner.md); every case runs whole, per character and in odd chunks."""

from __future__ import annotations

import pytest

from gateway_mw import Scanner, Segment, TagPair, ThinkExtractConfig, extract

from .scanning import Blocks, chunk, merge, scan

R, C = "reasoning", "content"
LIVE = ThinkExtractConfig()
BUFFERED = ThinkExtractConfig(stream_mode="buffered")
BOTH = [pytest.param(LIVE, id="live"), pytest.param(BUFFERED, id="buffered")]


def check(text: str, config: ThinkExtractConfig, expected: Blocks) -> None:
    assert merge(extract(text, config)) == expected
    for sizes in ([len(text) or 1], [1], [2], [3], [1, 4, 2], [5, 1]):
        assert scan(chunk(text, sizes), config) == expected, sizes


# -- rule 1: open ------------------------------------------------------------------------------

RULE1 = [
    ("a<think>r</think>b", [(C, "a"), (R, "r"), (C, "\nb")]),
    ("<thinking>r</thinking>b", [(R, "r"), (C, "b")]),
    ("x[THINK]a</think>b[/THINK]c", [(C, "x"), (R, "a</think>b"), (C, "\nc")]),
    ("<thinking>a</think>b</thinking>c", [(R, "a</think>b"), (C, "c")]),
    ("◁think▷é日🙂◁/think▷ok", [(R, "é日🙂"), (C, "ok")]),
    ("<|begin_of_thought|>r<|end_of_thought|>a", [(R, "r"), (C, "a")]),
    ("<|channel>thought\nr<channel|>a", [(R, "r"), (C, "a")]),
    ("a < b and c <thin k", [(C, "a < b and c <thin k")]),
    ("<reason>r</reason><reasoning>s</reasoning>t", [(R, "r\ns"), (C, "t")]),
]


@pytest.mark.parametrize("config", BOTH)
@pytest.mark.parametrize(("text", "expected"), RULE1)
def test_rule1_open(text: str, expected: Blocks, config: ThinkExtractConfig) -> None:
    check(text, config, expected)


@pytest.mark.parametrize("config", BOTH)
def test_rule1_longest_open_wins_at_a_tie(config: ThinkExtractConfig) -> None:
    pairs = (TagPair("<t>", "</t>"), TagPair("<t>x", "</tx>"))
    cfg = config.replace(tag_pairs=pairs)
    check("<t>xa</t>b</tx>c", cfg, [(R, "a</t>b"), (C, "c")])
    check("<t>ya</t>b", cfg, [(R, "ya"), (C, "b")])


@pytest.mark.parametrize("config", BOTH)
def test_rule1_earliest_open_wins_even_when_a_later_one_is_complete(config: ThinkExtractConfig) -> None:
    pairs = (TagPair("<a<b>>", "</a>"), TagPair("<b>", "</b>"))
    cfg = config.replace(tag_pairs=pairs)
    check("<a<b>>r</a>c", cfg, [(R, "r"), (C, "c")])
    # The long open never completes: the short one inside it is the earliest real open.
    check("<a<b>r</b>c", cfg, [(C, "<a"), (R, "r"), (C, "\nc")])
    check("<a<b>", cfg, [(C, "<a")] if config.stream_mode == "live" else [(C, "<a<b>")])


# -- rule 2: hold back only what could still be a tag -------------------------------------------


def test_rule2_content_holds_only_a_possible_open_prefix() -> None:
    s = Scanner()
    assert s.feed("Hello <thi") == [Segment(C, "Hello ")]
    assert s.feed("nk>x") == [Segment(R, "x")]
    assert s.feed("y</thi") == [Segment(R, "y")]
    assert s.feed("nk>z") == [Segment(C, "\nz")]  # content re-entered: separator (rule 5)
    assert s.finish() == []


def test_rule2_text_that_cannot_start_a_tag_is_emitted_at_once() -> None:
    s = Scanner()
    assert s.feed("a<b") == [Segment(C, "a<b")]
    assert s.feed(" [x") == [Segment(C, " [x")]
    assert s.feed(" <") == [Segment(C, " ")]
    assert s.feed("|begin_of") == []
    assert s.feed("_x") == [Segment(C, "<|begin_of_x")]


def test_rule2_reasoning_holds_the_longest_close_prefix() -> None:
    pairs = (TagPair("<x>", "]]>"),)
    s = Scanner(ThinkExtractConfig(tag_pairs=pairs))
    assert s.feed("<x>r]]") == [Segment(R, "r")]
    assert s.feed("]") == [Segment(R, "]")]
    assert s.feed(">a") == [Segment(C, "a")]


# -- rule 3: start_with_reasoning ---------------------------------------------------------------

RULE3 = [
    ("r</think>a", [(R, "r"), (C, "a")]),
    ("<think>r</think>a", [(R, "r"), (C, "a")]),
    ("<thinking>r</think>x</thinking>a", [(R, "r</think>x"), (C, "a")]),
    (" <think>r</think>a", [(R, "r"), (C, "a")]),  # an open tag after whitespace only is consumed
    ("\n<think>x</think>y", [(R, "x"), (C, "y")]),
    (" \n\t<thinking>r</think>x</thinking>a", [(R, "r</think>x"), (C, "a")]),
    ("\n x<think>r</think>a", [(R, "x<think>r"), (C, "a")]),  # text before it: the tag is text
    ("[THINK]r[/THINK]a", [(R, "r"), (C, "a")]),
    ("</think>answer", [(C, "answer")]),
]


@pytest.mark.parametrize("config", BOTH)
@pytest.mark.parametrize(("text", "expected"), RULE3)
def test_rule3_start_with_reasoning(text: str, expected: Blocks, config: ThinkExtractConfig) -> None:
    check(text, config.replace(start_with_reasoning=True), expected)


def test_rule3_unclosed_start_depends_on_mode() -> None:
    check("<thi", LIVE.replace(start_with_reasoning=True), [(R, "<thi")])
    check("<thi", BUFFERED.replace(start_with_reasoning=True), [(C, "<thi")])
    check("<think>abc", BUFFERED.replace(start_with_reasoning=True), [(C, "<think>abc")])
    check("abc", BUFFERED.replace(start_with_reasoning=True), [(C, "abc")])


# -- rule 4: empty and whitespace-only blocks -----------------------------------------------------

RULE4 = [
    ("<think></think>a", [(C, "a")]),
    ("<think>  \n </think>a", [(C, "a")]),
    ("a<think></think><think>r</think>", [(C, "a"), (R, "r")]),
    ("<think>r</think>\n\n", [(R, "r")]),
    ("  \n<think>r</think>\n\nanswer", [(R, "r"), (C, "answer")]),
    ("<think>a</think>\n<think>b</think>c", [(R, "a\nb"), (C, "c")]),
]


@pytest.mark.parametrize("config", BOTH)
@pytest.mark.parametrize(("text", "expected"), RULE4)
def test_rule4_empty_blocks(text: str, expected: Blocks, config: ThinkExtractConfig) -> None:
    check(text, config, expected)


def test_rule4_a_block_appears_with_its_first_non_whitespace_character() -> None:
    s = Scanner()
    assert s.feed("<think>  ") == []
    assert s.feed("\n") == []
    assert s.feed("x") == [Segment(R, "x")]  # the whitespace touched the open tag (trim_tag_edges)
    s = Scanner(ThinkExtractConfig(trim_tag_edges=False))
    assert s.feed("<think>  ") == []
    assert s.feed("\n") == []
    assert s.feed("x") == [Segment(R, "  \nx")]


def test_rule4_held_whitespace_is_bounded() -> None:
    s = Scanner(ThinkExtractConfig(max_buffer_bytes=4, trim_tag_edges=False))
    assert s.feed("<think>   ") == []
    assert s.feed("  ") == [Segment(R, "     ")]
    assert s.feed("x</think>") == [Segment(R, "x")]
    # trim_tag_edges drops whitespace right after a tag at once: nothing is held, whatever its size
    s = Scanner(ThinkExtractConfig(max_buffer_bytes=4))
    assert s.feed("<think>   ") == []
    assert s.feed("  ") == []
    assert s.feed("x</think>") == [Segment(R, "x")]


# -- rule 5: separator --------------------------------------------------------------------------


@pytest.mark.parametrize("config", BOTH)
def test_rule5_separator_on_reentry(config: ThinkExtractConfig) -> None:
    text = "<think>a</think>b<think>c</think>d"
    check(text, config, [(R, "a"), (C, "b"), (R, "\nc"), (C, "\nd")])
    check(text, config.replace(separator=" | "), [(R, "a"), (C, "b"), (R, " | c"), (C, " | d")])
    check(text, config.replace(separator=""), [(R, "a"), (C, "b"), (R, "c"), (C, "d")])


@pytest.mark.parametrize("config", BOTH)
def test_rule5_separator_is_not_trimmed(config: ThinkExtractConfig) -> None:
    cfg = config.replace(strip_whitespace=True, separator="\n\n")
    check("<think> a </think> b <think>\tc </think> d ", cfg, [(R, "a"), (C, "b"), (R, "\n\nc"), (C, "\n\nd")])


# -- rule 6: unclosed block at finish -----------------------------------------------------------

RULE6 = [
    # text, live, buffered
    ("a<think>b", [(C, "a"), (R, "b")], [(C, "a<think>b")]),
    ("a<think>b</thi", [(C, "a"), (R, "b</thi")], [(C, "a<think>b</thi")]),
    ("<think>x</think>y<think>z", [(R, "x"), (C, "y"), (R, "\nz")], [(R, "x"), (C, "y<think>z")]),
    ("<think>x</think><think>  z ", [(R, "x\nz ")], [(R, "x"), (C, "<think>  z ")]),
    ("a<thi", [(C, "a<thi")], [(C, "a<thi")]),
    ("a <think>  ", [(C, "a ")], [(C, "a <think>  ")]),
]


@pytest.mark.parametrize(("text", "live", "buffered"), RULE6)
def test_rule6_unclosed(text: str, live: Blocks, buffered: Blocks) -> None:
    check(text, LIVE, live)
    check(text, BUFFERED, buffered)


def test_rule6_counts_unclosed() -> None:
    s = Scanner()
    s.feed("<think>abc")
    s.finish()
    assert (s.unclosed, s.reasoning_blocks, s.reasoning_chars) == (True, 1, 3)


# -- rule 7: buffered cap ----------------------------------------------------------------------


def test_rule7_cap_releases_verbatim_and_the_close_is_plain_text() -> None:
    cfg = BUFFERED.replace(max_buffer_bytes=8)
    check("a<think>0123456789</think>b", cfg, [(C, "a<think>0123456789</think>b")])
    check(
        "<think>0123456789</think><think>r</think>x",
        cfg,
        [(C, "<think>0123456789</think>"), (R, "r"), (C, "\nx")],
    )
    check("<think>01234567</think>x", cfg, [(R, "01234567"), (C, "x")])  # exactly at the cap: kept


def test_rule7_cap_counts_utf8_bytes() -> None:
    cfg = BUFFERED.replace(max_buffer_bytes=8)
    check("<think>éééé</think>x", cfg, [(R, "éééé"), (C, "x")])
    check("<think>ééééé</think>x", cfg, [(C, "<think>ééééé</think>x")])
    check("<think>🙂🙂</think>y", cfg, [(R, "🙂🙂"), (C, "y")])
    check("<think>🙂🙂x</think>y", cfg, [(C, "<think>🙂🙂x</think>y")])


def test_rule7_counts_overflows() -> None:
    s = Scanner(BUFFERED.replace(max_buffer_bytes=4))
    assert s.feed("<think>abcdef") == [Segment(C, "<think>abcdef")]
    assert s.feed("</think>") == [Segment(C, "</think>")]
    assert s.finish() == []
    assert (s.overflows, s.unclosed, s.reasoning_blocks) == (1, False, 0)


# -- placement -----------------------------------------------------------------------------------


@pytest.mark.parametrize("config", BOTH)
def test_placement_leading(config: ThinkExtractConfig) -> None:
    cfg = config.replace(placement="leading")
    check("  <think>r</think>a<think>s</think>", cfg, [(R, "r"), (C, "a<think>s</think>")])
    check("<think>r</think>\n<think>s</think>a", cfg, [(R, "r\ns"), (C, "a")])
    check("x<think>r</think>", cfg, [(C, "x<think>r</think>")])
    check("<b>bold</b><think>r</think>", cfg, [(C, "<b>bold</b><think>r</think>")])


# -- code awareness -------------------------------------------------------------------------------

CODE = [
    ("x `<think>` y", [(C, "x `<think>` y")]),
    ("```\n<think>no</think>\n```\n<think>r</think>z", [(C, "```\n<think>no</think>\n```\n"), (R, "r"), (C, "\nz")]),
    ("~~~py\n<think>no\n~~~\n<think>r</think>", [(C, "~~~py\n<think>no\n~~~\n"), (R, "r")]),
    ("   ```\n<think>no</think>", [(C, "   ```\n<think>no</think>")]),
    ("    ```\n<think>r</think>", [(C, "    ```\n"), (R, "r")]),
    ("a ` b\n<think>r</think>c", [(C, "a ` b\n"), (R, "r"), (C, "\nc")]),
    ("`` a ` <think>r</think> ``b", [(C, "`` a ` <think>r</think> ``b")]),
    ("````\n```\n<think>no</think>\n````\n", [(C, "````\n```\n<think>no</think>\n````\n")]),
    ("<think>`x</think>y", [(R, "`x"), (C, "y")]),
    ("<think>r</think>```\n<think>no</think>", [(R, "r"), (C, "```\n<think>no</think>")]),
]


@pytest.mark.parametrize("config", BOTH)
@pytest.mark.parametrize(("text", "expected"), CODE)
def test_code_aware(text: str, expected: Blocks, config: ThinkExtractConfig) -> None:
    check(text, config, expected)


def test_code_awareness_can_be_turned_off() -> None:
    check("`<think>r</think>`", LIVE.replace(code_aware=False), [(C, "`"), (R, "r"), (C, "\n`")])


# -- strip_whitespace ---------------------------------------------------------------------------


@pytest.mark.parametrize("config", BOTH)
def test_strip_whitespace(config: ThinkExtractConfig) -> None:
    cfg = config.replace(strip_whitespace=True)
    check("<think>\n  r \n</think>\n\n a \n", cfg, [(R, "r"), (C, "a")])
    check("<think> r  s </think> a  b ", cfg, [(R, "r  s"), (C, "a  b")])


# -- trim_tag_edges (default on) ----------------------------------------------------------------

EDGES = [
    # text, trim_tag_edges on (the default), off
    (
        "<think>\nI add.\n</think>\n\nIt is 4.",
        [(R, "I add."), (C, "It is 4.")],
        [(R, "\nI add.\n"), (C, "\n\nIt is 4.")],
    ),
    ("<think> a \n\n b </think> c  d ", [(R, "a \n\n b"), (C, "c  d ")], [(R, " a \n\n b "), (C, " c  d ")]),
    # tag-free text passes byte for byte, its own leading and trailing whitespace included
    ("  \n hi \n ", [(C, "  \n hi \n ")], [(C, "  \n hi \n ")]),
    # the separator joins re-entered content: not the model's blank lines too
    ("a<think>r</think>\n\nb", [(C, "a"), (R, "r"), (C, "\nb")], [(C, "a"), (R, "r"), (C, "\n\n\nb")]),
    # whitespace before an open tag, after answer text, is the answer's own trailing edge: kept
    (
        "Sure.\n\n<think>\nr\n</think>\n\nMore.",
        [(C, "Sure.\n\n"), (R, "r"), (C, "\nMore.")],
        [(C, "Sure.\n\n"), (R, "\nr\n"), (C, "\n\n\nMore.")],
    ),
    ("<think>\na\n</think>\n\n<think>\nb\n</think>\n\nc", [(R, "a\nb"), (C, "c")], [(R, "\na\n\n\nb\n"), (C, "\n\nc")]),
    # an unclosed block: no close tag, so its trailing whitespace stays (live)
    ("<think>\nr \n", [(R, "r \n")], [(R, "\nr \n")]),
    # a partial close tag that is not one: the whitespace before it was inside
    ("<think>r \n</thinx</think>y", [(R, "r \n</thinx"), (C, "y")], [(R, "r \n</thinx"), (C, "y")]),
    ("<think>r\u3000\u2028</think>\u00a0y", [(R, "r"), (C, "y")], [(R, "r\u3000\u2028"), (C, "\u00a0y")]),
]


@pytest.mark.parametrize(("text", "on", "off"), EDGES)
def test_trim_tag_edges(text: str, on: Blocks, off: Blocks) -> None:
    """``on``: every edge that touches a tag, the reasoning's tail too (``trim_reasoning_tail``)."""
    check(text, LIVE.replace(trim_reasoning_tail=True), on)
    check(text, LIVE.replace(trim_tag_edges=False), off)
    if not text.startswith("<think>\nr \n"):  # buffered: an unclosed block is text, verbatim
        check(text, BUFFERED.replace(trim_reasoning_tail=True), on)
        check(text, BUFFERED.replace(trim_tag_edges=False), off)


def test_the_reasoning_tail_is_kept_by_default() -> None:
    """By default only the leading edges go: the reasoning's own trailing whitespace stays."""
    check("<think>\nI add.\n</think>\n\nIt is 4.", LIVE, [(R, "I add.\n"), (C, "It is 4.")])
    check("a<think> r </think>\n\nb", LIVE, [(C, "a"), (R, "r "), (C, "\nb")])


def test_trim_tag_edges_buffered_unclosed_block_is_verbatim() -> None:
    check("<think>\nr \n", BUFFERED, [(C, "<think>\nr \n")])
    # the whitespace after the close tag went already: it touched that tag
    check("<think>a</think>\n\n<think> b ", BUFFERED, [(R, "a"), (C, "<think> b ")])


@pytest.mark.parametrize("config", BOTH)
def test_trim_tag_edges_with_start_with_reasoning(config: ThinkExtractConfig) -> None:
    cfg = config.replace(start_with_reasoning=True, trim_reasoning_tail=True)
    check("\nI add.\n</think>\n\nIt is 4.", cfg, [(R, "I add."), (C, "It is 4.")])  # DeepSeek-R1
    check(" \n<think>\nr\n</think>\n\na", cfg, [(R, "r"), (C, "a")])


@pytest.mark.parametrize("config", BOTH)
def test_trim_tag_edges_at_a_tool_call_marker(config: ThinkExtractConfig) -> None:
    """A marker ends the block as a close tag does; the call is kept verbatim."""
    cfg = config.replace(tool_call_markers=("<tool_call>",), trim_reasoning_tail=True)
    call = '<tool_call>\n{"name": "f"}\n</tool_call>\n'
    check("<think>\nI read it.\n\n" + call, cfg, [(R, "I read it."), (C, call)])
    check("<think>\nr\n</think>\n\n" + call, cfg, [(R, "r"), (C, call)])


def test_trim_tag_edges_yields_to_strip_whitespace() -> None:
    cfg = LIVE.replace(strip_whitespace=True)
    check("  a <think> r </think> b ", cfg, [(C, "a"), (R, "r"), (C, "\nb")])


TAIL = ThinkExtractConfig(trim_reasoning_tail=True)


def test_trailing_whitespace_waits_for_the_next_text() -> None:
    s = Scanner(TAIL)
    assert s.feed("<think>\nI add") == [Segment(R, "I add")]
    assert s.steady == R
    assert s.feed(".\n") == [Segment(R, ".")]
    assert (s.steady, s.triggers >= {" ", "\n", "\u3000", "<"}) == (None, True)  # "\n" is held
    assert s.feed("Then") == [Segment(R, "\nThen")]  # it was inside the block after all
    assert s.feed(" \n") == [] and s.steady is None
    assert s.feed("</think>\n\nIt is 4.") == [Segment(C, "It is 4.")]
    assert s.steady == C and "\n" in s.triggers and " " not in s.triggers
    assert s.finish() == []
    assert (s.reasoning_chars, s.reasoning_blocks) == (len("I add.\nThen"), 1)


def test_flush_lets_the_held_trailing_whitespace_out() -> None:
    """flush() gives up waiting: the whitespace held for a possible close tag goes out first."""
    s = Scanner(TAIL)
    assert s.feed("<think>r \n") == [Segment(R, "r")]
    assert s.flush() == [Segment(R, " \n")]
    assert s.feed("</think>a") == [Segment(C, "a")]


def test_held_trailing_whitespace_past_the_cap_goes_out() -> None:
    s = Scanner(TAIL.replace(max_buffer_bytes=4))
    assert s.feed("<think>r   ") == [Segment(R, "r")]
    assert s.feed("  ") == [Segment(R, "     ")]  # 5 bytes: past the cap, the run is block text
    assert s.feed(" ") == [Segment(R, " ")]  # to its end
    assert s.feed("x ") == [Segment(R, "x")]
    assert s.feed("</think>") == []
    assert s.finish() == []


HARMONY_EDGES = [
    (
        "<|channel|>analysis<|message|>\nr\n<|end|>"
        "<|start|>assistant<|channel|>final<|message|>\n\nIt is 4.\n<|return|>",
        [(R, "r"), (C, "It is 4.\n")],
    ),
    # a commentary preamble and the final answer: each body's start is trimmed, the separator joins them
    (
        "<|channel|>commentary<|message|> Checking.<|end|><|start|>assistant<|channel|>final<|message|>\n4",
        [(C, "Checking.\n4")],
    ),
    # text outside messages: trimmed only after a message (its terminator is a tag)
    ("  lead <|channel|>analysis<|message|> r <|end|>  tail", [(C, "  lead "), (R, "r"), (C, "\ntail")]),
    # a tool call is verbatim; the analysis the text ends inside keeps its end
    (
        "<|channel|>commentary to=functions.f<|message|> {} <|call|><|channel|>analysis<|message|> r ",
        [(C, "<|channel|>commentary to=functions.f<|message|> {} <|call|>"), (R, "r ")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), HARMONY_EDGES)
def test_trim_tag_edges_harmony(text: str, expected: Blocks) -> None:
    check(text, ThinkExtractConfig(protocol="harmony", trim_reasoning_tail=True), expected)
