"""OpenAI Responses: inline reasoning → ``reasoning`` output items.

Every ``output_text`` part of a ``message`` item runs through a Scanner (one channel per message
item). A reasoning run becomes a ``reasoning`` output item placed before the answer text that
follows it; a reasoning run after answer text closes the message item, and the answer after it
goes on in a new message item whose id is derived from the upstream one (``<id>_1``, ``<id>_2``…).

Stream: the upstream message item's ``output_item.added`` and ``content_part.added`` are held until
its first run is known. Client ``output_index`` values are given in the order the client sees
``output_item.added`` (0, 1, 2…), so every later item is shifted; ``sequence_number`` counts
0, 1, 2… over every event sent that was read (an event passed on unread keeps its bytes and takes
no number). The ``*.done`` events and the terminal ``response.completed`` / ``incomplete`` /
``failed`` carry the cleaned text and the same items, with the same ids, as were streamed. After
the terminal event nothing is synthesized: later events pass through as they are.

Fast forward (``fast_forward``, whole runs of events): while the message item a run of
``response.output_text.delta`` events belongs to is steady in one kind (its scanner holds nothing and
the texts hold none of its triggers), the run is validated in one batch decode and written without a
per-event rebuild: as it came (content, nothing to renumber), with its ``output_index`` and
``sequence_number`` values replaced on its bytes (content, when those bytes provably are the
encoding :meth:`ResponsesStream.event` would write), or as reasoning deltas of the open reasoning item.

The non-stream transform drives the same item logic with whole texts, so both forms agree.
"""

from __future__ import annotations

import os
import re
import types
from collections.abc import AsyncIterable, AsyncIterator, Callable
from functools import lru_cache
from typing import Annotated, Any, Literal

import msgspec

from ..config import ThinkExtractConfig
from ..scanner import CONTENT, Scanner, Segment, merge_segments
from ..sse import SSEEvent, encode_event
from .base import Counts, after_first_channel

__all__ = ["ResponsesStream", "transform_body", "translate_stream"]

_DONE = b"[DONE]"
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
# Upstream event types whose shape the translator relies on: one it cannot read is "unreadable".
_HANDLED = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "error",
        *_TERMINAL,
    }
)
_DEFAULT_PART: dict[str, Any] = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}

Body = dict[str, Any]
Source = tuple[Body, bytes]  # an upstream event, decoded, and its non-data lines


class _ItemHead(msgspec.Struct, gc=False):
    type: str = ""
    id: str | None = None


class _PartHead(msgspec.Struct, gc=False):
    type: str = ""


class _ResponseHead(msgspec.Struct, gc=False):
    model: str | None = None


class _Head(msgspec.Struct, gc=False):
    """The fields of an event the translator reads; everything else is skipped by the decoder."""

    type: str = ""
    sequence_number: int | None = None
    output_index: int | None = None
    content_index: int | None = None
    item_id: str | None = None
    delta: str | None = None
    item: _ItemHead | None = None
    part: _PartHead | None = None
    response: _ResponseHead | None = None


_decode_head = msgspec.json.Decoder(_Head).decode
_decode_any = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


# The fast path's events: ``output_text.delta`` objects of these keys only, every key once, with
# these values (a non-empty text, no logprobs). A layout is the order of the keys: one struct type
# per layout, every field required, so that it decodes only objects of exactly those keys and
# encodes back in that order, as msgspec encodes the object as a dict.
_FIELDS: dict[bytes, Any] = {
    b"type": Literal["response.output_text.delta"],
    b"item_id": str,
    b"output_index": int,
    b"content_index": int,
    b"delta": Annotated[str, msgspec.Meta(min_length=1)],
    b"logprobs": Annotated[list[None], msgspec.Meta(max_length=0)],
    b"sequence_number": int,
    b"obfuscation": str,
}
_REQUIRED = frozenset(_FIELDS) - {b"logprobs", b"obfuscation"}
# A key of the first event of a run: only a guess at the run's layout, which the decoder then holds
# every event to.
_KEY = re.compile(rb'[{,]"([a-z_]+)":')
_DELTA_LINE = b"event: response.output_text.delta\n"
_NAMED = _DELTA_LINE + b"data: "
_NEXT = b"\n\ndata: "
_NEXT_NAMED = b"\n\n" + _NAMED
_SEQ_KEY = b'"sequence_number":'


_SHORT_ESCAPES = {"\b": b"\\b", "\t": b"\\t", "\n": b"\\n", "\f": b"\\f", "\r": b"\\r"}


