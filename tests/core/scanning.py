"""Helpers shared by the scanner tests: drive a Scanner over a chunking, merge its output."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
