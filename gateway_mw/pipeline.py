"""Bytes in, bytes out: the SSE decoder, a surface translator and the encoder chained, failing open.

No aiohttp here; the middleware feeds it what the handler writes. The pipeline owns the promises
every surface shares, so that no translator has to keep them itself:

* an event the translator cannot handle (it raised) goes out as it came, after every channel's held
  text, and translation resumes with the next event;
* an event over ``max_event_bytes`` goes out raw as its bytes arrive, after the held text;
* at the end, held text goes out as whole events *before* an unfinished tail, never glued to it;
* events the translator writes use the stream's own line ending.
"""

from __future__ import annotations

import logging

from .config import Surface, ThinkExtractConfig
from .sse import SSEDecoder, SSEEvent
from .surfaces import BODY_TRANSFORMS, STREAM_TRANSLATORS, Counts, StreamTranslator

__all__ = ["StreamPipeline", "transform_body"]

log = logging.getLogger("gateway_mw")

_WINDOW = 8192  # events are offered to the fast path this many bytes at a time: a decline costs little
_RETRIES = 2  # events decoded one by one after a decline before the rest of the window is offered again


class StreamPipeline:
    """Translate an SSE byte stream. ``feed`` what arrives, then ``finish`` once."""

    def __init__(self, surface: Surface, config: ThinkExtractConfig) -> None:
        self._decoder = SSEDecoder(config.max_event_bytes)
        self._translator: StreamTranslator = STREAM_TRANSLATORS[surface](config)
        self._surface = surface
        self._max_span = config.max_event_bytes
        self._raw = False  # the decoder itself failed: everything after passes as it comes
        self.error: BaseException | None = None
        """The first fault met (translation went on, or the rest passed raw), for the stats."""

    @property
    def counts(self) -> Counts:
        counts = self._translator.counts
        counts.oversized_events = self._decoder.oversized_events
        return counts

    def feed(self, chunk: bytes) -> bytes:
        if self._raw:
            return chunk
        decoder = self._decoder
        try:
            if decoder.plain and b"\r" not in chunk:
                return self._feed_plain(chunk)
            return self._translate(decoder.feed(chunk))
        except Exception as exc:  # a fault in the framing: give up on this response
            return self._give_up(exc, chunk)

    def finish(self) -> bytes:
        """End of stream: whatever the translator holds, as whole events, then any unfinished tail."""
        if self._raw:
            return b""
        try:
            events, tail = self._decoder.finish()
            last = self._translate(events)
        except Exception as exc:
            return self._give_up(exc, b"")
        try:
            held = self._translator.finish()
        except Exception as exc:
            self._fault(exc)
            held = []
        return last + self._join(held) + tail

    # -- internals ------------------------------------------------------------------------------

    def _feed_plain(self, chunk: bytes) -> bytes:
        """A ``\\n`` stream: offer the translator windows of whole events to pass without decoding
        them one by one; a window it declines is decoded event by event."""
        decoder = self._decoder
        out: list[bytes] = []
        if not decoder.at_boundary:
            end = decoder.pending_end(chunk)
            if end < 0:
                return self._translate(decoder.feed(chunk))
            out.append(self._translate(decoder.feed(chunk[:end])))
            if not decoder.at_boundary:
                return out[0] + self._translate(decoder.feed(chunk[end:]))
            chunk = chunk[end:]
        fast_forward = self._translator.fast_forward
        pos, n = 0, len(chunk)
        while pos < n:
            end = chunk.rfind(b"\n\n", pos, pos + _WINDOW) + 2
            if end < pos + 2:  # no event ends within a window: take the next one whole
                end = chunk.find(b"\n\n", pos) + 2
                if end < 2:
                    break  # the rest is an event under way: the decoder keeps it
            # A declined window is often a tag at its start (the translator not steady yet): decode
            # an event or two, then offer the rest again; past that, decode the whole window.
            for retry in range(_RETRIES + 1):
                window = chunk[pos:end] if pos or end < n else chunk
                fast = None
                if end - pos <= self._max_span:
                    try:
                        fast = fast_forward(window)
                    except Exception as exc:
                        self._fault(exc)
                if fast is not None:
                    out.append(fast)
                    break
                # The first event of the window: a lone "\n" is a blank line, an empty event.
                first = pos + 1 if chunk[pos] == 10 else chunk.find(b"\n\n", pos, end) + 2
                if retry == _RETRIES or not pos < first < end:
                    out.append(self._translate(decoder.feed(window)))
                    break
                out.append(self._translate(decoder.feed(chunk[pos:first])))
                pos = first
            pos = end
        if pos < n:
            out.append(self._translate(decoder.feed(chunk[pos:])))
        return b"".join(out)

    def _translate(self, events: list[SSEEvent]) -> bytes:
        if not events:
            return b""
        out: list[bytes] = []
        translate = self._translator.event
        newline = self._decoder.newline
        for event in events:
            if event.oversized:
                out += self._flush()
                out.append(event.raw)
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
        held = b"".join(self._flush())
        pending = self._decoder.take_pending()
        # The decoder may or may not have taken the chunk in before failing: never lose it.
        return held + pending + (chunk if len(pending) < before + len(chunk) else b"")


def transform_body(
    surface: Surface, body: bytes | bytearray, is_sse: bool, config: ThinkExtractConfig
) -> tuple[bytes | None, Counts, BaseException | None]:
    """A whole response body translated: ``None`` when nothing changed."""
    if is_sse:
        pipeline = StreamPipeline(surface, config)
        raw = bytes(body)
        out = pipeline.feed(raw) + pipeline.finish()
        return (None if out == raw else out), pipeline.counts, pipeline.error
    try:
        new, counts = BODY_TRANSFORMS[surface](body, config)
    except Exception as exc:
        log.exception("gateway_mw: %s body translation failed; passing it through", surface)
        return None, Counts(), exc
    return new, counts, None
