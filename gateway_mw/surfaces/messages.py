"""Anthropic messages: inline reasoning → ``thinking`` or ``redacted_thinking`` content blocks.

``messages_policy`` decides the block: ``unsigned`` gives a ``thinking`` block carrying a gateway
signature (:func:`gateway_signature`), ``redacted`` a ``redacted_thinking`` block whose ``data`` is
the base64 of the reasoning text, ``off`` leaves the surface alone.

Stream: one Scanner per upstream ``text`` block. Each run of one kind becomes a block of its own;
output blocks are numbered 0, 1, 2… in the order they start, and every other upstream block
(``tool_use``…) is renumbered to follow. One numbering map (upstream index → output index) applies
to every event that carries an ``index``, also to those passed on unread: events of unknown types,
and events over ``max_event_bytes`` (:meth:`MessagesStream.oversized`, on their bytes as they go by).
An event the translator leaves as it is goes out with its bytes unchanged; a renumbered one has only
the value of its ``"index"`` keys replaced (all of them: parsers keep the last). Events msgspec's
strict decoder rejects but the SDKs' ``json`` accepts (``"index":0.0``, lone surrogate escapes) are
read with the standard library and translated alike. Three paths, cheapest first:

* **fast forward** (``fast_forward``, one event or a run of them): while the one open text block is
  steady in one kind, each event is decoded alone into the fields the translator reads; a
  ``text_delta`` of that block whose text holds none of its scanner's triggers goes out as it came,
  renumbered, or renamed into a ``thinking_delta`` on its bytes, without the scanner;
* **unchanged** (``event``): the few fields read here are decoded into a small struct; answer text
  the scanner passes through goes out as the same bytes (renumbered if it must be), reasoning text
  it passes whole gets the same rename as on the fast path, where that provably is the rewrite;
* **rewritten**: the events of the new blocks are written afresh; an upstream event's fields the
  translator does not own ride, as their raw bytes, on the first event written for it.

Non-stream: each ``text`` block of ``content`` is split into the blocks of its runs, in order.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import AsyncIterable, AsyncIterator
from functools import lru_cache
from typing import Annotated, Any, Literal, cast

import msgspec

from ..config import ThinkExtractConfig
from ..scanner import CONTENT, REASONING, Kind, Scanner, Segment
from ..sse import SSEEvent, encode_event, event_type
from .base import Counts, after_first_channel, extract_counted
from .rawjson import UNREADABLE, Obj, TopLevelKeys, as_int, as_str, encode, obj, raw_list

__all__ = ["SIGNATURE_PREFIX", "MessagesStream", "gateway_signature", "transform_body", "translate_stream"]

SIGNATURE_PREFIX = "gw1:"
"""Every signature this gateway writes starts with this; Anthropic's own never do."""

_NATIVE = frozenset({"thinking", "redacted_thinking"})
# The events that fix the settings of a message when none came before (a ping may come first).
_RESOLVING = frozenset({"message_start", "content_block_start", "content_block_delta", "content_block_stop"})


def gateway_signature(thinking: str) -> str:
    """The signature of a ``thinking`` block: the prefix, then the unpadded base64url SHA-256 of
    the thinking text (UTF-8). Derived from the text alone: every worker, stream or not, agrees."""
    return _signature_of(hashlib.sha256(thinking.encode()))


def _signature_of(digest: Any) -> str:
    """The signature from a SHA-256 fed the thinking text: a stream hashes it as it goes by."""
    return SIGNATURE_PREFIX + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def _redacted_data(reasoning: str) -> str:
    return base64.b64encode(reasoning.encode()).decode()


# -- what the translator reads ------------------------------------------------------------------


class _Part(msgspec.Struct, gc=False):
    """A content block or a delta: its type, and its text when it has one."""

    type: str = ""
    text: str | None = None


class _Message(msgspec.Struct, gc=False):
    model: str | None = None
    content: list[_Part] = []


class _Event(msgspec.Struct, gc=False):
    """The fields of an event the translator reads; everything else is skipped by the decoder."""

    type: str
    index: int | None = None
    delta: _Part | None = None
    content_block: _Part | None = None
    message: _Message | None = None


class _RunDelta(msgspec.Struct, gc=False):
    type: Literal["text_delta"]
    text: Annotated[str, msgspec.Meta(min_length=1)]


class _RunEvent(msgspec.Struct, gc=False):
    """A ``text_delta`` event as one of a run is decoded: the decoder itself refuses any other event,
    and anything :class:`_Event` refuses (the same fields, of the same types or narrower)."""

    type: Literal["content_block_delta"]
    index: int
    delta: _RunDelta
    content_block: _Part | None = None
    message: _Message | None = None


_decode_event = msgspec.json.Decoder(_Event).decode
_decode_run_event = msgspec.json.Decoder(_RunEvent).decode
_decode_any = msgspec.json.Decoder().decode
_INDEX = frozenset({b"index"})
_HEAD = 256  # where an oversized event's type is read: its event: line, or the key that opens its data
_SURROGATES = re.compile("[\ud800-\udfff]")


