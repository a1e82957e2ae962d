"""The Responses fast path: a layer over the reference translator (``reference.py``) that writes
steady ``output_text.delta`` events without running it.

While the message item an event belongs to is steady (its channel's scanner holds nothing and sits in
answer text or in a reasoning block), a text delta whose text is free of the scanner's triggers does
nothing but continue that text. Such an event, offered alone or in a run of whole events, is decoded
alone into the head the reference reads (``heads.Head``: msgspec skips every other value, whatever its
key order, spacing or escapes), and goes out as the reference would write it:

* answer text: the event's bytes as they came when its numbers and ids are already the client's;
  else the reference's rewrite of it (decoded one level, those values set, encoded again), or the
  same bytes made without decoding where they are proven to be the encoding of that object;
* reasoning: the reasoning delta(s) of the open reasoning item, which the reference builds from the
  decoded text alone, built the same way.

Anything else declines and leaves the reference as it was (in a run, the events before it are
taken, and it goes to the reference); the head of a single event it declined is kept for the
reference to read (a decline costs a comparison, not a second decode).

With ``trim_reasoning_tail`` a reasoning block's trailing whitespace is held until the next text, so
whitespace is a trigger there: a reasoning delta holding any (most do) takes the reference; one
without any takes this layer. Answer text is not affected.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from ...channels import Counts
from ...rawjson import UNREADABLE, encode, obj
from ...scanner import CONTENT, REASONING, Scanner
from ...steady import DECLINED, Proven, Steady, end_of_events
from .heads import Head, decode_head, encode_body, event_of
from .items import Channel, ClientItem, Writer, points_at
from .messages import MessageChannels
from .numbering import Numbering

__all__ = ["FastPath", "Reference"]


class Reference(Protocol):
    """What the layer reads of the reference translator, and the parts of it it updates as the
    reference's own step would: the scanner, the client item's text, the numbering, the naming."""

    messages: MessageChannels
    numbering: Numbering
    writer: Writer
    passing: bool
    counts: Counts


class _DeltaHead(Head, gc=False):
    """A delta's head with the one member OpenAI adds to it, so that a run of them can be proven to
    be written as their decoded values are encoded (see :func:`_canonical`)."""

    obfuscation: Any = None


_decode_delta = msgspec.json.Decoder(_DeltaHead).decode

_DATA = b"data: "
_NAMED = b"event: response.output_text.delta\ndata: "  # the only event: line a fast event may have
_DELTA = "response.output_text.delta"
_LINE = len(_NAMED) - len(_DATA)  # the event: line
_NEXT = b"\n\n" + _DATA  # between two events of a run
_NEXT_NAMED = b"\n\n" + _NAMED
_SEQ = b'"sequence_number"'
_OBFUSCATION = len(b',"obfuscation":""')  # its encoding, but for its text
# A reasoning delta's text and number in the sample the template is cut from: a control character
# (no id holds one) and a number no index reaches.
_SAMPLE_TEXT = "\x00"
_SAMPLE_TEXT_JSON = encode(_SAMPLE_TEXT)
_SAMPLE_NUMBER = 7_365_019_442_803_776_211


class _Steady(Steady):
    """The one channel steady events continue, as the reference left it: what an event must say to
    continue its text, and what goes out for it. Valid until the reference runs again (the stream
    drops it then): a steady event changes none of it."""

    __slots__ = (
        "bare",
        "canonical",
        "ch",
        "index",
        "item",
        "item_id",
        "named",
        "ordinal",
        "part",
        "reasoning",
        "template",
        "written",
    )

    def __init__(self, ordinal: int, ch: Channel, scanner: Scanner, item: ClientItem, reasoning: bool) -> None:
        super().__init__(REASONING if reasoning else CONTENT, scanner)
        self.ordinal = ordinal  # the upstream item, as numbering.ordinal reads it
        self.ch = ch
        self.item = item  # the client item its text goes into: the message, or the reasoning item
        self.reasoning = reasoning
        self.item_id = item.id
        self.index = item.index
        self.part = len(item.parts)  # the message's content_index
        self.canonical: dict[int, int] = {}  # answer: upstream output_index → see _canonical
        self.bare = 0  # answer: the length of llama-server's delta but for its text (see _retargeted)
        self.named = False  # reasoning: whether its events carry event: lines
        self.template = b""  # reasoning: its delta events, text and number left to fill in
        self.written = 0  # reasoning: events written per delta (one per reasoning format)


class FastPath:
    """The layer: ``forward(span)`` gives the reference's bytes for the first events of ``span``."""

    __slots__ = ("_last", "_ref", "declined", "steady")

    def __init__(self, reference: Reference) -> None:
        self._ref = reference
        self.steady: _Steady | None = None  # dropped whenever the reference runs
        self._last: _Steady | None = None  # the last one made: what it worked out of its item is kept
        self.declined: tuple[bytes, tuple[Head, bool] | None] | None = None  # an event read, declined

    def read(self, data: bytes) -> tuple[Head, bool] | None:
        """The head of ``data`` as ``heads.decode_head`` reads it, for the reference, which is about to
        act on it (the steady channel is forgotten): the one this layer read if it declined that
        event, else read now."""
        self.steady = None
        declined = self.declined
        if declined is not None and declined[0] == data:
            self.declined = None
            return declined[1]
        return decode_head(data)

    def forward(self, span: bytes) -> Proven:
        """The bytes for the first events of ``span`` (whole events, ``\\n`` line endings) that are
        provably exactly what the reference's ``event`` gives them one by one, the reference then as
        it would be, and where they end."""
        ref = self._ref
        if ref.passing:
            return span, len(span)  # the reference passes every event as it came
        named = span.startswith(_NAMED)
        start = len(_NAMED) if named else 6
        if not named and not span.startswith(_DATA):
            return DECLINED
        if span.find(b"\n", start) != len(span) - 2 or span[-1] != 10:
            return self._run(span)
        # One event, one data line: the deployment pattern.
        data = span[start:-2]
        read = decode_head(data)
        if read is not None and read[1]:
            step = self._step(read[0], span, data, named)
            if step is not None:
                steady, text, out = step
                steady.scanner.pass_steady(text)
                steady.ch.fed += len(text)
                steady.item.text.add(text)
                if steady.reasoning:
                    ref.counts.reasoning_events += 1
                if named:
                    ref.writer.named = True
                ref.numbering.seq += steady.written if steady.reasoning else 1
                return out, len(span)
        self.declined = (data, read)
        return DECLINED

    def _steady(self, ordinal: int | None) -> _Steady | None:
        """The channel of upstream item ``ordinal`` when it is steady and its text goes where the
        reference's steady step puts it; else ``None``."""
        if ordinal is None:
            return None
        messages = self._ref.messages
        ch = messages.open.get(ordinal)
        if ch is None or ch.other_part or ch.half:
            return None
        scanner = messages.core.scanner(ordinal)
        kind = scanner.steady if scanner is not None else None
        if scanner is None or kind is None:
            return None
        msg, rs = ch.msg, ch.rs
        if kind == CONTENT:  # MessageChannels.delta: the event into the open part, as it came
            if rs is not None or msg is None or msg.part is None or msg.text_done:
                return None
            steady = _Steady(ordinal, ch, scanner, msg, False)
        elif msg is not None or rs is None:  # Writer.runs: reasoning deltas of the open reasoning item
            return None
        else:
            steady = _Steady(ordinal, ch, scanner, rs, True)
        last = self._last
        if last is not None and last.item is steady.item and last.part == steady.part:
            # The same client item and part as before the reference ran: the same encodings.
            steady.template, steady.written, steady.named = last.template, last.written, last.named
            steady.canonical, steady.bare = last.canonical, last.bare
        self._last = steady
        return steady

    def _step(self, head: Head, event: bytes, data: bytes, named: bool) -> tuple[_Steady, str, bytes] | None:
        """What the reference writes for one ``event`` (its data ``data``), ``named`` when it has an
        ``event:`` line: the steady channel whose text it continues, that text, and the bytes;
        ``None`` when it is not such an event."""
        text = head.delta
        if head.type != _DELTA or not text:
            return None
        ref = self._ref
        up = head.output_index
        ordinal = up if type(up) is int else ref.numbering.ordinal(head)
        steady = self.steady
        if steady is None or steady.ordinal != ordinal:
            steady = self.steady = self._steady(ordinal)
            if steady is None:
                return None
        if not steady.triggers.isdisjoint(text):
            return None
        seq = ref.numbering.seq
        if steady.reasoning:
            named = named or ref.writer.named
            if steady.named != named or not steady.written:
                _write_as(steady, ref.writer, named)
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
        ) or points_at(head, item_id, index, part, seq):
            return steady, text, event
        edited = _retargeted(steady, data, head, seq)
        return steady, text, b"".join((_NAMED if named else _DATA, edited, b"\n\n"))

    def _run(self, span: bytes) -> Proven:
        """The first events of a run of whole events, as the reference takes each, and where they end.

        The run is cut into its events' data (each event one ``data:`` line, named or not), each
        decoded alone, in one pass; those before the first that does not continue the one steady
        channel with text free of its triggers are taken."""
        ref = self._ref
        steady = self.steady
        if steady is None:
            channels = ref.messages.open
            steady = self.steady = self._steady(next(iter(channels))) if len(channels) == 1 else None
            if steady is None:
                return DECLINED  # nothing can be steady: refused before any decoding
        if not span.isascii():
            try:
                span.decode()  # as decode_head: invalid UTF-8 in a value skipped is unreadable too
            except UnicodeDecodeError:
                return DECLINED
        cut = _events(span)
        if cut is None:
            return DECLINED
        body, datas, named = cut
        numbering, ordinal, triggers = ref.numbering, steady.ordinal, steady.triggers
        heads: list[_DeltaHead] = []
        texts: list[str] = []
        for data in datas:
            if b"\n" in data:
                break  # an event of another line (a comment, id:, another event: name): not ours
            try:
                head = _decode_delta(data)
            except UNREADABLE:
                break
            text, up = head.delta, head.output_index
            if head.type != _DELTA or not text or (up if type(up) is int else numbering.ordinal(head)) != ordinal:
                break
            if not triggers.isdisjoint(text):
                break
            heads.append(head)
            texts.append(text)
        n = len(heads)
        if not n:
            return DECLINED
        if n < len(datas):  # the events before the first that does not qualify
            span = span[: end_of_events(span, n)]
            body, datas, named = _events(span)  # type: ignore[misc]  # a prefix of events cut above
        writer = ref.writer
        if 0 < named < n and not writer.named:
            return DECLINED  # the first events would be answered unnamed, the later ones named
        chars = "".join(texts)
        seq = numbering.seq
        if steady.reasoning:
            named_now = writer.named or named > 0
            if steady.named != named_now or not steady.written:
                _write_as(steady, writer, named_now)
            out = _reasoning_deltas(steady, texts, seq)
            numbering.seq = seq + n * steady.written
            ref.counts.reasoning_events += n
        else:
            answers = _answers(steady, span, body, datas, heads, chars, seq, named)
            if answers is None:
                return DECLINED
            out = answers
            numbering.seq = seq + n
        if named:
            writer.named = True
        steady.scanner.pass_steady(chars)
        steady.ch.fed += len(chars)
        steady.item.text.extend(texts)
        return out, len(span)


