"""Events too large to hold, which the pipeline hands on in raw pieces as their bytes arrive: each
is renumbered on its bytes as it goes by, never decoded.

A text delta of an open message item goes into its client part unscanned. A done event of such an
item repeats its text: the gateway writes its own when it holds the text the client was given, and
lets the upstream's bytes through, pointed at the client's part, when only they hold it (a delta
went through unread). A terminal event closes every item the client has open and goes on as it came
but for its number.
"""

from __future__ import annotations

import msgspec

from ...rawjson import TopLevelKeys, as_int, as_str, encode
from ...sse import SSEEvent, event_type
from .heads import TERMINAL
from .items import Channel, ClientItem
from .messages import MessageChannels
from .numbering import Numbering

__all__ = ["OversizedEvents"]

# The oversized events that name a message channel the translator follows.
_READ_WHEN_OVERSIZED = frozenset(
    {
        b"response.output_text.delta",
        b"response.output_text.done",
        b"response.content_part.done",
        b"response.output_item.done",
    }
)
_TEXT_DELTA = b"response.output_text.delta"
_TEXT_DONE = b"response.output_text.done"
_PART_DONE = b"response.content_part.done"
_ITEM_DONE = b"response.output_item.done"


class _Dropped:
    """The bytes of an oversized event that the gateway answered itself: none go on."""

    def feed(self, piece: bytes) -> bytes:
        return b""

    def finish(self) -> bytes:
        return b""


_DROPPED = _Dropped()


class OversizedEvents:
    """The oversized event under way, if any, and what the stream does about it."""

    __slots__ = ("_messages", "_numbering", "_rewriter", "raw_text")

    def __init__(self, messages: MessageChannels, numbering: Numbering) -> None:
        self._messages = messages
        self._numbering = numbering
        self._rewriter: TopLevelKeys | _Dropped | None = None
        self.raw_text = False
        """A text delta went through unread: from here on no event is held past ``max_event_bytes``
        (the events that repeat its text would hold it whole, which streaming it through avoids)."""

    @property
    def under_way(self) -> bool:
        return self._rewriter is not None

    def begin(self, head: bytes) -> tuple[bytes, bool]:
        """The first piece of an oversized event: what goes out before its bytes, and whether it is
        the terminal event."""
        kind = event_type(head)
        delta = kind == _TEXT_DELTA
        ch = self._channel(head, guess=delta) if kind in _READ_WHEN_OVERSIZED else None
        if ch is not None and delta:
            return self._text_unread(ch), False
        if ch is not None:
            return self._done_unread(ch, kind), False
        self._rewriter = self._numbering.raw_rewriter()
        if kind is not None and kind.decode() in TERMINAL:
            # Every item the client has open is done before the terminal event, which goes on
            # as it came but for its number (a client checks that each item it was given is
            # done; the output of a terminal event it cannot read is the upstream's).
            messages = self._messages
            closing = [e for ch in list(messages.open.values()) for e in messages.close(ch, None)]
            return b"".join(e.raw for e in closing), True
        return b"", False

    def feed(self, piece: bytes, more: bool) -> bytes:
        """A piece of the event under way (``more``: pieces of it follow)."""
        rewriter = self._rewriter
        assert rewriter is not None
        out = rewriter.feed(piece)
        if not more:
            out += rewriter.finish()
            self._rewriter = None
        return out

    def _text_unread(self, ch: Channel) -> bytes:
        """Before an oversized text delta of ``ch`` (passed on unscanned): its client part is opened."""
        ch.raw_text = True
        self.raw_text = True
        writer = self._messages.writer
        out = writer.close_reasoning(ch)
        if ch.msg is None:
            out += writer.open_message(ch)
        msg = ch.msg
        assert msg is not None
        if msg.part is None:
            out += writer.open_part(ch)
        self._rewriter = self._retargeted(msg, part=True)
        return b"".join(e.raw for e in out)

    def _done_unread(self, ch: Channel, kind: bytes | None) -> bytes:
        """A done event of ``ch`` too large to read, which repeats its text.

        When a delta of the client's open part went through unread, only the upstream's bytes hold
        that part's whole text: a done event of the part (or of the item, when the client knows it
        by the upstream's id) goes on retargeted to it, as that delta did. Otherwise the gateway
        holds the text the client was given, and closes the client's items itself; the upstream's
        repetition goes no further."""
        msg = ch.msg
        messages = self._messages
        if ch.raw_text and msg is not None and not ch.other_part:
            if kind in (_TEXT_DONE, _PART_DONE) and msg.part is not None:
                out = b"".join(e.raw for e in messages.flush_one(ch))  # as text_done does
                if ch.msg is msg and msg.part is not None:
                    self._rewriter = self._retargeted(msg, part=True)
                    if kind == _PART_DONE:
                        msg.parts.append({**msg.part, "text": ""})  # its text: the upstream's, unread
                        msg.part = None
                    msg.text_done = True
                    return out
                return out + self._closed_by(ch, kind)
            if kind == _ITEM_DONE and msg.part is None and msg.id == ch.up_id:
                self._rewriter = self._retargeted(msg, part=False)
                ch.msg = None
                messages.drop(ch)
                return b""
        return self._closed_by(ch, kind)

    def _closed_by(self, ch: Channel, kind: bytes | None) -> bytes:
        """The gateway's own done events for ``ch``, for an upstream one it does not read."""
        self._rewriter = _DROPPED
        messages = self._messages
        if kind == _TEXT_DONE:
            events = messages.text_done(ch, None)
        elif kind == _PART_DONE and not ch.other_part:
            events = messages.part_done(ch, SSEEvent(raw=b""))
        else:
            events = messages.close(ch, None)
        return b"".join(e.raw for e in events)

    def _retargeted(self, msg: ClientItem, part: bool) -> TopLevelKeys:
        """A rewriter that points an event passed on unread at the client's item ``msg`` (and, for
        ``part``, at its open part), numbered in the stream."""
        numbering = self._numbering
        targets = {
            b"sequence_number": lambda: b"%d" % numbering.take_seq(),
            b"output_index": lambda: b"%d" % msg.index,
        }
        if part:
            targets[b"content_index"] = lambda: b"%d" % len(msg.parts)
            targets[b"item_id"] = lambda: encode(msg.id)
        return TopLevelKeys(frozenset(targets), lambda key, _: targets[key]() if key in targets else None)

    def _channel(self, head: bytes, guess: bool) -> Channel | None:
        """The open message item an oversized event names by the ``output_index`` or ``item_id``
        its first bytes hold; when they hold neither (a layout that writes them after the text) and
        ``guess`` (a text delta, which only a message item takes), the one item open, if only one is."""
        seen = TopLevelKeys(frozenset({b"output_index", b"item_id"}), lambda key, value: None)
        seen.feed(head)
        index = as_int(msgspec.Raw(seen.seen[b"output_index"])) if b"output_index" in seen.seen else None
        item_id = as_str(msgspec.Raw(seen.seen[b"item_id"])) if b"item_id" in seen.seen else None
        channels = self._messages.open
        if index is not None:
            return channels.get(index)
        if item_id is not None:
            return next((ch for ch in channels.values() if ch.up_id == item_id), None)
        return next(iter(channels.values())) if guess and len(channels) == 1 else None