def _read(data: bytes) -> tuple[_Event | None, bool]:
    """The fields the translator reads, and whether only the lenient reader could read them.

    msgspec's strict decoder comes first; an event it rejects that a client's JSON parser accepts
    (``"index":0.0``, a lone surrogate escape ``"\\ud83d"``) is read with the standard library, as the
    SDKs read it. ``None`` when neither can: the event is unreadable."""
    try:
        return _decode_event(data), False
    except UNREADABLE:
        return _read_lenient(data)


def _read_lenient(data: bytes) -> tuple[_Event | None, bool]:
    """:func:`_read` for data msgspec's strict decoder rejected."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None, True
    return (_lenient_event(doc) if isinstance(doc, dict) else None), True


def _lenient_part(value: Any) -> _Part | bool | None:
    """A block or delta from the stdlib's decode; ``False`` when it has the wrong shape (never ``True``)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return False
    kind, text = value.get("type", ""), value.get("text")
    if not isinstance(kind, str) or not (text is None or isinstance(text, str)):
        return False
    return _Part(kind, text)


def _lenient_event(doc: dict[str, Any]) -> _Event | None:
    kind, index = doc.get("type"), doc.get("index")
    if not isinstance(kind, str):
        return None
    if index is not None:
        index = index if isinstance(index, int) and not isinstance(index, bool) else None
        if index is None and isinstance(doc["index"], float) and doc["index"].is_integer():
            index = int(doc["index"])
        if index is None:
            return None
    delta, block = _lenient_part(doc.get("delta")), _lenient_part(doc.get("content_block"))
    if isinstance(delta, bool) or isinstance(block, bool):
        return None
    message = doc.get("message")
    msg: _Message | None = None
    if isinstance(message, dict):
        model = message.get("model")
        parts = [_lenient_part(p) for p in message.get("content") or [] if isinstance(p, dict)]
        msg = _Message(model if isinstance(model, str) else None, [p for p in parts if isinstance(p, _Part)])
    return _Event(kind, index, delta, block, msg)


def _whole_chars(pending: str, text: str) -> tuple[str, str]:
    """``text`` after ``pending`` (a high surrogate held from the delta before), as whole characters,
    and the high surrogate it ends with, held for the next delta. A surrogate escape pair split
    across two deltas becomes its character; a lone surrogate becomes U+FFFD, as a UTF-8 decoder
    would make it."""
    text = pending + text
    pending = ""
    if text and "\ud800" <= text[-1] <= "\udbff":
        text, pending = text[:-1], text[-1]
    if _SURROGATES.search(text) is not None:
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text, pending


# -- what the translator writes -----------------------------------------------------------------


def _frame(kind: str, data: bytes) -> SSEEvent:
    return encode_event(data, event=kind)


def _start(index: int, block: bytes) -> SSEEvent:
    data = b'{"type":"content_block_start","index":%d,"content_block":%s}' % (index, block)
    return _frame("content_block_start", data)


def _delta(index: int, delta: bytes) -> SSEEvent:
    return _frame("content_block_delta", b'{"type":"content_block_delta","index":%d,"delta":%s}' % (index, delta))


def _stop(index: int) -> SSEEvent:
    return _frame("content_block_stop", b'{"type":"content_block_stop","index":%d}' % index)


_TEXT_BLOCK = b'{"type":"text","text":""}'
_EMPTY_TEXT = _Part("text", "")
_THINKING_BLOCK = b'{"type":"thinking","thinking":"","signature":""}'


def _text_delta(text: str) -> bytes:
    return b'{"type":"text_delta","text":%s}' % encode(text)


def _thinking_delta(text: str) -> bytes:
    return b'{"type":"thinking_delta","thinking":%s}' % encode(text)


@lru_cache(maxsize=256)
def _index_prefix(kind: str, index: int) -> bytes:
    return b'{"type":"%s","index":%d,' % (kind.encode(), index)


@lru_cache(maxsize=256)
def _text_delta_prefix(index: int) -> bytes:
    """How a ``text_delta`` event with no other field starts, up to its text."""
    return b'{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":' % index


def _fields_for(event: SSEEvent, kind: str) -> bytes:
    """The non-data lines for a rewrite of ``event`` as a ``kind`` event: its own when they name
    that event, with an ``event:`` line added when they name none."""
    if event.event == kind:
        return event.fields
    if event.event is None:
        return b"event: " + kind.encode() + b"\n" + event.fields
    return b"event: " + kind.encode() + b"\n"


def _one_line(data: bytes) -> bytes:
    """``data`` as one line. Data that came in several lines is re-encoded when msgspec can read it;
    else its line breaks become spaces (between JSON tokens they are whitespace; inside a string
    they would make it unreadable anyway), every other byte kept."""
    if b"\n" not in data:
        return data
    try:
        return encode(_decode_any(data))
    except UNREADABLE:
        return data.replace(b"\n", b" ")


