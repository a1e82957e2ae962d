"""What every surface shares: the per-response counters and a counted non-stream extraction."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Hashable
from typing import NamedTuple, Protocol

from ..config import ThinkExtractConfig
from ..marks import random_id
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

NewId = Callable[[str], str]
"""The source of the ids a translator makes up (``rs_…``, ``msg_…``): given the prefix, a new id."""


class Said(NamedTuple):
    """What one assistant answer of a response said, for the reasoning record: the text as the
    model wrote it (tags included), the tool calls it made, and the ids the gateway gave its items."""

    original: str
    call_ids: tuple[str, ...] = ()
    item_ids: tuple[str, ...] = ()


class Transcripts:
    """Every text each channel of one response was given, and the tool calls of each answer, kept
    while the reasoning record wants them (a translator that has none keeps nothing)."""

    __slots__ = ("calls", "texts")

    def __init__(self) -> None:
        self.texts: dict[Hashable, list[str]] = {}
        self.calls: dict[Hashable, list[str]] = {}

    def watch(self, channel: Hashable, scanner: Scanner) -> None:
        """Keep what ``scanner`` is given as the text of ``channel`` (after what it had)."""
        scanner.transcript = self.texts.setdefault(channel, [])

    def call(self, answer: Hashable, call_id: str) -> None:
        self.calls.setdefault(answer, []).append(call_id)

    def text(self, channel: Hashable) -> str:
        return "".join(self.texts.get(channel, ()))


class Counts:
    """What the scanners of one response did, summed when each channel finishes."""

    __slots__ = (
        "overflows",
        "oversized_events",
        "reasoning_blocks",
        "reasoning_chars",
        "unclosed",
        "unreadable_events",
    )

    def __init__(self) -> None:
        self.reasoning_blocks = 0
        self.reasoning_chars = 0
        self.unclosed = 0
        self.overflows = 0
        self.unreadable_events = 0  # data events passed on untranslated because they could not be read
        self.oversized_events = 0  # events over max_event_bytes, streamed through raw

    def add(self, scanner: Scanner) -> None:
        self.reasoning_blocks += scanner.reasoning_blocks
        self.reasoning_chars += scanner.reasoning_chars
        self.unclosed += scanner.unclosed
        self.overflows += scanner.overflows


def extract_counted(text: str, config: ThinkExtractConfig, counts: Counts) -> list[Segment]:
    """``extract(text, config)``, adding what the scanner did to ``counts``."""
    scanner = Scanner(config)
    segments = scanner.feed(text) + scanner.finish()
    counts.add(scanner)
    return merge_segments(segments)


def after_first_channel(config: ThinkExtractConfig) -> ThinkExtractConfig:
    """The settings for the channels after a turn's first: a chat template injects ``<think>`` once
    per turn, before its first text, so a later text block or message item does not start inside
    reasoning."""
    return config.replace(start_with_reasoning=False) if config.start_with_reasoning else config


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
