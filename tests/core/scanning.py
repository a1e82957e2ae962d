"""Helpers shared by the scanner tests: drive a Scanner over a chunking, merge its output; the
payload, chunkings and edge trimming the property tests share."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from hypothesis import strategies as st

from gateway_mw import Scanner, Segment, TagPair, ThinkExtractConfig

Blocks = list[tuple[str, str]]


def merge(segments: Iterable[Segment]) -> Blocks:
    blocks: Blocks = []
    for seg in segments:
        assert seg.text, "a segment is never empty"
        if blocks and blocks[-1][0] == seg.kind:
            blocks[-1] = (seg.kind, blocks[-1][1] + seg.text)
        else:
            blocks.append((seg.kind, seg.text))
    return blocks


def chunk(text: str, sizes: Sequence[int]) -> list[str]:
    """Cut ``text`` into pieces of the given sizes, cycling through them."""
    pieces, pos, k = [], 0, 0
    while pos < len(text):
        size = max(1, sizes[k % len(sizes)])
        pieces.append(text[pos : pos + size])
        pos += size
        k += 1
    return pieces


def scan(pieces: Iterable[str], config: ThinkExtractConfig | None = None) -> Blocks:
    scanner = Scanner(config)
    out: list[Segment] = []
    for piece in pieces:
        out += scanner.feed(piece)
    out += scanner.finish()
    return merge(out)


# Characters that occur in no tag string: they must all survive, in order, whatever happens.
PAYLOAD = "0123456789zqxé日🙂"


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=max(1, len(text) - 1)), max_size=len(text))))
    bounds = [0, *[c for c in cuts if c < len(text)], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def trim_edges(raw: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """What ``trim_tag_edges`` removes from a text's closed blocks, in order: a reasoning block
    loses the whitespace after its open tag and before its close tag; a content block that
    follows a reasoning block loses the whitespace after that close tag; nothing else changes."""
    out = []
    for i, (kind, body) in enumerate(raw):
        if kind == "reasoning":
            body = body.strip()
        elif i > 0 and raw[i - 1][0] == "reasoning":
            body = body.lstrip()
        out.append((kind, body))
    return out


# The settings the shortcut tests cover: the family presets (tags that are prefixes of other tags
# and of tool-call markers, answer wrappers, start_with_reasoning, strip_whitespace), hand-made
# pair sets, and every option that changes a block's edges.
NAMES = [
    "qwq-32b",
    "qwen3-235b-a22b-thinking-2507",
    "qwen3-8b",
    "kimi-k2",
    "hunyuan-a13b",
    "ernie-4.5-21b-thinking",
    "granite-3.2-8b",
    "command-a-reasoning",
    "seed-oss-36b",
    "gemma-4-27b",
    "minimax-m2",
    "magistral-small",
    "deepseek-r1",
]
HANDMADE = [
    ThinkExtractConfig(tag_pairs=(TagPair("<think>", "</think>"), TagPair("<thinking>", "</thinking>"))),
    ThinkExtractConfig(tag_pairs=(TagPair("<t>", "</t>"), TagPair("<think>", "</think>")), tool_call_markers=("<t>x",)),
    ThinkExtractConfig(tool_call_markers=("</th", "<think>x", "</think><tool")),
    ThinkExtractConfig(content_wrappers=(TagPair("<think", "k>"), TagPair("<thinking>", "</t>"))),
]
BASES = [ThinkExtractConfig().for_model(name) for name in NAMES] + HANDMADE


def strings(config: ThinkExtractConfig) -> set[str]:
    out = {t for p in config.tag_pairs for t in (p.open, p.close)} | set(config.tool_call_markers)
    return out | {t for w in config.content_wrappers for t in (w.open, w.close)}


STRINGS = sorted(set().union(*(strings(c) for c in BASES)))
FRAGMENTS = sorted({s for t in STRINGS for s in (t, t[:3], t[3:], t[:-1], t[1:])} - {""})
PIECES = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.sampled_from([" ", "\n", "  ", "x", "`", "```", "ab c", " \n", "Here", "thought\n"]),
    ),
    max_size=30,
)
CONFIGS = st.builds(
    lambda base, **changes: base.replace(**changes),
    st.sampled_from(BASES),
    stream_mode=st.sampled_from(["live", "buffered"]),
    separator=st.sampled_from(["", "\n"]),
    placement=st.sampled_from(["anywhere", "leading"]),
    code_aware=st.booleans(),
    trim_tag_edges=st.booleans(),
    trim_reasoning_tail=st.booleans(),
    max_buffer_bytes=st.sampled_from([5, 16, 65536]),
)