def _named(event: SSEEvent, kind: str) -> SSEEvent:
    """``event`` as it came, given an ``event:`` line if it has none (the SDKs skip such frames)."""
    if event.event is not None:
        return event
    assert event.data is not None
    return encode_event(_one_line(event.data), fields=b"event: " + kind.encode() + b"\n" + event.fields)


def _resent(event: SSEEvent, kind: str) -> SSEEvent:
    """An upstream event sent later than it came, as a new event: written with ``\\n`` line
    endings like every event the translator writes (the pipeline converts them), with its name."""
    if event.event is not None and b"\r" not in event.raw:
        return event
    assert event.data is not None
    return encode_event(_one_line(event.data), fields=_fields_for(event, kind))


def _with_indexes(data: bytes, value_for: Any) -> bytes:
    """``data`` with the value of every top-level ``"index"`` key replaced by ``value_for(value)``
    (bytes, or ``None`` to keep it), every other byte as it came."""
    keys = TopLevelKeys(_INDEX, lambda key, value: value_for(value) if key == b"index" else None)
    return keys.feed(data) + keys.finish()


def _last_index(data: bytes) -> tuple[int | None, bytes | None]:
    """The value of the last top-level ``"index"`` key of ``data`` (what a JSON parser keeps) as an
    integer (``4.0`` read as the SDKs read it), and the ``type`` the data names, on its bytes."""
    keys = TopLevelKeys(_INDEX, lambda key, value: None)
    keys.feed(data)
    index = keys.seen.get(b"index")
    kind = as_str(msgspec.Raw(keys.seen[b"type"])) if b"type" in keys.seen else None
    return (as_int(msgspec.Raw(index)) if index is not None else None), (kind.encode() if kind is not None else None)


def _reindexed(event: SSEEvent, kind: str, old: int, new: int) -> SSEEvent:
    """``event`` with its ``index`` replaced, every other byte of its data kept.

    Every top-level ``"index"`` key gets the new value: with a duplicate key, parsers keep the last
    one, and so does this translator's reader; rewriting only the first would leave the stale one."""
    data = event.data
    assert data is not None
    prefix = _index_prefix(kind, old)
    if data.startswith(prefix) and b"\n" not in data and data.find(b'"index"', len(prefix)) < 0:
        data = _index_prefix(kind, new) + data[len(prefix) :]
    else:
        value = b"%d" % new
        data = _with_indexes(_one_line(data), lambda _: value)
    return encode_event(data, fields=_fields_for(event, kind))


def _newline_of(raw: bytes) -> bytes:
    """The line ending an event's bytes use."""
    end = raw.find(b"\n")
    if end < 0:
        return b"\r" if b"\r" in raw else b"\n"
    return b"\r\n" if end > 0 and raw[end - 1] == 13 else b"\n"


def _has_event_line(head: bytes) -> bool:
    for line in head.splitlines():
        if line.startswith(b"data"):
            return False
        if line.startswith(b"event:"):
            return True
    return False


class _Oversized:
    """An event over the cap under way: its index rewritten on its bytes as they pass."""

    __slots__ = ("channel", "keys", "kind", "out")

    def __init__(self, kind: bytes | None) -> None:
        self.kind = kind  # from its event: line or the type that opens its data
        self.out: int | None = None  # the output index every top-level "index" key gets
        self.channel: _Channel | None = None  # the text channel it writes to, when it names one
        self.keys: TopLevelKeys | None = None


# -- the steady fast path: one event decoded alone, passed as it came or edited on its bytes ----

_EVENT_LINE = b"event: content_block_delta\n"
_NAMED = _EVENT_LINE + b"data: "  # how an event of the usual framing starts, up to its data
_DATA = b"data: "
_INDEX_KEY = b'"index"'
_TEXT_KEY = b'"text"'
_TEXT_TYPE = b'"text_delta"'
_THINKING_KEY = b'"thinking"'
_THINKING_TYPE = b'"thinking_delta"'


class _IndexRead(msgspec.Struct, gc=False):
    """An edited event read back (when it holds ``\\u`` escapes): its index."""

    index: int | None = None


class _ThinkingDeltaRead(msgspec.Struct, gc=False):
    type: str = ""
    thinking: str | None = None
    text: msgspec.Raw = msgspec.Raw()  # empty when absent


class _ThinkingRead(msgspec.Struct, gc=False):
    """A renamed event read back (when it holds ``\\u`` escapes): what the rename must have made."""

    index: int | None = None
    delta: _ThinkingDeltaRead | None = None


_decode_index_read = msgspec.json.Decoder(_IndexRead).decode
_decode_thinking_read = msgspec.json.Decoder(_ThinkingRead).decode


def _escaped(data: bytes) -> bool:
    """Whether ``data`` holds a ``\\u`` escape: without one, every key and every ASCII value is
    spelled as itself (no other escape stands for a letter or an underscore)."""
    return data.find(b"\\") >= 0 and data.find(b"\\u") >= 0


