"""Bytes in, bytes out: the SSE decoder, a surface translator and the encoder chained, failing open.

No aiohttp here; the middleware feeds it what the handler writes. The pipeline owns the promises
every surface shares, so that no translator has to keep them itself:

* an event the translator cannot handle (it raised) goes out as it came, after every channel's held
  text, and translation resumes with the next event;
* an event over ``max_event_bytes`` goes out as its bytes arrive, after the held text, through the
  translator's :meth:`~surfaces.StreamTranslator.oversized` (which renumbers it on its bytes);
* at the end, held text goes out as whole events *before* an unfinished tail, never glued to it;
* events the translator writes use the stream's own line ending.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from .channels import Said, Transcripts
from .config import Surface, ThinkExtractConfig
from .marks import NewId, random_id
from .ndjson import NDJSONDecoder
from .record import DEFAULT_MAX_ENTRY_BYTES
from .sse import SSEDecoder, SSEEvent
from .surfaces import Counts, StreamTranslator
from .surfaces.exclude import WithoutReasoning
from .surfaces.registry import SURFACES
from .surfaces.usage import ToCount, to_count

__all__ = ["StreamPipeline", "TranslatedBody", "transform_body", "translate_body"]

log = logging.getLogger("gateway_mw")

_SMALL = 2048  # below this, a piece that starts mid-event goes to the decoder directly
_WINDOW = 8192  # events are offered to the fast path this many bytes at a time


class StreamPipeline:
    """Translate an SSE byte stream. ``feed`` what arrives, then ``finish`` once."""

    def __new__(
        cls,
        surface: Surface,
        config: ThinkExtractConfig,
        new_id: NewId = random_id,
        *,
        keep: bool = False,
        keep_limit: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> StreamPipeline:
        if cls is StreamPipeline and SURFACES[surface].framing != "sse":
            return super().__new__(_LinesPipeline)
        return super().__new__(cls)

    def __init__(
        self,
        surface: Surface,
        config: ThinkExtractConfig,
        new_id: NewId = random_id,
        *,
        keep: bool = False,
        keep_limit: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> None:
        definition = SURFACES[surface]
        self._translator: StreamTranslator = definition.stream(config, new_id)
        if keep:  # what the model wrote, for the reasoning record, while an entry could hold it
            self._translator.transcripts = Transcripts(keep_limit)
        if config.reasoning_exclude:  # the client gets no reasoning: what is written, filtered
            self._translator = WithoutReasoning(
                self._translator, definition.without_reasoning(), self._reread, self._newline, config.max_body_bytes
            )
        large = self._translator.large_events
        self._decoder: SSEDecoder | NDJSONDecoder
        if definition.framing == "sse":
            self._decoder = SSEDecoder(config.max_event_bytes, large, config.max_body_bytes)
        else:  # newline-delimited JSON (_LinesPipeline)
            self._decoder = NDJSONDecoder(config.max_event_bytes)
        self._in_oversized = False  # pieces of an oversized event are going through
        self._surface = surface
        self._max_span = config.max_event_bytes
        self._max_one = min(_WINDOW, config.max_event_bytes)  # an event offered whole, alone
        self._raw = False  # the decoder itself failed: everything after passes as it comes
        self.error: BaseException | None = None
        """The first fault met (translation went on, or the rest passed raw), for the stats."""

    def said(self) -> list[Said]:
        """What the response's answers said (``keep=True``; read after :meth:`finish`)."""
        try:
            return self._translator.said()
        except Exception:  # the record is a convenience: a fault here must not fail the stream
            log.exception("gateway_mw: %s translator could not tell what was said", self._surface)
            return []

    @property
    def kept_whole(self) -> bool:
        """Whether everything the model wrote is in :meth:`said` (kept, and within its limit)."""
        transcripts = self._translator.transcripts
        return transcripts is not None and not transcripts.budget.over

    @property
    def counts(self) -> Counts:
        counts = self._translator.counts
        counts.oversized_events = self._decoder.oversized_events
        return counts

    def feed(self, chunk: bytes) -> bytes:
        if self._raw:
            return chunk
        decoder: SSEDecoder = self._decoder  # type: ignore[assignment]  # SSE: _LinesPipeline serves the other
        try:
            n = len(chunk)
            if n <= self._max_one and decoder.one_event(chunk):
                # One event on one line, as most upstreams write tokens: offered once, whole (no
                # window is cut), else decoded. The translator may have begun to handle it: a fault
                # is the event's own, as in event().
                try:
                    fast, used = self._translator.fast_forward(chunk)
                except Exception as exc:
                    self._fault(exc)
                    return b"".join(self._flush()) + chunk
                if used:
                    return fast
                return self._translate(decoder.one(chunk))
            # Whole events (a writer that writes them one by one) or a large piece: offer the fast
            # path. A small piece cut mid-event holds about one event: decoding it is cheaper.
            if (n >= _SMALL or decoder.at_boundary) and decoder.plain and chunk.find(b"\r") < 0:
                return self._feed_plain(chunk)
            return self._translate(decoder.feed(chunk))
        except Exception as exc:  # a fault in the framing: give up on this response
            return self._give_up(exc, chunk)

    def finish(self) -> bytes:
        """End of stream: whatever the translator holds, as whole events, then any unfinished tail."""
        if self._raw:
            return b""
        try:
            # At a boundary the decoder holds nothing: no event, no tail (the usual end).
            events, tail = ([], b"") if self._decoder.at_boundary else self._decoder.finish()
            last = self._translate(events)
        except Exception as exc:
            return self._give_up(exc, b"")
        rest = self._oversized(SSEEvent(raw=b"", oversized=True)) if self._in_oversized else b""
        try:
            held = self._translator.finish()
        except Exception as exc:
            self._fault(exc)
            held = []
        return last + rest + self._join(held) + tail if held else last + rest + tail

    # -- internals ------------------------------------------------------------------------------

    def _feed_plain(self, chunk: bytes) -> bytes:
        """A ``\\n`` stream: offer the translator windows of whole events, of which it passes the
        events it proves (:mod:`~.steady`); the first it does not goes to the decoder, and the rest
        is offered again (one event at a time while the translator proves none). A window is offered
        only while the decoder holds nothing, so that bytes it passes can never overtake bytes the
        decoder keeps."""
        decoder: SSEDecoder = self._decoder  # type: ignore[assignment]  # reached from feed() only
        fast_forward = self._translator.fast_forward
        out: list[bytes] = []
        pos, n = 0, len(chunk)
        wide = True  # a window is offered; after a decline, one event: a decline copies no window
        skip = 1  # events decoded after a decline: twice as many after each decline in a row
        while pos < n:
            if not decoder.at_boundary:  # finish the event under way first
                events, pos = decoder.feed_pending(chunk, pos)
                out.append(self._translate(events))
                if not decoder.at_boundary:
                    break  # the event goes on past the chunk, or the stream stopped being plain
                continue
            end = chunk.rfind(b"\n\n", pos, pos + _WINDOW) + 2 if wide else 0
            if end < pos + 2:  # one event: no event ends within a window, or the last offer was declined
                end = chunk.find(b"\n\n", pos) + 2
                if end < 2:
                    break  # the rest is an event under way: the decoder keeps it
            if end - pos <= self._max_span:
                try:
                    fast, used = fast_forward(chunk[pos:end] if pos or end < n else chunk)
                except Exception as exc:  # nothing proven: the events go to the decoder
                    self._fault(exc)
                    used = 0
                wide = used > 0
                if used:
                    out.append(fast)
                    pos += used
                    skip = 1
                    if pos == end:
                        continue
            # What the translator did not prove, as the decoder cuts it: the next event, or after
            # declines in a row the next 2, 4, 8… (a translator that proves nothing costs the
            # decoder's own pace, not an offer per event).
            stop = pos
            for _ in range(1 if wide else skip):
                after = chunk.find(b"\n\n", stop) + 2
                if after < 2:
                    break
                stop = after
            if not wide:
                skip *= 2
            out.append(self._translate(decoder.feed(chunk[pos:stop])))
            pos = stop
        if pos < n:
            out.append(self._translate(decoder.feed(chunk[pos:] if pos else chunk)))
        return b"".join(out)

    def _translate(self, events: list[SSEEvent]) -> bytes:
        if not events:
            return b""
        out: list[bytes] = []
        translate = self._translator.event
        newline = self._decoder.newline
        for event in events:
            if event.oversized or (len(event.raw) > self._max_span and self._outgrown(event)):
                if not self._in_oversized:
                    out += self._flush()
                out.append(self._oversized(event if event.oversized else SSEEvent(raw=event.raw, oversized=True)))
                continue
            try:
                produced = translate(event)
            except Exception as exc:
                self._fault(exc)
                out += self._flush()
                out.append(event.raw)
                continue
            if len(produced) == 1 and produced[0] is event:
                out.append(event.raw)
            elif newline == b"\n":
                out.extend(e.raw for e in produced)
            else:
                out.extend(e.raw if e is event else e.raw.replace(b"\n", newline) for e in produced)
        return b"".join(out)

    def _outgrown(self, event: SSEEvent) -> bool:
        """An event decoded whole that the translator no longer holds past the cap (it stopped while
        an earlier event of the same chunk went by): it goes on as it would had the chunk been cut
        before it, so that what the client gets does not depend on where the upstream's writes end."""
        decoder = self._decoder
        return isinstance(decoder, SSEDecoder) and decoder.outgrown(event)

    def _oversized(self, piece: SSEEvent) -> bytes:
        """A piece of an event over the cap, through the translator (as it came after a fault)."""
        self._in_oversized = piece.more
        try:
            out = self._translator.oversized(piece.raw, piece.more)
        except Exception as exc:
            self._fault(exc)
            return piece.raw
        self._decoder.large_events = self._translator.large_events  # a translator may stop holding any
        return out

    def _flush(self) -> list[bytes]:
        """What every channel holds, as events in the stream's line ending ([] after a fault)."""
        try:
            held = self._translator.flush()
        except Exception as exc:
            self._fault(exc)
            return []
        if not held:
            return []
        newline = self._decoder.newline
        return [e.raw if newline == b"\n" else e.raw.replace(b"\n", newline) for e in held]

    def _reread(self, whole: bytes) -> list[SSEEvent]:
        """The bytes of one whole event (an oversized one, held) read as this stream's events."""
        cap = len(whole) + 1  # read whole: not oversized again
        decoder = SSEDecoder(cap) if isinstance(self._decoder, SSEDecoder) else NDJSONDecoder(cap)
        events = decoder.feed(whole)
        last, tail = decoder.finish()  # an event the stream's end cut short: its bytes, unread
        return events + last + ([SSEEvent(raw=tail)] if tail else [])

    def _newline(self) -> bytes:
        return self._decoder.newline

    def _join(self, events: list[SSEEvent]) -> bytes:
        newline = self._decoder.newline
        return b"".join(e.raw if newline == b"\n" else e.raw.replace(b"\n", newline) for e in events)

    def _fault(self, exc: Exception) -> None:
        if self.error is None:
            log.exception("gateway_mw: %s translator failed; the event passes as it came", self._surface)
            self.error = exc
        else:
            log.debug("gateway_mw: %s translator failed again", self._surface, exc_info=True)

    def _give_up(self, exc: Exception, chunk: bytes) -> bytes:
        """The decoder failed (a bug): flush, then pass every byte on as it came."""
        before = self._decoder.pending
        self._fault(exc)
        self._raw = True
        rest = self._oversized(SSEEvent(raw=b"", oversized=True)) if self._in_oversized else b""
        held = rest + b"".join(self._flush())
        pending = self._decoder.take_pending()
        # The decoder may or may not have taken the chunk in before failing: never lose it.
        return held + pending + (chunk if len(pending) < before + len(chunk) else b"")


