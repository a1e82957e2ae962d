"""The client items one upstream message item becomes, and the events that write them.

A :class:`Channel` is an upstream ``message`` item whose ``output_text`` is scanned as one channel
(see ``messages``). Its runs become client items in order: a ``reasoning`` item for each reasoning
run, a ``message`` item for the answer text around them (the first keeps the upstream id, later ones
``<id>_1``, ``<id>_2``…). The :class:`Writer` writes their events, numbered through the stream's one
:class:`Numbering`, and the upstream events that go on as they came but for their numbers.

Memory: an item's text is kept while the item is open (its done events repeat it), compacted as it
grows, and dropped when it closes; what ``response.completed`` repeats is rebuilt from the upstream's
own terminal event (see ``rebuild.py``), guided by the small :class:`Record` of each channel.
"""

from __future__ import annotations

from typing import Any

from ...config import ThinkExtractConfig
from ...marks import encode_blob
from ...rawjson import Obj, as_str, obj
from ...scanner import CONTENT, Segment, merge_segments
from ...sse import SSEEvent
from ..base import NewId
from .heads import Head, body_of, event_of, item_id_of, whole
from .numbering import Numbering

__all__ = ["Channel", "ClientItem", "Record", "Source", "Writer", "formats", "points_at", "source_of"]

Source = tuple[Obj, bytes]  # an upstream event to rewrite: its data, and its non-data lines
# Event types that name a content part, and so must carry content_index for a strict client.
_PART_SCOPED = ("response.content_part.", "response.output_text.", "response.reasoning_text.", "response.refusal.")
_ITEM_DONE = "response.output_item.done"
_DEFAULT_PART: Obj = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}


def points_at(head: Head, item_id: str, index: int, part: int, seq: int) -> bool:
    """Whether a text delta is numbered and pointed as the client's part ``part`` of item ``item_id``
    at ``index`` (numbers read as the SDKs read them: ``4``, ``4.0``, ``"4"``), ``seq`` its number,
    with the ``logprobs`` a strict client requires: then it goes on as it came."""
    return (
        whole(head.sequence_number) == seq
        and whole(head.output_index) == index
        and whole(head.content_index) == part
        and item_id_of(head) == item_id
        and head.logprobs is not None
    )


def source_of(event: SSEEvent) -> Source | None:
    """An upstream event as the writer rewrites it: its data decoded one level, and its other lines."""
    body = body_of(event.data) if event.data is not None else None
    return (body, event.fields) if body is not None else None


class Text:
    """Text that arrives in many small pieces, kept compact: every few hundred pieces are joined
    into a chunk (never the whole text again, so that keeping it costs about its own size)."""

    __slots__ = ("_chunks", "_pieces")

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._pieces: list[str] = []

    def add(self, piece: str) -> None:
        pieces = self._pieces
        pieces.append(piece)
        if len(pieces) >= 256:
            self._chunks.append("".join(pieces))
            self._pieces = []

    def extend(self, pieces: list[str]) -> None:
        self._pieces += pieces
        if len(self._pieces) >= 256:
            self._chunks.append("".join(self._pieces))
            self._pieces = []

    def value(self) -> str:
        text = "".join(self._chunks + self._pieces)
        self._chunks, self._pieces = ([text], []) if text else ([], [])
        return text


class ClientItem:
    """A message or reasoning item as the client sees it, while it is open."""

    __slots__ = ("id", "index", "part", "parts", "text", "text_done")

    def __init__(self, item_id: str, index: int) -> None:
        self.id = item_id
        self.index = index
        self.parts: list[Any] = []  # a message's closed content parts, as sent
        self.part: Obj | None = None  # a message's open output_text part (its template)
        self.text = Text()  # the open part's text, or the reasoning text
        self.text_done = False  # output_text.done was sent for the open part


class Record:
    """What ``response.completed`` needs to repeat a channel's items exactly as they were streamed,
    without keeping their text: the ids handed out, and where held text was flushed."""

    __slots__ = ("flushes", "indexes", "up_id")

    def __init__(self, up_id: str) -> None:
        self.up_id = up_id
        self.flushes: list[int] = []  # characters of the item's text fed when held text was flushed
        self.indexes: list[int] = []  # the client indexes of its items, in order