def _events(span: bytes) -> tuple[bytes, list[bytes], int] | None:
    """``span``'s events as data lines: the span with every ``event:`` line taken out, each event's
    data, and how many events had that line; ``None`` when it does not start as one of ours."""
    body = span.replace(_NEXT_NAMED, _NEXT)
    named = (len(span) - len(body)) // _LINE  # events after the first with the event: line
    if body.startswith(_NAMED):
        body = body[_LINE:]
        named += 1
    if not body.startswith(_DATA) or not body.endswith(b"\n\n"):
        return None
    return body, body[6:-2].split(_NEXT), named


# -- answer text: the client's numbers and ids ---------------------------------------------------


def _answers(
    steady: _Steady,
    span: bytes,
    body: bytes,
    datas: list[bytes],
    heads: list[_DeltaHead],
    chars: str,
    seq: int,
    named: int,
) -> bytes | None:
    """Steady answer text: the run as it came, renumbered on its bytes, or each event as
    :meth:`FastPath._step` writes it."""
    item_id, index, part = steady.item_id, steady.index, steady.part
    first = heads[0]
    if first.sequence_number != seq or first.output_index != index:
        # The usual run after a reasoning item: every event renumbered and moved. (Exact for the
        # events already numbered right too: their values are written again as they are.)
        renumbered = _renumbered_run(steady, span, body, heads, chars, seq)
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
        and not points_at(head, item_id, index, part, seq + i)
    ]
    if not edits:
        return span
    if 0 < named < len(datas):
        return None  # each event's own lines are not known: they differ
    prefix = _NAMED if named else _DATA
    out = [prefix + data + b"\n\n" for data in datas]
    for i in edits:
        out[i] = b"".join((prefix, _retargeted(steady, datas[i], heads[i], seq + i), b"\n\n"))
    return b"".join(out)