@lru_cache(maxsize=64)
def _needles(triggers: frozenset[str]) -> tuple[bytes, ...]:
    """Bytes whose presence shows a trigger in a run's texts, as they are usually spelled: a cheap
    early refusal, before any decoding (the texts decoded are what decides)."""
    needles = {_SHORT_ESCAPES[ch] for ch in triggers if ch in _SHORT_ESCAPES}
    needles.update(ch.encode() for ch in triggers if ch >= " " and ch not in '"\\[')
    return tuple(sorted(needles))


@lru_cache(maxsize=64)
def _layout_decoder(keys: tuple[bytes, ...]) -> Callable[[bytes], list[Any]] | None:
    """A decoder of a JSON array of delta events of exactly these keys (``None``: not a layout
    the fast path takes)."""
    if len(set(keys)) != len(keys) or not _REQUIRED <= set(keys) <= set(_FIELDS):
        return None
    fields = [(key.decode(), _FIELDS[key]) for key in keys]
    struct = msgspec.defstruct("_PlainDelta", fields, forbid_unknown_fields=True, gc=False)
    decode: Callable[[bytes], list[Any]] = msgspec.json.Decoder(types.GenericAlias(list, (struct,))).decode
    return decode


def _reasoning_id() -> str:
    return "rs_" + os.urandom(16).hex()


class _Message:
    """A message item as the client sees it."""

    __slots__ = ("id", "index", "part", "part_text_done", "parts", "texts")

    def __init__(self, item_id: str, index: int) -> None:
        self.id = item_id
        self.index = index
        self.parts: list[Body] = []  # closed content parts
        self.part: Body | None = None  # the open output_text part's template
        self.part_text_done = False
        self.texts: list[str] = []  # text of the open part


class _Reasoning:
    __slots__ = ("id", "index", "texts")

    def __init__(self, item_id: str, index: int) -> None:
        self.id = item_id
        self.index = index
        self.texts: list[str] = []


class _Channel:
    """One upstream message item and the client items it becomes, in order."""

    __slots__ = (
        "held_item",
        "held_part",
        "item",
        "items",
        "msg",
        "opened",
        "other_part",
        "part_template",
        "produced",
        "rs",
        "scanner",
        "up_id",
        "up_part",
    )

    def __init__(self, item: Body, held_item: Source | None) -> None:
        up_id = item.get("id")
        self.up_id = up_id if isinstance(up_id, str) else "msg_" + os.urandom(16).hex()
        self.item = item  # template for the message items: the upstream item as first seen
        self.held_item = held_item  # the upstream output_item.added, not sent yet
        self.held_part: Source | None = None  # the upstream content_part.added, not sent yet
        self.part_template: Body = _DEFAULT_PART
        self.scanner: Scanner | None = None
        self.up_part: int | None = None  # upstream content_index of the part being scanned
        self.other_part = False  # a non-text part (refusal…) is open: its events are forwarded
        self.msg: _Message | None = None
        self.rs: _Reasoning | None = None
        self.items: list[Body] = []  # the client items finished, as sent in output_item.done
        self.opened = 0  # message items opened for the client
        self.produced = False  # whether any run or part went out


