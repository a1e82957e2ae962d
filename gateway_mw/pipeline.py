"""Bytes in, bytes out: the SSE decoder, a surface translator and the encoder chained, failing open.

No aiohttp here; the middleware feeds it what the handler writes.
"""

from __future__ import annotations

import logging

from .config import Surface, ThinkExtractConfig
from .sse import SSEDecoder, SSEEvent
from .surfaces import BODY_TRANSFORMS, STREAM_TRANSLATORS, Counts, StreamTranslator

__all__ = ["StreamPipeline", "transform_body"]

log = logging.getLogger("gateway_mw")


class StreamPipeline:
    """Translate an SSE byte stream. After an unexpected error the rest passes through raw."""

    def __init__(self, surface: Surface, config: ThinkExtractConfig) -> None:
        self._decoder = SSEDecoder()
        self._translator: StreamTranslator = STREAM_TRANSLATORS[surface](config)
        self._surface = surface
        self.error: BaseException | None = None

    @property
    def counts(self) -> Counts:
        return self._translator.counts

    def feed(self, chunk: bytes) -> bytes:
        if self.error is not None:
            return chunk
        try:
            events = self._decoder.feed(chunk)
        except Exception as exc:
            return self._fail(exc, b"")
        return self._translate(events) if events else b""

    def finish(self) -> bytes:
        """End of stream: the unterminated tail, then whatever the translator still holds."""
        if self.error is not None:
            return b""
        try:
            events = self._decoder.finish()
        except Exception as exc:
            return self._fail(exc, b"")
        out = self._translate(events)
        if self.error is not None:
            return out
        try:
            return out + self._flush_translator()
        except Exception as exc:
            return out + self._fail(exc, b"", flush=False)

    def _flush_translator(self) -> bytes:
        return b"".join(e.raw for e in self._translator.finish())

    def _translate(self, events: list[SSEEvent]) -> bytes:
        out: list[bytes] = []
        translate = self._translator.event
        for i, event in enumerate(events):
            try:
                produced = translate(event)
            except Exception as exc:
                rest = b"".join(e.raw for e in events[i:])
                out.append(self._fail(exc, rest))
                break
            if len(produced) == 1:
                out.append(produced[0].raw)
            else:
                out.extend(e.raw for e in produced)
        return b"".join(out)

    def _fail(self, exc: Exception, unsent: bytes, flush: bool = True) -> bytes:
        """Fail open: log once, flush what can be flushed, then pass everything on raw."""
        self.error = exc
        log.exception("gateway_mw: %s translation failed; passing the rest of the response through", self._surface)
        held = b""
        if flush:
            try:
                held = self._flush_translator()
            except Exception:
                log.debug("gateway_mw: flush after failure also failed", exc_info=True)
        return held + unsent + self._decoder.take_pending()


def transform_body(
    surface: Surface, body: bytes, is_sse: bool, config: ThinkExtractConfig
) -> tuple[bytes | None, Counts, BaseException | None]:
    """A whole response body translated: ``None`` when nothing changed."""
    if is_sse:
        pipeline = StreamPipeline(surface, config)
        out = pipeline.feed(body) + pipeline.finish()
        return (None if out == body else out), pipeline.counts, pipeline.error
    try:
        new, counts = BODY_TRANSFORMS[surface](body, config)
    except Exception as exc:
        log.exception("gateway_mw: %s body translation failed; passing it through", surface)
        return None, Counts(), exc
    return new, counts, None
