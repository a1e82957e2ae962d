"""The Responses stream translator, plainly: each upstream event read, translated and written
(sans-I/O). It is the whole behaviour of the surface; the production stream (``stream.py``) only
adds a layer that proves, for steady text, what this would write without running it.

Dispatch only: which upstream event touches which message item (``messages``), and what goes out
for it. The client items are written by ``items.Writer``; every event that goes out, translated,
forwarded or passed on unread, is numbered by the stream's one ``numbering.Numbering``.
"""

from __future__ import annotations

from collections.abc import Callable

from ...config import ThinkExtractConfig
from ...rawjson import Obj, as_str, obj, raw_list
from ...sse import SSEEvent
from ..base import NewId, Said, Transcripts, random_id
from ..translator import Translator, joined
from ..usage import with_reasoning_tokens
from . import rebuild
from .heads import CREATED, DONE, LARGE, TERMINAL, Head, decode_head
from .items import Writer, source_of
from .messages import MessageChannels
from .numbering import Numbering
from .oversized import OversizedEvents
from .usage import USAGE

__all__ = ["ResponsesReference", "replayer"]

_REASONING_DELTA = "response.reasoning_text.delta"

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


class ResponsesReference(Translator):
    """Translate a Responses event stream, one event at a time."""

    def __init__(self, config: ThinkExtractConfig, *, new_id: NewId = random_id) -> None:
        self.large_events = LARGE
        self._source_id = new_id
        self._made = _Made(new_id)
        self.given_ids = self._made.ids  # every id made up, in order: the terminal rebuild reuses them
        self.numbering = Numbering()
        self.writer = Writer(self.numbering, self._made, config)
        self.messages = MessageChannels(config, self.writer)
        super().__init__(self.messages.core)  # one channel per message item, by its ordinal
        self._oversized = OversizedEvents(self.messages, self.numbering)
        self.read: Callable[[bytes], tuple[Head, bool] | None] = decode_head
        """How an event is read: its head, and whether msgspec read it (see ``heads``)."""
        self._resolved = False
        self._native = False  # the upstream sent a reasoning item: later messages are left alone
        self.passing = False
        """Every event passes as it came: the response ended, or the model's settings turn extraction off."""

    @property
    def native(self) -> bool:
        """Whether the upstream sent a reasoning item: later messages are left as they are."""
        return self._native

    def answers(self, t: Transcripts) -> list[Said]:
        """The response's answer: what the model wrote in its message items, its tool calls, and
        the ids the gateway gave its items (a client may refer to them)."""
        records = self.messages.records
        if not (t.texts or t.calls or records):
            return []
        ids = (*self.given_ids, *(r.up_id for r in records if r.up_id not in self.given_ids))
        return [Said(joined(t), tuple(t.calls.get(0, ())), ids)]

    def replaying(self, config: ThinkExtractConfig) -> None:
        """Settings already resolved for the response's model (a replay of its output, which reads
        the items back from their done events: no other event is written)."""
        self._resolved = True
        self.channels.resolve(None)
        self.writer.use(config)
        self.writer.items_only = True
        self.passing = not config.enabled

    def _new_id(self, prefix: str) -> str:
        return self._made(prefix)

    # -- the translator protocol ----------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        data = event.data
        if data is None or self.passing:
            return [event]
        if data == DONE:
            return [*self.flush(), event]
        read = self.read(data)
        if read is None or not read[0].type:
            self.counts.unreadable_events += 1
            return [*self.flush(), self.writer.unread(event)]
        head, strict = read
        if event.event is not None:
            self.writer.named = True
        if not self._resolved:
            self._resolve(head)
            if self.passing:
                return [event]
        return self._dispatch(event, head, strict)

    def flush(self) -> list[SSEEvent]:
        """Every channel's held text, as deltas of the items it belongs to (opened if need be)."""
        if self.passing:
            return []
        return self.messages.flush()

    def finish(self) -> list[SSEEvent]:
        if self.passing:
            return []
        return self.messages.finish()

    def oversized(self, piece: bytes, more: bool) -> bytes:
        """An event too large to hold, renumbered on its bytes as they go by."""
        big = self._oversized
        if self.passing and not big.under_way:  # (an event under way goes on: it began before the end)
            return piece
        out = b""
        if not big.under_way:  # the first piece of the event
            out, terminal = big.begin(piece)
            self.passing = self.passing or terminal
            if big.raw_text:
                self.large_events = frozenset()
        return out + big.feed(piece, more)

    # -- dispatch -------------------------------------------------------------------------------

    def _resolve(self, head: Head) -> None:
        self._resolved = True
        model = as_str(head.response.model) if head.response is not None else None
        config = self.channels.resolve(model)
        self.writer.use(config)
        self.passing = not config.enabled

    def _dispatch(self, event: SSEEvent, head: Head, strict: bool) -> list[SSEEvent]:
        kind = head.type
        if kind == "response.output_item.added":
            return self._item_added(event, head)
        messages = self.messages
        ordinal = self.numbering.ordinal(head)
        ch = messages.open.get(ordinal) if ordinal is not None else None
        if ch is not None:
            if kind == "response.output_text.delta" and head.delta is not None and not ch.other_part:
                return messages.delta(ch, event, head, strict)
            if kind == "response.content_part.added":
                return messages.part_added(ch, event, head)
            if kind == "response.output_text.done" and not ch.other_part:
                return messages.text_done(ch, source_of(event))
            if kind == "response.content_part.done":
                return messages.part_done(ch, event)
            if kind == "response.output_item.done":
                return messages.close(ch, source_of(event))
            return messages.in_item(ch, event)
        if kind == "response.output_text.delta" and ordinal in messages.reasoning_only:
            return messages.late_text(messages.reasoning_only.pop(ordinal), event)
        if kind in TERMINAL:
            return self._terminal(event, kind)
        if kind in CREATED:
            return [self._response_event(event, head)]
        out = self.flush() if kind == "error" else []
        if kind == _REASONING_DELTA and head.delta:
            self.counts.reasoning_events += 1  # the server's own reasoning, one token per event
        out.append(self.writer.forward(event, head, self.numbering.client_index(ordinal)))
        return out

    def _item_added(self, event: SSEEvent, head: Head) -> list[SSEEvent]:
        item_type = head.item.type if head.item is not None else ""
        up_id = as_str(head.item.id) if head.item is not None else None
        ordinal = self.numbering.added(head, up_id)
        messages = self.messages
        if item_type == "message" and not self._native and ordinal not in messages.open:
            src = source_of(event)
            item = obj(src[0].get("item")) if src is not None else None
            if src is not None and item is not None:
                messages.add(ordinal, up_id or self._new_id("msg_"), item, src)
                return []  # held until its first run is known
        transcripts = self.transcripts
        if transcripts is not None and head.item is not None and isinstance(head.item.call_id, str):
            transcripts.call(0, head.item.call_id)
        if item_type == "reasoning":
            self._native = True  # upstream reasoning wins
        return [self.writer.forward(event, head, self.numbering.pass_item(ordinal))]

    def _terminal(self, event: SSEEvent, kind: str) -> list[SSEEvent]:
        status = "completed" if kind == "response.completed" else "incomplete"
        messages = self.messages
        out = [e for ch in list(messages.open.values()) for e in messages.close(ch, None, status)]
        self.passing = True
        src = source_of(event)
        if src is None:
            return [*out, self.writer.unread(event)]
        body, fields = src
        response, _ = _complete_response(body)
        if response is not None:
            output = raw_list(response.get("output"))
            if output is not None:
                new = rebuild.output(
                    output,
                    messages.core.resolve(None),
                    messages.records,
                    self.given_ids,
                    self._native,
                    self._source_id,
                    self.numbering.client_index,
                    replayer,
                )
                response["output"] = new
                if "output_text" in response:
                    response["output_text"] = rebuild.output_text(new)
            usage = response.get("usage")
            filled = with_reasoning_tokens(usage, USAGE.field, self.counts.reasoning_events) if usage else None
            if filled is not None:
                response["usage"] = filled
                self.counts.reasoning_written = True
            body["response"] = response
        out.append(self.writer.send(body, fields))
        return out

    def _response_event(self, event: SSEEvent, head: Head) -> SSEEvent:
        """``response.created`` / ``in_progress``: given what a strict client requires if missing."""
        src = source_of(event)
        if src is not None:
            body, fields = src
            response, filled = _complete_response(body)
            if filled:
                body["response"] = response
                return self.writer.send(body, fields)
        return self.writer.forward(event, head, None)


def _complete_response(body: Obj) -> tuple[Obj | None, bool]:
    """The event's response object (``None``: not an object), with the fields a strict client
    requires that it lacks, and whether any was lacking."""
    raw = body.get("response")
    response = obj(raw) if not isinstance(raw, dict) else raw
    if response is None:
        return None, False
    missing = {k: v for k, v in _RESPONSE_DEFAULTS.items() if k not in response}
    return ({**response, **missing}, True) if missing else (response, False)


class _Made:
    """Makes up ids, and keeps them in order: a callable of its own, so that the writer that calls
    it holds nothing that holds it (a bound method of the translator would make a cycle of the two,
    which only the garbage collector frees)."""

    __slots__ = ("ids", "source")

    def __init__(self, source: NewId) -> None:
        self.source = source
        self.ids: list[str] = []

    def __call__(self, prefix: str) -> str:
        new = self.source(prefix)
        self.ids.append(new)
        return new


def replayer(config: ThinkExtractConfig, new_id: NewId) -> ResponsesReference:
    """The translator that replays an output (the terminal event's, a non-stream body's): the
    reference, whose step logic the stream's is."""
    return ResponsesReference(config, new_id=new_id)