def _renumbered_run(
    steady: _Steady, span: bytes, body: bytes, heads: list[_DeltaHead], chars: str, seq: int
) -> bytes | None:
    """A run of answer deltas that differ from the client's only in their ``output_index`` and
    ``sequence_number`` (the usual run after a reasoning item), both replaced on the run's bytes;
    ``None`` when unproven.

    The reference decodes each event one level and encodes it again with those values set: where
    every event is the encoding of its decoded members (:func:`_canonical`), that is its bytes
    with the two values replaced, each written once, as the digits of the decoded ``int``."""
    n = len(heads)
    up = heads[0].output_index
    if type(up) is not int or span.find(b"\\") >= 0:
        return None
    written: list[bytes] = []  # each event's number as it follows its key: ":" and its digits
    obfuscation = 0
    for head in heads:
        number = head.sequence_number
        if (
            type(number) is not int
            or type(head.output_index) is not int  # 0.0 == 0, but 0.0 is not the bytes of 0
            or head.output_index != up
            or type(head.content_index) is not int
            or head.content_index != steady.part
            or head.item_id != steady.item_id
            or head.logprobs != []
        ):
            return None
        written.append(b":%d" % number)
        if type(head.obfuscation) is str:
            obfuscation += _OBFUSCATION + _utf8_len(head.obfuscation)
    digits = len(b"".join(written)) - n
    if len(body) - 8 * n != n * _canonical(steady, up) + digits + _utf8_len(chars) + obfuscation:
        return None
    if up != steady.index:
        span = span.replace(b'"output_index":%d' % up, b'"output_index":%d' % steady.index)
    pieces = span.split(_SEQ)
    if len(pieces) != n + 1:
        return None
    for i, old in enumerate(written, start=1):
        pieces[i] = b":%d" % (seq + i - 1) + pieces[i][len(old) :]
    return _SEQ.join(pieces)


