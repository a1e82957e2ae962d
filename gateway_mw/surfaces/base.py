"""What every surface shares: the per-response counters, and the async generator form of a translator."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Protocol

from ..channels import Counts, Said, Transcripts, after_first_channel
from ..marks import NewId, random_id
from ..sse import SSEEvent

__all__ = [
    "Counts",
    "NewId",
    "Said",
    "Transcripts",
    "after_first_channel",
    "random_id",
    "translated",
]


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
