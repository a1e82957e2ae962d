"""What every surface's budget counter does with the first answer's client-bound events, whatever
their framing (SSE, NDJSON): each event read by the surface's :meth:`EventCount._take` until the
reasoning gives way to an answer, the stream cut before the event that would go over the budget,
and bytes passed as they come once it is no longer watched. Sans-I/O."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

from ..sse import SSEEvent

__all__ = ["EventCount", "EventDecoder", "joined"]


class EventDecoder(Protocol):
    """The reader of a stream's events (:class:`~gateway_mw.sse.SSEDecoder`, NDJSON's lines)."""

    def feed(self, chunk: bytes) -> list[SSEEvent]: ...

    def finish(self) -> tuple[list[SSEEvent], bytes]: ...

    def take_pending(self) -> bytes: ...


def joined(parts: list[str]) -> str:
    """Pieces of text joined: a surrogate pair whose halves came in two events made one, a half
    that stayed alone U+FFFD (no JSON encoder writes one)."""
    text = "".join(parts)
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class EventCount(ABC):
    """Counts the reasoning events of a stream on their way to the client, and says where the budget
    ends it; a surface says what one event is (:meth:`_take`)."""

    def __init__(self, budget: int, decoder: EventDecoder) -> None:
        self.budget = budget
        self.counted = 0
        """The reasoning events that went to the client."""
        self.cut = False
        """The budget was spent: the events after :attr:`counted` were not passed."""
        self._reasoning: list[str] = []
        self._watching = True
        self._decoder = decoder

    @property
    def reasoning(self) -> str:
        """The reasoning the client got, in order (see :func:`joined`)."""
        return joined(self._reasoning)

    def feed(self, out: bytes) -> bytes:
        """The part of ``out`` (client-bound bytes) that goes to the client: all of it, unless the
        budget is spent in it (:attr:`cut`), then what came before the event that went over."""
        if self.cut:
            return b""
        if not self._watching:
            return out
        passed = self._passed(self._decoder.feed(out))
        if not self._watching and not self.cut:  # the rest of an event under way is no longer ours to read
            passed += self._decoder.take_pending()
        return passed

    def finish(self) -> bytes:
        """At the stream's end: what the reader still holds (its last events, an unterminated tail),
        unless cut."""
        if self.cut or not self._watching:
            return b""
        events, tail = self._decoder.finish()
        passed = self._passed(events)  # read here: fed again, an event whose end the reader told only now would be held
        return passed if self.cut else passed + tail

    def _passed(self, events: list[SSEEvent]) -> bytes:
        """The events that go to the client: up to the one the budget ends on, if any."""
        passed: list[bytes] = []
        for event in events:
            if self._watching and not self._take(event):
                self.cut = True
                self._watching = False
                break
            passed.append(event.raw)
        return b"".join(passed)

    @abstractmethod
    def _take(self, event: SSEEvent) -> bool:
        """Note one event; ``False`` when it would take the reasoning over the budget. An event
        that says the reasoning is over sets ``_watching`` false."""