class ResponsesStream:
    """Translate a Responses event stream, one event at a time (sans-I/O)."""

    # These events repeat the whole response (its output, instructions, tools): the pipeline lets
    # them grow to max_body_bytes, so that the terminal event is translated however long the answer.
    large_events = frozenset(
        {
            b"response.created",
            b"response.in_progress",
            b"response.completed",
            b"response.incomplete",
            b"response.failed",
        }
    )

    def __init__(self, config: ThinkExtractConfig, *, quiet: bool = False) -> None:
        self._base = config
        self._config: ThinkExtractConfig = config
        self._resolved = False
        self._summary = config.responses_reasoning_format == "summary"
        self._quiet = quiet  # the non-stream transform: items are built, no event is sent
        self._off = False  # the model's profile disables extraction: everything passes
        self._native = False  # the upstream sent a reasoning item: later messages are left alone
        self._terminated = False
        self._event_lines = False  # the upstream names its events: synthesized ones are named too
        self._seq = 0
        self._next_index = 0
        self._index_map: dict[int, int] = {}  # upstream output_index → client, for other items
        self._channels: dict[int, _Channel] = {}  # by upstream output_index, while open
        self._by_id: dict[str, _Channel] = {}  # by upstream item id, for the terminal output
        self._out: list[SSEEvent] = []
        self._texts = 0  # output_text parts scanned so far (see after_first_channel)
        self.counts = Counts()

    # -- the translator protocol ----------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        data = event.data
        if data is None or self._terminated or self._off:
            return [event]
        self._out = out = []
        if data == _DONE:
            self._flush()
            out.append(event)
            return out
        try:
            head = _decode_head(data)
            if not data.isascii():
                data.decode()  # the head decoder skips fields unread: invalid UTF-8 there is unreadable too
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            head = None
        if head is None or not head.type:
            other = self._decode_other(data)
            if other is None:
                self.counts.unreadable_events += 1
                self._flush()
                out.append(event)
                return out
            self._pass_body(other, event.fields)
            return out
        if event.event is not None:
            self._event_lines = True
        if not self._resolved:
            self._resolve(head)
            if self._off:
                return [event]
        self._dispatch(event, head)
        return out

    def flush(self) -> list[SSEEvent]:
        """Every channel's held text, as deltas of the items it belongs to (opened if need be)."""
        if self._terminated or self._off:
            return []
        self._out = []
        self._flush()
        return self._out

    def finish(self) -> list[SSEEvent]:
        """End of stream without a terminal event: held text goes out, reasoning items close."""
        if self._terminated or self._off:
            return []
        self._out = []
        for ch in list(self._channels.values()):
            self._end_text(ch)
            if not ch.produced and ch.held_item is not None:
                self._open_message(ch)  # an empty message the upstream opened: not lost
                if ch.held_part is not None:
                    self._open_part(ch)
        return self._out

    def oversized(self, piece: bytes, more: bool) -> bytes:
        return piece

    def fast_forward(self, span: bytes) -> bytes | None:
        """The bytes for a run of whole events, when provably exactly what :meth:`event` gives
        them (see the module docstring); ``None`` otherwise."""
        if self._terminated or self._off:
            return span  # event() passes every event as it came
        if not self._resolved or not self._channels:
            return None
        if len(self._channels) == 1:  # the usual case: refuse early what cannot be steady
            scanner = next(iter(self._channels.values())).scanner
            if scanner is None or scanner.steady is None:
                return None
            for needle in _needles(scanner.triggers):
                if needle[:1] in span and needle in span:  # one byte first: a memchr
                    return None
        # One data line per event, named or not, nothing else: a JSON array once the frames are cut.
        # (Counting on the lengths: bytes.count of a short pattern costs as much as the decoding.)
        body = span.replace(_NEXT_NAMED, _NEXT)
        named = (len(span) - len(body)) // len(_DELTA_LINE)  # event: lines that start an event
        if body.startswith(_NAMED):
            body = body[len(_DELTA_LINE) :]
            named += 1
        if not body.startswith(b"data: "):
            return None
        joined = body[6:-2].replace(_NEXT, b",")
        if b"\n" in joined:
            return None  # an event of several lines, a comment, a blank line, a stray event: line
        events = (len(body) - 8 - len(joined)) // (len(_NEXT) - 1) + 1  # each "\n\ndata: " became ","
        if named and named != events and not self._event_lines:
            return None  # the first events would be answered unnamed, the later ones named
        decode = _layout_decoder(tuple(_KEY.findall(body[6 : body.find(b"\n")])))
        if decode is None:
            return None
        array = b"[" + joined + b"]"
        try:
            deltas = decode(array)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if len(deltas) != events:
            return None  # two JSON values on one line
        first = deltas[0]
        up, part = first.output_index, first.content_index
        ch = self._channels.get(up)
        scanner = ch.scanner if ch is not None else None
        if ch is None or scanner is None or ch.up_part != part:
            return None
        kind = scanner.steady
        if kind is None:
            return None
        texts = [d.delta for d in deltas]
        if not scanner.triggers.isdisjoint("".join(texts)):
            return None
        for d in deltas:
            if d.output_index != up or d.content_index != part:
                return None
        if kind == CONTENT:
            out = self._plain_content(ch, span, array, deltas, texts)
        else:
            out = self._plain_reasoning(ch, texts, self._event_lines or named > 0)
        if out is None:
            return None
        if named:
            self._event_lines = True
        scanner.pass_steady(sum(map(len, texts)))
        return out

    def _plain_content(
        self, ch: _Channel, span: bytes, array: bytes, deltas: list[Any], texts: list[str]
    ) -> bytes | None:
        """Steady answer text: each event as it came, renumbered and pointed at its client item."""
        msg = ch.msg
        if ch.rs is not None or msg is None or msg.part is None or len(msg.parts) != deltas[0].content_index:
            return None
        item_id = msg.id
        seq = self._seq
        renumber = False
        for i, d in enumerate(deltas):
            if d.item_id != item_id:
                return None
            if d.sequence_number != seq + i:
                renumber = True
        up = deltas[0].output_index
        moved = msg.index != up
        out = span
        if moved or renumber:
            # event() re-encodes each event with these two numbers changed. Its bytes are exactly
            # that encoding but for the numbers when they are exactly the encoding of what they
            # decode to: msgspec writes a dict of these keys in their order as it writes the struct.
            # In that form a '"' inside a string is escaped, so '"output_index":' is only ever the
            # key, once per event.
            if _encode(deltas) != array:
                return None
            if moved:
                out = out.replace(b'"output_index":%d' % up, b'"output_index":%d' % msg.index)
            if renumber:
                pieces = out.split(_SEQ_KEY)  # one key per event
                rebuilt = [pieces[0]]
                for i, d in enumerate(deltas):
                    rebuilt.append(b"%d" % (seq + i) + pieces[i + 1][len(str(d.sequence_number)) :])
                out = _SEQ_KEY.join(rebuilt)
        msg.texts += texts
        self._seq = seq + len(deltas)
        return out

    def _plain_reasoning(self, ch: _Channel, texts: list[str], lines: bool) -> bytes | None:
        """Steady reasoning: each event becomes a reasoning delta of the open reasoning item."""
        rs = ch.rs
        if ch.msg is not None or rs is None:
            return None
        if self._summary:
            kind, where = b"response.reasoning_summary_text.delta", b"summary_index"
        else:
            kind, where = b"response.reasoning_text.delta", b"content_index"
        head = b'data: {"type":"%s","item_id":%s,"output_index":%d,"%s":0,"delta":' % (
            kind,
            _encode(rs.id),
            rs.index,
            where,
        )
        if lines:
            head = b"event: " + kind + b"\n" + head
        seq = self._seq
        out = b"".join([head + _encode(t) + b',"sequence_number":%d}\n\n' % (seq + i) for i, t in enumerate(texts)])
        rs.texts += texts
        ch.produced = True
        self._seq = seq + len(texts)
        return out

    # -- dispatch -------------------------------------------------------------------------------

    def _resolve(self, head: _Head) -> None:
        self._resolved = True
        model = head.response.model if head.response is not None else None
        self._config = cfg = self._base.for_model(model)
        self._summary = cfg.responses_reasoning_format == "summary"
        self._off = not cfg.enabled

    def _dispatch(self, event: SSEEvent, head: _Head) -> None:
        kind = head.type
        ch = self._channels.get(head.output_index) if head.output_index is not None else None
        if kind == "response.output_text.delta":
            if ch is not None and head.delta is not None:
                self._text_delta(ch, event, head)
                return
        elif kind == "response.output_item.added":
            self._item_added(event, head)
            return
        elif kind == "response.content_part.added":
            if ch is not None:
                self._part_added(ch, event, head)
                return
        elif kind == "response.output_text.done":
            if ch is not None:
                self._text_done(ch, event)
                return
        elif kind == "response.content_part.done":
            if ch is not None:
                self._part_done(ch, event, head)
                return
        elif kind == "response.output_item.done":
            if ch is not None:
                self._item_done(ch, event)
                return
        elif kind in _TERMINAL:
            self._terminal(event, kind)
            return
        elif kind == "error":
            self._flush()
        if ch is not None:
            self._forward_in_channel(ch, event)
        else:
            self._forward(event, head)

    def _decode_other(self, data: bytes) -> Body | None:
        """An event of a type the translator does not read, as a dict (``None``: unreadable)."""
        try:
            body = _decode_any(data)
        except msgspec.DecodeError:
            return None
        if not isinstance(body, dict) or not isinstance(body.get("type"), str) or body["type"] in _HANDLED:
            return None
        return body

    # -- upstream events --------------------------------------------------------------------------

    def _item_added(self, event: SSEEvent, head: _Head) -> None:
        item_type = head.item.type if head.item is not None else ""
        up = head.output_index
        if item_type == "message" and not self._native and up is not None and up not in self._channels:
            body = self._body(event)
            item = body.get("item")
            if isinstance(item, dict):
                ch = _Channel(item, (body, event.fields))
                self._channels[up] = ch
                self._by_id[ch.up_id] = ch
                return
        if item_type == "reasoning":
            self._native = True  # upstream reasoning wins
        index = self._take_index()
        if up is not None:
            self._index_map[up] = index
        self._forward(event, head, output_index=index)

    def _part_added(self, ch: _Channel, event: SSEEvent, head: _Head) -> None:
        self._end_text(ch)  # a new part: the previous one is over
        if head.part is not None and head.part.type == "output_text":
            body = self._body(event)
            part = body.get("part")
            ch.part_template = {**part, "text": ""} if isinstance(part, dict) else _DEFAULT_PART
            ch.held_part = (body, event.fields)
            self._begin_text(ch, head.content_index)
            return
        # Another kind of part (a refusal): it is content, forwarded into the open message item.
        self._close_reasoning(ch)
        if ch.msg is None:
            self._open_message(ch)
        ch.other_part = True
        ch.produced = True
        self._forward_in_channel(ch, event)

    def _text_delta(self, ch: _Channel, event: SSEEvent, head: _Head) -> None:
        if ch.scanner is None or ch.up_part != head.content_index:
            self._end_text(ch)
            self._begin_text(ch, head.content_index)
        assert ch.scanner is not None and head.delta is not None
        text = head.delta
        segments = ch.scanner.feed(text)
        msg = ch.msg
        if (
            len(segments) == 1
            and segments[0].kind == CONTENT
            and segments[0].text == text
            and ch.rs is None
            and msg is not None
            and msg.part is not None
            and msg.id == head.item_id
            and len(msg.parts) == head.content_index
        ):
            msg.texts.append(text)  # the common case: the event goes out as it came (renumbered)
            self._forward(event, head, output_index=msg.index)
            return
        if segments:
            self._runs(ch, segments, (self._body(event), event.fields))

    def _text_done(self, ch: _Channel, event: SSEEvent) -> None:
        self._end_text(ch)
        if ch.other_part:
            self._forward_in_channel(ch, event)
            return
        if ch.msg is None and not ch.produced:
            self._open_message(ch)  # an empty answer stays an (empty) message
        msg = ch.msg
        if msg is not None and msg.part is None and ch.held_part is not None:
            self._open_part(ch)
        if msg is not None and msg.part is not None and not msg.part_text_done:
            self._send_text_done(msg, (self._body(event), event.fields))

    def _part_done(self, ch: _Channel, event: SSEEvent, head: _Head) -> None:
        if ch.other_part:
            ch.other_part = False
            body = self._body(event)
            part = body.get("part")
            if ch.msg is not None:
                self._remap(body, ch.msg)
                ch.msg.parts.append(part if isinstance(part, dict) else {})
            self._send(body, event.fields)
            return
        self._text_done_if_open(ch)
        msg = ch.msg
        if msg is not None and msg.part is not None:
            self._send_part_done(msg, (self._body(event), event.fields))

    def _item_done(self, ch: _Channel, event: SSEEvent) -> None:
        self._close_channel(ch, (self._body(event), event.fields))

    def _terminal(self, event: SSEEvent, kind: str) -> None:
        status = "completed" if kind == "response.completed" else "incomplete"
        for ch in list(self._channels.values()):
            self._close_channel(ch, None, status)
        body = self._body(event)
        response = body.get("response")
        if isinstance(response, dict) and isinstance(response.get("output"), list):
            output = self._final_output(response["output"])
            response["output"] = output
            if "output_text" in response:
                response["output_text"] = _output_text(output)
        self._send(body, event.fields)
        self._terminated = True

    def _close_channel(self, ch: _Channel, src: Source | None, status: str = "completed") -> None:
        """The upstream message item is over (or the response is): close what the client has open."""
        self._text_done_if_open(ch)
        if ch.msg is None and not ch.produced:
            self._open_message(ch)  # an upstream message with no text at all stays as it was
        if ch.msg is not None:
            self._close_part(ch.msg)
            self._close_message(ch, src, status)
        self._retire(ch)

    def _final_output(self, output: list[Any]) -> list[Any]:
        new: list[Any] = []
        for item in output:
            ch = None
            if isinstance(item, dict) and item.get("type") == "message":
                ch = self._by_id.get(item.get("id"))  # type: ignore[arg-type]
                if ch is None and not self._native:
                    items, self._texts = _transform_message(item, self._config, self.counts, self._texts)
                    new.extend(items)
                    continue
            if ch is not None:
                new.extend(ch.items)
            else:
                new.append(item)
        return new

    # -- a channel's text -----------------------------------------------------------------------

    def _begin_text(self, ch: _Channel, content_index: int | None) -> None:
        ch.scanner = Scanner(after_first_channel(self._config) if self._texts else self._config)
        self._texts += 1
        ch.up_part = content_index

    def _end_text(self, ch: _Channel) -> None:
        """The part being scanned is over: its held text goes out, its reasoning item closes."""
        scanner = ch.scanner
        if scanner is not None:
            ch.scanner = None
            segments = scanner.finish()
            self.counts.add(scanner)
            if segments:
                self._runs(ch, segments, None)
        self._close_reasoning(ch)

    def _text_done_if_open(self, ch: _Channel) -> None:
        self._end_text(ch)
        msg = ch.msg
        if msg is not None and msg.part is not None and not msg.part_text_done:
            self._send_text_done(msg, None)

    def _close_part(self, msg: _Message) -> None:
        if msg.part is not None:
            self._send_part_done(msg, None)

    def _flush(self) -> None:
        for ch in self._channels.values():
            if ch.scanner is not None:
                segments = ch.scanner.flush()
                if segments:
                    self._runs(ch, segments, None)

    def _runs(self, ch: _Channel, segments: list[Segment], src: Source | None) -> None:
        """Send the runs of one channel. ``src`` (the upstream delta) becomes the first text delta."""
        for seg in merge_segments(segments):
            ch.produced = True
            if seg.kind == CONTENT:
                self._close_reasoning(ch)
                if ch.msg is None:
                    self._open_message(ch)
                msg = ch.msg
                assert msg is not None
                if msg.part is None:
                    self._open_part(ch)
                msg.texts.append(seg.text)
                target = {"item_id": msg.id, "output_index": msg.index, "content_index": len(msg.parts)}
                if src is not None:
                    body = src[0]
                    body.update(target)
                    body["delta"] = seg.text
                    self._send(body, src[1])
                    src = None
                else:
                    body = {"type": "response.output_text.delta", **target, "delta": seg.text, "logprobs": []}
                    self._send(body)
            else:
                if ch.msg is not None:  # answer text came first: this message item ends here
                    self._close_part(ch.msg)
                    self._close_message(ch, None)
                if ch.rs is None:
                    self._open_reasoning(ch)
                rs = ch.rs
                assert rs is not None
                rs.texts.append(seg.text)
                if self._summary:
                    kind, where = "response.reasoning_summary_text.delta", "summary_index"
                else:
                    kind, where = "response.reasoning_text.delta", "content_index"
                self._send({"type": kind, "item_id": rs.id, "output_index": rs.index, where: 0, "delta": seg.text})

    # -- client items -----------------------------------------------------------------------------

    def _open_message(self, ch: _Channel) -> None:
        index = self._take_index()
        ch.opened += 1
        ch.produced = True
        if ch.opened == 1:
            msg_id = ch.up_id
        else:
            msg_id = f"{ch.up_id}_{ch.opened - 1}"
        ch.msg = _Message(msg_id, index)
        held, ch.held_item = ch.held_item, None
        if held is not None:
            body, fields = held
            body["output_index"] = index
            self._send(body, fields)
        else:
            item = {**ch.item, "id": msg_id, "status": "in_progress", "content": []}
            self._send({"type": "response.output_item.added", "output_index": index, "item": item})

    def _open_part(self, ch: _Channel) -> None:
        msg = ch.msg
        assert msg is not None
        msg.part = ch.part_template
        msg.part_text_done = False
        msg.texts = []
        target = {"item_id": msg.id, "output_index": msg.index, "content_index": len(msg.parts)}
        held, ch.held_part = ch.held_part, None
        if held is not None:
            body, fields = held
            body.update(target)
            self._send(body, fields)
        else:
            part = {**ch.part_template, "text": ""}
            self._send({"type": "response.content_part.added", **target, "part": part})

    def _send_text_done(self, msg: _Message, src: Source | None) -> None:
        msg.part_text_done = True
        text = "".join(msg.texts)
        msg.texts = [text]
        target = {"item_id": msg.id, "output_index": msg.index, "content_index": len(msg.parts)}
        if src is not None:
            body, fields = src
            body.update(target)
            body["text"] = text
            self._send(body, fields)
        else:
            self._send({"type": "response.output_text.done", **target, "text": text, "logprobs": []})

    def _send_part_done(self, msg: _Message, src: Source | None) -> None:
        if not msg.part_text_done:
            self._send_text_done(msg, None)
        assert msg.part is not None
        target = {"item_id": msg.id, "output_index": msg.index, "content_index": len(msg.parts)}
        text = "".join(msg.texts)
        if src is not None:
            body, fields = src
            upstream_part = body.get("part")
            part = {**(upstream_part if isinstance(upstream_part, dict) else msg.part), "text": text}
            body.update(target)
            body["part"] = part
        else:
            part = {**msg.part, "text": text}
            body, fields = {"type": "response.content_part.done", **target, "part": part}, None
        msg.parts.append(part)
        msg.part = None
        msg.texts = []
        self._send(body, fields)

    def _close_message(self, ch: _Channel, src: Source | None, status: str = "completed") -> None:
        msg = ch.msg
        assert msg is not None
        ch.msg = None
        if src is not None and isinstance(src[0].get("item"), dict):
            body, fields = src
            item = {**body["item"], "id": msg.id, "content": msg.parts}
            body["output_index"] = msg.index
            body["item"] = item
        else:
            item = {**ch.item, "id": msg.id, "status": status, "content": msg.parts}
            body, fields = {"type": "response.output_item.done", "output_index": msg.index, "item": item}, None
        ch.items.append(item)
        self._send(body, fields)

    def _open_reasoning(self, ch: _Channel) -> None:
        rs = ch.rs = _Reasoning(_reasoning_id(), self._take_index())
        if self._summary:
            item: Body = {"id": rs.id, "type": "reasoning", "summary": [], "status": "in_progress"}
            part: Body = {"type": "summary_text", "text": ""}
            kind, where = "response.reasoning_summary_part.added", "summary_index"
        else:
            item = {"id": rs.id, "type": "reasoning", "summary": [], "content": [], "status": "in_progress"}
            part = {"type": "reasoning_text", "text": ""}
            kind, where = "response.content_part.added", "content_index"
        self._send({"type": "response.output_item.added", "output_index": rs.index, "item": item})
        self._send({"type": kind, "item_id": rs.id, "output_index": rs.index, where: 0, "part": part})

    def _close_reasoning(self, ch: _Channel) -> None:
        rs = ch.rs
        if rs is None:
            return
        ch.rs = None
        text = "".join(rs.texts)
        target = {"item_id": rs.id, "output_index": rs.index}
        item: Body
        if self._summary:
            part: Body = {"type": "summary_text", "text": text}
            self._send({"type": "response.reasoning_summary_text.done", **target, "summary_index": 0, "text": text})
            self._send({"type": "response.reasoning_summary_part.done", **target, "summary_index": 0, "part": part})
            item = {"id": rs.id, "type": "reasoning", "summary": [dict(part)], "status": "completed"}
        else:
            part = {"type": "reasoning_text", "text": text}
            self._send({"type": "response.reasoning_text.done", **target, "content_index": 0, "text": text})
            self._send({"type": "response.content_part.done", **target, "content_index": 0, "part": part})
            item = {"id": rs.id, "type": "reasoning", "summary": [], "content": [dict(part)], "status": "completed"}
        ch.items.append(item)
        self._send({"type": "response.output_item.done", "output_index": rs.index, "item": item})

    def _retire(self, ch: _Channel) -> None:
        for up, open_ch in list(self._channels.items()):
            if open_ch is ch:
                del self._channels[up]

    def _take_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    # -- output -----------------------------------------------------------------------------------

    def _body(self, event: SSEEvent) -> Body:
        assert event.data is not None
        body: Body = _decode_any(event.data)
        return body

    def _send(self, body: Body, fields: bytes | None = None) -> None:
        """Number ``body`` and queue it: an upstream event keeps its lines, a new one is named
        when the upstream names its events."""
        if self._quiet:
            return
        body["sequence_number"] = self._seq
        self._seq += 1
        if fields is None:
            event = body["type"] if self._event_lines else None
            self._out.append(encode_event(_encode(body), event=event))
        else:
            self._out.append(encode_event(_encode(body), fields=fields))

    def _pass_body(self, body: Body, fields: bytes) -> None:
        """An event of a type not read here: renumbered, its output_index mapped."""
        up = body.get("output_index")
        if isinstance(up, int) and up in self._index_map:
            body["output_index"] = self._index_map[up]
        self._send(body, fields)

    def _forward(self, event: SSEEvent, head: _Head, output_index: int | None = None) -> None:
        """An upstream event unchanged but for its number and its output_index (``output_index``,
        else the client index of an item passed through). Re-encoding with msgspec is cheaper than
        editing the bytes in Python."""
        if output_index is None and head.output_index is not None:
            output_index = self._index_map.get(head.output_index)
        moved = output_index is not None and output_index != head.output_index
        if head.sequence_number == self._seq and not moved:
            self._seq += 1
            self._out.append(event)  # the common case: nothing to change
            return
        body = self._body(event)
        if moved:
            body["output_index"] = output_index
        self._send(body, event.fields)

    def _forward_in_channel(self, ch: _Channel, event: SSEEvent) -> None:
        """An event about a message item (annotation, refusal…), pointed at its client item."""
        body = self._body(event)
        if ch.msg is not None:
            self._remap(body, ch.msg)
        self._send(body, event.fields)

    @staticmethod
    def _remap(body: Body, msg: _Message) -> None:
        body["output_index"] = msg.index
        if "item_id" in body:
            body["item_id"] = msg.id
        if "content_index" in body:
            body["content_index"] = len(msg.parts)


