"""The text channels of one response, as every surface has them: one Scanner per channel, and what is
done to all of them alike.

A *channel* is one run of the model's text that a surface reads: a chat choice, an Anthropic text
block, a Responses message item, an Ollama answer. A surface's reader hands each channel's text to
:class:`Channels`, which gives back the segments to write:

* the settings are resolved once, for the response's model (its family preset, the operator's
  profiles), and a template's injected open tag opens only the turn's first channel;
* a channel that carries the upstream's own reasoning is left alone from then on (what it held goes
  out first): upstream reasoning wins;
* a surrogate pair cut between two texts of a channel is joined into its character;
* every channel's counts are summed, and, when the reasoning record wants it, every text kept.

Pure: no I/O, no JSON, no aiohttp.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import NamedTuple

from .config import ThinkExtractConfig
from .record.base import DEFAULT_MAX_ENTRY_BYTES
from .scanner import CONTENT, Scanner, Segment, at_once
from .transcript import Budget, Transcript

__all__ = [
    "Channels",
    "Counts",
    "Said",
    "Transcripts",
    "after_first_channel",
    "join_surrogates",
]


class Counts:
    """What the scanners of one response did, summed when each channel finishes."""

    __slots__ = (
        "native",
        "overflows",
        "oversized_events",
        "reasoning_blocks",
        "reasoning_chars",
        "reasoning_events",
        "reasoning_written",
        "unclosed",
        "unreadable_events",
    )

    def __init__(self) -> None:
        self.reasoning_blocks = 0
        self.reasoning_chars = 0
        # Upstream events whose text went, in whole or in part, to reasoning (the gateway's split or
        # the server's own field), once per choice or item: servers stream one token per event, so
        # this is the answer's reasoning tokens as the gateway counts them (see surfaces.usage).
        self.reasoning_events = 0
        self.reasoning_written = False  # the gateway's count went into a usage that lacked one
        self.unclosed = 0
        self.overflows = 0
        self.unreadable_events = 0  # data events passed on untranslated because they could not be read
        self.oversized_events = 0  # events over max_event_bytes, streamed through raw
        self.native = 0  # answers whose reasoning the upstream parsed itself, passed on as it wrote it

    def add(self, scanner: Scanner) -> None:
        self.reasoning_blocks += scanner.reasoning_blocks
        self.reasoning_chars += scanner.reasoning_chars
        self.unclosed += scanner.unclosed
        self.overflows += scanner.overflows


class Said(NamedTuple):
    """What one assistant answer of a response said, for the reasoning record: the text as the
    model wrote it (tags included), the tool calls it made (their ids), the ids the gateway gave its
    items, and its calls' names and arguments (:func:`~gateway_mw.calls.call_spellings`), where the
    surface keeps them."""

    original: str
    call_ids: tuple[str, ...] = ()
    item_ids: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()


class Transcripts:
    """Every text each channel of one response was given, and the tool calls of each answer, kept
    while the reasoning record wants them (a translator that has none keeps nothing), up to
    ``limit`` characters in all: past that, none (an entry so large is never stored)."""

    __slots__ = ("budget", "calls", "texts")

    def __init__(self, limit: int = DEFAULT_MAX_ENTRY_BYTES) -> None:
        self.budget = Budget(limit)
        self.texts: dict[Hashable, Transcript] = {}
        self.calls: dict[Hashable, list[str]] = {}

    def channel(self, channel: Hashable) -> Transcript:
        """The transcript of ``channel`` (a new, empty one the first time)."""
        transcript = self.texts.get(channel)
        if transcript is None:
            transcript = self.texts[channel] = Transcript(self.budget)
        return transcript

    def watch(self, channel: Hashable, scanner: Scanner) -> None:
        """Keep what ``scanner`` is given as the text of ``channel`` (after what it had)."""
        scanner.transcript = self.channel(channel)

    def call(self, answer: Hashable, call_id: str) -> None:
        self.calls.setdefault(answer, []).append(call_id)

    def text(self, channel: Hashable) -> str:
        transcript = self.texts.get(channel)
        return "" if transcript is None else transcript.text()


def after_first_channel(config: ThinkExtractConfig) -> ThinkExtractConfig:
    """The settings for the channels after a turn's first: a chat template injects ``<think>`` once
    per turn, before its first text, so a later text block or message item does not start inside
    reasoning."""
    if not config.start_with_reasoning:
        return config
    later: ThinkExtractConfig | None = config.derived.get("after_first")
    if later is None:  # once per configuration: a scanner's tables are kept with it
        later = config.derived["after_first"] = config.replace(start_with_reasoning=False)
    return later


_SURROGATE = re.compile("[\ud800-\udfff]")


def join_surrogates(held: str, text: str) -> tuple[str, str]:
    """``text`` after ``held`` (a high surrogate kept from the text before) as whole characters,
    and the high surrogate it ends with, kept for the next text.

    A JSON string may spell a character outside the BMP as a ``\\ud83d\\ude00`` escape pair, and a
    server that streams UTF-16 code units can cut the pair between two deltas: joined here, it is
    its character again (as the non-stream body reads it). A surrogate with no partner is no
    character: it becomes U+FFFD, as a UTF-8 decoder makes of it.
    """
    text = held + text
    held = ""
    if text and "\ud800" <= text[-1] <= "\udbff":
        text, held = text[:-1], text[-1]
    if _SURROGATE.search(text) is not None:
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text, held


class Channels:
    """The channels of one response (sans-I/O)."""

    __slots__ = (
        "_base",
        "_high",
        "_injected",
        "_native",
        "_parallel",
        "_scanners",
        "_started",
        "config",
        "counts",
        "transcripts",
    )

    def __init__(self, config: ThinkExtractConfig, *, parallel: bool = False, injected: bool = True) -> None:
        """``parallel``: the channels are answers side by side (chat's choices), each of which a
        template opens alike; otherwise they follow one another in one answer (text blocks, message
        items), and only the first starts inside an injected open tag. ``injected=False``: the
        server never leaves its text inside an open tag the model did not write (Ollama), so no
        channel starts inside reasoning, whatever ``start_with_reasoning`` says."""
        self._base = config
        self._parallel = parallel
        self._injected = injected
        self.config: ThinkExtractConfig | None = None
        """The settings for the response's model, once :meth:`resolve` has run."""
        self._scanners: dict[Hashable, Scanner] = {}
        self._native: set[Hashable] = set()
        self._high: dict[Hashable, str] = {}
        self._started = 0  # channels opened so far: the first gets an injected open tag
        self.counts = Counts()
        self.transcripts: Transcripts | None = None
        """Set to keep every channel's text (the reasoning record); ``None`` keeps nothing."""

    def resolve(self, model: str | None) -> ThinkExtractConfig:
        """The settings for the response's ``model``, fixed by the first call."""
        if self.config is None:
            self.config = self._base.for_model(model)
        return self.config

    @property
    def enabled(self) -> bool:
        return self.resolve(None).enabled

    def is_native(self, channel: Hashable) -> bool:
        return channel in self._native

    @property
    def any_native(self) -> bool:
        """Whether some channel carries the upstream's own reasoning."""
        return bool(self._native)

    def scanner(self, channel: Hashable) -> Scanner | None:
        """The open scanner of ``channel`` (a surface's fast path reads its steady state)."""
        return self._scanners.get(channel)

    def __contains__(self, channel: Hashable) -> bool:
        """Whether ``channel`` is open (it has had text and has not ended)."""
        return channel in self._scanners

    def __len__(self) -> int:
        """How many channels are open."""
        return len(self._scanners)

    def open_channels(self) -> list[Hashable]:
        return list(self._scanners)

    def text(self, channel: Hashable, text: str) -> list[Segment]:
        """``text`` of ``channel`` through its scanner: the segments to write now."""
        if not text or channel in self._native:
            return []
        return self.scan(channel, self.whole(channel, text))

    def at_once(self, channel: Hashable, text: str) -> list[Segment] | None:
        """``text`` as the whole of a new ``channel``: the merged segments :meth:`text` and
        :meth:`end` give, and the same counts and transcript, when :func:`~.scanner.at_once` knows
        them without a scanner; ``None`` (nothing done) when it does not, or the channel has had text."""
        if not text:
            return []
        if channel in self._scanners or channel in self._native or channel in self._high:
            return None
        if not text.isascii() and _SURROGATE.search(text) is not None:
            return None
        config = self.resolve(None)
        first = self._injected and (self._parallel or not self._started)
        segments = at_once(text, config if first else after_first_channel(config))
        if segments is None:
            return None
        self._started += 1
        if segments and segments[0].kind != CONTENT:
            self.counts.reasoning_blocks += 1
            self.counts.reasoning_chars += len(segments[0].text)
        if self.transcripts is not None:
            self.transcripts.channel(channel).append(text)
        return segments

    def scan(self, channel: Hashable, text: str) -> list[Segment]:
        """:meth:`text` for a text already made of whole characters (see :meth:`whole`)."""
        if channel in self._native or not text:
            return []
        scanner = self._scanners.get(channel)
        if scanner is None:
            scanner = self._open(channel)
        return scanner.feed(text)

    def whole(self, channel: Hashable, text: str) -> str:
        """``text`` of ``channel`` as whole characters: a surrogate half it ends with is held for the
        channel's next text, one held from its last text joined in front (see :func:`join_surrogates`)."""
        held = self._high.pop(channel, "") if self._high else ""
        if held or (not text.isascii() and _SURROGATE.search(text) is not None):
            text, held = join_surrogates(held, text)
            if held:
                self._high[channel] = held
        return text

    def halves(self) -> dict[Hashable, str]:
        """The surrogate halves held for the channels' next texts (a copy, for :meth:`restore_halves`)."""
        return dict(self._high)

    def restore_halves(self, halves: dict[Hashable, str]) -> None:
        """Hold ``halves`` again, as :meth:`halves` gave them: a text :meth:`whole` joined went out
        as it came, halves and all."""
        self._high = halves

    def has_half(self, channel: Hashable) -> bool:
        """Whether ``channel``'s last text ended with half a character, held for the next."""
        return channel in self._high

    def touch(self, channel: Hashable) -> None:
        """Open ``channel`` before its first text (an empty one: the role chunk), unless native."""
        if channel not in self._scanners and channel not in self._native:
            self._open(channel)

    def native(self, channel: Hashable) -> list[Segment]:
        """``channel`` carries the upstream's own reasoning: what it held, then nothing more."""
        if channel not in self._native:
            self.counts.native += 1
        self._native.add(channel)
        return self.end(channel)

    def end(self, channel: Hashable) -> list[Segment]:
        """``channel``'s text is over: whatever its scanner held."""
        half = self._high.pop(channel, None)
        scanner = self._scanners.pop(channel, None)
        if scanner is None:
            return []
        # Half a character that never got its other half is no character: U+FFFD, as a UTF-8
        # decoder makes of it (and as join_surrogates does within a text).
        out = scanner.feed("\ufffd") if half else []
        out += scanner.finish()
        self.counts.add(scanner)
        return out

    def flush(self) -> list[tuple[Hashable, list[Segment]]]:
        """Every open channel's held text (something not translated must go out after it)."""
        return [(ch, held) for ch, scanner in self._scanners.items() if (held := scanner.flush())]

    def finish(self) -> list[tuple[Hashable, list[Segment]]]:
        """The end of the response: every open channel ends."""
        return [(ch, held) for ch in list(self._scanners) if (held := self.end(ch))]

    def _open(self, channel: Hashable) -> Scanner:
        config = self.resolve(None)
        first = self._injected and (self._parallel or not self._started)
        scanner = self._scanners[channel] = Scanner(config if first else after_first_channel(config))
        self._started += 1
        if self.transcripts is not None:
            self.transcripts.watch(channel, scanner)
        return scanner
