"""The Responses stream translator: upstream events in, client events out (sans-I/O).

Dispatch only: which upstream event touches which channel (``items.Channel``), and what goes out
for it. The client items are written by ``items.Writer``; every event that goes out, translated,
forwarded or passed on unread, is numbered by the stream's one ``numbering.Numbering``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import msgspec

from ...config import ThinkExtractConfig
from ...rawjson import Obj, TopLevelKeys, as_int, as_str, encode, join_surrogates, obj, raw_list
from ...scanner import CONTENT, Segment, extract
from ...sse import SSEEvent, event_type
from ..base import Counts, NewId, Said, Transcripts, after_first_channel, random_id, translated
from . import fastpath, rebuild
from .items import Channel, ClientItem, Record, Source, Text, Writer
from .numbering import Numbering
from .wire import CREATED, DONE, LARGE, TERMINAL, Head, body_of, decode_head, item_id_of, whole

__all__ = ["ResponsesStream", "formats", "transform_body", "translate_stream"]

# Event types that name a content part, and so must carry content_index for a strict client.
_PART_SCOPED = ("response.content_part.", "response.output_text.", "response.reasoning_text.", "response.refusal.")
# What a strict client requires of the response object, with the value written when it is missing.
_RESPONSE_DEFAULTS: Obj = {
    "object": "response",
    "created_at": 0,
    "model": "",
    "output": [],
    "parallel_tool_calls": False,
    "tool_choice": "auto",
    "tools": [],
}


# The oversized events that name a message channel the translator follows.
_READ_WHEN_OVERSIZED = frozenset(
    {
        b"response.output_text.delta",
        b"response.output_text.done",
        b"response.content_part.done",
        b"response.output_item.done",
    }
)


class _Dropped:
    """The bytes of an oversized event that the gateway answered itself: none go on."""

    def feed(self, piece: bytes) -> bytes:
        return b""

    def finish(self) -> bytes:
        return b""


_DROPPED = _Dropped()


def formats(config: ThinkExtractConfig) -> frozenset[str]:
    """Where reasoning goes in a reasoning item: its ``content``, its ``summary``, or both; and, when
    the client asked for it, an ``encrypted_content`` the gateway reads back."""
    fmt = config.responses_reasoning_format
    out = frozenset(("content", "summary")) if fmt == "both" else frozenset((fmt,))
    return out | {"encrypted_content"} if config.responses_encrypted_content else out


class ResponsesStream:
    """Translate a Responses event stream, one event at a time."""

    large_events: frozenset[bytes] = LARGE

    def __init__(self, config: ThinkExtractConfig, *, new_id: NewId = random_id) -> None:
        self._base = config
        self.config = config  # resolved for the response's model by its first event
        self._resolved = False
        self._off = False  # the model's profile disables extraction: everything passes
        self._native = False  # the upstream sent a reasoning item: later messages are left alone
        self._terminated = False
        self._source_id = new_id
        self.given_ids: list[str] = []  # every id made up, in order: the terminal rebuild reuses them
        self.numbering = Numbering()
        self.writer = Writer(self.numbering, self._new_id, formats(config))
        self.channels: dict[int, Channel] = {}  # by upstream ordinal, while open
        self._reasoning_only: dict[int, Channel] = {}  # closed items that became reasoning alone
        self._records: list[Record] = []
        self._texts = 0  # message items scanned so far (see after_first_channel)
        self._oversized: TopLevelKeys | _Dropped | None = None
        self.declined: fastpath.Read | None = None  # an event the fast path read and declined
        self.steady: fastpath.Steady | None = None  # the fast path's channel, while no other path runs
        self.counts = Counts()
        self.transcripts: Transcripts | None = None  # set when the reasoning record keeps what was said

    def said(self) -> list[Said]:
        """The response's answer: what the model wrote in its message items, its tool calls, and
        the ids the gateway gave its items (a client may refer to them)."""
        t = self.transcripts
        if t is None or not (t.texts or t.calls):
            return []
        ids = (*self.given_ids, *(r.up_id for r in self._records if r.up_id not in self.given_ids))
        return [Said(t.text(0), tuple(t.calls.get(0, ())), ids)]

    def _new_id(self, prefix: str) -> str:
        new = self._source_id(prefix)
        self.given_ids.append(new)
        return new

    # -- the translator protocol ----------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        self.steady = None  # whatever this event does, the fast path looks again
        data = event.data
        if data is None or self._terminated or self._off:
            return [event]
        if data == DONE:
            return [*self.flush(), event]
        declined = self.declined
        if declined is not None and declined[0] == data:
            read = declined[1]  # the fast path read this event already
            self.declined = None
        else:
            read = decode_head(data)
        if read is None or not read[0].type:
            self.counts.unreadable_events += 1
            return [*self.flush(), self._unread(event)]
        head, strict = read
        if event.event is not None:
            self.writer.named = True
        if not self._resolved:
            self._resolve(head)
            if self._off:
                return [event]
        return self._dispatch(event, head, strict)

    def flush(self) -> list[SSEEvent]:
        """Every channel's held text, as deltas of the items it belongs to (opened if need be)."""
        self.steady = None
        if self._terminated or self._off:
            return []
        out: list[SSEEvent] = []
        for ch in self.channels.values():
            if ch.scanner is not None:
                segments = ch.scanner.flush()
                if segments:
                    ch.note_flush()
                    out += self.writer.runs(ch, segments, None)
        return out

    def finish(self) -> list[SSEEvent]:
        """End of stream without a terminal event: held text goes out, reasoning items close; a
        message stays open as the upstream left it."""
        self.steady = None
        if self._terminated or self._off:
            return []
        out: list[SSEEvent] = []
        for ch in list(self.channels.values()):
            out += self._end_text(ch)
            if not ch.produced and ch.held_added is not None:
                out += self.writer.open_message(ch)  # an empty message the upstream opened: not lost
                if ch.held_part is not None:
                    out += self.writer.open_part(ch)
        return out

    def oversized(self, piece: bytes, more: bool) -> bytes:
        """An event too large to hold, renumbered on its bytes as they go by. A text delta of an open
        message item goes into its client part (its text is not scanned)."""
        self.steady = None
        if (self._terminated and self._oversized is None) or self._off:
            return piece
        out = b""
        if self._oversized is None:  # the first piece of the event
            kind = event_type(piece)
            delta = kind == b"response.output_text.delta"
            ch = self._oversized_channel(piece, guess=delta) if kind in _READ_WHEN_OVERSIZED else None
            if ch is not None and delta:
                out = b"".join(e.raw for e in self._raw_text(ch))
            elif ch is not None:
                out = self._done_unread(ch, kind)
            elif kind is not None and kind.decode() in TERMINAL:
                # Every item the client has open is done before the terminal event, which goes on
                # as it came but for its number (a client checks that each item it was given is
                # done; the output of a terminal event it cannot read is the upstream's).
                for open_channel in list(self.channels.values()):
                    out += b"".join(e.raw for e in self._close_channel(open_channel, None))
                self._terminated = True
                self._oversized = self.numbering.raw_rewriter()
            else:
                self._oversized = self.numbering.raw_rewriter()
        rewriter = self._oversized
        assert rewriter is not None
        out += rewriter.feed(piece)
        if not more:
            out += rewriter.finish()
            self._oversized = None
        return out

    def _done_unread(self, ch: Channel, kind: bytes | None) -> bytes:
        """A done event of ``ch`` too large to read, which repeats its text: what goes out before
        its bytes, and how they go (``self._oversized``).

        When a delta of the client's open part went through unread, only the upstream's bytes hold
        that part's whole text: a done event of the part (or of the item, when the client knows it
        by the upstream's id) goes on retargeted to it, as that delta did. Otherwise the gateway
        holds the text the client was given, and closes the client's items itself; the upstream's
        repetition goes no further."""
        msg = ch.msg
        if ch.raw_text and msg is not None and not ch.other_part:
            if kind in (b"response.output_text.done", b"response.content_part.done") and msg.part is not None:
                held = ch.scanner.flush() if ch.scanner is not None else []  # as _text_done does
                out = b"".join(e.raw for e in self.writer.runs(ch, held, None)) if held else b""
                if ch.msg is msg and msg.part is not None:
                    self._oversized = self._retargeted(msg, part=True)
                    if kind == b"response.content_part.done":
                        msg.parts.append({**msg.part, "text": ""})  # its text: the upstream's, unread
                        msg.part = None
                    msg.text_done = True
                    return out
                return out + self._closed_by(ch, kind)
            if kind == b"response.output_item.done" and msg.part is None and msg.id == ch.up_id:
                self._oversized = self._retargeted(msg, part=False)
                ch.msg = None
                del self.channels[ch.ordinal]
                return b""
        return self._closed_by(ch, kind)

    def _closed_by(self, ch: Channel, kind: bytes | None) -> bytes:
        """The gateway's own done events for ``ch``, for an upstream one it does not read."""
        self._oversized = _DROPPED
        unread = SSEEvent(raw=b"")
        if kind == b"response.output_text.done":
            events = self._text_done(ch, unread)
        elif kind == b"response.content_part.done" and not ch.other_part:
            events = self._part_done(ch, unread)
        else:
            events = self._close_channel(ch, None)
        return b"".join(e.raw for e in events)

    def _retargeted(self, msg: ClientItem, part: bool) -> TopLevelKeys:
        """A rewriter that points an event passed on unread at the client's item ``msg`` (and, for
        ``part``, at its open part), numbered in the stream."""
        targets = {
            b"sequence_number": lambda: b"%d" % self.numbering.take_seq(),
            b"output_index": lambda: b"%d" % msg.index,
        }
        if part:
            targets[b"content_index"] = lambda: b"%d" % len(msg.parts)
            targets[b"item_id"] = lambda: encode(msg.id)
        return TopLevelKeys(frozenset(targets), lambda key, _: targets[key]() if key in targets else None)

    def _oversized_channel(self, head: bytes, guess: bool) -> Channel | None:
        """The open message item an oversized event names by the ``output_index`` or ``item_id``
        its first bytes hold; when they hold neither (a layout that writes them after the text) and
        ``guess`` (a text delta, which only a message item takes), the one item open, if only one is."""
        seen = TopLevelKeys(frozenset({b"output_index", b"item_id"}), lambda key, value: None)
        seen.feed(head)
        index = as_int(msgspec.Raw(seen.seen[b"output_index"])) if b"output_index" in seen.seen else None
        item_id = as_str(msgspec.Raw(seen.seen[b"item_id"])) if b"item_id" in seen.seen else None
        if index is not None:
            return self.channels.get(index)
        if item_id is not None:
            return next((ch for ch in self.channels.values() if ch.up_id == item_id), None)
        return next(iter(self.channels.values())) if guess and len(self.channels) == 1 else None

    def fast_forward(self, span: bytes) -> bytes | None:
        if self._terminated or self._off:
            return span  # event() passes every event as it came
        return fastpath.fast_forward(self, span)

    @property
    def native(self) -> bool:
        """Whether the upstream sent a reasoning item: later messages are left as they are."""
        return self._native

    def replaying(self, config: ThinkExtractConfig) -> None:
        """Settings already resolved for the response's model (a replay of its output)."""
        self.steady = None
        self._resolved = True
        self.config = config
        self.writer = Writer(self.numbering, self._new_id, formats(config))
        self._off = not config.enabled

    # -- dispatch -------------------------------------------------------------------------------

    def _resolve(self, head: Head) -> None:
        self._resolved = True
        model = as_str(head.response.model) if head.response is not None else None
        self.config = cfg = self._base.for_model(model)
        self.writer = Writer(self.numbering, self._new_id, formats(cfg))
        self._off = not cfg.enabled

    def _dispatch(self, event: SSEEvent, head: Head, strict: bool) -> list[SSEEvent]:
        kind = head.type
        if kind == "response.output_item.added":
            return self._item_added(event, head)
        ordinal = self.numbering.ordinal(head)
        ch = self.channels.get(ordinal) if ordinal is not None else None
        if ch is not None:
            if kind == "response.output_text.delta" and head.delta is not None and not ch.other_part:
                return self._text_delta(ch, event, head, strict)
            if kind == "response.content_part.added":
                return self._part_added(ch, event, head)
            if kind == "response.output_text.done" and not ch.other_part:
                return self._text_done(ch, event)
            if kind == "response.content_part.done":
                return self._part_done(ch, event)
            if kind == "response.output_item.done":
                return self._close_channel(ch, self._source(event))
            return self._in_channel(ch, event)
        if kind == "response.output_text.delta" and ordinal in self._reasoning_only:
            return self._late_text(self._reasoning_only.pop(ordinal), event)
        if kind in TERMINAL:
            return self._terminal(event, kind)
        if kind in CREATED:
            return [self._response_event(event, head)]
        out = self.flush() if kind == "error" else []
        out.append(self._forward(event, head, self.numbering.client_index(ordinal)))
        return out

    # -- upstream events --------------------------------------------------------------------------

    def _item_added(self, event: SSEEvent, head: Head) -> list[SSEEvent]:
        item_type = head.item.type if head.item is not None else ""
        up_id = as_str(head.item.id) if head.item is not None else None
        ordinal = self.numbering.added(head, up_id)
        if item_type == "message" and not self._native and ordinal not in self.channels:
            body = self._body(event)
            item = obj(body.get("item")) if body is not None else None
            if body is not None and item is not None:
                cfg = after_first_channel(self.config) if self._texts else self.config
                self._texts += 1
                ch = Channel(ordinal, up_id or self._new_id("msg_"), item, (body, event.fields), cfg)
                if self.transcripts is not None:
                    ch.transcript = self.transcripts.texts.setdefault(0, [])  # one answer: every item's text
                self.channels[ordinal] = ch
                self._records.append(ch.record)
                return []  # held until its first run is known
        if self.transcripts is not None and head.item is not None and isinstance(head.item.call_id, str):
            self.transcripts.call(0, head.item.call_id)
        if item_type == "reasoning":
            self._native = True  # upstream reasoning wins
        return [self._forward(event, head, self.numbering.pass_item(ordinal))]

    def _part_added(self, ch: Channel, event: SSEEvent, head: Head) -> list[SSEEvent]:
        if head.part is not None and head.part.type == "output_text":
            body = self._body(event)
            part = obj(body.get("part")) if body is not None else None
            if body is not None:
                if part is not None:
                    ch.part_template = {**part, "text": ""}
                    if "annotations" not in part:  # required of an output_text part by a strict client
                        ch.part_template["annotations"] = []
                        body["part"] = ch.part_template
                    elif as_str(part.get("text")):
                        body["part"] = ch.part_template  # its text goes out as deltas (below)
                ch.held_part = (body, event.fields)
                ch.up_part = whole(head.content_index)
                ch.begin_text()
                # A part that opens with text (some servers send the first token here): that text is
                # the part's first delta, scanned like the others; the client part opens empty.
                text = as_str(part.get("text")) if part is not None else None
                if not text:
                    return []
                text, ch.high = join_surrogates(ch.high, text)
                segments = ch.feed(text)
                return self.writer.runs(ch, segments, None) if segments else []
        # Another kind of part (a refusal): content, forwarded into the open message item.
        out = self._end_text(ch)
        if ch.msg is None:
            out += self.writer.open_message(ch)
        ch.other_part = True
        ch.produced = True
        out += self._in_channel(ch, event)
        return out

    def _text_delta(self, ch: Channel, event: SSEEvent, head: Head, strict: bool) -> list[SSEEvent]:
        text = head.delta
        assert text is not None
        if not strict or ch.high:
            text, ch.high = join_surrogates(ch.high, text)
        ch.begin_text()
        segments = ch.feed(text)
        msg = ch.msg
        if (
            strict
            and len(segments) == 1
            and segments[0].kind == CONTENT
            and segments[0].text == text
            and ch.rs is None
            and msg is not None
            and msg.part is not None
            and not msg.text_done
        ):
            msg.text.add(text)  # the common case: the event goes out as it came (renumbered)
            return [self._forward_delta(event, head, msg.id, msg.index, len(msg.parts))]
        if not segments:
            return []
        return self.writer.runs(ch, segments, self._source(event))

    def _text_done(self, ch: Channel, event: SSEEvent) -> list[SSEEvent]:
        """The part's text is over: a partial tag it ends with is text (a block may span parts of
        one item, a tag may not), and its done event carries the client part's text."""
        out: list[SSEEvent] = []
        if ch.scanner is not None:
            segments = ch.scanner.flush()
            if segments:
                out += self.writer.runs(ch, segments, None)
        if ch.msg is None and not ch.produced:
            out += self.writer.open_message(ch)  # an empty answer stays an (empty) message
        msg = ch.msg
        if msg is not None and msg.part is None and ch.held_part is not None:
            out += self.writer.open_part(ch)  # an empty part stays, as in a stream
        if msg is not None and msg.part is not None and not msg.text_done:
            src = self._source(event)
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
        runs = [seg.text for seg in extract(upstream, ch.config) if seg.kind == CONTENT]
        msg.text = Text()
        if runs:
            msg.text.add(runs[-1])

    def _part_done(self, ch: Channel, event: SSEEvent) -> list[SSEEvent]:
        if ch.other_part:
            ch.other_part = False
            out = self._in_channel(ch, event)
            body = self._body(event)
            if ch.msg is not None and body is not None:
                part = obj(body.get("part"))
                ch.msg.parts.append(part if part is not None else {})
            return out
        out = self._text_done(ch, event) if ch.msg is None or not ch.msg.text_done else []
        if ch.msg is not None and ch.msg.part is not None:
            out += self.writer.close_part(ch.msg, self._source(event))
        return out

    def _in_channel(self, ch: Channel, event: SSEEvent) -> list[SSEEvent]:
        """An event about a message item (annotation, refusal…), pointed at its client item."""
        msg = ch.msg
        body = self._body(event)
        if body is None:
            return [self._unread(event)]
        if msg is not None:
            body["output_index"] = msg.index
            if "item_id" in body:
                body["item_id"] = msg.id
            if "content_index" in body:
                body["content_index"] = len(msg.parts)
        return [self.writer.send(body, event.fields)]

    def _terminal(self, event: SSEEvent, kind: str) -> list[SSEEvent]:
        status = "completed" if kind == "response.completed" else "incomplete"
        out: list[SSEEvent] = []
        for ch in list(self.channels.values()):
            out += self._close_channel(ch, None, status)
        self._terminated = True
        body = self._body(event)
        if body is None:
            return [*out, self._unread(event)]
        response, _ = self._complete_response(body)
        if response is not None:
            output = raw_list(response.get("output"))
            if output is not None:
                new = rebuild.output(
                    output,
                    self.config,
                    self._records,
                    self.given_ids,
                    self._native,
                    self._source_id,
                    self.numbering.client_index,
                    _replayer,
                )
                response["output"] = new
                if "output_text" in response:
                    response["output_text"] = rebuild.output_text(new)
            body["response"] = response
        out.append(self.writer.send(body, event.fields))
        return out

    def _close_channel(self, ch: Channel, src: Source | None, status: str = "completed") -> list[SSEEvent]:
        """The upstream message item is over (or the response is): close what the client has open."""
        out = self._end_text(ch)
        msg = ch.msg
        if msg is not None and msg.part is not None and not msg.text_done:
            out += self.writer.text_done(msg, None)
        if ch.msg is None and not ch.produced:
            out += self.writer.open_message(ch)  # an upstream message with no text at all stays
        if ch.msg is not None:
            out += self.writer.close_part(ch.msg, None)
            out += self.writer.close_message(ch, src, status)
        elif ch.opened == 0:
            self._reasoning_only[ch.ordinal] = ch
        del self.channels[ch.ordinal]
        return out

    def _late_text(self, ch: Channel, event: SSEEvent) -> list[SSEEvent]:
        """A text delta after its item was done, for an item the client knows only as reasoning:
        its text goes out in a message item of its own (a client reads text only from messages)."""
        out = self.writer.open_message(ch)
        out += self.writer.open_part(ch)
        src = self._source(event)
        text = src[0].get("delta") if src is not None else None
        delta = as_str(text)
        if delta:
            out += self.writer.runs(ch, [Segment(CONTENT, delta)], src)
        assert ch.msg is not None
        out += self.writer.close_part(ch.msg, None)
        out += self.writer.close_message(ch, None)
        return out

    def _end_text(self, ch: Channel) -> list[SSEEvent]:
        """The item's text is over: the scanner's held text goes out, its reasoning item closes."""
        out: list[SSEEvent] = []
        scanner = ch.scanner
        if scanner is not None:
            ch.scanner = None
            ch.config = after_first_channel(ch.config)
            segments = scanner.finish()
            self.counts.add(scanner)
            if segments:
                out += self.writer.runs(ch, segments, None)
        if ch.high:  # a high surrogate no low one followed: no character
            ch.high = ""
        out += self.writer.close_reasoning(ch)
        return out

    def _raw_text(self, ch: Channel) -> list[SSEEvent]:
        """Before an oversized text delta of ``ch`` (passed on unscanned): its client part is opened.

        From here on no event is held past ``max_event_bytes``: the events that repeat this text
        (its done events, the terminal event) would hold it whole, which is what streaming the
        delta through avoids; they stream through too, renumbered on their bytes."""
        ch.raw_text = True
        self.large_events = frozenset()
        out = self.writer.close_reasoning(ch)
        if ch.msg is None:
            out += self.writer.open_message(ch)
        msg = ch.msg
        assert msg is not None
        if msg.part is None:
            out += self.writer.open_part(ch)
        self._oversized = self._retargeted(msg, part=True)
        return out

    # -- writing ----------------------------------------------------------------------------------

    def _body(self, event: SSEEvent) -> Obj | None:
        return body_of(event.data) if event.data is not None else None

    def _source(self, event: SSEEvent) -> Source | None:
        body = self._body(event)
        return (body, event.fields) if body is not None else None

    def _unread(self, event: SSEEvent) -> SSEEvent:
        """An event passed on without being read: renumbered on its bytes all the same."""
        raw = self.numbering.renumber_raw(event.raw)
        return event if raw == event.raw else SSEEvent(raw=raw)

    def _forward(self, event: SSEEvent, head: Head, index: int | None) -> SSEEvent:
        """An upstream event unchanged but for its number, its client ``output_index`` and the fields
        a strict client needs that the upstream left out."""
        needs_part = head.content_index is None and head.type.startswith(_PART_SCOPED)
        placed = index is None or whole(head.output_index) == index
        if whole(head.sequence_number) == self.numbering.seq and placed and not needs_part:
            self.numbering.seq += 1
            return event  # the common case: nothing to change
        body = self._body(event)
        if body is None:
            return self._unread(event)
        if index is not None:
            body["output_index"] = index
        if needs_part:
            body["content_index"] = 0
        return self.writer.send(body, event.fields)

    def _forward_delta(self, event: SSEEvent, head: Head, item_id: str, index: int, part: int) -> SSEEvent:
        """A text delta as it came, pointed at its client item and part."""
        if (
            whole(head.sequence_number) == self.numbering.seq
            and whole(head.output_index) == index
            and whole(head.content_index) == part
            and item_id_of(head) == item_id
            and head.logprobs is not None
        ):
            self.numbering.seq += 1
            return event
        body = self._body(event)
        assert body is not None
        body.update({"item_id": item_id, "output_index": index, "content_index": part})
        body.setdefault("logprobs", [])
        return self.writer.send(body, event.fields)

    def _response_event(self, event: SSEEvent, head: Head) -> SSEEvent:
        """``response.created`` / ``in_progress``: given what a strict client requires if missing."""
        body = self._body(event)
        if body is not None:
            response, filled = self._complete_response(body)
            if filled:
                body["response"] = response
                return self.writer.send(body, event.fields)
        return self._forward(event, head, None)

    @staticmethod
    def _complete_response(body: Obj) -> tuple[Obj | None, bool]:
        """The event's response object (``None``: not an object), with the fields a strict client
        requires that it lacks, and whether any was lacking."""
        raw = body.get("response")
        response = obj(raw) if not isinstance(raw, dict) else raw
        if response is None:
            return None, False
        missing = {k: v for k, v in _RESPONSE_DEFAULTS.items() if k not in response}
        return ({**response, **missing}, True) if missing else (response, False)


def _replayer(config: ThinkExtractConfig, new_id: NewId) -> ResponsesStream:
    """A stream translator that replays an output (the terminal event's, a non-stream body's)."""
    return ResponsesStream(config, new_id=new_id)


def transform_body(
    body: bytes | bytearray, config: ThinkExtractConfig, *, new_id: NewId = random_id
) -> tuple[bytes | None, Counts]:
    """A non-stream ``response`` body with reasoning moved into ``reasoning`` output items: its output
    replayed through the stream's own step logic, so that stream and non-stream agree."""
    return rebuild.transform_body(body, config, _replayer, new_id=new_id)


def translate_stream(
    events: AsyncIterable[SSEEvent], config: ThinkExtractConfig, *, new_id: NewId = random_id
) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    return translated(ResponsesStream(config, new_id=new_id), events)
