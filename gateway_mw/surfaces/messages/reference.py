"""The messages stream translator, plainly: each event decoded, translated and written.

One channel per upstream ``text`` block (:class:`~gateway_mw.channels.Channels`, keyed by the
block's upstream index), one numbering map for every event that carries an ``index``. This is the
whole behaviour of the surface and the oracle of its fast path (:mod:`.fastpath`), which may only
give what :meth:`MessagesReference.event` gives.
"""

from __future__ import annotations

from ...channels import Channels, join_surrogates
from ...config import ThinkExtractConfig
from ...rawjson import Obj, encode, obj
from ...scanner import CONTENT, REASONING
from ...segments import Segment
from ...sse import SSEEvent, encode_event
from ..translator import Translator
from ..usage import with_reasoning_tokens
from .blocks import BlockIndexes, ContentBlockWriter, TextBlock
from .events import (
    NATIVE,
    RESOLVING,
    Event,
    last_index,
    may_spell_index,
    one_line,
    read_event,
    reindexed,
    text_delta_prefix,
    with_event_line,
    with_indexes,
)
from .oversized import HEAD, OversizedEvent
from .usage import USAGE

__all__ = ["MessagesReference"]


class MessagesReference(Translator):
    """Translate an Anthropic messages event stream, one event at a time (sans-I/O)."""

    def __init__(self, config: ThinkExtractConfig) -> None:
        super().__init__(Channels(config))  # one channel per text block, by its upstream index
        self._active = config.enabled and config.messages_policy != "off"  # False: pass everything
        self._resolved = False
        self._native = False  # upstream reasoning seen: text blocks are no longer scanned
        self._numbering = BlockIndexes()
        self._blocks: dict[int, TextBlock] = {}  # upstream index → open text block
        self._writer = ContentBlockWriter(self._numbering, self.channels, config.messages_policy == "redacted")
        self._big: OversizedEvent | None = None  # an oversized event under way
        self._ended = False  # message_delta, message_stop or error came: no block reopens
        self._last: int | None = None  # the upstream index the last block event named

    # -- events ---------------------------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        data = event.data
        if data is None or not self._active:
            return [event]
        ev, lenient = read_event(data)
        if ev is None:
            return self.unreadable(event)
        if not self._resolved and ev.type in RESOLVING:
            # The settings for this message, fixed by the first event (message_start normally).
            message = ev.message if ev.type == "message_start" else None
            self._resolved = True
            self._active = self.channels.resolve(message.model if message is not None else None).enabled
            if not self._active:  # a profile turns this model off
                return [event]
        out = self._dispatch(event, ev, lenient)
        if ev.index is not None and (ev.index in self._blocks or ev.index in self._numbering.passed):
            self._last = ev.index  # the block events, and unknown ones naming a block that started
        if event.event is None:  # a data-only upstream: every frame sent gets its event: line
            return [with_event_line(e, ev.type) if e is event else e for e in out]
        return out

    def _dispatch(self, event: SSEEvent, ev: Event, lenient: bool) -> list[SSEEvent]:
        kind = ev.type
        if kind == "content_block_delta":
            return self._block_delta(event, ev, lenient)
        if kind == "content_block_start":
            return self._block_start(event, ev)
        if kind == "content_block_stop":
            return self._block_stop(event, ev)
        if kind == "message_start":
            self._ended = False
            numbering = self._numbering
            if ev.message is not None:
                if any(part.type in NATIVE for part in ev.message.content):
                    self._native = True
                if not (numbering.passed or self._blocks or numbering.closed):
                    # Blocks the message starts with hold the first indexes, as they are: the
                    # streamed blocks are numbered after them, as the upstream numbers them.
                    numbering.next = len(ev.message.content)
                    numbering.passed = {i: i for i in range(numbering.next)}
            return [event]
        if kind == "ping":
            return [event]  # carries no model text; flushing here would make results timing-dependent
        if kind in ("message_delta", "message_stop", "error"):
            self._ended = True
            out = self._finish_all()  # the message ends: its blocks close first
            return [*out, self._with_usage(event) if kind == "message_delta" else event]
        return [*self.flush(), *self._passed(event, kind.encode())]  # a type this translator does not know

    def _with_usage(self, event: SSEEvent) -> SSEEvent:
        """``message_delta`` with the reasoning events counted in its usage, where the server wrote no
        count of its own (see :mod:`..usage`)."""
        data = event.data
        assert data is not None
        doc = obj(one_line(data)) if self.counts.reasoning_events else None
        usage = doc.get("usage") if doc is not None else None
        filled = with_reasoning_tokens(usage, USAGE.field, self.counts.reasoning_events) if usage else None
        if doc is None or filled is None:
            return event
        doc["usage"] = filled
        self.counts.reasoning_written = True
        new = encode_event(encode(doc), fields=event.fields)
        return new if event.event is not None else with_event_line(new, "message_delta")

    def _note_reasoning(self, segments: list[Segment]) -> list[Segment]:
        """One upstream delta's runs: it counts once if any of them is reasoning."""
        for seg in segments:
            if seg.kind != CONTENT:
                self.counts.reasoning_events += 1
                break
        return segments

    def flush(self) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        held = dict(self.channels.flush())
        writer = self._writer
        for upstream, block in self._blocks.items():
            out += writer.emit(block, held.get(upstream, []))
            if block.kind == REASONING and writer.redacted:
                out += writer.close(block)  # a redacted block goes out whole: this part of it now
        return out

    def finish(self) -> list[SSEEvent]:
        return self._finish_all()

    # The message's answer (said): what the model wrote in its text blocks, and its tool calls.

    def oversized(self, piece: bytes, more: bool) -> bytes:
        """A piece of an event over ``max_event_bytes`` (see :class:`OversizedEvent`). Its type comes
        from its ``event:`` line or the key that opens its data."""
        big = self._big
        if big is None:
            if not self._active or not piece:
                return piece
            big = self._big = OversizedEvent(piece[:HEAD], self)
            out = big.first(piece)
        else:
            out = big.feed(piece)
        if not more:
            out += big.finish()
            self._big = None
        return out

    # -- the numbering map, for events passed on unread ----------------------------------------------

    def map_index(self, upstream: int, kind: bytes | None, may_open: bool = True) -> tuple[list[SSEEvent], int | None]:
        """The output index for an event passed on unread that names block ``upstream``, and the
        events to send before it. ``None``: an index the stream never introduced, left alone."""
        numbering = self._numbering
        if kind == b"content_block_start":  # a block the client appends: it takes the next index
            return [], numbering.pass_block(upstream)
        block = self._blocks.get(upstream)
        if block is not None:
            if kind == b"content_block_delta" and may_open:
                return self._writer.to_text(block), block.out  # its text must land on a text block
            return [], (block.out if block.out >= 0 else None)
        new = numbering.passed.get(upstream)
        if new is not None:
            return [], new
        if kind == b"content_block_delta" and may_open and self._may_reopen(upstream):
            block = self._reopen(upstream)  # late text: it goes on in a new text block
            return self._writer.to_text(block), block.out
        return [], numbering.closed.get(upstream)

    def alias(self, upstream: int, out: int) -> None:
        self._numbering.passed[upstream] = out

    def named(self, upstream: int) -> None:
        self._last = upstream

    def likely_text_block(self) -> TextBlock | None:
        """The text block an oversized delta whose ``"index"`` is not in its first piece most likely
        writes to: the one the last block event named (reopened if that block had ended: text
        after its stop), if it was a text block."""
        last = self._last
        block = self._blocks.get(last) if last is not None else None
        if block is None and last is not None and self._may_reopen(last):
            block = self._reopen(last)
        if block is None and len(self._blocks) == 1:
            block = next(iter(self._blocks.values()))  # the one text block open
        return block

    def to_text(self, block: TextBlock) -> list[SSEEvent]:
        return self._writer.to_text(block)

    def _passed(self, event: SSEEvent, kind: bytes | None) -> list[SSEEvent]:
        """``event``, passed on unread, with its ``index`` through the numbering map: the one a JSON
        parser keeps (the last) decides, and every top-level ``"index"`` key gets its new value."""
        data = event.data
        assert data is not None
        if b'"index"' not in data and not may_spell_index(data):
            return [event]
        upstream, named = last_index(data)
        if upstream is None:
            return [event]
        before, new = self.map_index(upstream, kind or named)
        if new is None or new == upstream:
            return [*before, event]
        value = b"%d" % new
        return [*before, encode_event(with_indexes(one_line(data), lambda _: value), fields=event.fields)]

    # -- per event ------------------------------------------------------------------------------
    # An event no messages client can take (not JSON, or a known type of the wrong shape) is
    # unreadable: it goes out as it came, after the held text. Renumbering it would only disguise it.

    def _block_start(self, event: SSEEvent, ev: Event) -> list[SSEEvent]:
        block, upstream = ev.content_block, ev.index
        if block is None or upstream is None:
            return self.unreadable(event)
        if block.type in NATIVE:
            self._native = True  # upstream reasoning wins for the whole message
        elif block.type == "text" and not self._native and upstream not in self._blocks:
            text_block = self._blocks[upstream] = TextBlock(upstream, event)
            transcripts = self.transcripts
            if transcripts is not None:
                transcripts.channel(upstream)  # the answer has a text block, however empty
            if block.text:  # a start carrying text (the real API sends ""): the block's first text
                text, text_block.half = join_surrogates("", block.text)
                return self._writer.emit(text_block, self.channels.text(upstream, text))
            return []  # held until the first run is known
        if block.type == "tool_use" and self.transcripts is not None and isinstance(block.id, str):
            self.transcripts.call(0, block.id)
        new = self._numbering.pass_block(upstream)
        return [event] if new == upstream else [reindexed(event, "content_block_start", upstream, new)]

    def _block_delta(self, event: SSEEvent, ev: Event, lenient: bool) -> list[SSEEvent]:
        upstream, delta = ev.index, ev.delta
        if upstream is None or delta is None:
            return self.unreadable(event)
        block = self._blocks.get(upstream)
        text = delta.text
        if block is None:
            if self._may_reopen(upstream) and delta.type == "text_delta" and text is not None:
                block = self._reopen(upstream)  # text after its block's stop: it goes on in a new block
            else:  # a block not scanned, or the last block a text block became (after its stop)
                new = self._numbering.passed.get(upstream, self._numbering.closed.get(upstream))
                if new is None:
                    return self.unreadable(event)  # a delta for a block that never started
                if delta.type == "thinking_delta":
                    self.counts.reasoning_events += 1  # the server's own reasoning, one token per event
                return [event] if new == upstream else [reindexed(event, "content_block_delta", upstream, new)]
        writer = self._writer
        if delta.type != "text_delta" or text is None:
            # A citation or another delta of the text block: after the text so far, on a text block.
            scanner = self.channels.scanner(upstream)
            out = writer.emit(block, scanner.flush()) if scanner is not None else []
            out += writer.to_text(block)
            new = block.out
            out.append(event if new == upstream else reindexed(event, "content_block_delta", upstream, new))
            return out
        data = event.data
        assert data is not None
        if lenient or block.half:
            # Written afresh: the text as whole characters, the index as an integer.
            text, block.half = join_surrogates(block.half, text)
            doc = obj(one_line(data))
            segments = self._note_reasoning(self.channels.text(upstream, text))
            return writer.emit(block, segments, (event, doc) if doc is not None else None)
        segments = self.channels.text(upstream, text)
        if len(segments) == 1 and segments[0].kind == CONTENT and segments[0].text == text:
            # Answer text as it came: the event goes out unchanged (renumbered if it must be).
            out = writer.to_text(block)
            new = block.out
            out.append(event if new == upstream else reindexed(event, "content_block_delta", upstream, new))
            return out
        self._note_reasoning(segments)
        return writer.emit(block, segments, _source(event, data, upstream, text))

    def _block_stop(self, event: SSEEvent, ev: Event) -> list[SSEEvent]:
        upstream = ev.index
        if upstream is None:
            return self.unreadable(event)
        block = self._blocks.get(upstream)
        if block is not None:
            return self._finish_block(block)
        new = self._numbering.passed.get(upstream, self._numbering.closed.get(upstream))
        if new is None:
            return self.unreadable(event)
        return [event] if new == upstream else [reindexed(event, "content_block_stop", upstream, new)]

    # -- per text block -------------------------------------------------------------------------

    def _may_reopen(self, upstream: int) -> bool:
        """Whether a delta naming ``upstream`` is text after its block's stop, within the message."""
        numbering = self._numbering
        return upstream in numbering.closed and upstream not in numbering.passed and not self._ended

    def _reopen(self, upstream: int) -> TextBlock:
        """A new text block for one that had ended: scanned as a text block after the first."""
        block = self._blocks[upstream] = TextBlock(upstream, None)
        return block

    def _finish_all(self) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for block in list(self._blocks.values()):
            out += self._finish_block(block)
        return out

    def _finish_block(self, block: TextBlock) -> list[SSEEvent]:
        upstream = block.upstream
        del self._blocks[upstream]
        writer, channels = self._writer, self.channels
        out: list[SSEEvent] = []
        if block.half:  # half a character that never got its other half: U+FFFD, as a UTF-8 decoder reads it
            block.half = ""
            out += writer.emit(block, channels.text(upstream, "\ufffd"))
        out += writer.emit(block, channels.end(upstream))
        out += writer.close(block)
        if not block.emitted:  # nothing to say: the block stays, as an empty text block
            out += writer.open(block, CONTENT)
            out += writer.close(block)
        self._numbering.closed[upstream] = block.out
        return out


def _source(event: SSEEvent, data: bytes, upstream: int, text: str) -> tuple[SSEEvent, Obj] | None:
    """The upstream event whose fields the translator does not own ride on the first delta written
    for it; ``None`` when it has none (its bytes are those the translator writes)."""
    if data == text_delta_prefix(upstream) + encode(text) + b"}}":
        return None
    doc = obj(one_line(data))
    return (event, doc) if doc is not None else None