def _output_text(output: list[Any]) -> str:
    """What the SDK's ``response.output_text`` reads: every message's output_text parts, joined."""
    texts: list[str] = []
    for item in output:
        if isinstance(item, dict) and item.get("type") == "message" and isinstance(item.get("content"), list):
            texts.extend(
                part["text"]
                for part in item["content"]
                if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str)
            )
    return "".join(texts)


def _transform_message(item: Body, config: ThinkExtractConfig, counts: Counts, texts: int) -> tuple[list[Body], int]:
    """The client items one whole message item becomes (``[item]`` when nothing changes), and the
    count of output_text parts scanned so far in the response (``texts`` before this item)."""
    content = item.get("content")
    if not isinstance(content, list):
        return [item], texts
    stream = ResponsesStream(config, quiet=True)
    stream.counts = counts
    ch = _Channel({**item, "content": []}, None)
    for part in content:
        if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
            ch.part_template = {**part, "text": ""}
            ch.held_part = None
            scanner = Scanner(after_first_channel(config) if texts else config)
            texts += 1
            segments = scanner.feed(part["text"]) + scanner.finish()
            counts.add(scanner)
            if segments:
                stream._runs(ch, segments, None)
            elif ch.msg is not None and ch.msg.part is None:
                stream._open_part(ch)  # an empty part after text stays, as in a stream
            stream._close_reasoning(ch)
            if ch.msg is None and not ch.produced:
                stream._open_message(ch)
                stream._open_part(ch)
            if ch.msg is not None and ch.msg.part is not None:
                stream._send_part_done(ch.msg, None)
        else:
            stream._close_reasoning(ch)
            if ch.msg is None:
                stream._open_message(ch)
            assert ch.msg is not None
            ch.msg.parts.append(part)
            ch.produced = True
    if ch.msg is None and not ch.produced:
        return [item], texts
    if ch.msg is not None:
        msg, ch.msg = ch.msg, None
        ch.items.append({**item, "id": msg.id, "content": msg.parts})
    return ch.items, texts


