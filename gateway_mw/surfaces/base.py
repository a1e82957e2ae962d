"""What every surface shares: the per-response counters and a counted non-stream extraction."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Protocol

from ..channels import Counts, Said, Transcripts, after_first_channel
from ..config import ThinkExtractConfig
from ..marks import NewId, random_id
from ..scanner import Scanner, Segment, merge_segments
from ..sse import SSEEvent

__all__ = [
    "Counts",
    "NewId",
    "Said",
    "Transcripts",
    "after_first_channel",
    "extract_counted",
    "random_id",
    "translated",
]


def extract_counted(text: str, config: ThinkExtractConfig, counts: Counts) -> list[Segment]:
    """``extract(text, config)``, adding what the scanner did to ``counts``."""
    scanner = Scanner(config)
    segments = scanner.feed(text) + scanner.finish()
    counts.add(scanner)
    return merge_segments(segments)


class _Translating(Protocol):
    def event(self, event: SSEEvent) -> list[SSEEvent]: ...

    def finish(self) -> list[SSEEvent]: ...


async def translated(stream: _Translating, events: AsyncIterable[SSEEvent]) -> AsyncIterator[SSEEvent]:
    """A surface's async generator form: upstream events in, client events out."""
    async for event in events:
        for out in stream.event(event):
            yield out
    for out in stream.finish():
        yield out
