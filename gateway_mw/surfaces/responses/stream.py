"""The Responses stream as deployed: the reference translator with the fast path as a layer over it.

:class:`ResponsesStream` is :class:`~.reference.ResponsesReference`, every event it is given read and
translated as the reference reads and translates it, plus :meth:`fast_forward`, which gives for
steady text what the reference would give without running it (``fastpath.FastPath``). The layer's
one memory of the reference's state, the steady channel, is dropped whenever the reference runs: as
it reads an event (``event`` changes nothing before), flushes, finishes or takes an oversized event.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from ...config import ThinkExtractConfig
from ...sse import SSEEvent
from ...steady import Proven
from ..base import Counts, NewId, random_id, translated
from . import rebuild
from .fastpath import FastPath
from .reference import ResponsesReference, replayer

__all__ = ["ResponsesStream", "transform_body", "translate_stream"]


class ResponsesStream(ResponsesReference):
    """Translate a Responses event stream, one event at a time, steady text without reading it."""

    def __init__(self, config: ThinkExtractConfig, *, new_id: NewId = random_id) -> None:
        super().__init__(config, new_id=new_id)
        self._fast = FastPath(self)
        self.read = self._fast.read  # an event the layer read and declined is not read twice

    def fast_forward(self, span: bytes) -> Proven:
        return self._fast.forward(span)

    def flush(self) -> list[SSEEvent]:
        self._fast.steady = None
        return super().flush()

    def finish(self) -> list[SSEEvent]:
        self._fast.steady = None
        return super().finish()

    def oversized(self, piece: bytes, more: bool) -> bytes:
        self._fast.steady = None
        return super().oversized(piece, more)


def transform_body(
    body: bytes | bytearray, config: ThinkExtractConfig, *, new_id: NewId = random_id
) -> tuple[bytes | None, Counts]:
    """A non-stream ``response`` body with reasoning moved into ``reasoning`` output items: its output
    replayed through the stream's own step logic, so that stream and non-stream agree."""
    return rebuild.transform_body(body, config, replayer, new_id=new_id)


def translate_stream(
    events: AsyncIterable[SSEEvent], config: ThinkExtractConfig, *, new_id: NewId = random_id
) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    return translated(ResponsesStream(config, new_id=new_id), events)