def _steady_text(ev: _Event, upstream: int, triggers: frozenset[str]) -> str | None:
    """The text of ``ev`` when all it does is continue text block ``upstream`` with text free of
    ``triggers``: a ``text_delta`` with a non-empty text. ``None`` otherwise."""
    delta = ev.delta
    if ev.type != "content_block_delta" or ev.index != upstream or delta is None or delta.type != "text_delta":
        return None
    text = delta.text
    if not text or not triggers.isdisjoint(text):
        return None
    return text


def _number_at(data: bytes, pos: int) -> tuple[int, int] | None:
    """Where the integer that is the value of the key ending at ``pos`` starts and ends."""
    n = len(data)
    while pos < n and data[pos] in b" \t\r\n":
        pos += 1
    if pos >= n or data[pos] != 58:  # ":"
        return None
    pos += 1
    while pos < n and data[pos] in b" \t\r\n":
        pos += 1
    start = pos
    while pos < n and data[pos] in b"-0123456789":
        pos += 1
    return (start, pos) if pos > start else None


_INDEX_SPELLED = {space: tuple(b'"index":%s%d' % (space, i) for i in range(64)) for space in (b"", b" ")}


def _index_spelled(index: int, space: bytes = b"") -> bytes:
    """``"index":N`` (or ``"index": N``), made once for the first indexes."""
    return _INDEX_SPELLED[space][index] if index < 64 else b'"index":%s%d' % (space, index)


def _index_replaced(data: bytes, old: int, new: int) -> bytes | None:
    """``data`` with the value ``old`` of its one ``"index"`` key made ``new``; ``None`` when the key
    is not there once, or its value is not spelled ``old``."""
    if data.count(_INDEX_KEY) != 1:
        return None
    # Compact or spaced as json.dumps spaces it: the one key, then that number (nothing longer:
    # the decoder read the value as old).
    parts = data.split(_index_spelled(old))
    if len(parts) == 2:
        return _index_spelled(new).join(parts)
    parts = data.split(_index_spelled(old, b" "))
    if len(parts) == 2:
        return _index_spelled(new, b" ").join(parts)
    at = data.find(_INDEX_KEY) + 7
    value = _number_at(data, at)
    if value is None or data[value[0] : value[1]] != b"%d" % old:
        return None
    return b"".join((data[: value[0]], b"%d" % new, data[value[1] :]))


def _body(framed: bytes, head: int) -> bytes:
    """The data of an event: ``framed`` itself (``head`` 0), or its bytes from ``head`` to its blank line."""
    return framed[head:-2] if head else framed


def _renumbered(data: bytes, old: int, new: int, head: int = 0) -> bytes | None:
    """``data`` (an event the decoder read with top-level ``"index": old``; its data from ``head``,
    see :func:`_body`) with that value made ``new``, every other byte kept: what
    :func:`_reindexed` gives. ``None`` when unproven.

    The key found once is the top-level one: with no ``\\u`` escape the decoder's key is spelled
    as itself, so it is that one occurrence; with escapes the edited event is read back and must
    carry ``new``, which an edit anywhere else (a nested key, a string) cannot give it.
    """
    out = _index_replaced(data, old, new)
    if out is not None and _escaped(data):
        try:
            if _decode_index_read(_body(out, head)).index != new:
                return None
        except UNREADABLE:
            return None
    return out


def _as_thinking(data: bytes, old: int, new: int, text: str, head: int = 0) -> bytes | None:
    """``data`` (a ``text_delta`` event of block ``old`` whose whole text ``text`` is reasoning; its
    data from ``head``, see :func:`_body`) as the ``thinking_delta`` of block ``new`` the full
    rewrite gives: the delta's type and its text key renamed, the index replaced, every other byte
    kept. ``None`` when unproven.

    With no ``\\u`` escape the decoder's keys and the type's value are spelled as themselves, so a
    ``"text"`` and a ``"text_delta"`` found once each are the delta's. With escapes the renamed event
    is read back: the delta must carry ``text`` as its thinking, be a ``thinking_delta``, have no
    ``text`` key left, and the index must be ``new``.
    """
    # Each rename adds 4 bytes, and the decoder saw at least one of each: 8 bytes, one of each.
    out = data.replace(_TEXT_TYPE, _THINKING_TYPE).replace(_TEXT_KEY, _THINKING_KEY)
    if len(out) != len(data) + 8:
        return None
    if new != old:
        renumbered = _index_replaced(out, old, new)
        if renumbered is None:
            return None
        out = renumbered
    if _escaped(data):
        try:
            read = _decode_thinking_read(_body(out, head))
        except UNREADABLE:
            return None
        delta = read.delta
        if read.index != new or delta is None or delta.type != "thinking_delta" or delta.thinking != text or delta.text:
            return None
    return out


_NAMED_BOUNDARY = b"\n\n" + _NAMED
_DATA_BOUNDARY = b"\n\ndata: "


