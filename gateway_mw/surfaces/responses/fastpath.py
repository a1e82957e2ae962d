"""The Responses fast path: steady ``output_text.delta`` events without the per-event rebuild.

While the message item an event belongs to is steady (its scanner holds nothing and sits in answer
text or in a reasoning block), a text delta whose text is free of the scanner's triggers does
nothing but continue that text. Such an event, offered alone or in a run of whole events, is
decoded alone into the head the full path reads (``wire.Head``: msgspec skips every other value,
whatever its key order, spacing or escapes), and goes out as the full path would write it:

* answer text: the event's bytes as they came when its numbers and ids are already the client's;
  else the full path's rewrite of it: the members it adds (llama-server sends no indexes or
  numbers) appended on the bytes where they provably lack those keys, or else the event decoded one
  level and encoded again with those values set, as the full path does (see :func:`_retargeted`);
* reasoning: the reasoning delta(s) of the open reasoning item, which the full path builds from the
  decoded text alone (nothing of the upstream event survives there), built the same way.

Anything else declines (``None``) and the full path decides; a declined single event stays decoded
for ``ResponsesStream.event``, so that a decline costs a comparison, not a second decode.

With ``trim_reasoning_tail`` a reasoning block's trailing whitespace is held until the next text, so
whitespace is a trigger there: a reasoning delta holding any (most do) takes the full path; one
without any takes this one. Answer text is not affected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...rawjson import UNREADABLE, encode, obj
from ...scanner import CONTENT, Scanner
from .items import Channel, ClientItem, Writer
from .wire import Head, decode_head, encode_body, item_id_of, whole
from .wire import decode_head_strict as _decode_head

if TYPE_CHECKING:
    from .stream import ResponsesStream

__all__ = ["Read", "Steady", "fast_forward"]

Read = tuple[bytes, "tuple[Head, bool] | None"]  # an event's data, and what decode_head made of it

_DATA = b"data: "
_NAMED = b"event: response.output_text.delta\ndata: "  # the only event: line a fast event may have
_DELTA = "response.output_text.delta"
_LINE = len(_NAMED) - len(_DATA)  # the event: line
_NEXT = b"\n\n" + _DATA  # between two events of a run
_NEXT_NAMED = b"\n\n" + _NAMED
_OUTPUT_INDEX = b'"output_index"'
_SEQ = b'"sequence_number"'
_KEPT = (b'"item_id"', b'"content_index"', b'"logprobs"')


class Steady:
    """The one channel steady events continue, as the full path left it: what an event must say
    to continue its text, and what goes out for it. Valid until the full path runs again (the
    stream drops it then, see ``ResponsesStream.event``): a steady event changes none of it."""

    __slots__ = (
        "ch",
        "index",
        "item",
        "item_id",
        "named",
        "ordinal",
        "part",
        "reasoning",
        "scanner",
        "template",
        "triggers",
        "written",
    )

    def __init__(self, ordinal: int, ch: Channel, scanner: Scanner, item: ClientItem, reasoning: bool) -> None:
        self.ordinal = ordinal  # the upstream item, as numbering.ordinal reads it
        self.ch = ch
        self.scanner = scanner
        self.triggers = scanner.triggers
        self.item = item  # the client item its text goes into: the message, or the reasoning item
        self.reasoning = reasoning
        self.item_id = item.id
        self.index = item.index
        self.part = len(item.parts)  # the message's content_index
        self.named = False  # reasoning: whether its events carry event: lines
        self.template = b""  # reasoning: its delta events, text and number left to fill in
        self.written = 0  # reasoning: events written per delta (one per reasoning format)


def fast_forward(stream: ResponsesStream, span: bytes) -> bytes | None:
    """The bytes for ``span`` (whole events), when provably exactly what ``stream.event`` gives
    them one by one; ``None`` otherwise."""
    named = span.startswith(_NAMED)
    start = len(_NAMED) if named else 6
    if not named and not span.startswith(_DATA):
        return None
    if span.find(b"\n", start) != len(span) - 2 or span[-1] != 10:
        return _run(stream, span)
    # One event, one data line: the deployment pattern.
    data = span[start:-2]
    read = decode_head(data)
    if read is not None and read[1]:
        numbering = stream.numbering
        seq = numbering.seq
        step = _step(stream, read[0], span, data, named, seq)
        if step is not None:
            steady, text, out = step
            _commit(stream, steady, text, named)
            return out
    stream.declined = (data, read)
    return None


def _run(stream: ResponsesStream, span: bytes) -> bytes | None:
    """A run of whole events, as :func:`fast_forward` would take each alone, or ``None``.

    The run is cut into its events' data (each event one ``data:`` line, named or not), each
    decoded alone, in one pass; all must continue the one steady channel, with text free of its
    triggers. The stream's state changes only once all qualify."""
    steady = stream.steady
    if steady is None:
        steady = stream.steady = _only_steady(stream)
        if steady is None:
            return None  # nothing can be steady: refused before any decoding
    body = span.replace(_NEXT_NAMED, _NEXT)
    named = (len(span) - len(body)) // _LINE  # events after the first with the event: line
    if body.startswith(_NAMED):
        body = body[_LINE:]
        named += 1
    if not body.startswith(_DATA) or not body.endswith(b"\n\n"):
        return None
    datas = body[6:-2].split(_NEXT)
    n = len(datas)
    if body.count(b"\n") != 2 * n:
        return None  # an event of another line (a comment, id:, another event: name): not ours
    writer, numbering = stream.writer, stream.numbering
    if 0 < named < n and not writer.named:
        return None  # the first events would be answered unnamed, the later ones named
    try:
        if not span.isascii():
            span.decode()  # as decode_head: invalid UTF-8 in a value skipped is unreadable too
        heads = [_decode_head(data) for data in datas]
    except (UnicodeDecodeError, *UNREADABLE):
        return None
    ordinal = steady.ordinal
    texts = []
    for head in heads:
        text, up = head.delta, head.output_index
        if head.type != _DELTA or not text or (up if type(up) is int else numbering.ordinal(head)) != ordinal:
            return None
        texts.append(text)
    chars = "".join(texts)
    if not steady.triggers.isdisjoint(chars):
        return None
    seq = numbering.seq
    if steady.reasoning:
        named_now = writer.named or named > 0
        if steady.named != named_now or not steady.written:
            _write_as(steady, writer, named_now)
        out = _reasoning_deltas(steady, texts, seq)
        steady.ch.produced = True
        numbering.seq = seq + n * steady.written
    else:
        answers = _answers(steady, span, datas, heads, seq, named)
        if answers is None:
            return None
        out = answers
        numbering.seq = seq + n
    if named:
        writer.named = True
    steady.scanner.pass_steady(chars)
    steady.ch.fed += len(chars)
    steady.item.text.extend(texts)
    return out


