"""What the messages translator reads of an upstream event, and how it writes one.

The event decoder reads a handful of fields and skips the rest. It is lenient where the SDKs are:
an event msgspec's strict decoder rejects but a client's ``json`` accepts (``"index":0.0``, a lone
surrogate escape) is read with the standard library, so that no character is lost. Events the
translator writes are compact, with their ``event:`` line; a rewrite of an upstream event keeps
every value the translator does not own as its raw bytes.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import msgspec

from ...marks import SIGNATURE_PREFIX, gateway_signature, redacted_data, signature_of
from ...rawjson import UNREADABLE, TopLevelKeys, as_int, as_str, encode, obj
from ...sse import SSEEvent, encode_event

__all__ = [
    "EMPTY_TEXT",
    "INDEX",
    "NATIVE",
    "RESOLVING",
    "SIGNATURE_PREFIX",
    "TEXT_BLOCK",
    "THINKING_BLOCK",
    "Event",
    "decode_event",
    "delta_event",
    "fields_for",
    "gateway_signature",
    "has_event_line",
    "last_index",
    "may_spell_index",
    "newline_of",
    "one_line",
    "read_event",
    "read_lenient",
    "redacted_data",
    "reindexed",
    "resent",
    "signature_of",
    "start_event",
    "stop_event",
    "text_delta",
    "text_delta_prefix",
    "thinking_delta",
    "with_event_line",
    "with_indexes",
]

NATIVE = frozenset({"thinking", "redacted_thinking"})
# The events that fix the settings of a message when none came before (a ping may come first).
RESOLVING = frozenset({"message_start", "content_block_start", "content_block_delta", "content_block_stop"})


# -- what the translator reads ------------------------------------------------------------------


class Part(msgspec.Struct, gc=False):
    """A content block or a delta: its type, and its text when it has one."""

    type: str = ""
    text: str | None = None
    id: Any = None  # a tool_use block's id: read only for the reasoning record


class Message(msgspec.Struct, gc=False):
    model: str | None = None
    content: list[Part] = []


class Event(msgspec.Struct, gc=False):
    """The fields of an event the translator reads; everything else is skipped by the decoder."""

    type: str
    index: int | None = None
    delta: Part | None = None
    content_block: Part | None = None
    message: Message | None = None


decode_event = msgspec.json.Decoder(Event).decode
_decode_any = msgspec.json.Decoder().decode
INDEX = frozenset({b"index"})


def read_event(data: bytes) -> tuple[Event | None, bool]:
    """The fields the translator reads, and whether only the lenient reader could read them.

    msgspec's strict decoder comes first; an event it rejects that a client's JSON parser accepts
    (``"index":0.0``, a lone surrogate escape ``"\\ud83d"``) is read with the standard library, as the
    SDKs read it. ``None`` when neither can: the event is unreadable."""
    try:
        return decode_event(data), False
    except UNREADABLE:
        return read_lenient(data)


def read_lenient(data: bytes) -> tuple[Event | None, bool]:
    """:func:`read_event` for data msgspec's strict decoder rejected."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None, True
    return (_lenient_event(doc) if isinstance(doc, dict) else None), True


