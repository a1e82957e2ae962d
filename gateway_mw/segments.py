"""What the scanner gives: a run of text of one kind (reasoning or content)."""

from __future__ import annotations

from typing import Final, Literal

import msgspec

__all__ = ["CONTENT", "REASONING", "Kind", "Segment", "merge_segments", "utf8_len"]

Kind = Literal["reasoning", "content"]
REASONING: Final = "reasoning"
CONTENT: Final = "content"


class Segment(msgspec.Struct, frozen=True, gc=False):
    """A run of text of one kind. ``text`` is never empty."""

    kind: Kind
    text: str


def utf8_len(text: str) -> int:
    """The UTF-8 bytes of ``text`` (a lone surrogate, which JSON can spell, counted as the three a
    UTF-8 writer gives its replacement)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def merge_segments(segments: list[Segment]) -> list[Segment]:
    """Join adjacent segments of one kind: one segment per block."""
    if len(segments) < 2:
        return segments
    merged = [segments[0]]
    for seg in segments[1:]:
        if seg.kind == merged[-1].kind:
            merged[-1] = Segment(seg.kind, merged[-1].text + seg.text)
        else:
            merged.append(seg)
    return merged
