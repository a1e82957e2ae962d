"""What the Responses translator reads of an upstream event, and how it writes one.

The head decoder reads a handful of fields and skips the rest. It is lenient where the SDKs are: a
whole number written ``4.0`` is a number, and an event msgspec cannot read because of a lone
surrogate escape (a ``\\ud83d`` / ``\\ude00`` pair split across two deltas) is read with the
standard library, which accepts it, so that no character is lost.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ...rawjson import UNREADABLE, Obj, as_str, encode, obj
from ...sse import SSEEvent, encode_event

__all__ = [
    "CREATED",
    "DONE",
    "LARGE",
    "TERMINAL",
    "Head",
    "decode_head",
    "encode_body",
    "event_of",
    "whole",
]

DONE = b"[DONE]"
TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
CREATED = frozenset({"response.created", "response.in_progress", "response.queued"})
# Events held and read up to max_body_bytes (not max_event_bytes): those that repeat a whole item,
# part or response, so that they are translated and renumbered however long the text they repeat
# (text the gateway holds anyway, having streamed it). Any other event, a text delta included, streams
# through past max_event_bytes, renumbered on its bytes: one delta never costs more than the cap.
LARGE = frozenset(
    name.encode()
    for name in (
        *CREATED,
        *TERMINAL,
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.function_call_arguments.done",
        "response.reasoning_text.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    )
)


class _ItemHead(msgspec.Struct, gc=False):
    type: str = ""
    id: Any = None  # any JSON: an upstream may send a number
    call_id: Any = None  # a function call's: read only for the reasoning record


class _PartHead(msgspec.Struct, gc=False):
    type: str = ""


class _ResponseHead(msgspec.Struct, gc=False):
    model: Any = None


class Head(msgspec.Struct, gc=False):
    """The fields of an event the translator reads; everything else is skipped by the decoder."""

    type: str = ""
    sequence_number: int | float | str | None = None  # the SDKs read "4", 4.0 and 4 alike
    output_index: int | float | str | None = None
    content_index: int | float | str | None = None
    item_id: Any = None
    delta: str | None = None
    logprobs: Any = None
    item: _ItemHead | None = None
    part: _PartHead | None = None
    response: _ResponseHead | None = None


_decode_head = msgspec.json.Decoder(Head).decode


def decode_head(data: bytes) -> tuple[Head, bool] | None:
    """The head of an event and whether msgspec could read it (``False``: only the standard library
    could, for a lone surrogate escape); ``None`` when it is not an event this translator reads."""
    try:
        head = _decode_head(data)
        if not data.isascii():
            data.decode()  # the decoder skips fields unread: invalid UTF-8 there is unreadable too
        return head, True
    except UnicodeDecodeError:
        return None
    except UNREADABLE:
        pass
    try:
        doc = json.loads(data)
        return msgspec.convert(doc, Head), False
    except (ValueError, msgspec.ValidationError):
        return None


def whole(value: int | float | str | None) -> int | None:
    """An index as the SDKs read it: ``4``, ``4.0`` and ``"4"`` are 4; anything else is no index."""
    if isinstance(value, str):
        value = value.strip()
        return int(value) if value.isdecimal() and value.isascii() else None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return value


def item_id_of(head: Head) -> str | None:
    return as_str(head.item_id)


def body_of(data: bytes) -> Obj | None:
    """An event's data as an object of raw values, or (lone surrogates) of decoded ones."""
    doc = obj(data)
    if doc is not None:
        return doc
    try:
        loaded = json.loads(data)
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


def encode_body(body: Obj) -> bytes:
    try:
        return encode(body)
    except UnicodeEncodeError:  # a lone surrogate the upstream sent in a field we do not own
        return json.dumps(_plain(body), separators=(",", ":")).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, msgspec.Raw):
        return json.loads(bytes(value))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def event_of(body: Obj, fields: bytes | None, name: str | None) -> SSEEvent:
    """A client event: the upstream's own lines when it replaces one, else an ``event:`` line when
    the upstream names its events (``name``)."""
    if fields is not None:
        return encode_event(encode_body(body), fields=fields)
    return encode_event(encode_body(body), event=name)
