"""Helpers shared by the scanner tests: drive a Scanner over a chunking, merge its output; the
payload, chunkings and edge trimming the property tests share."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from hypothesis import strategies as st

from gateway_mw import Scanner, Segment, ThinkExtractConfig

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
