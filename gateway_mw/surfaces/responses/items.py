"""The client items one upstream message item becomes, and the events that write them.

A :class:`Channel` is an upstream ``message`` item whose ``output_text`` runs through a Scanner. Its
runs become client items in order: a ``reasoning`` item for each reasoning run, a ``message`` item
for the answer text around them (the first keeps the upstream id, later ones ``<id>_1``, ``<id>_2``…).
The :class:`Writer` writes their events, numbered through the stream's one :class:`Numbering`.

Memory: an item's text is kept while the item is open (its done events repeat it), compacted as it
grows, and dropped when it closes; what ``response.completed`` repeats is rebuilt from the upstream's
own terminal event (see ``rebuild.py``), guided by the small :class:`Record` of each channel.
"""

from __future__ import annotations

from typing import Any

from ...config import ThinkExtractConfig
from ...marks import encode_blob
from ...rawjson import Obj, obj
from ...scanner import CONTENT, Scanner, Segment, merge_segments
from ...sse import SSEEvent
from ..base import NewId
from .numbering import Numbering
from .wire import event_of

__all__ = ["Channel", "ClientItem", "Record", "Writer"]

Source = tuple[Obj, bytes]  # an upstream event to rewrite: its data, and its non-data lines
_DEFAULT_PART: Obj = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}


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
    """One upstream message item and the client items it becomes, in order."""

    __slots__ = (
        "config",
        "fed",
        "held_added",
        "held_part",
        "high",
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
        "scanner",
        "transcript",
        "up_part",
    )

    def __init__(self, ordinal: int, up_id: str, item: Obj, held: Source | None, config: ThinkExtractConfig) -> None:
        self.ordinal = ordinal
        self.config = config  # the scanner settings of this item's text (start_with_reasoning: first only)
        self.item = item  # template for the client message items: the upstream item as first seen
        self.held_added = held  # the upstream output_item.added, not sent until the first run is known
        self.held_part: Source | None = None  # the upstream content_part.added, likewise
        self.part_template: Obj = _DEFAULT_PART
        self.scanner: Scanner | None = None
        self.up_part: int | None = None  # upstream content_index of the part being scanned
        self.fed = 0  # characters of the item's text fed so far
        self.other_part = False  # a non-text part (refusal…) is open: its events are forwarded
        self.msg: ClientItem | None = None
        self.rs: ClientItem | None = None
        self.opened = 0  # message items opened for the client
        self.produced = False  # whether any run or part went out
        self.high = ""  # a high surrogate held from the last delta
        self.raw_text = False  # a delta too large to read went by: the part's text is not all known
        self.transcript: list[str] | None = None  # where the reasoning record keeps its text, if it does
        self.record = Record(up_id)

    @property
    def up_id(self) -> str:
        return self.record.up_id

    def begin_text(self) -> Scanner:
        """The item's scanner, made at its first text: one for all its output_text parts."""
        if self.scanner is None:
            self.scanner = Scanner(self.config)
            self.scanner.transcript = self.transcript
        return self.scanner

    def feed(self, text: str) -> list[Segment]:
        assert self.scanner is not None
        self.fed += len(text)
        return self.scanner.feed(text)

    def note_flush(self) -> None:
        self.record.flushes.append(self.fed)


class Writer:
    """Writes the client events of channels' items, each numbered as it is written."""

    def __init__(self, numbering: Numbering, new_id: NewId, formats: frozenset[str]) -> None:
        self.numbering = numbering
        self.new_id = new_id
        self.content = "content" in formats  # reasoning as reasoning_text content
        self.summary = "summary" in formats  # reasoning as a summary_text summary
        self.blob = "encrypted_content" in formats  # and as the gateway's own encrypted_content
        self.named = False  # the upstream names its events: new ones are named too

    def send(self, body: Obj, fields: bytes | None = None) -> SSEEvent:
        body["sequence_number"] = self.numbering.take_seq()
        name = body["type"] if self.named and fields is None else None
        return event_of(body, fields, name)

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
        out = []
        where: Obj = {"item_id": rs.id, "output_index": rs.index}
        if self.content:
            body = {"type": "response.reasoning_text.delta", **where, "content_index": 0, "delta": text}
            out.append(self.send(body))
        if self.summary:
            body = {"type": "response.reasoning_summary_text.delta", **where, "summary_index": 0, "delta": text}
            out.append(self.send(body))
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