def _lenient_part(value: Any) -> Part | bool | None:
    """A block or delta from the stdlib's decode; ``False`` when it has the wrong shape (never ``True``)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return False
    kind, text = value.get("type", ""), value.get("text")
    if not isinstance(kind, str) or not (text is None or isinstance(text, str)):
        return False
    return Part(kind, text)


def _lenient_event(doc: dict[str, Any]) -> Event | None:
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
    msg: Message | None = None
    if isinstance(message, dict):
        model = message.get("model")
        parts = [_lenient_part(p) for p in message.get("content") or [] if isinstance(p, dict)]
        msg = Message(model if isinstance(model, str) else None, [p for p in parts if isinstance(p, Part)])
    return Event(kind, index, delta, block, msg)


# -- what the translator writes -----------------------------------------------------------------


def _frame(kind: str, data: bytes) -> SSEEvent:
    return encode_event(data, event=kind)


def start_event(index: int, block: bytes) -> SSEEvent:
    data = b'{"type":"content_block_start","index":%d,"content_block":%s}' % (index, block)
    return _frame("content_block_start", data)


def delta_event(index: int, delta: bytes) -> SSEEvent:
    return _frame("content_block_delta", b'{"type":"content_block_delta","index":%d,"delta":%s}' % (index, delta))


def stop_event(index: int) -> SSEEvent:
    return _frame("content_block_stop", b'{"type":"content_block_stop","index":%d}' % index)


TEXT_BLOCK = b'{"type":"text","text":""}'
EMPTY_TEXT = Part("text", "")
THINKING_BLOCK = b'{"type":"thinking","thinking":"","signature":""}'


def text_delta(text: str) -> bytes:
    return b'{"type":"text_delta","text":%s}' % encode(text)


def thinking_delta(text: str) -> bytes:
    return b'{"type":"thinking_delta","thinking":%s}' % encode(text)


@lru_cache(maxsize=256)
def _index_prefix(kind: str, index: int) -> bytes:
    return b'{"type":"%s","index":%d,' % (kind.encode(), index)


@lru_cache(maxsize=256)
def text_delta_prefix(index: int) -> bytes:
    """How a ``text_delta`` event with no other field starts, up to its text."""
    return b'{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":' % index


def fields_for(event: SSEEvent, kind: str) -> bytes:
    """The non-data lines for a rewrite of ``event`` as a ``kind`` event: its own when they name
    that event, with an ``event:`` line added when they name none."""
    if event.event == kind:
        return event.fields
    if event.event is None:
        return b"event: " + kind.encode() + b"\n" + event.fields
    return b"event: " + kind.encode() + b"\n"


def one_line(data: bytes) -> bytes:
    """``data`` as one line. Data that came in several lines is re-encoded when msgspec can read it;
    else its line breaks become spaces (between JSON tokens they are whitespace; inside a string
    they would make it unreadable anyway), every other byte kept."""
    if b"\n" not in data:
        return data
    try:
        return encode(_decode_any(data))
    except UNREADABLE:
        return data.replace(b"\n", b" ")


def with_event_line(event: SSEEvent, kind: str) -> SSEEvent:
    """``event`` as it came, given an ``event:`` line if it has none (the SDKs skip such frames)."""
    if event.event is not None:
        return event
    assert event.data is not None
    return encode_event(one_line(event.data), fields=b"event: " + kind.encode() + b"\n" + event.fields)


def resent(event: SSEEvent, kind: str) -> SSEEvent:
    """An upstream event sent later than it came, as a new event: written with ``\\n`` line
    endings like every event the translator writes (the pipeline converts them), with its name."""
    if event.event is not None and b"\r" not in event.raw:
        return event
    assert event.data is not None
    return encode_event(one_line(event.data), fields=fields_for(event, kind))


def with_indexes(data: bytes, value_for: Any) -> bytes:
    """``data`` with the value of every top-level ``"index"`` key replaced by ``value_for(value)``
    (bytes, or ``None`` to keep it), every other byte as it came.

    A key spelled with escapes (``"\\u0069ndex"``) is the same key to a JSON parser, but not to
    the byte scan: when the data holds an escape and a parser would still read another value than
    the one written, the object is written afresh from its raw values (one ``index`` key, where
    the parser finds it), as a parser reads it."""
    keys = TopLevelKeys(INDEX, lambda key, value: value_for(value) if key == b"index" else None)
    out = keys.feed(data) + keys.finish()
    if not may_spell_index(out):
        return out
    doc = obj(out)
    if doc is None or "index" not in doc:
        return out
    value = value_for(bytes(doc["index"]))
    if value is None or bytes(doc["index"]) == value:
        return out
    doc["index"] = msgspec.Raw(value)
    return encode(doc)


_INDEX_LETTER_ESCAPE = re.compile(rb"\\u00(?:6[459eE]|78)")  # d, e, i, n or x written as an escape


def may_spell_index(data: bytes) -> bool:
    """Whether ``data`` may hold a key that is ``index`` to a parser but not on its bytes: one of
    the key's letters written as a ``\\u`` escape (a cheap test; a false positive costs a read)."""
    return data.find(b"\\u00") >= 0 and _INDEX_LETTER_ESCAPE.search(data) is not None


def _index_read(data: bytes) -> tuple[int | None, bool]:
    """The top-level ``index`` a parser reads in ``data`` (the last key, however spelled) as an
    integer, and whether ``data`` has such a key at all."""
    doc = obj(data)
    if doc is None or "index" not in doc:
        return None, False
    return as_int(doc["index"]), True


def last_index(data: bytes) -> tuple[int | None, bytes | None]:
    """The value of the last top-level ``"index"`` key of ``data`` (what a JSON parser keeps) as an
    integer (``4.0`` read as the SDKs read it), and the ``type`` the data names, on its bytes."""
    keys = TopLevelKeys(INDEX, lambda key, value: None)
    keys.feed(data)
    index = keys.seen.get(b"index")
    kind = as_str(msgspec.Raw(keys.seen[b"type"])) if b"type" in keys.seen else None
    number = as_int(msgspec.Raw(index)) if index is not None else None
    if may_spell_index(data):  # a key spelled with escapes: read as a parser reads it
        read, found = _index_read(data)
        if found:
            number = read
    return number, (kind.encode() if kind is not None else None)


def reindexed(event: SSEEvent, kind: str, old: int, new: int) -> SSEEvent:
    """``event`` with its ``index`` replaced, every other byte of its data kept.

    Every top-level ``"index"`` key gets the new value: with a duplicate key, parsers keep the last
    one, and so does this translator's reader; rewriting only the first would leave the stale one."""
    data = event.data
    assert data is not None
    prefix = _index_prefix(kind, old)
    if (
        data.startswith(prefix)
        and b"\n" not in data
        and data.find(b'"index"', len(prefix)) < 0
        and not may_spell_index(data)
    ):
        data = _index_prefix(kind, new) + data[len(prefix) :]
    else:
        value = b"%d" % new
        data = with_indexes(one_line(data), lambda _: value)
    return encode_event(data, fields=fields_for(event, kind))


def newline_of(raw: bytes) -> bytes:
    """The line ending an event's bytes use."""
    end = raw.find(b"\n")
    if end < 0:
        return b"\r" if b"\r" in raw else b"\n"
    return b"\r\n" if end > 0 and raw[end - 1] == 13 else b"\n"


def has_event_line(head: bytes) -> bool:
    for line in head.splitlines():
        if line.startswith(b"data"):
            return False
        if line.startswith(b"event:"):
            return True
    return False