def _answers(steady: Steady, span: bytes, datas: list[bytes], heads: list[Head], seq: int, named: int) -> bytes | None:
    """Steady answer text: the run as it came, renumbered on its bytes, or each event as
    :func:`_step` writes it."""
    item_id, index, part = steady.item_id, steady.index, steady.part
    first = heads[0]
    if first.sequence_number != seq or first.output_index != index:
        # The usual run after a reasoning item: every event renumbered and moved. (Exact for the
        # events already numbered right too: their values are written again as they are.)
        renumbered = _renumbered_run(span, heads, steady, seq)
        if renumbered is not None:
            return renumbered
    edits = [
        i
        for i, head in enumerate(heads)
        if not (
            head.sequence_number == seq + i
            and head.output_index == index
            and head.content_index == part
            and head.item_id == item_id
            and head.logprobs is not None
        )
        and not _as_it_came(head, item_id, index, part, seq + i)
    ]
    if not edits:
        return span
    if 0 < named < len(datas):
        return None  # each event's own lines are not known: they differ
    prefix = _NAMED if named else _DATA
    out = [prefix + data + b"\n\n" for data in datas]
    for i in edits:
        out[i] = b"".join((prefix, _retargeted(datas[i], heads[i], item_id, index, part, seq + i), b"\n\n"))
    return b"".join(out)