class _LinesPipeline(StreamPipeline):
    """A newline-delimited JSON stream (Ollama's): only the general path, no fast path reads its lines.
    A class of its own, where an instance's own ``feed`` (a bound method of it) made a cycle that only
    the garbage collector frees."""

    def feed(self, chunk: bytes) -> bytes:
        if self._raw:
            return chunk
        try:
            return self._translate(self._decoder.feed(chunk))
        except Exception as exc:  # a fault in the framing: give up on this response
            return self._give_up(exc, chunk)


def transform_body(
    surface: Surface, body: bytes | bytearray, is_sse: bool, config: ThinkExtractConfig, new_id: NewId = random_id
) -> tuple[bytes | None, Counts, BaseException | None]:
    """A whole response body translated: ``None`` when nothing changed."""
    if is_sse:
        pipeline = StreamPipeline(surface, config, new_id)
        raw = bytes(body)
        out = pipeline.feed(raw) + pipeline.finish()
        return (None if out == raw else out), pipeline.counts, pipeline.error
    new, counts, error, _ = translate_body(surface, body, config, new_id)
    return new, counts, error


class TranslatedBody(NamedTuple):
    """A non-stream body translated (:func:`translate_body`)."""

    new: bytes | None
    """``None`` when nothing changed."""
    counts: Counts
    error: BaseException | None
    to_count: ToCount | None
    """The reasoning whose tokens the usage lacks (read before ``reasoning_exclude`` takes it out:
    the model spent the tokens all the same); ``None`` unless asked for, or nothing to count."""


def translate_body(
    surface: Surface, body: bytes | bytearray, config: ThinkExtractConfig, new_id: NewId, *, count: bool = False
) -> TranslatedBody:
    """A whole JSON body translated; with ``count``, what its usage lacks (see :mod:`.surfaces.usage`)."""
    definition = SURFACES[surface]
    try:
        new, counts = definition.transform_body(body, config, new_id)
        counting = to_count(definition.usage, body if new is None else new) if count else None
        if config.reasoning_exclude:  # the client gets no reasoning, whoever wrote it
            new = definition.body_without_reasoning(bytes(body) if new is None else new) or new
    except Exception as exc:
        log.exception("gateway_mw: %s body translation failed; passing it through", surface)
        return TranslatedBody(None, Counts(), exc, None)
    return TranslatedBody(new, counts, None, counting)
