"""One module per API surface; each declares its :class:`~.definition.SurfaceDefinition` (a stream
translator, a body transform and all else the gateway reads of it), held by :mod:`.registry`."""

from __future__ import annotations

from typing import Protocol

from ..sse import SSEEvent
from .base import Counts, Said, Transcripts

__all__ = ["Counts", "StreamTranslator"]


class StreamTranslator(Protocol):
    """Sans-I/O step logic: one upstream event in, the client's events out.

    The pipeline (``pipeline.StreamPipeline``) drives it and guarantees, whatever the upstream sends:
    an event whose ``data`` is ``None`` (a comment, a keep-alive, a BOM, a piece of an oversized
    event) needs no answer but itself; before it sends anything untranslated that may carry model
    text it calls :meth:`flush`; it calls :meth:`finish` once, at the end.

    Every surface's translator extends :class:`~.translator.Translator`, which keeps the parts of
    this contract that do not depend on the wire.
    """

    counts: Counts
    transcripts: Transcripts | None
    """Set to keep what each channel was given (for the reasoning record); ``None`` keeps nothing."""
    large_events: frozenset[bytes]
    """Event types (their ``event:`` name or the ``type`` that opens their data) that repeat a whole
    item or response by nature: the decoder lets them grow to ``max_body_bytes`` instead of
    ``max_event_bytes``, so that they are read and translated however long the text they repeat."""

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        """The events to send for ``event``, in order. An event the translator cannot read goes
        out unchanged *after* what :meth:`flush` returns (count it in ``counts.unreadable_events``),
        and translation goes on with the next event. Raising is a bug: the pipeline then flushes,
        sends the event unchanged and goes on."""
        ...

    def flush(self) -> list[SSEEvent]:
        """Every channel's held text as well-formed events of this surface; translation goes on."""
        ...

    def finish(self) -> list[SSEEvent]:
        """End of stream: whatever is still held, as well-formed events."""
        ...

    def said(self) -> list[Said]:
        """What the response's answers said (with :attr:`transcripts` set; else nothing)."""
        ...

    def oversized(self, piece: bytes, more: bool) -> bytes:
        """The bytes to send for ``piece``, a raw piece of an event over its cap, in order (``more``:
        pieces of it follow). Such an event is never held or decoded: its index fields are
        rewritten on its bytes as they go by, so that it fits the stream's numbering (an answer
        that leaves reasoning out holds it to read it whole: :mod:`.exclude`)."""
        ...

    def fast_forward(self, span: bytes) -> tuple[bytes, int]:
        """``span`` holds whole events (``\\n`` line endings). Event by event from its start, the
        translator proves, without handing them to :meth:`event`, that what it gives is exactly
        what :meth:`event` would (updating its state as :meth:`event` would): return the bytes to
        send for the proven events and where in ``span`` they end (``(b"", 0)``: none, nothing
        changed). The pipeline gives the next event to :meth:`event` and offers the rest again."""
        ...