class Channel:
    """One upstream message item and the client items it becomes, in order. Its text is one channel
    of the stream's :class:`~gateway_mw.channels.Channels`, keyed by the item's ordinal."""

    __slots__ = (
        "ended",
        "fed",
        "half",
        "held_added",
        "held_part",
        "item",
        "msg",
        "opened",
        "ordinal",
        "other_part",
        "part_template",
        "produced",
        "raw_text",
        "record",
        "rs",
    )

    def __init__(self, ordinal: int, up_id: str, item: Obj, held: Source | None) -> None:
        self.ordinal = ordinal
        self.item = item  # template for the client message items: the upstream item as first seen
        self.held_added = held  # the upstream output_item.added, not sent until the first run is known
        self.held_part: Source | None = None  # the upstream content_part.added, likewise
        self.part_template: Obj = _DEFAULT_PART
        self.fed = 0  # characters of the item's text fed so far
        self.half = False  # its last text ended in half a character, which the channel holds
        self.ended = False  # its text ended once (a later text is scanned as a later channel's)
        self.other_part = False  # a non-text part (refusal…) is open: its events are forwarded
        self.msg: ClientItem | None = None
        self.rs: ClientItem | None = None
        self.opened = 0  # message items opened for the client
        self.produced = False  # whether any run or part went out
        self.raw_text = False  # a delta too large to read went by: the part's text is not all known
        self.record = Record(up_id)

    @property
    def up_id(self) -> str:
        return self.record.up_id

    def note_flush(self) -> None:
        self.record.flushes.append(self.fed)


def formats(config: ThinkExtractConfig) -> frozenset[str]:
    """Where reasoning goes in a reasoning item: its ``content``, its ``summary``, or both; and, when
    the client asked for it, an ``encrypted_content`` the gateway reads back."""
    fmt = config.responses_reasoning_format
    out = frozenset(("content", "summary")) if fmt == "both" else frozenset((fmt,))
    return out | {"encrypted_content"} if config.responses_encrypted_content else out