def _run_bodies(span: bytes) -> tuple[list[bytes], int] | None:
    """The data of each event of ``span``, when each is one ``data:`` line after an ``event:
    content_block_delta`` line or none, and how many have that line; ``None`` for anything else
    (a comment, ``id:``, another ``event:`` line, a blank line, data of several lines)."""
    if not span.endswith(b"\n\n"):
        return None
    lines = span.count(b"\n")
    # The usual framings, all events alike: each boundary is followed by the next event's head,
    # and no event holds a line more than its head's (the count tells).
    if span.startswith(_NAMED):
        bodies = span[33:-2].split(_NAMED_BOUNDARY)
        if lines == 3 * len(bodies):
            return bodies, len(bodies)
    elif span.startswith(_DATA):
        bodies = span[6:-2].split(_DATA_BOUNDARY)
        if lines == 2 * len(bodies):
            return bodies, 0
    # Framings mixed: event by event.
    pieces = span[:-2].split(b"\n\n")
    bodies = []
    named = 0
    for piece in pieces:
        if piece.startswith(_NAMED):
            bodies.append(piece[33:])
            named += 1
        elif piece.startswith(_DATA):
            bodies.append(piece[6:])
        else:
            return None
    return (bodies, named) if lines == 2 * len(pieces) + named else None


def _run_renumbered(span: bytes, old: int, new: int, count: int) -> bytes | None:
    """``span`` (``count`` events the decoder read with ``"index": old``, no ``\\u`` escape in any)
    with each index made ``new``: every event holds its one key spelled as itself, so ``count``
    keys in all are one each (see :func:`_index_replaced`). ``None`` when unproven."""
    if span.count(_INDEX_KEY) != count:
        return None
    for space in (b"", b" "):
        parts = span.split(_index_spelled(old, space))
        if len(parts) == count + 1:
            return _index_spelled(new, space).join(parts)
    return None


def _framed(bodies: list[bytes]) -> bytes:
    """Events of ``bodies``, each with its ``event:`` line."""
    return b"".join([b"".join((_NAMED, body, b"\n\n")) for body in bodies])


def _with_event_lines(span: bytes, count: int, named: int) -> bytes:
    """``span`` (``count`` events of one data line each, ``named`` of them with an ``event:`` line)
    with every event given its ``event:`` line, as :meth:`MessagesStream.event` writes them."""
    if named == count:
        return span
    if not named:  # every "\n\n" ends an event: the one before the next data line gets its name
        return _EVENT_LINE + span.replace(_DATA_BOUNDARY, _NAMED_BOUNDARY)
    return _framed([p[33:] if p.startswith(_NAMED) else p[6:] for p in span[:-2].split(b"\n\n")])


