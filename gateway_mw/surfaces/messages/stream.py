"""The messages stream translator: one Scanner per upstream ``text`` block, one numbering map."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, cast

import msgspec

from ...config import ThinkExtractConfig
from ...rawjson import UNREADABLE, Obj, TopLevelKeys, as_int, as_str, encode, escaped, join_surrogates, obj
from ...scanner import CONTENT, REASONING, Kind, Scanner, Segment
from ...sse import SSEEvent, encode_event, event_type
from ..base import Counts, Said, Transcripts, after_first_channel, translated
from .fastpath import (
    DATA,
    EVENT_LINE,
    NAMED,
    TEXT_KEY,
    TEXT_TYPE,
    THINKING_KEY,
    THINKING_TYPE,
    as_thinking,
    named_events,
    renumber,
    run_bodies,
    run_renumbered,
    steady_text,
    with_event_lines,
)
from .wire import (
    EMPTY_TEXT,
    HEAD,
    INDEX,
    NATIVE,
    RESOLVING,
    TEXT_BLOCK,
    THINKING_BLOCK,
    Event,
    decode_event,
    decode_run_event,
    delta_event,
    fields_for,
    has_event_line,
    last_index,
    may_spell_index,
    newline_of,
    one_line,
    read_event,
    read_lenient,
    redacted_data,
    reindexed,
    resent,
    signature_of,
    start_event,
    stop_event,
    text_delta,
    text_delta_prefix,
    thinking_delta,
    with_event_line,
    with_indexes,
)

__all__ = ["MessagesStream", "translate_stream"]


class _Oversized:
    """An event over the cap under way: its index rewritten on its bytes as they pass."""

    __slots__ = ("channel", "keys", "kind", "out")

    def __init__(self, kind: bytes | None) -> None:
        self.kind = kind  # from its event: line or the type that opens its data
        self.out: int | None = None  # the output index every top-level "index" key gets
        self.channel: _Channel | None = None  # the text channel it writes to, when it names one
        self.keys: TopLevelKeys | None = None


class _Channel:
    """One upstream text block: its scanner and the output block it currently writes."""

    __slots__ = ("digest", "emitted", "held", "kind", "out", "parts", "scanner", "start", "surrogate", "upstream")

    def __init__(self, scanner: Scanner, upstream: int, start: SSEEvent | None) -> None:
        self.scanner = scanner
        self.upstream = upstream
        self.start = start  # the upstream start event, held for the first text block
        self.kind: Kind | None = None  # the kind of the open output block
        self.out = -1  # the open output block's index
        self.parts: list[str] = []  # redacted: the open block's text, written whole when it ends
        self.held = 0  # its size (UTF-8 bytes), bounded by max_buffer_bytes
        self.digest: Any = None  # unsigned: the SHA-256 of the open block's text, for its signature
        self.emitted = False
        self.surrogate = ""  # a high surrogate that ended the last delta, held for the next one


class MessagesStream:
    """Translate an Anthropic messages event stream, one event at a time (sans-I/O)."""

    large_events: frozenset[bytes] = frozenset()

    def __init__(self, config: ThinkExtractConfig) -> None:
        self._base = config
        self._config: ThinkExtractConfig | None = None  # resolved for the model of message_start
        self._active = config.enabled and config.messages_policy != "off"  # False: pass everything
        self._native = False  # upstream reasoning seen: text blocks are no longer scanned
        self._redacted = config.messages_policy == "redacted"
        self._next = 0  # the next output index
        # The numbering map, upstream index → output index, in three parts: blocks not scanned
        # (one output block each), open text channels (their open output block), and text blocks
        # that ended (their last output block, for a late event that names them).
        self._indexes: dict[int, int] = {}
        self._channels: dict[int, _Channel] = {}  # upstream index → open text channel
        self._closed: dict[int, int] = {}
        self._read: tuple[bytes, Event | None] | None = None  # an event fast_forward read and declined
        self._steady: tuple[_Channel, frozenset[str]] | None = None  # see _steady_channel
        self._steady_known = False
        self._texts = 0  # text blocks scanned so far: a template's injected <think> opens the first only
        self._big: _Oversized | None = None  # an oversized event under way
        self._before: list[SSEEvent] | None = None  # events to send before its first byte
        self._ended = False  # message_delta, message_stop or error came: no block reopens
        self._last: int | None = None  # the upstream index the last block event named
        self.counts = Counts()
        self.transcripts: Transcripts | None = None  # set when the reasoning record keeps what was said

    def _resolve(self, model: str | None) -> ThinkExtractConfig:
        """The settings for this message, fixed by the first event (``message_start`` normally)."""
        if self._config is None:
            self._config = cfg = self._base.for_model(model)
            self._active = self._active and cfg.enabled
        return self._config

    # -- events ---------------------------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        self._steady_known = False
        data = event.data
        if data is None or not self._active:
            return [event]
        read = self._read
        if read is not None and read[0] == data:  # fast_forward read it and declined
            self._read = None
            ev, lenient = (read[1], False) if read[1] is not None else read_lenient(data)
        else:
            ev, lenient = read_event(data)
        if ev is None:
            return self._unreadable(event)
        if self._config is None and ev.type in RESOLVING:
            message = ev.message if ev.type == "message_start" else None
            self._resolve(message.model if message is not None else None)
            if not self._active:  # a profile turns this model off
                return [event]
        out = self._dispatch(event, ev, lenient)
        if ev.index is not None and (ev.index in self._channels or ev.index in self._indexes):
            self._last = ev.index  # the block events, and unknown ones naming a block that started
        if event.event is None:  # a data-only upstream: every frame sent gets its event: line
            return [with_event_line(e, ev.type) if e is event else e for e in out]
        return out

    def _dispatch(self, event: SSEEvent, ev: Event, lenient: bool) -> list[SSEEvent]:
        kind = ev.type
        if kind == "content_block_delta":
            return self._block_delta(event, ev, lenient)
        if kind == "content_block_start":
            return self._block_start(event, ev, lenient)
        if kind == "content_block_stop":
            return self._block_stop(event, ev)
        if kind == "message_start":
            self._ended = False
            if ev.message is not None:
                if any(part.type in NATIVE for part in ev.message.content):
                    self._native = True
                if not (self._indexes or self._channels or self._closed):
                    # Blocks the message starts with hold the first indexes, as they are: the
                    # streamed blocks are numbered after them, as the upstream numbers them.
                    self._next = len(ev.message.content)
                    self._indexes = {i: i for i in range(self._next)}
            return [event]
        if kind == "ping":
            return [event]  # carries no model text; flushing here would make results timing-dependent
        if kind in ("message_delta", "message_stop", "error"):
            self._ended = True
            return [*self._finish_all(), event]  # the message ends: its blocks close first
        return [*self.flush(), *self._passed(event, kind.encode())]  # a type this translator does not know

    def flush(self) -> list[SSEEvent]:
        self._steady_known = False
        out: list[SSEEvent] = []
        for channel in self._channels.values():
            out += self._emit(channel, channel.scanner.flush())
            if channel.kind == REASONING and self._redacted:
                out += self._close(channel)  # a redacted block goes out whole: this part of it now
        return out

    def finish(self) -> list[SSEEvent]:
        self._steady_known = False
        return self._finish_all()

    def oversized(self, piece: bytes, more: bool) -> bytes:
        """A piece of an event over ``max_event_bytes``: never held or decoded, its top-level
        ``"index"`` rewritten through the numbering map as it goes by (every occurrence of the key
        gets the same value). Its type comes from its ``event:`` line or the key that opens its data.

        * A ``content_block_start`` (a 1 MB ``tool_use`` or ``web_search_tool_result``) with an index
          not seen before takes the next output index, so that the blocks after it follow it.
        * An event naming a scanned text block (an oversized ``text_delta``, not scanned) goes on an
          open *text* output block: a thinking block open there is closed, and a text block opened,
          before its first byte. When its ``"index"`` is not in its first piece (llama.cpp writes keys
          sorted, after the body), the text block the last block event named is taken to be the one
          it names (:meth:`_likely_channel`): at worst the client sees an empty text block more.
        * Any other index is mapped when known, and left alone when not.
        """
        self._steady_known = False
        big = self._big
        if big is None:
            if not self._active or not piece:
                return piece
            head = piece[:HEAD]
            big = self._big = _Oversized(event_type(head))
            keys = big.keys = TopLevelKeys(INDEX, lambda key, value: self._big_index(big, key, value))
            self._before = before = []
            try:
                out = keys.feed(piece)
                if big.out is None and big.kind == b"content_block_delta":
                    big.channel = self._likely_channel()
                    if big.channel is not None:
                        before += self._text_block(big.channel)
            finally:
                self._before = None
            newline = newline_of(piece)
            written = b"".join(e.raw for e in before)
            if newline != b"\n":
                written = written.replace(b"\n", newline)
            if big.kind is not None and not has_event_line(head):
                written += b"event: " + big.kind + newline  # the SDKs skip frames without one
            out = written + out
        else:
            assert big.keys is not None
            out = big.keys.feed(piece)
        if not more:
            assert big.keys is not None
            out += big.keys.finish()
            self._big = None
        return out

    def _big_index(self, big: _Oversized, key: bytes, value: bytes) -> bytes | None:
        if key != b"index":
            return None
        upstream = as_int(msgspec.Raw(value))
        if big.out is not None:  # a duplicate key: it gets the value the first one got
            if upstream is not None and big.kind == b"content_block_start":
                self._indexes[upstream] = big.out
            return b"%d" % big.out
        if upstream is None:
            return None
        kind = big.kind
        big_seen = big.keys.seen if big.keys is not None else {}
        if kind is None and b"type" in big_seen:
            name = as_str(msgspec.Raw(big_seen[b"type"]))
            kind = name.encode() if name is not None else None
        channel = big.channel
        if channel is not None and channel.upstream == upstream and channel.kind == CONTENT:
            new: int | None = channel.out
        else:
            before, new = self._map(upstream, kind, self._before is not None)
            if self._before is not None:
                self._before += before
        big.out = new
        self._last = upstream
        return None if new is None else b"%d" % new

    def fast_forward(self, span: bytes) -> bytes | None:
        """The bytes for ``span`` (whole events) when provably what :meth:`event` gives for each.

        While the one open text block is steady in one kind, each event is decoded alone into the
        fields the translator reads (whatever their order, spacing or escapes), and must only
        continue that block's text, with text free of its scanner's triggers. Then it goes out as
        it came (answer text), renumbered, or renamed into a ``thinking_delta`` on its bytes
        (:func:`renumber`, :func:`as_thinking`). A declined single event stays decoded for
        :meth:`event`.
        """
        if not self._active:
            return span  # this stream's model is not translated
        if not self._steady_known:
            self._steady = self._steady_channel()
            self._steady_known = True
        steady = self._steady
        if steady is None:
            return None
        n = len(span)
        if span.startswith(NAMED):
            if span.find(b"\n", 33) == n - 2 and span[-1] == 10:
                return self._steady_one(steady[0], steady[1], span, 33)
        elif span.startswith(DATA) and span.find(b"\n") == n - 2 and span[-1] == 10:
            out = self._steady_one(steady[0], steady[1], span, 6)
            return out if not out else EVENT_LINE + out  # the SDKs skip frames without one
        return self._steady_run(steady[0], steady[1], span)

    def _steady_channel(self) -> tuple[_Channel, frozenset[str]] | None:
        """The one open text block and its scanner's triggers, when a text free of them would go
        through it whole, in the kind of the output block it writes (nothing held, no half
        character). Known until the next call of :meth:`event`, :meth:`flush`, :meth:`finish` or
        :meth:`oversized`: only they change what it depends on."""
        if len(self._channels) != 1:
            return None
        for channel in self._channels.values():
            kind = channel.scanner.steady
            if kind is None or kind != channel.kind or channel.surrogate:
                return None
            return channel, channel.scanner.triggers
        return None

    def _steady_one(self, channel: _Channel, triggers: frozenset[str], span: bytes, head: int) -> bytes | None:
        """One event, its data from ``head`` to its blank line: what :meth:`event` gives for it,
        but for the ``event:`` line a data-only event gets."""
        data = span[head:-2]
        try:
            ev = decode_event(data)
        except UNREADABLE:
            self._read = (data, None)
            return None
        text = steady_text(ev, channel.upstream, triggers)
        if text is None:
            self._read = (data, ev)
            return None
        out: bytes | None
        if channel.kind == CONTENT:
            out = span if channel.out == channel.upstream else renumber(span, channel.upstream, channel.out, head)
        elif self._redacted:
            out = b"" if self._held_under_cap(channel, text) else None
        else:
            out = self._as_thinking(span, channel.upstream, channel.out, text, head)
            if out is not None:
                channel.digest.update(text.encode())
        if out is None:
            self._read = (data, ev)
            return None
        channel.scanner.pass_steady(text)
        self._last = channel.upstream
        return out

    def _steady_run(self, channel: _Channel, triggers: frozenset[str], span: bytes) -> bytes | None:
        """Several events, each read alone as :meth:`event` reads it (see :func:`run_bodies`)."""
        run = run_bodies(span)
        if run is None:
            return None
        bodies, named = run
        try:
            events = [decode_run_event(body) for body in bodies]
        except UNREADABLE:
            return None
        upstream = channel.upstream
        texts = [ev.delta.text for ev in events if ev.index == upstream]
        if len(texts) != len(events):
            return None
        joined = "".join(texts)
        if not triggers.isdisjoint(joined):
            return None
        if channel.kind == CONTENT:
            out = self._content_run(channel, span, bodies, named)
        elif self._redacted:
            out = b"" if self._held_under_cap(channel, joined) else None
        else:
            out = self._thinking_run(channel, span, bodies, texts, named)
            if out is not None:
                channel.digest.update(joined.encode())
        if out is None:
            return None
        channel.scanner.pass_steady(joined)
        self._last = upstream
        return out

    def _content_run(self, channel: _Channel, span: bytes, bodies: list[bytes], named: int) -> bytes | None:
        """Answer text: the events as they came, renumbered if they must be, each with its
        ``event:`` line."""
        old, new = channel.upstream, channel.out
        if old != new:
            renumbered = run_renumbered(span, old, new, len(bodies)) if not escaped(span) else None
            if renumbered is None:
                edited = [renumber(body, old, new) for body in bodies]
                return None if None in edited else named_events(cast(list[bytes], edited))
            span = renumbered
        return with_event_lines(span, len(bodies), named)

    def _thinking_run(
        self, channel: _Channel, span: bytes, bodies: list[bytes], texts: list[str], named: int
    ) -> bytes | None:
        """Steady reasoning: each event renamed into a ``thinking_delta`` (see :func:`as_thinking`)."""
        old, new = channel.upstream, channel.out
        if not escaped(span):
            # As for one event: each event's two names found once each, when the span grows by
            # 8 bytes an event (the decoder saw at least one of each in every event).
            renamed = span.replace(TEXT_TYPE, THINKING_TYPE).replace(TEXT_KEY, THINKING_KEY)
            if len(renamed) == len(span) + 8 * len(bodies) and span.find(THINKING_KEY) < 0:
                out = renamed if old == new else run_renumbered(renamed, old, new, len(bodies))
                if out is not None:
                    return with_event_lines(out, len(bodies), named)
        edited = [self._as_thinking(body, old, new, text) for body, text in zip(bodies, texts, strict=True)]
        return None if None in edited else named_events(cast(list[bytes], edited))

    def _as_thinking(self, data: bytes, old: int, new: int, text: str, head: int = 0) -> bytes | None:
        return as_thinking(data, old, new, text, head)

    def _held_under_cap(self, channel: _Channel, text: str) -> bool:
        """Redacted: hold ``text`` for the block under way, when that leaves it within the cap (a
        block that outgrows it ends after the event that crosses it, as :meth:`event` ends it)."""
        assert self._config is not None
        size = len(text) if text.isascii() else len(text.encode())
        if channel.held + size > self._config.max_buffer_bytes:
            return False
        channel.parts.append(text)
        channel.held += size
        return True

    # -- the numbering map ------------------------------------------------------------------------

    def _map(self, upstream: int, kind: bytes | None, may_open: bool = True) -> tuple[list[SSEEvent], int | None]:
        """The output index for an event passed on unread that names block ``upstream``, and the
        events to send before it. ``None``: an index the stream never introduced, left alone."""
        if kind == b"content_block_start":  # a block the client appends: it takes the next index
            self._indexes[upstream] = self._take_index()
            return [], self._indexes[upstream]
        channel = self._channels.get(upstream)
        if channel is not None:
            if kind == b"content_block_delta" and may_open:
                return self._text_block(channel), channel.out  # its text must land on a text block
            return [], (channel.out if channel.out >= 0 else None)
        new = self._indexes.get(upstream)
        if new is not None:
            return [], new
        if kind == b"content_block_delta" and may_open and self._may_reopen(upstream):
            channel = self._reopen(upstream)  # late text: it goes on in a new text block
            return self._text_block(channel), channel.out
        return [], self._closed.get(upstream)

    def _likely_channel(self) -> _Channel | None:
        """The text channel an oversized delta whose ``"index"`` is not in its first piece most likely
        writes to: the one the last block event named (reopened if that block had ended: text
        after its stop), if it was a text block."""
        last = self._last
        channel = self._channels.get(last) if last is not None else None
        if channel is None and last is not None and self._may_reopen(last):
            channel = self._reopen(last)
        if channel is None and len(self._channels) == 1:
            channel = next(iter(self._channels.values()))  # the one text block open
        return channel

    def _text_block(self, channel: _Channel) -> list[SSEEvent]:
        """The events that leave ``channel`` writing to an open text block."""
        if channel.kind == CONTENT:
            return []
        return self._close(channel) + self._open(channel, CONTENT)

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
        before, new = self._map(upstream, kind or named)
        if new is None or new == upstream:
            return [*before, event]
        value = b"%d" % new
        return [*before, encode_event(with_indexes(one_line(data), lambda _: value), fields=event.fields)]

    # -- per event ------------------------------------------------------------------------------

    def _unreadable(self, event: SSEEvent) -> list[SSEEvent]:
        """An event no messages client can take (not JSON, or a known type of the wrong shape):
        it goes out as it came, after the held text. Renumbering it would only disguise it."""
        self.counts.unreadable_events += 1
        return [*self.flush(), event]

    def _block_start(self, event: SSEEvent, ev: Event, lenient: bool) -> list[SSEEvent]:
        block, upstream = ev.content_block, ev.index
        if block is None or upstream is None:
            return self._unreadable(event)
        cfg = self._resolve(None)  # already resolved: the first event did
        if block.type in NATIVE:
            self._native = True  # upstream reasoning wins for the whole message
        elif block.type == "text" and not self._native and upstream not in self._channels:
            scanner = self._scanner(cfg)
            channel = self._channels[upstream] = _Channel(scanner, upstream, event)
            if block.text:  # a start carrying text (the real API sends ""): the channel's first text
                text, channel.surrogate = join_surrogates("", block.text)
                return self._emit(channel, channel.scanner.feed(text))
            return []  # held until the first run is known
        if block.type == "tool_use" and self.transcripts is not None and isinstance(block.id, str):
            self.transcripts.call(0, block.id)
        new = self._indexes[upstream] = self._next
        self._next += 1
        return [event] if new == upstream else [reindexed(event, "content_block_start", upstream, new)]

    def _block_delta(self, event: SSEEvent, ev: Event, lenient: bool) -> list[SSEEvent]:
        upstream, delta = ev.index, ev.delta
        if upstream is None or delta is None:
            return self._unreadable(event)
        channel = self._channels.get(upstream)
        text = delta.text
        if channel is None:
            new = self._indexes.get(upstream)
            if new is not None:
                return [event] if new == upstream else [reindexed(event, "content_block_delta", upstream, new)]
            if not self._may_reopen(upstream) or delta.type != "text_delta" or text is None:
                new = self._closed.get(upstream)  # after its text block's stop: on its last block
                if new is None:
                    return self._unreadable(event)  # a delta for a block that never started
                return [event] if new == upstream else [reindexed(event, "content_block_delta", upstream, new)]
            channel = self._reopen(upstream)  # text after its block's stop: it goes on in a new block
        if delta.type != "text_delta" or text is None:
            # A citation or another delta of the text block: after the text so far, on a text block.
            out = self._emit(channel, channel.scanner.flush())
            out += self._text_block(channel)
            new = channel.out
            out.append(event if new == upstream else reindexed(event, "content_block_delta", upstream, new))
            return out
        data = event.data
        assert data is not None
        if lenient or channel.surrogate:
            # Written afresh: the text as whole characters, the index as an integer.
            text, channel.surrogate = join_surrogates(channel.surrogate, text)
            doc = obj(one_line(data))
            return self._emit(channel, channel.scanner.feed(text), (event, doc) if doc is not None else None)
        segments = channel.scanner.feed(text)
        if len(segments) == 1 and segments[0].text == text:
            if segments[0].kind == CONTENT:
                # The common case, answer text: the event goes out as it came (renumbered if it must be).
                out = [] if channel.kind == CONTENT else self._close(channel) + self._open(channel, CONTENT)
                new = channel.out
                out.append(event if new == upstream else reindexed(event, "content_block_delta", upstream, new))
                return out
            if not self._redacted:
                # All reasoning: the event renamed into a thinking_delta on its bytes, when provably
                # what the rewrite below gives.
                out = [] if channel.kind == REASONING else self._close(channel) + self._open(channel, REASONING)
                edited = self._as_thinking(data, upstream, channel.out, text) if data.find(b"\n") < 0 else None
                if edited is not None:  # (data of several lines is written afresh, on one)
                    channel.digest.update(text.encode())
                    out.append(encode_event(edited, fields=fields_for(event, "content_block_delta")))
                    return out
                return out + self._emit(channel, segments, self._source(event, data, upstream, text))
        return self._emit(channel, segments, self._source(event, data, upstream, text))

    @staticmethod
    def _source(event: SSEEvent, data: bytes, upstream: int, text: str) -> tuple[SSEEvent, Obj] | None:
        """The upstream event whose fields the translator does not own ride on the first delta
        written for it; ``None`` when it has none (its bytes are those the translator writes)."""
        if data == text_delta_prefix(upstream) + encode(text) + b"}}":
            return None
        doc = obj(one_line(data))
        return (event, doc) if doc is not None else None

    def _block_stop(self, event: SSEEvent, ev: Event) -> list[SSEEvent]:
        upstream = ev.index
        if upstream is None:
            return self._unreadable(event)
        channel = self._channels.get(upstream)
        if channel is not None:
            return self._finish_channel(upstream, channel)
        new = self._indexes.get(upstream, self._closed.get(upstream))
        if new is None:
            return self._unreadable(event)
        return [event] if new == upstream else [reindexed(event, "content_block_stop", upstream, new)]

    # -- per channel ----------------------------------------------------------------------------

    def _may_reopen(self, upstream: int) -> bool:
        """Whether a delta naming ``upstream`` is text after its block's stop, within the message."""
        return upstream in self._closed and upstream not in self._indexes and not self._ended

    def _reopen(self, upstream: int) -> _Channel:
        """A new channel for a text block that had ended: scanned as a text block after the first."""
        scanner = self._scanner(self._resolve(None))
        channel = self._channels[upstream] = _Channel(scanner, upstream, None)
        return channel

    def _scanner(self, cfg: ThinkExtractConfig) -> Scanner:
        """A text block's scanner: the message's first, or one after it."""
        scanner = Scanner(after_first_channel(cfg) if self._texts else cfg)
        if self.transcripts is not None:
            self.transcripts.watch(0, scanner)  # one answer: its text blocks' texts in order
        self._texts += 1
        return scanner

    def said(self) -> list[Said]:
        """The message's answer: what the model wrote in its text blocks, and its tool calls."""
        t = self.transcripts
        if t is None or not (t.texts or t.calls):
            return []
        return [Said(t.text(0), tuple(t.calls.get(0, ())))]

    def _finish_all(self) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for upstream, channel in list(self._channels.items()):
            out += self._finish_channel(upstream, channel)
        return out

    def _finish_channel(self, upstream: int, channel: _Channel) -> list[SSEEvent]:
        del self._channels[upstream]
        scanner = channel.scanner
        out: list[SSEEvent] = []
        if channel.surrogate:  # half a character that never got its other half
            channel.surrogate = ""
            out += self._emit(channel, scanner.feed("\ufffd"))
        out += self._emit(channel, scanner.finish())
        self.counts.add(scanner)
        out += self._close(channel)
        if not channel.emitted:  # nothing to say: the block stays, as an empty text block
            out += self._open(channel, CONTENT)
            out += self._close(channel)
        self._closed[upstream] = channel.out
        return out

    def _emit(
        self, channel: _Channel, segments: list[Segment], source: tuple[SSEEvent, Obj] | None = None
    ) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for seg in segments:
            if seg.kind != channel.kind:
                out += self._close(channel)
                out += self._open(channel, seg.kind)
            if seg.kind == REASONING:
                if self._redacted:
                    out += self._hold_redacted(channel, seg.text)
                    continue
                channel.digest.update(seg.text.encode())
            if source is not None:
                out.append(self._delta_from(source, channel.out, seg))
                source = None
            elif seg.kind == CONTENT:
                out.append(delta_event(channel.out, text_delta(seg.text)))
            else:
                out.append(delta_event(channel.out, thinking_delta(seg.text)))
        return out

    def _delta_from(self, source: tuple[SSEEvent, Obj], index: int, seg: Segment) -> SSEEvent:
        """A delta for ``seg`` keeping, in order, the fields of the upstream event it came from."""
        event, doc = source
        reasoning = seg.kind == REASONING
        body: Obj = {}
        for key, value in doc.items():
            if key == "index":
                body[key] = index
            elif key == "delta" and (fields := obj(value)) is not None:
                delta: Obj = {}
                for k, v in fields.items():
                    if k == "type":
                        delta[k] = "thinking_delta" if reasoning else "text_delta"
                    elif k == "text":
                        delta["thinking" if reasoning else "text"] = seg.text
                    elif not (reasoning and k == "thinking"):  # the text is the thinking: no other
                        delta[k] = v
                body[key] = delta
            else:
                body[key] = value
        return encode_event(encode(body), fields=fields_for(event, "content_block_delta"))

    def _open(self, channel: _Channel, kind: Kind) -> list[SSEEvent]:
        channel.kind = kind
        channel.emitted = True
        if kind == REASONING:
            if self._redacted:
                channel.parts, channel.held = [], 0
                return []  # written whole when the run ends
            channel.digest = hashlib.sha256()
            channel.out = self._take_index()
            return [start_event(channel.out, THINKING_BLOCK)]
        channel.out = self._take_index()
        start, channel.start = channel.start, None
        if start is None:
            return [start_event(channel.out, TEXT_BLOCK)]
        # The upstream start event goes out for the first text block, with all its fields.
        assert start.data is not None
        read, lenient = read_event(start.data)
        if not lenient and read is not None and channel.out == channel.upstream and read.content_block == EMPTY_TEXT:
            return [resent(start, "content_block_start")]
        doc = obj(one_line(start.data))
        if doc is None:  # only the lenient reader could read it: written afresh
            return [start_event(channel.out, TEXT_BLOCK)]
        doc["index"] = channel.out
        block = obj(doc["content_block"])
        if block is not None:
            block["text"] = ""
            doc["content_block"] = block
        return [encode_event(encode(doc), fields=fields_for(start, "content_block_start"))]

    def _close(self, channel: _Channel) -> list[SSEEvent]:
        kind, channel.kind = channel.kind, None
        if kind is None:
            return []
        if kind == CONTENT:
            return [stop_event(channel.out)]
        if self._redacted:
            text = "".join(channel.parts)
            channel.parts, channel.held = [], 0
            index = channel.out = self._take_index()
            block = b'{"type":"redacted_thinking","data":%s}' % encode(redacted_data(text))
            return [start_event(index, block), stop_event(index)]
        signature = b'{"type":"signature_delta","signature":%s}' % encode(signature_of(channel.digest))
        channel.digest = None
        return [delta_event(channel.out, signature), stop_event(channel.out)]

    def _hold_redacted(self, channel: _Channel, text: str) -> list[SSEEvent]:
        """Hold reasoning for the redacted block under way; past ``max_buffer_bytes``, write the
        block so far and go on in a new one, so that memory stays bounded."""
        channel.parts.append(text)
        channel.held += len(text) if text.isascii() else len(text.encode())
        assert self._config is not None
        if channel.held <= self._config.max_buffer_bytes:
            return []
        out = self._close(channel)
        out += self._open(channel, REASONING)
        return out

    def _take_index(self) -> int:
        index = self._next
        self._next += 1
        return index


def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    return translated(MessagesStream(config), events)