class Writer:
    """Writes the client events of channels' items, each numbered as it is written."""

    def __init__(self, numbering: Numbering, new_id: NewId, config: ThinkExtractConfig) -> None:
        self.numbering = numbering
        self.new_id = new_id
        self.named = False  # the upstream names its events: new ones are named too
        self.items_only = False
        """A replay (``rebuild``), which reads only the items of the ``output_item.done`` events: the
        others are numbered all the same, and left unwritten (an event of no bytes and no data)."""
        self.use(config)

    def use(self, config: ThinkExtractConfig) -> None:
        """Write reasoning as the settings of the response's model say."""
        kept = formats(config)
        self.content = "content" in kept  # reasoning as reasoning_text content
        self.summary = "summary" in kept  # reasoning as a summary_text summary
        self.blob = "encrypted_content" in kept  # and as the gateway's own encrypted_content

    def send(self, body: Obj, fields: bytes | None = None) -> SSEEvent:
        body["sequence_number"] = self.numbering.take_seq()
        if self.items_only and as_str(body["type"]) != _ITEM_DONE:  # (an upstream body's type is raw)
            return SSEEvent(raw=b"")
        name = body["type"] if self.named and fields is None else None
        return event_of(body, fields, name)

    # -- upstream events passed on ------------------------------------------------------------------

    def unread(self, event: SSEEvent) -> SSEEvent:
        """An event passed on without being read: renumbered on its bytes all the same."""
        raw = self.numbering.renumber_raw(event.raw)
        return event if raw == event.raw else SSEEvent(raw=raw)

    def forward(self, event: SSEEvent, head: Head, index: int | None) -> SSEEvent:
        """An upstream event unchanged but for its number, its client ``output_index`` and the fields
        a strict client needs that the upstream left out."""
        needs_part = head.content_index is None and head.type.startswith(_PART_SCOPED)
        placed = index is None or whole(head.output_index) == index
        if whole(head.sequence_number) == self.numbering.seq and placed and not needs_part:
            self.numbering.seq += 1
            return event  # nothing to change: it goes on as it came
        body = body_of(event.data) if event.data is not None else None
        if body is None:
            return self.unread(event)
        if index is not None:
            body["output_index"] = index
        if needs_part:
            body["content_index"] = 0
        return self.send(body, event.fields)

    def forward_delta(self, event: SSEEvent, head: Head, item_id: str, index: int, part: int) -> SSEEvent:
        """A text delta whose text goes on unchanged, pointed at its client item and part: as it came
        when it points there already, else with those members (and ``logprobs``) set."""
        if points_at(head, item_id, index, part, self.numbering.seq):
            self.numbering.seq += 1
            return event
        body = body_of(event.data) if event.data is not None else None
        assert body is not None  # its head was read from it
        body.update({"item_id": item_id, "output_index": index, "content_index": part})
        body.setdefault("logprobs", [])
        return self.send(body, event.fields)

    # -- runs -----------------------------------------------------------------------------------

    def runs(self, ch: Channel, segments: list[Segment], src: Source | None) -> list[SSEEvent]:
        """The events for a channel's runs. ``src`` (the upstream delta) becomes the first text delta."""
        out: list[SSEEvent] = []
        for seg in merge_segments(segments):
            ch.produced = True
            if seg.kind == CONTENT:
                out += self.close_reasoning(ch)
                if ch.msg is None:
                    out += self.open_message(ch)
                msg = ch.msg
                assert msg is not None
                if msg.part is None:
                    out += self.open_part(ch)
                msg.text.add(seg.text)
                target = self.target(msg)
                if src is not None:
                    body, fields = src
                    src = None
                    body.update(target)
                    body["delta"] = seg.text
                    body.setdefault("logprobs", [])
                    out.append(self.send(body, fields))
                else:
                    body = {"type": "response.output_text.delta", **target, "delta": seg.text, "logprobs": []}
                    out.append(self.send(body))
            else:
                if ch.msg is not None:  # answer text came first: this message item ends here
                    out += self.close_part(ch.msg, None)
                    out += self.close_message(ch, None)
                if ch.rs is None:
                    out += self.open_reasoning(ch)
                rs = ch.rs
                assert rs is not None
                rs.text.add(seg.text)
                out += self.reasoning_deltas(rs, seg.text)
        return out

    def reasoning_deltas(self, rs: ClientItem, text: str) -> list[SSEEvent]:
        return [self.send(body) for body in self.reasoning_delta_bodies(rs, text)]

    def reasoning_delta_bodies(self, rs: ClientItem, text: str) -> list[Obj]:
        """The reasoning delta events of ``text``, one per form reasoning is written in, unnumbered."""
        out = []
        where: Obj = {"item_id": rs.id, "output_index": rs.index}
        if self.content:
            out.append({"type": "response.reasoning_text.delta", **where, "content_index": 0, "delta": text})
        if self.summary:
            out.append({"type": "response.reasoning_summary_text.delta", **where, "summary_index": 0, "delta": text})
        return out

    @staticmethod
    def target(msg: ClientItem) -> Obj:
        return {"item_id": msg.id, "output_index": msg.index, "content_index": len(msg.parts)}

    # -- message items --------------------------------------------------------------------------

    def open_message(self, ch: Channel) -> list[SSEEvent]:
        index = self.numbering.take_index()
        self.numbering.point(ch.ordinal, index)  # late or unread events of this item land here
        ch.opened += 1
        ch.produced = True
        msg_id = ch.up_id if ch.opened == 1 else f"{ch.up_id}_{ch.opened - 1}"
        ch.msg = ClientItem(msg_id, index)
        ch.record.indexes.append(index)
        held, ch.held_added = ch.held_added, None
        if held is not None:
            body, fields = held
            body["output_index"] = index
            item = obj(body["item"]) if not isinstance(body.get("item"), dict) else body["item"]
            if item is not None:
                item["id"] = msg_id
                body["item"] = item
            return [self.send(body, fields)]
        item = {**ch.item, "id": msg_id, "status": "in_progress", "content": []}
        return [self.send({"type": "response.output_item.added", "output_index": index, "item": item})]

    def open_part(self, ch: Channel) -> list[SSEEvent]:
        msg = ch.msg
        assert msg is not None
        msg.part = ch.part_template
        msg.text_done = False
        msg.text = Text()
        target = self.target(msg)
        held, ch.held_part = ch.held_part, None
        if held is not None:
            body, fields = held
            body.update(target)
            return [self.send(body, fields)]
        part = {**ch.part_template, "text": ""}
        return [self.send({"type": "response.content_part.added", **target, "part": part})]

    def text_done(self, msg: ClientItem, src: Source | None) -> list[SSEEvent]:
        msg.text_done = True
        text = msg.text.value()
        target = self.target(msg)
        if src is not None:
            body, fields = src
            body.update(target)
            body["text"] = text
            body.setdefault("logprobs", [])
            return [self.send(body, fields)]
        return [self.send({"type": "response.output_text.done", **target, "text": text, "logprobs": []})]

    def close_part(self, msg: ClientItem, src: Source | None) -> list[SSEEvent]:
        """The open output_text part's done events (``src``: the upstream content_part.done)."""
        if msg.part is None:
            return []
        out = [] if msg.text_done else self.text_done(msg, None)
        target = self.target(msg)
        text = msg.text.value()
        if src is not None:
            body, fields = src
            upstream_part = obj(body["part"]) if "part" in body and not isinstance(body["part"], dict) else None
            part = {**(upstream_part if upstream_part is not None else msg.part), "text": text}
            part.setdefault("annotations", [])
            body.update(target)
            body["part"] = part
        else:
            part = {**msg.part, "text": text}
            body, fields = {"type": "response.content_part.done", **target, "part": part}, None
        msg.parts.append(part)
        msg.part = None
        msg.text = Text()
        out.append(self.send(body, fields))
        return out

    def close_message(self, ch: Channel, src: Source | None, status: str = "completed") -> list[SSEEvent]:
        msg = ch.msg
        assert msg is not None
        ch.msg = None
        ch.raw_text = False  # the part an unread delta went into is done: the next one's text is all known
        upstream_item = obj(src[0]["item"]) if src is not None and "item" in src[0] else None
        if src is not None and upstream_item is not None:
            body, fields = src
            body["output_index"] = msg.index
            body["item"] = {**upstream_item, "id": msg.id, "content": msg.parts}
            return [self.send(body, fields)]
        item = {**ch.item, "id": msg.id, "status": status, "content": msg.parts}
        return [self.send({"type": "response.output_item.done", "output_index": msg.index, "item": item})]

    # -- reasoning items ------------------------------------------------------------------------

    def open_reasoning(self, ch: Channel) -> list[SSEEvent]:
        rs = ch.rs = ClientItem(self.new_id("rs_"), self.numbering.take_index())
        ch.record.indexes.append(rs.index)
        item: Obj = {"id": rs.id, "type": "reasoning", "summary": []}
        if self.content:
            item["content"] = []
        item["status"] = "in_progress"
        where: Obj = {"item_id": rs.id, "output_index": rs.index}
        out = [self.send({"type": "response.output_item.added", "output_index": rs.index, "item": item})]
        if self.content:
            part = {"type": "reasoning_text", "text": ""}
            out.append(self.send({"type": "response.content_part.added", **where, "content_index": 0, "part": part}))
        if self.summary:
            part = {"type": "summary_text", "text": ""}
            kind = "response.reasoning_summary_part.added"
            out.append(self.send({"type": kind, **where, "summary_index": 0, "part": part}))
        return out

    def close_reasoning(self, ch: Channel) -> list[SSEEvent]:
        rs = ch.rs
        if rs is None:
            return []
        ch.rs = None
        text = rs.text.value()
        where: Obj = {"item_id": rs.id, "output_index": rs.index}
        out = []
        item: Obj = {"id": rs.id, "type": "reasoning", "summary": []}
        if self.content:
            part: Obj = {"type": "reasoning_text", "text": text}
            out.append(self.send({"type": "response.reasoning_text.done", **where, "content_index": 0, "text": text}))
            out.append(self.send({"type": "response.content_part.done", **where, "content_index": 0, "part": part}))
            item["content"] = [dict(part)]
        if self.summary:
            summary: Obj = {"type": "summary_text", "text": text}
            kind = "response.reasoning_summary_text.done"
            out.append(self.send({"type": kind, **where, "summary_index": 0, "text": text}))
            kind = "response.reasoning_summary_part.done"
            out.append(self.send({"type": kind, **where, "summary_index": 0, "part": summary}))
            item["summary"] = [dict(summary)]
        if self.blob:
            item["encrypted_content"] = encode_blob(text)
        item["status"] = "completed"
        out.append(self.send({"type": "response.output_item.done", "output_index": rs.index, "item": item}))
        return out