# -- the stream ---------------------------------------------------------------------------------


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
        self._read: tuple[bytes, _Event | None] | None = None  # an event fast_forward read and declined
        self._steady: tuple[_Channel, frozenset[str]] | None = None  # see _steady_channel
        self._steady_known = False
        self._texts = 0  # text blocks scanned so far: a template's injected <think> opens the first only
        self._big: _Oversized | None = None  # an oversized event under way
        self._before: list[SSEEvent] | None = None  # events to send before its first byte
        self._ended = False  # message_delta, message_stop or error came: no block reopens
        self._last: int | None = None  # the upstream index the last block event named
        self.counts = Counts()

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
            ev, lenient = (read[1], False) if read[1] is not None else _read_lenient(data)
        else:
            ev, lenient = _read(data)
        if ev is None:
            return self._unreadable(event)
        if self._config is None and ev.type in _RESOLVING:
            message = ev.message if ev.type == "message_start" else None
            self._resolve(message.model if message is not None else None)
            if not self._active:  # a profile turns this model off
                return [event]
        out = self._dispatch(event, ev, lenient)
        if ev.index is not None and (ev.index in self._channels or ev.index in self._indexes):
            self._last = ev.index  # the block events, and unknown ones naming a block that started
        if event.event is None:  # a data-only upstream: every frame sent gets its event: line
            return [_named(e, ev.type) if e is event else e for e in out]
        return out

    def _dispatch(self, event: SSEEvent, ev: _Event, lenient: bool) -> list[SSEEvent]:
        kind = ev.type
        if kind == "content_block_delta":
            return self._block_delta(event, ev, lenient)
        if kind == "content_block_start":
            return self._block_start(event, ev, lenient)
        if kind == "content_block_stop":
            return self._block_stop(event, ev)
        if kind == "message_start":
            self._ended = False
            if ev.message is not None and any(part.type in _NATIVE for part in ev.message.content):
                self._native = True
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
            head = piece[:_HEAD]
            big = self._big = _Oversized(event_type(head))
            keys = big.keys = TopLevelKeys(_INDEX, lambda key, value: self._big_index(big, key, value))
            self._before = before = []
            try:
                out = keys.feed(piece)
                if big.out is None and big.kind == b"content_block_delta":
                    big.channel = self._likely_channel()
                    if big.channel is not None:
                        before += self._text_block(big.channel)
            finally:
                self._before = None
            newline = _newline_of(piece)
            written = b"".join(e.raw for e in before)
            if newline != b"\n":
                written = written.replace(b"\n", newline)
            if big.kind is not None and not _has_event_line(head):
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
        (:func:`_renumbered`, :func:`_as_thinking`). A declined single event stays decoded for
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
        if span.startswith(_NAMED):
            if span.find(b"\n", 33) == n - 2 and span[-1] == 10:
                return self._steady_one(steady[0], steady[1], span, 33)
        elif span.startswith(_DATA) and span.find(b"\n") == n - 2 and span[-1] == 10:
            out = self._steady_one(steady[0], steady[1], span, 6)
            return out if not out else _EVENT_LINE + out  # the SDKs skip frames without one
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
            ev = _decode_event(data)
        except UNREADABLE:
            self._read = (data, None)
            return None
        text = _steady_text(ev, channel.upstream, triggers)
        if text is None:
            self._read = (data, ev)
            return None
        out: bytes | None
        if channel.kind == CONTENT:
            out = span if channel.out == channel.upstream else _renumbered(span, channel.upstream, channel.out, head)
        elif self._redacted:
            out = b"" if self._held_under_cap(channel, text) else None
        else:
            out = self._as_thinking(span, channel.upstream, channel.out, text, head)
            if out is not None:
                channel.digest.update(text.encode())
        if out is None:
            self._read = (data, ev)
            return None
        channel.scanner.pass_steady(len(text))
        self._last = channel.upstream
        return out

    def _steady_run(self, channel: _Channel, triggers: frozenset[str], span: bytes) -> bytes | None:
        """Several events, each read alone as :meth:`event` reads it (see :func:`_run_bodies`)."""
        run = _run_bodies(span)
        if run is None:
            return None
        bodies, named = run
        try:
            events = [_decode_run_event(body) for body in bodies]
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
        channel.scanner.pass_steady(len(joined))
        self._last = upstream
        return out

    def _content_run(self, channel: _Channel, span: bytes, bodies: list[bytes], named: int) -> bytes | None:
        """Answer text: the events as they came, renumbered if they must be, each with its
        ``event:`` line."""
        old, new = channel.upstream, channel.out
        if old != new:
            renumbered = _run_renumbered(span, old, new, len(bodies)) if not _escaped(span) else None
            if renumbered is None:
                edited = [_renumbered(body, old, new) for body in bodies]
                return None if None in edited else _framed(cast(list[bytes], edited))
            span = renumbered
        return _with_event_lines(span, len(bodies), named)

    def _thinking_run(
        self, channel: _Channel, span: bytes, bodies: list[bytes], texts: list[str], named: int
    ) -> bytes | None:
        """Steady reasoning: each event renamed into a ``thinking_delta`` (see :func:`_as_thinking`)."""
        old, new = channel.upstream, channel.out
        if not _escaped(span):
            # As for one event: each event's two names found once each, when the span grows by
            # 8 bytes an event (the decoder saw at least one of each in every event).
            renamed = span.replace(_TEXT_TYPE, _THINKING_TYPE).replace(_TEXT_KEY, _THINKING_KEY)
            if len(renamed) == len(span) + 8 * len(bodies):
                out = renamed if old == new else _run_renumbered(renamed, old, new, len(bodies))
                if out is not None:
                    return _with_event_lines(out, len(bodies), named)
        edited = [self._as_thinking(body, old, new, text) for body, text in zip(bodies, texts, strict=True)]
        return None if None in edited else _framed(cast(list[bytes], edited))

    def _as_thinking(self, data: bytes, old: int, new: int, text: str, head: int = 0) -> bytes | None:
        return _as_thinking(data, old, new, text, head)

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
        if b'"index"' not in data:
            return [event]
        upstream, named = _last_index(data)
        if upstream is None:
            return [event]
        before, new = self._map(upstream, kind or named)
        if new is None or new == upstream:
            return [*before, event]
        value = b"%d" % new
        return [*before, encode_event(_with_indexes(_one_line(data), lambda _: value), fields=event.fields)]

    # -- per event ------------------------------------------------------------------------------

    def _unreadable(self, event: SSEEvent) -> list[SSEEvent]:
        """An event no messages client can take (not JSON, or a known type of the wrong shape):
        it goes out as it came, after the held text. Renumbering it would only disguise it."""
        self.counts.unreadable_events += 1
        return [*self.flush(), event]

    def _block_start(self, event: SSEEvent, ev: _Event, lenient: bool) -> list[SSEEvent]:
        block, upstream = ev.content_block, ev.index
        if block is None or upstream is None:
            return self._unreadable(event)
        cfg = self._resolve(None)  # already resolved: the first event did
        if block.type in _NATIVE:
            self._native = True  # upstream reasoning wins for the whole message
        elif block.type == "text" and not self._native and upstream not in self._channels:
            scanner = Scanner(after_first_channel(cfg) if self._texts else cfg)
            self._texts += 1
            channel = self._channels[upstream] = _Channel(scanner, upstream, event)
            if block.text:  # a start carrying text (the real API sends ""): the channel's first text
                text, channel.surrogate = _whole_chars("", block.text)
                return self._emit(channel, channel.scanner.feed(text))
            return []  # held until the first run is known
        new = self._indexes[upstream] = self._next
        self._next += 1
        return [event] if new == upstream else [_reindexed(event, "content_block_start", upstream, new)]

    def _block_delta(self, event: SSEEvent, ev: _Event, lenient: bool) -> list[SSEEvent]:
        upstream, delta = ev.index, ev.delta
        if upstream is None or delta is None:
            return self._unreadable(event)
        channel = self._channels.get(upstream)
        text = delta.text
        if channel is None:
            new = self._indexes.get(upstream)
            if new is not None:
                return [event] if new == upstream else [_reindexed(event, "content_block_delta", upstream, new)]
            if not self._may_reopen(upstream) or delta.type != "text_delta" or text is None:
                new = self._closed.get(upstream)  # after its text block's stop: on its last block
                if new is None:
                    return self._unreadable(event)  # a delta for a block that never started
                return [event] if new == upstream else [_reindexed(event, "content_block_delta", upstream, new)]
            channel = self._reopen(upstream)  # text after its block's stop: it goes on in a new block
        if delta.type != "text_delta" or text is None:
            # A citation or another delta of the text block: after the text so far, on a text block.
            out = self._emit(channel, channel.scanner.flush())
            out += self._text_block(channel)
            new = channel.out
            out.append(event if new == upstream else _reindexed(event, "content_block_delta", upstream, new))
            return out
        data = event.data
        assert data is not None
        if lenient or channel.surrogate:
            # Written afresh: the text as whole characters, the index as an integer.
            text, channel.surrogate = _whole_chars(channel.surrogate, text)
            doc = obj(_one_line(data))
            return self._emit(channel, channel.scanner.feed(text), (event, doc) if doc is not None else None)
        segments = channel.scanner.feed(text)
        if len(segments) == 1 and segments[0].text == text:
            if segments[0].kind == CONTENT:
                # The common case, answer text: the event goes out as it came (renumbered if it must be).
                out = [] if channel.kind == CONTENT else self._close(channel) + self._open(channel, CONTENT)
                new = channel.out
                out.append(event if new == upstream else _reindexed(event, "content_block_delta", upstream, new))
                return out
            if not self._redacted:
                # All reasoning: the event renamed into a thinking_delta on its bytes, when provably
                # what the rewrite below gives.
                out = [] if channel.kind == REASONING else self._close(channel) + self._open(channel, REASONING)
                edited = self._as_thinking(data, upstream, channel.out, text) if data.find(b"\n") < 0 else None
                if edited is not None:  # (data of several lines is written afresh, on one)
                    channel.digest.update(text.encode())
                    out.append(encode_event(edited, fields=_fields_for(event, "content_block_delta")))
                    return out
                return out + self._emit(channel, segments, self._source(event, data, upstream, text))
        return self._emit(channel, segments, self._source(event, data, upstream, text))

    @staticmethod
    def _source(event: SSEEvent, data: bytes, upstream: int, text: str) -> tuple[SSEEvent, Obj] | None:
        """The upstream event whose fields the translator does not own ride on the first delta
        written for it; ``None`` when it has none (its bytes are those the translator writes)."""
        if data == _text_delta_prefix(upstream) + encode(text) + b"}}":
            return None
        doc = obj(_one_line(data))
        return (event, doc) if doc is not None else None

    def _block_stop(self, event: SSEEvent, ev: _Event) -> list[SSEEvent]:
        upstream = ev.index
        if upstream is None:
            return self._unreadable(event)
        channel = self._channels.get(upstream)
        if channel is not None:
            return self._finish_channel(upstream, channel)
        new = self._indexes.get(upstream, self._closed.get(upstream))
        if new is None:
            return self._unreadable(event)
        return [event] if new == upstream else [_reindexed(event, "content_block_stop", upstream, new)]

    # -- per channel ----------------------------------------------------------------------------

    def _may_reopen(self, upstream: int) -> bool:
        """Whether a delta naming ``upstream`` is text after its block's stop, within the message."""
        return upstream in self._closed and upstream not in self._indexes and not self._ended

    def _reopen(self, upstream: int) -> _Channel:
        """A new channel for a text block that had ended: scanned as a text block after the first."""
        cfg = self._resolve(None)
        scanner = Scanner(after_first_channel(cfg) if self._texts else cfg)
        self._texts += 1
        channel = self._channels[upstream] = _Channel(scanner, upstream, None)
        return channel

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
                out.append(_delta(channel.out, _text_delta(seg.text)))
            else:
                out.append(_delta(channel.out, _thinking_delta(seg.text)))
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
                    else:
                        delta[k] = v
                body[key] = delta
            else:
                body[key] = value
        return encode_event(encode(body), fields=_fields_for(event, "content_block_delta"))

    def _open(self, channel: _Channel, kind: Kind) -> list[SSEEvent]:
        channel.kind = kind
        channel.emitted = True
        if kind == REASONING:
            if self._redacted:
                channel.parts, channel.held = [], 0
                return []  # written whole when the run ends
            channel.digest = hashlib.sha256()
            channel.out = self._take_index()
            return [_start(channel.out, _THINKING_BLOCK)]
        channel.out = self._take_index()
        start, channel.start = channel.start, None
        if start is None:
            return [_start(channel.out, _TEXT_BLOCK)]
        # The upstream start event goes out for the first text block, with all its fields.
        assert start.data is not None
        read, lenient = _read(start.data)
        if not lenient and read is not None and channel.out == channel.upstream and read.content_block == _EMPTY_TEXT:
            return [_resent(start, "content_block_start")]
        doc = obj(_one_line(start.data))
        if doc is None:  # only the lenient reader could read it: written afresh
            return [_start(channel.out, _TEXT_BLOCK)]
        doc["index"] = channel.out
        block = obj(doc["content_block"])
        if block is not None:
            block["text"] = ""
            doc["content_block"] = block
        return [encode_event(encode(doc), fields=_fields_for(start, "content_block_start"))]

    def _close(self, channel: _Channel) -> list[SSEEvent]:
        kind, channel.kind = channel.kind, None
        if kind is None:
            return []
        if kind == CONTENT:
            return [_stop(channel.out)]
        if self._redacted:
            text = "".join(channel.parts)
            channel.parts, channel.held = [], 0
            index = channel.out = self._take_index()
            block = b'{"type":"redacted_thinking","data":%s}' % encode(_redacted_data(text))
            return [_start(index, block), _stop(index)]
        signature = b'{"type":"signature_delta","signature":%s}' % encode(_signature_of(channel.digest))
        channel.digest = None
        return [_delta(channel.out, signature), _stop(channel.out)]

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