def _renumbered_run(span: bytes, heads: list[Head], steady: Steady, seq: int) -> bytes | None:
    """A run of answer deltas that differ from the client's only in their ``output_index`` and
    ``sequence_number`` (the usual run after a reasoning item), both replaced on the run's bytes;
    ``None`` when unproven.

    With no backslash in the run every ``"`` delimits a string, so each event holds each key the
    decoder saw (a value, not null) spelled as itself, at least once: when a quoted name occurs as
    many times in the run as it has events, each event holds it exactly once, as that key. Each
    such key's value is then the whole number the decoder read, written right after ``":"``, when
    the decoder read an ``int``: a float equal to it (``0.0``, ``0e5``) starts with the same digits,
    and the full path writes the client's number in its place."""
    if span.find(b"\\") >= 0:
        return None
    n = len(heads)
    up = heads[0].output_index
    if type(up) is not int:
        return None
    numbers: list[int] = []
    for head in heads:
        number = head.sequence_number
        if (
            type(number) is not int
            or type(head.output_index) is not int  # 0.0 == 0, but 0.0 or 0e5 is not the bytes of 0
            or head.output_index != up
            or type(head.content_index) is not int
            or head.content_index != steady.part
            or head.item_id != steady.item_id
            or head.logprobs is None
        ):
            return None
        numbers.append(number)
    for key in _KEPT:  # the full path writes them again: once each, so that it writes them as they are
        if span.count(key) != n:
            return None
    # An int index is written as its digits, or (0) as -0, which the full path writes 0: each event
    # holds the digits the full path writes only when the run holds them n times.
    needle = b'"output_index":%d' % up
    if span.count(_OUTPUT_INDEX) != n or span.count(needle) != n:
        return None
    if span.count(b'"content_index":%d' % steady.part) != n:
        return None
    if up != steady.index:
        span = span.replace(needle, b'"output_index":%d' % steady.index)
    pieces = span.split(_SEQ)
    if len(pieces) != n + 1:
        return None
    for i, number in enumerate(numbers, start=1):
        written = b":%d" % number
        piece = pieces[i]
        if not piece.startswith(written):
            return None
        pieces[i] = b":%d" % (seq + i - 1) + piece[len(written) :]
    return _SEQ.join(pieces)


def _only_steady(stream: ResponsesStream) -> Steady | None:
    """The one open channel, when it is steady."""
    channels = stream.channels
    return _steady(stream, next(iter(channels))) if len(channels) == 1 else None


def _step(
    stream: ResponsesStream, head: Head, event: bytes, data: bytes, named: bool, seq: int
) -> tuple[Steady, str, bytes] | None:
    """What the full path writes for one ``event`` (its data ``data``), numbered from ``seq``,
    ``named`` when it has an ``event:`` line: the steady channel whose text it continues, that
    text, and the bytes; ``None`` when it is not such an event."""
    text = head.delta
    if head.type != _DELTA or not text:
        return None
    up = head.output_index
    ordinal = up if type(up) is int else stream.numbering.ordinal(head)
    steady = stream.steady
    if steady is None or steady.ordinal != ordinal:
        steady = stream.steady = _steady(stream, ordinal)
        if steady is None:
            return None
    if not steady.triggers.isdisjoint(text):
        return None
    if steady.reasoning:
        named = named or stream.writer.named
        if steady.named != named or not steady.written:
            _write_as(steady, stream.writer, named)
        delta = encode(text)
        values = (delta, seq) if steady.written == 1 else (delta, seq, delta, seq + 1)
        return steady, text, steady.template % values
    item_id, index, part = steady.item_id, steady.index, steady.part
    if (
        head.sequence_number == seq
        and up == index
        and head.content_index == part
        and head.item_id == item_id
        and head.logprobs is not None
    ):
        return steady, text, event  # as it came
    if _as_it_came(head, item_id, index, part, seq):
        return steady, text, event
    edited = _retargeted(data, head, item_id, index, part, seq)
    return steady, text, b"".join((_NAMED if event.startswith(_NAMED) else _DATA, edited, b"\n\n"))


def _steady(stream: ResponsesStream, ordinal: int | None) -> Steady | None:
    """The channel of upstream item ``ordinal`` when it is steady and its text goes where the
    full path's steady step puts it; else ``None``."""
    if ordinal is None:
        return None
    ch = stream.channels.get(ordinal)
    if ch is None or ch.other_part or ch.high:
        return None
    scanner = ch.scanner
    kind = scanner.steady if scanner is not None else None
    if scanner is None or kind is None:
        return None
    msg, rs = ch.msg, ch.rs
    if kind == CONTENT:  # _text_delta's common case: the event into the open part, as it came
        if rs is not None or msg is None or msg.part is None or msg.text_done:
            return None
        return Steady(ordinal, ch, scanner, msg, False)
    if msg is not None or rs is None:  # Writer.runs: reasoning deltas of the open reasoning item
        return None
    return Steady(ordinal, ch, scanner, rs, True)