def transform_body(body: bytes | bytearray, config: ThinkExtractConfig) -> tuple[bytes | None, Counts]:
    """A non-stream ``response`` body with reasoning moved into ``reasoning`` output items.

    Returns ``None`` for the body when nothing changed (the caller then sends the original bytes).
    """
    counts = Counts()
    try:
        doc = _decode_any(body)
    except msgspec.DecodeError:
        return None, counts
    if not isinstance(doc, dict) or not isinstance(doc.get("output"), list):
        return None, counts
    cfg = config.for_model(doc["model"] if isinstance(doc.get("model"), str) else None)
    output: list[Any] = doc["output"]
    if not cfg.enabled or any(isinstance(i, dict) and i.get("type") == "reasoning" for i in output):
        return None, counts  # upstream reasoning wins
    new: list[Any] = []
    changed = False
    texts = 0
    for item in output:
        if isinstance(item, dict) and item.get("type") == "message":
            items, texts = _transform_message(item, cfg, counts, texts)
            changed = changed or items != [item]
            new.extend(items)
        else:
            new.append(item)
    if not changed:
        return None, counts
    doc["output"] = new
    if "output_text" in doc:
        doc["output_text"] = _output_text(new)
    return _encode(doc), counts


async def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    stream = ResponsesStream(config)
    async for event in events:
        for out in stream.event(event):
            yield out
    for out in stream.finish():
        yield out
