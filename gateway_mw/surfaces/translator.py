"""The one translator base: what every surface's stream translator (a
:class:`~gateway_mw.surfaces.StreamTranslator`) does alike, so that a surface writes only how it
reads the upstream's events and writes the client's.

The base owns the response's :class:`~gateway_mw.channels.Channels` and what comes with them: the
counts, the transcripts the reasoning record asks for, what the answer said, an unreadable event
passed after the held text. Its defaults are those of a surface that numbers nothing and has no fast
path: an oversized event goes on as it came, and no span is proven without reading it (a fast path
overrides :meth:`~Translator.fast_forward`, see :mod:`gateway_mw.steady`).

Pure: no I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..channels import Channels, Counts, Said, Transcripts
from ..sse import SSEEvent
from ..steady import DECLINED, Proven

__all__ = ["Translator", "joined", "one_answer"]


class Translator(ABC):
    """A stream translator over one response's ``channels``: a surface adds :meth:`event`,
    :meth:`flush` and :meth:`finish` (its reading and writing), and overrides the rest where its
    wire asks for more."""

    large_events: frozenset[bytes] = frozenset()

    def __init__(self, channels: Channels) -> None:
        self.channels = channels
        self.counts: Counts = channels.counts

    @property
    def transcripts(self) -> Transcripts | None:
        """Set when the reasoning record keeps what was said; ``None`` keeps nothing."""
        return self.channels.transcripts

    @transcripts.setter
    def transcripts(self, value: Transcripts | None) -> None:
        self.channels.transcripts = value

    @abstractmethod
    def event(self, event: SSEEvent) -> list[SSEEvent]: ...

    @abstractmethod
    def flush(self) -> list[SSEEvent]: ...

    @abstractmethod
    def finish(self) -> list[SSEEvent]: ...

    def unreadable(self, event: SSEEvent) -> list[SSEEvent]:
        """An event this surface cannot read: it goes out as it came, after every channel's held
        text (so that text keeps its order), and is counted."""
        self.counts.unreadable_events += 1
        return [*self.flush(), event]

    def said(self) -> list[Said]:
        """What the response's answers said (nothing unless :attr:`transcripts` is set)."""
        t = self.channels.transcripts
        return [] if t is None else self.answers(t)

    def answers(self, transcripts: Transcripts) -> list[Said]:
        """The answers ``transcripts`` hold: by default one, every channel's text in turn."""
        return one_answer(transcripts)

    def oversized(self, piece: bytes, more: bool) -> bytes:
        """Nothing numbered: an event over its cap goes on as it came."""
        return piece

    def fast_forward(self, span: bytes) -> Proven:
        """Nothing is proven without reading the events: each is read by :meth:`event`."""
        return DECLINED


def one_answer(transcripts: Transcripts, calls: tuple[str, ...] = ()) -> list[Said]:
    """The one answer of a response whose channels follow one another (text blocks, an Ollama
    answer): their texts joined, and its tool calls (``calls``: their spellings, where the surface
    keeps them); nothing when it said nothing."""
    t = transcripts
    if not (t.texts or t.calls):
        return []
    return [Said(joined(t), tuple(t.calls.get(0, ())), (), calls)]


def joined(transcripts: Transcripts) -> str:
    """Every channel's text, in the order the channels opened: one answer's text."""
    return "".join(transcripts.text(channel) for channel in transcripts.texts)