def _commit(stream: ResponsesStream, steady: Steady, text: str, named: bool) -> None:
    """The state the full path leaves after one steady event carrying ``text``."""
    steady.scanner.pass_steady(text)
    steady.ch.fed += len(text)
    steady.item.text.add(text)
    if named:
        stream.writer.named = True
    if steady.reasoning:
        steady.ch.produced = True
        stream.numbering.seq += steady.written
    else:
        stream.numbering.seq += 1


# -- answer text: the client's numbers and ids ---------------------------------------------------


def _as_it_came(head: Head, item_id: str, index: int, part: int, seq: int) -> bool:
    """Whether the full path sends this delta as it came (``_forward_delta``): its numbers read as
    the SDKs read them (``4``, ``4.0``, ``"4"``) are the client's already. The fast checks compare
    the decoded values directly; this decides when they find a difference."""
    return (
        whole(head.sequence_number) == seq
        and whole(head.output_index) == index
        and whole(head.content_index) == part
        and item_id_of(head) == item_id
        and head.logprobs is not None
    )


def _retargeted(data: bytes, head: Head, item_id: str, index: int, part: int, seq: int) -> bytes:
    """``data`` as the full path rewrites it (``ResponsesStream._forward_delta``): ``item_id``,
    ``output_index``, ``content_index`` and ``sequence_number`` set to the client's, ``logprobs``
    added when missing, every other value as its raw bytes."""
    if (
        head.output_index is None
        and head.content_index is None
        and head.sequence_number is None
        and head.logprobs is None
        and head.item_id == item_id
        and data.find(b"\\") < 0
        and data.count(b'"') == 12
    ):
        # llama-server's delta: type, item_id and delta, nothing else. With no backslash every
        # '"' delimits a string, and those three keys and their string values are twelve: the
        # event holds no other key. The full path appends the four it lacks, in this order.
        return b'%s,"output_index":%d,"content_index":%d,"logprobs":[],"sequence_number":%d}' % (
            data[: data.rindex(b"}")],
            index,
            part,
            seq,
        )
    # Values to replace: the full path's own rewrite, on the head already read. (Replacing them on
    # the bytes, each key found twice to prove it is there once, costs as much in Python as
    # msgspec's decoding of the event one level and encoding it again.)
    body = obj(data)
    assert body is not None  # the head was read from it: a JSON object
    body["item_id"] = item_id
    body["output_index"] = index
    body["content_index"] = part
    if "logprobs" not in body:
        body["logprobs"] = []
    body["sequence_number"] = seq
    return encode_body(body)


# -- reasoning: the reasoning deltas, built ---------------------------------------------------------


def _write_as(steady: Steady, writer: Writer, named: bool) -> None:
    """The reasoning delta events of ``steady``'s item as ``Writer.send`` encodes them, their
    text and number left as ``%s`` and ``%d``: one event per reasoning format."""
    rs = steady.item
    events = []
    for on, kind, where in (
        (writer.content, b"response.reasoning_text.delta", b"content_index"),
        (writer.summary, b"response.reasoning_summary_text.delta", b"summary_index"),
    ):
        if on:
            line = b"event: " + kind + b"\n" if named else b""
            head = b'%sdata: {"type":"%s","item_id":%s,"output_index":%d,"%s":0,"delta":' % (
                line,
                kind,
                encode(rs.id),
                rs.index,
                where,
            )
            events.append(head.replace(b"%", b"%%") + b'%s,"sequence_number":%d}\n\n')
    steady.template = b"".join(events)
    steady.written = len(events)
    steady.named = named


def _reasoning_deltas(steady: Steady, texts: list[str], seq: int) -> bytes:
    """The reasoning delta events of ``texts``, numbered from ``seq``, as ``Writer.send`` writes them."""
    template = steady.template
    if steady.written == 1:
        return b"".join([template % (encode(text), seq + i) for i, text in enumerate(texts)])
    return b"".join(
        [
            template % (delta, number, delta, number + 1)
            for delta, number in zip(map(encode, texts), range(seq, seq + 2 * len(texts), 2), strict=True)
        ]
    )