def _canonical(steady: _Steady, up: int) -> int:
    """The length of a delta event of the run as msgspec encodes its decoded members (type,
    sequence_number, item_id, output_index ``up``, content_index, delta, logprobs ``[]``), but for
    its number's digits and its text.

    A run whose data is exactly as long as the sum of these lengths (plus each number's digits,
    each text's UTF-8 and each ``obfuscation``'s encoding) holds nothing else: no other member, no
    member twice (the decoder keeps the last), no space, no escape (none in the run) and no other
    spelling of a number. Each event is then the encoding of what the reference decodes of it."""
    length = steady.canonical.get(up)
    if length is None:
        sample = {
            "type": _DELTA,
            "sequence_number": 0,
            "item_id": steady.item_id,
            "output_index": up,
            "content_index": steady.part,
            "delta": "",
            "logprobs": [],
        }
        length = steady.canonical[up] = len(encode(sample)) - 1
    return length


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


def _retargeted(steady: _Steady, data: bytes, head: Head, seq: int) -> bytes:
    """``data`` as the reference rewrites it (``Writer.forward_delta``): ``item_id``,
    ``output_index``, ``content_index`` and ``sequence_number`` set to the client's, ``logprobs``
    added when missing, every other value as its raw bytes."""
    item_id, index, part = steady.item_id, steady.index, steady.part
    if (
        head.output_index is None
        and head.content_index is None
        and head.sequence_number is None
        and head.logprobs is None
        and head.item_id == item_id
        and data.find(b"\\") < 0
    ):
        if not steady.bare:
            steady.bare = len(encode({"type": _DELTA, "item_id": item_id, "delta": ""}))
        text = head.delta
        if text is not None and len(data) == steady.bare + _utf8_len(text):
            # llama-server's delta: type, item_id and delta, nothing else (the length of their
            # encoding, with no escape in it, leaves room for no other byte). The reference
            # appends the four members it lacks, in this order.
            return b'%s,"output_index":%d,"content_index":%d,"logprobs":[],"sequence_number":%d}' % (
                data[:-1],
                index,
                part,
                seq,
            )
    body = obj(data)
    assert body is not None  # the head was read from it: a JSON object
    body.update({"item_id": item_id, "output_index": index, "content_index": part})
    body.setdefault("logprobs", [])
    body["sequence_number"] = seq
    return encode_body(body)


# -- reasoning: the reasoning deltas, built ---------------------------------------------------------


def _write_as(steady: _Steady, writer: Writer, named: bool) -> None:
    """The reasoning delta events of ``steady``'s item as the writer writes them (its events for a
    text and a number that occur nowhere else in them), the text and the number left as ``%s`` and
    ``%d``: one event per reasoning form."""
    events = []
    for body in writer.reasoning_delta_bodies(steady.item, _SAMPLE_TEXT):
        body["sequence_number"] = _SAMPLE_NUMBER
        raw = event_of(body, None, body["type"] if named else None).raw.replace(b"%", b"%%")
        events.append(raw.replace(_SAMPLE_TEXT_JSON, b"%s").replace(b"%d" % _SAMPLE_NUMBER, b"%d"))
    steady.template = b"".join(events)
    steady.written = len(events)
    steady.named = named


def _reasoning_deltas(steady: _Steady, texts: list[str], seq: int) -> bytes:
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
