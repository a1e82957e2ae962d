"""The upstream ``message`` items of a Responses stream while they are open, and what each event
about one does to it.

Each message item is a :class:`~.items.Channel`; its ``output_text`` is one channel of the core's
:class:`~gateway_mw.channels.Channels` (keyed by the item's ordinal), which scans it, joins its
surrogate halves, counts it and keeps it for the reasoning record. The runs the core gives back are
written as client items by the :class:`~.items.Writer`.
"""

from __future__ import annotations

import re

from ...channels import Channels, after_first_channel, join_surrogates
from ...config import ThinkExtractConfig
from ...rawjson import Obj, as_str, obj
from ...scanner import CONTENT, Segment, extract
from ...sse import SSEEvent
from .heads import Head
from .items import Channel, ClientItem, Record, Source, Text, Writer, source_of

__all__ = ["MessageChannels"]

_HALF = re.compile("[\ud800-\udfff]")
_ANY_HIGH = "\ud800"  # stands for the high surrogate a channel holds: only its length counts


class MessageChannels:
    """The open message items, by upstream ordinal, and the closed ones that became reasoning alone."""

    __slots__ = ("core", "first", "open", "reasoning_only", "records", "writer")

    def __init__(self, config: ThinkExtractConfig, writer: Writer) -> None:
        self.core = Channels(config)
        self.writer = writer
        self.open: dict[int, Channel] = {}
        self.reasoning_only: dict[int, Channel] = {}  # closed items the client knows only as reasoning
        self.records: list[Record] = []
        self.first: Channel | None = None  # the item whose text the core scanned first

    def add(self, ordinal: int, up_id: str, item: Obj, held: Source) -> Channel:
        ch = self.open[ordinal] = Channel(ordinal, up_id, item, held)
        self.records.append(ch.record)
        return ch

    def settings(self, ch: Channel) -> ThinkExtractConfig:
        """The settings the core scans ``ch``'s next text with: an injected open tag opens only the
        response's first text."""
        config = self.core.resolve(None)
        first = self.first is None or (self.first is ch and not ch.ended)
        return config if first else after_first_channel(config)

    def feed(self, ch: Channel, text: str, strict: bool = False) -> list[Segment]:
        """``text`` of ``ch`` through its channel: the runs to write now. ``strict``: msgspec read it,
        so it holds no half of a character (a lone surrogate escape is what msgspec refuses)."""
        if not text:
            return []
        if self.first is None:
            self.first = ch
        if ch.half or (not strict and _HALF.search(text) is not None):
            # The item's text as the replay of the terminal event counts it: surrogate pairs joined.
            ch.fed += len(join_surrogates(_ANY_HIGH if ch.half else "", text)[0])
            ch.half = "\ud800" <= text[-1] <= "\udbff"
        else:
            ch.fed += len(text)
        segments = self.core.text(ch.ordinal, text)
        for seg in segments:  # one event's text: it counts once if any of it went to reasoning
            if seg.kind != CONTENT:
                self.core.counts.reasoning_events += 1
                break
        return segments

    # -- events of an open item ---------------------------------------------------------------------

    def delta(self, ch: Channel, event: SSEEvent, head: Head, strict: bool) -> list[SSEEvent]:
        text = head.delta
        assert text is not None
        whole_chars = strict and not ch.half  # text the core passes as it is, if it passes it whole
        segments = self.feed(ch, text, strict)
        msg = ch.msg
        if (
            whole_chars
            and len(segments) == 1
            and segments[0].kind == CONTENT
            and segments[0].text == text
            and ch.rs is None
            and msg is not None
            and msg.part is not None
            and not msg.text_done
        ):
            msg.text.add(text)  # answer text as it came: the event goes on, pointed at its client part
            return [self.writer.forward_delta(event, head, msg.id, msg.index, len(msg.parts))]
        if not segments:
            return []
        return self.writer.runs(ch, segments, source_of(event))

    def part_added(self, ch: Channel, event: SSEEvent, head: Head) -> list[SSEEvent]:
        src = source_of(event) if head.part is not None and head.part.type == "output_text" else None
        if src is not None:
            body = src[0]
            part = obj(body.get("part"))
            if part is not None:
                ch.part_template = {**part, "text": ""}
                if "annotations" not in part:  # required of an output_text part by a strict client
                    ch.part_template["annotations"] = []
                    body["part"] = ch.part_template
                elif as_str(part.get("text")):
                    body["part"] = ch.part_template  # its text goes out as deltas (below)
            ch.held_part = src
            # A part that opens with text (some servers send the first token here): that text is
            # the part's first delta, scanned like the others; the client part opens empty.
            text = as_str(part.get("text")) if part is not None else None
            segments = self.feed(ch, text) if text else []
            return self.writer.runs(ch, segments, None) if segments else []
        # Another kind of part (a refusal): content, forwarded into the open message item.
        out = self.end_text(ch)
        if ch.msg is None:
            out += self.writer.open_message(ch)
        ch.other_part = True
        ch.produced = True
        out += self.in_item(ch, event)
        return out

    def text_done(self, ch: Channel, src: Source | None) -> list[SSEEvent]:
        """The part's text is over: a partial tag it ends with is text (a block may span parts of
        one item, a tag may not), and its done event carries the client part's text."""
        out = self.flush_one(ch)
        if ch.msg is None and not ch.produced:
            out += self.writer.open_message(ch)  # an empty answer stays an (empty) message
        msg = ch.msg
        if msg is not None and msg.part is None and ch.held_part is not None:
            out += self.writer.open_part(ch)  # an empty part stays, as in a stream
        if msg is not None and msg.part is not None and not msg.text_done:
            if ch.raw_text and src is not None:
                self._known_text(ch, msg, as_str(src[0].get("text")))
            out += self.writer.text_done(msg, src)
        return out

    def _known_text(self, ch: Channel, msg: ClientItem, upstream: str | None) -> None:
        """A delta too large to read went into this part unscanned: its text, for the done events,
        is the answer the upstream's whole text ends with."""
        ch.raw_text = False
        if upstream is None:
            return
        runs = [seg.text for seg in extract(upstream, self.settings(ch)) if seg.kind == CONTENT]
        msg.text = Text()
        if runs:
            msg.text.add(runs[-1])

    def part_done(self, ch: Channel, event: SSEEvent) -> list[SSEEvent]:
        if ch.other_part:
            ch.other_part = False
            out = self.in_item(ch, event)
            src = source_of(event)
            if ch.msg is not None and src is not None:
                part = obj(src[0].get("part"))
                ch.msg.parts.append(part if part is not None else {})
            return out
        # The part's text is over, though the upstream did not say so: its output_text.done is the
        # gateway's own (the upstream's content_part.done follows it, as itself).
        out = self.text_done(ch, None) if ch.msg is None or not ch.msg.text_done else []
        if ch.msg is not None and ch.msg.part is not None:
            out += self.writer.close_part(ch.msg, source_of(event))
        return out

    def in_item(self, ch: Channel, event: SSEEvent) -> list[SSEEvent]:
        """An event about a message item (annotation, refusal…), pointed at its client item."""
        msg = ch.msg
        src = source_of(event)
        if src is None:
            return [self.writer.unread(event)]
        body, fields = src
        if msg is not None:
            body["output_index"] = msg.index
            if "item_id" in body:
                body["item_id"] = msg.id
            if "content_index" in body:
                body["content_index"] = len(msg.parts)
        return [self.writer.send(body, fields)]

    def close(self, ch: Channel, src: Source | None, status: str = "completed") -> list[SSEEvent]:
        """The upstream message item is over (or the response is): close what the client has open."""
        out = self.end_text(ch)
        msg = ch.msg
        if msg is not None and msg.part is not None and not msg.text_done:
            out += self.writer.text_done(msg, None)
        if ch.msg is None and not ch.produced:
            out += self.writer.open_message(ch)  # an upstream message with no text at all stays
        if ch.msg is not None:
            out += self.writer.close_part(ch.msg, None)
            out += self.writer.close_message(ch, src, status)
        elif ch.opened == 0:
            self.reasoning_only[ch.ordinal] = ch
        del self.open[ch.ordinal]
        return out

    def drop(self, ch: Channel) -> None:
        """``ch`` is done without the gateway writing its end (the upstream's done event, unread, ends
        it for the client); whatever its channel still held has no item to go into."""
        self.core.end(ch.ordinal)
        del self.open[ch.ordinal]

    def late_text(self, ch: Channel, event: SSEEvent) -> list[SSEEvent]:
        """A text delta after its item was done, for an item the client knows only as reasoning:
        its text goes out in a message item of its own (a client reads text only from messages)."""
        out = self.writer.open_message(ch)
        out += self.writer.open_part(ch)
        src = source_of(event)
        delta = as_str(src[0].get("delta")) if src is not None else None
        if delta:
            out += self.writer.runs(ch, [Segment(CONTENT, delta)], src)
        assert ch.msg is not None
        out += self.writer.close_part(ch.msg, None)
        out += self.writer.close_message(ch, None)
        return out

    # -- held text ----------------------------------------------------------------------------------

    def end_text(self, ch: Channel) -> list[SSEEvent]:
        """The item's text is over: what its channel held goes out, its reasoning item closes."""
        ch.ended = ch.ended or ch.ordinal in self.core
        ch.half = False
        segments = self.core.end(ch.ordinal)
        out = self.writer.runs(ch, segments, None) if segments else []
        out += self.writer.close_reasoning(ch)
        return out

    def flush_one(self, ch: Channel) -> list[SSEEvent]:
        """What ``ch``'s channel holds, as deltas of the items it belongs to (scanning goes on)."""
        scanner = self.core.scanner(ch.ordinal)
        segments = scanner.flush() if scanner is not None else []
        return self.writer.runs(ch, segments, None) if segments else []

    def flush(self) -> list[SSEEvent]:
        """Every channel's held text (something unread goes out next): where it was cut is kept for
        the replay of the terminal event."""
        out: list[SSEEvent] = []
        for ordinal, segments in self.core.flush():
            assert isinstance(ordinal, int)  # the core's channels are the open items' ordinals
            ch = self.open[ordinal]
            ch.note_flush()
            out += self.writer.runs(ch, segments, None)
        return out

    def finish(self) -> list[SSEEvent]:
        """End of stream without a terminal event: held text goes out, reasoning items close; a
        message stays open as the upstream left it."""
        out: list[SSEEvent] = []
        for ch in list(self.open.values()):
            out += self.end_text(ch)
            if not ch.produced and ch.held_added is not None:
                out += self.writer.open_message(ch)  # an empty message the upstream opened: not lost
                if ch.held_part is not None:
                    out += self.writer.open_part(ch)
        return out
