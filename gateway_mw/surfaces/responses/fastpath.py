"""The Responses fast path: runs of steady ``output_text.delta`` events without a per-event rebuild.

While the message item a run of deltas belongs to is steady in one kind (its scanner holds nothing
and the texts hold none of its triggers), the run is validated in one batch decode and written: as
it came (content, nothing to renumber), with its ``output_index`` and ``sequence_number`` replaced
on its bytes (content, when those bytes provably are the encoding the full path would write), or as
reasoning deltas of the open reasoning item. Anything else declines, and the full path decides.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from ...scanner import CONTENT
from ..rawjson import UNREADABLE, encode
from .items import Channel

if TYPE_CHECKING:
    from .stream import ResponsesStream

__all__ = ["fast_forward"]

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
_REQUIRED = frozenset(_FIELDS) - {b"obfuscation"}
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


def fast_forward(stream: ResponsesStream, span: bytes) -> bytes | None:
    """The bytes for a run of whole events, when provably exactly what ``stream.event`` gives them;
    ``None`` otherwise."""
    channels = stream.channels
    if not channels:
        return None
    if len(channels) == 1:  # the usual case: refuse early what cannot be steady
        scanner = next(iter(channels.values())).scanner
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
    writer = stream.writer
    if named and named != events and not writer.named:
        return None  # the first events would be answered unnamed, the later ones named
    decode = _layout_decoder(tuple(_KEY.findall(body[6 : body.find(b"\n")])))
    if decode is None:
        return None
    array = b"[" + joined + b"]"
    try:
        deltas = decode(array)
    except UNREADABLE:
        return None
    if len(deltas) != events:
        return None  # two JSON values on one line
    first = deltas[0]
    up, part = first.output_index, first.content_index
    ch = channels.get(up)
    scanner = ch.scanner if ch is not None else None
    if ch is None or scanner is None or ch.up_part != part or ch.high or ch.other_part:
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
        out = _plain_content(stream, ch, span, array, deltas, texts)
    else:
        out = _plain_reasoning(stream, ch, texts, writer.named or named > 0)
    if out is None:
        return None
    if named:
        writer.named = True
    scanner.pass_steady(sum(map(len, texts)))
    ch.fed += sum(map(len, texts))
    return out


def _plain_content(
    stream: ResponsesStream, ch: Channel, span: bytes, array: bytes, deltas: list[Any], texts: list[str]
) -> bytes | None:
    """Steady answer text: each event as it came, renumbered and pointed at its client item."""
    msg = ch.msg
    if ch.rs is not None or msg is None or msg.part is None or msg.text_done:
        return None
    if len(msg.parts) != deltas[0].content_index:
        return None
    item_id = msg.id
    seq = stream.numbering.seq
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
        # The full path re-encodes each event with these two numbers changed. Its bytes are exactly
        # that encoding but for the numbers when they are exactly the encoding of what they decode
        # to: msgspec writes a dict of these keys in their order as it writes the struct. In that
        # form a '"' inside a string is escaped, so '"output_index":' is only ever the key, once
        # per event.
        if encode(deltas) != array:
            return None
        if moved:
            out = out.replace(b'"output_index":%d' % up, b'"output_index":%d' % msg.index)
        if renumber:
            pieces = out.split(_SEQ_KEY)  # one key per event
            rebuilt = [pieces[0]]
            for i, d in enumerate(deltas):
                rebuilt.append(b"%d" % (seq + i) + pieces[i + 1][len(str(d.sequence_number)) :])
            out = _SEQ_KEY.join(rebuilt)
    msg.text.extend(texts)
    stream.numbering.seq = seq + len(deltas)
    return out


def _plain_reasoning(stream: ResponsesStream, ch: Channel, texts: list[str], lines: bool) -> bytes | None:
    """Steady reasoning: each event becomes the reasoning delta(s) of the open reasoning item."""
    rs = ch.rs
    if ch.msg is not None or rs is None:
        return None
    writer = stream.writer
    heads: list[bytes] = []
    for on, kind, where in (
        (writer.content, b"response.reasoning_text.delta", b"content_index"),
        (writer.summary, b"response.reasoning_summary_text.delta", b"summary_index"),
    ):
        if on:
            head = b'data: {"type":"%s","item_id":%s,"output_index":%d,"%s":0,"delta":' % (
                kind,
                encode(rs.id),
                rs.index,
                where,
            )
            heads.append(b"event: " + kind + b"\n" + head if lines else head)
    seq = stream.numbering.seq
    out = []
    for text in texts:
        delta = encode(text)
        for head in heads:
            out.append(head + delta + b',"sequence_number":%d}\n\n' % seq)
            seq += 1
    rs.text.extend(texts)
    ch.produced = True
    stream.numbering.seq = seq
    return b"".join(out)