async def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    stream = MessagesStream(config)
    async for event in events:
        for out in stream.event(event):
            yield out
    for out in stream.finish():
        yield out


# -- non-stream ---------------------------------------------------------------------------------


def _blocks(block: Obj, segments: list[Segment], redacted: bool) -> list[Any]:
    """The blocks of one upstream text block's runs, in order."""
    out: list[Any] = []
    template: Obj | None = block
    for seg in segments:
        if seg.kind == CONTENT:
            if template is not None:
                new = dict(template)  # the first text block keeps the upstream block's other fields
                template = None
                new["text"] = seg.text
                out.append(new)
            else:
                out.append({"type": "text", "text": seg.text})
        elif redacted:
            out.append({"type": "redacted_thinking", "data": _redacted_data(seg.text)})
        else:
            out.append({"type": "thinking", "thinking": seg.text, "signature": gateway_signature(seg.text)})
    if not segments:
        out.append({**block, "text": ""})
    return out


def transform_body(body: bytes | bytearray, config: ThinkExtractConfig) -> tuple[bytes | None, Counts]:
    """A non-stream ``message`` body with each text block split into the blocks of its runs.

    Returns ``None`` for the body when nothing changed (the caller then sends the original bytes).
    Only the objects on the way to a changed text are decoded: every other value is sent as it came.
    """
    counts = Counts()
    doc = obj(bytes(body))
    raw_content = doc.get("content") if doc is not None else None
    if doc is None or raw_content is None or as_str(doc.get("type")) not in (None, "message"):
        return None, counts
    content = raw_list(raw_content)
    if content is None:
        return None, counts  # content is not a list
    cfg = config.for_model(as_str(doc.get("model")))
    if not cfg.enabled or cfg.messages_policy == "off":
        return None, counts
    blocks = [obj(raw) for raw in content]
    if any(b is not None and as_str(b.get("type")) in _NATIVE for b in blocks):
        return None, counts  # upstream reasoning wins
    redacted = cfg.messages_policy == "redacted"
    new_content: list[Any] = []
    changed = False
    texts = 0  # text blocks scanned so far (see after_first_channel)
    for raw, block in zip(content, blocks, strict=True):
        text = as_str(block.get("text")) if block is not None and as_str(block.get("type")) == "text" else None
        if block is None or text is None:
            new_content.append(raw)
            continue
        segments = extract_counted(text, after_first_channel(cfg) if texts else cfg, counts)
        texts += 1
        if (not segments and not text) or (len(segments) == 1 and segments[0] == Segment(CONTENT, text)):
            new_content.append(raw)
            continue
        new_content += _blocks(block, segments, redacted)
        changed = True
    if not changed:
        return None, counts
    doc["content"] = new_content
    return encode(doc), counts
