"""The SSE codec: events cut anywhere, every line ending, byte-for-byte re-emission."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from gateway_mw import sse
from gateway_mw.sse import BOM, SSEDecoder, SSEEvent, encode_event

from ..hypothesis_examples import examples


def decode_all(pieces: list[bytes], max_event_bytes: int = 1 << 20) -> list[SSEEvent]:
    """The events, then the unterminated tail (if any) as a last pseudo-event with no data."""
    decoder = SSEDecoder(max_event_bytes)
    events: list[SSEEvent] = []
    for piece in pieces:
        events += decoder.feed(piece)
    last, tail = decoder.finish()
    return events + last + ([SSEEvent(raw=tail)] if tail else [])


def test_fields_and_kinds_of_event() -> None:
    stream = (
        b": keepalive\n\n"
        b'event: message_start\nid: 7\nretry: 100\ndata: {"a":1}\n\n'
        b"data: line one\ndata:line two\ndata\n\n"
        b"data: [DONE]\n\n"
    )
    assert decode_all([stream]) == [
        SSEEvent(raw=b": keepalive\n\n", data=None, event=None, fields=b": keepalive\n"),
        SSEEvent(
            raw=b'event: message_start\nid: 7\nretry: 100\ndata: {"a":1}\n\n',
            data=b'{"a":1}',
            event="message_start",
            fields=b"event: message_start\nid: 7\nretry: 100\n",
        ),
        SSEEvent(raw=b"data: line one\ndata:line two\ndata\n\n", data=b"line one\nline two\n"),
        SSEEvent(raw=b"data: [DONE]\n\n", data=b"[DONE]"),
    ]


def test_crlf_and_cr_line_endings() -> None:
    stream = b"data: a\r\n\r\nevent: e\rdata: b\r\rdata: c\n\r\n"
    events = decode_all([stream])
    assert [(e.data, e.event) for e in events] == [(b"a", None), (b"b", "e"), (b"c", None)]
    assert b"".join(e.raw for e in events) == stream


def test_an_event_without_its_blank_line_is_no_event_but_a_raw_tail() -> None:
    """The SSE standard drops an event the stream ends inside; its bytes are handed back as they are."""
    for stream, tail in [
        (b"data: a\n\ndata: tail\n", b"data: tail\n"),
        (b"data: a\n\ndata: partial", b"data: partial"),
        (b"data: a\n\n: keepal", b": keepal"),
        (b"data: a\r\n\r\ndata: x\r", b"data: x\r"),
    ]:
        decoder = SSEDecoder()
        assert decoder.feed(stream) == [SSEEvent(raw=stream[: -len(tail)], data=b"a")]
        assert decoder.finish() == ([], tail)


def test_split_inside_crlf_and_inside_a_utf8_character() -> None:
    stream = "data: é日🙂\r\n\r\ndata: b\r\n\r\n".encode()
    for cut in range(len(stream) + 1):
        events = decode_all([stream[:cut], stream[cut:]])
        assert [e.data for e in events] == ["é日🙂".encode(), b"b"], cut
        assert b"".join(e.raw for e in events) == stream


@given(
    data=st.binary(max_size=64).filter(lambda b: b"\r" not in b)
    | st.lists(st.sampled_from([b"{", b"}", b"\n", b"\r\n", b"\r", b" ", b'"a"', b":"])).map(b"".join)
)
def test_encoded_event_decodes_to_its_data_whatever_its_line_breaks(data: bytes) -> None:
    # A line break in data never ends the data: line early; readers get the data back, each line
    # break as the "\n" readers join lines with.
    event = encode_event(data, event="x")
    decoder = SSEDecoder()
    (decoded,) = decoder.feed(event.raw)
    assert decoded.data == data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    assert decoded.event == "x" and decoder.finish() == ([], b"")


def test_encode_event_keeps_the_replaced_event_fields() -> None:
    assert encode_event(b'{"x":1}').raw == b'data: {"x":1}\n\n'
    assert encode_event(b"{}", event="ping").raw == b"event: ping\ndata: {}\n\n"
    assert encode_event(b"{}", fields=b"event: a\nid: 3\n").raw == b"event: a\nid: 3\ndata: {}\n\n"


def test_fields_are_kept_with_lf_endings_whatever_the_stream_uses() -> None:
    decoder = SSEDecoder()
    [event] = decoder.feed(b"event: a\r\nid: 3\r\ndata: x\r\n\r\n")
    assert (event.fields, event.data, decoder.newline) == (b"event: a\nid: 3\n", b"x", b"\r\n")


@pytest.mark.parametrize(
    ("pieces", "newline"),
    [
        ([b"data: a\n\n"], b"\n"),
        ([b"data: a\r\n\r\n"], b"\r\n"),
        ([b"data: a\r\rdata: b\n\n"], b"\r"),
        ([b"data: a\r", b"\n\r\n"], b"\r\n"),
        ([b": c\n\ndata: a\r\n\r\n"], b"\n"),
    ],
)
def test_the_stream_line_ending_is_its_first_one(pieces: list[bytes], newline: bytes) -> None:
    decoder = SSEDecoder()
    for piece in pieces:
        decoder.feed(piece)
    assert decoder.newline == newline


@pytest.mark.parametrize("cut", range(5))
def test_a_byte_order_mark_is_passed_on_and_not_parsed(cut: int) -> None:
    stream = BOM + b'data: {"a":1}\n\n'
    assert decode_all([stream[:cut], stream[cut:]]) == [SSEEvent(raw=BOM), SSEEvent(raw=stream[3:], data=b'{"a":1}')]
    assert decode_all([b"\xef\xbb"]) == [SSEEvent(raw=b"\xef\xbb")]  # a stream too short to tell
    assert decode_all([b"data: \xef\xbb\xbf\n\n"]) == [SSEEvent(raw=b"data: \xef\xbb\xbf\n\n", data=BOM)]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
@pytest.mark.parametrize("piece", [1, 7, 64, 10_000])
def test_an_oversized_event_streams_through_raw_and_decoding_resumes(eol: bytes, piece: int) -> None:
    small = b"data: s" + eol + eol
    big = b"event: e" + eol + b"data: " + b"x" * 300 + eol + b"data: more" + eol + eol
    stream = small + big + small + b": c" + eol + eol + small
    decoder = SSEDecoder(max_event_bytes=100)
    events: list[SSEEvent] = []
    for i in range(0, len(stream), piece):
        events += decoder.feed(stream[i : i + piece])
        assert decoder.pending <= 100 + piece  # never more than the cap and one piece held
    last, tail = decoder.finish()
    events += last
    assert tail == b""
    assert b"".join(e.raw for e in events) == stream
    kinds = [("big" if e.oversized else e.data) for e in events if e.raw not in (b"\n",)]
    merged = [k for i, k in enumerate(kinds) if k != "big" or i == 0 or kinds[i - 1] != "big"]
    assert merged == [b"s", "big", b"s", None, b"s"]
    assert decoder.oversized_events == 1
    assert all(e.data is None for e in events if e.oversized)


def test_decoding_a_long_line_is_linear_whatever_the_line_ending(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each byte is searched for a line terminator a bounded number of times, however it arrives."""
    searched = 0

    class CountingBuffer(bytearray):
        def find(self, sub: Any, start: Any = 0, *args: Any) -> int:
            nonlocal searched
            found = super().find(sub, start, *args)
            searched += (found if found >= 0 else len(self)) - (start or 0)
            return found

    monkeypatch.setattr(sse, "bytearray", CountingBuffer, raising=False)
    for eol in (b"\n", b"\r\n"):
        searched = 0
        stream = b"data: " + b"y" * 500_000 + eol + eol
        decoder = SSEDecoder(max_event_bytes=1 << 24)
        events = [e for i in range(0, len(stream), 1460) for e in decoder.feed(stream[i : i + 1460])]
        assert [e.data for e in events] == [b"y" * 500_000]
        assert searched < 4 * len(stream), eol
    # Many short lines in large pieces, where a stream never uses one of "\r" and "\n".
    for head, eol in ((b"", b"\r"), (b"data: a\r\n\r\n", b"\n")):
        searched = 0
        stream = head + (b"data: " + b"z" * 40 + eol + eol) * 20_000
        decoder = SSEDecoder()
        events = [e for i in range(0, len(stream), 65536) for e in decoder.feed(stream[i : i + 65536])]
        assert len(events + decoder.finish()[0]) == 20_000 + bool(head)
        assert searched < 4 * len(stream), eol


def test_take_pending_returns_the_unfinished_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b") == [SSEEvent(raw=b"data: a\n\n", data=b"a")]
    assert decoder.pending == len(b"data: b")
    assert decoder.take_pending() == b"data: b"
    assert decoder.finish() == ([], b"")


LINE = st.one_of(
    st.builds(lambda v: b"data: " + v, st.binary(max_size=12).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))),
    st.sampled_from([b"event: x", b"id: 1", b"retry: 5", b": comment", b"data", b"data:", b"field-without-colon"]),
    st.text(alphabet="é日🙂ab", max_size=4).map(lambda t: b"data: " + t.encode()),
)
EOLS = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    out = b""
    for _ in range(draw(st.integers(0, 6))):
        for line in draw(st.lists(LINE, min_size=1, max_size=4)):
            out += line + draw(EOLS)
        out += draw(EOLS)
    if draw(st.booleans()):  # an unterminated tail
        out += draw(LINE)
    return out


@settings(max_examples=examples(500), deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 200), max_size=8))
def test_any_chunking_gives_the_same_events_and_the_same_bytes(stream: bytes, cuts: list[int]) -> None:
    bounds = sorted({0, len(stream), *[c for c in cuts if c < len(stream)]})
    pieces = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    events = decode_all(pieces)
    assert b"".join(e.raw for e in events) == stream
    assert events == decode_all([stream])


@settings(max_examples=examples(500), deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 200), max_size=8))
def test_the_lf_fast_path_agrees_with_the_line_reader(stream: bytes, cuts: list[int]) -> None:
    stream = stream.replace(b"\r", b"")  # the fast path serves "\n" streams
    bounds = sorted({0, len(stream), *[c for c in cuts if c < len(stream)]})
    pieces = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    line_reader = SSEDecoder()
    line_reader._lf_only = False
    slow = [e for p in pieces for e in line_reader.feed(p)]
    last, tail = line_reader.finish()
    assert decode_all(pieces) == slow + last + ([SSEEvent(raw=tail)] if tail else [])


@settings(max_examples=examples(300), deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 200), max_size=8), cap=st.integers(1, 40))
@example(stream=b": comment\r\ndata: x\r\n\r\ndata: \n\n", cuts=[21], cap=8)  # "\r" | "\n" at the cap
def test_any_cap_and_chunking_lose_and_reorder_no_byte(stream: bytes, cuts: list[int], cap: int) -> None:
    bounds = sorted({0, len(stream), *[c for c in cuts if c < len(stream)]})
    pieces = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    events = decode_all(pieces, max_event_bytes=cap)
    assert b"".join(e.raw for e in events) == stream
    # Events within the cap decode exactly as without one.
    small = [e for e in decode_all([stream]) if len(e.raw) <= cap and e.data is not None]
    assert [e for e in events if e.data is not None] == small


@pytest.mark.parametrize("piece", [1, 37, 10_000])
def test_events_that_are_whole_documents_may_grow_to_their_own_cap(piece: int) -> None:
    """A Responses terminal event repeats every text: it is held up to the larger cap, others are not."""
    terminal = b"event: response.completed\ndata: " + b"x" * 500 + b"\n\n"
    delta = b"event: response.output_text.delta\ndata: " + b"y" * 500 + b"\n\n"
    huge = b'data: {"type":"response.completed","r":"' + b"z" * 2000 + b'"}\n\n'
    stream = terminal + delta + huge
    decoder = SSEDecoder(100, frozenset({b"response.completed"}), 1000)
    events = [e for i in range(0, len(stream), piece) for e in decoder.feed(stream[i : i + piece])]
    assert b"".join(e.raw for e in events) == stream
    assert [e.data[:1] for e in events if not e.oversized] == [b"x"]  # the terminal event, decoded whole
    assert decoder.oversized_events == 2  # the delta over 100 bytes, the terminal event over 1,000


@given(
    first=st.sampled_from(
        [
            b'data: {"a":1}\n\n',
            b"data: x\n\n",
            b": ping\n\n",
            BOM + b"data: x\n\n",
            b"data: x\r\n\r\n",
            b"\n\n",
            b"\xef",
        ]
    ),
    rest=st.lists(st.sampled_from([b"data: y\n\n", b"data: z", b"\n\n", b"\r\n", b"event: e\n"]), max_size=4),
)
def test_open_plain_notes_what_feeding_the_first_piece_would(first: bytes, rest: list[bytes]) -> None:
    """The pipeline handles a first one-line piece itself when open_plain says it may: the decoder
    must then go on exactly as if it had been fed that piece (its events taken by the caller)."""
    fed, opened = SSEDecoder(), SSEDecoder()
    first_events = fed.feed(first)
    if opened.open_plain(first):
        assert not first.startswith(BOM[:1]) and b"\r" not in first
        assert (opened.at_boundary, opened.newline) == (fed.at_boundary, fed.newline) == (True, b"\n")
    else:
        assert first.startswith(BOM[:1]) or b"\r" in first or b"\n" not in first
        assert opened.feed(first) == first_events
    for piece in rest:
        assert opened.feed(piece) == fed.feed(piece)
    assert opened.finish() == fed.finish()


@given(
    before=st.lists(st.sampled_from([b"data: a\n\n", b"data: b", b"\n\n", b"\r\n", BOM, b": c\n\n"]), max_size=3),
    piece=st.sampled_from(
        [b'data: {"a":1}\n\n', b"data:x\n\n", b": ping\n\n", b"event: e\n\n", b"data: x\r\n\r\n", b"\n\n", b"x\n"]
    ),
    rest=st.lists(st.sampled_from([b"data: y\n\n", b"data: z", b"\n\n", b"\r\n"]), max_size=3),
)
def test_one_is_what_feeding_the_piece_gives(before: list[bytes], piece: bytes, rest: list[bytes]) -> None:
    """The pipeline takes a one-line piece at a boundary through one_event and one instead of feed:
    the events must be feed's, and the decoder must go on as if it had been fed the piece."""
    fed, taken = SSEDecoder(), SSEDecoder()
    for earlier in before:
        assert taken.feed(earlier) == fed.feed(earlier)
    events = fed.feed(piece)
    if taken.one_event(piece):
        assert piece.endswith(b"\n\n") and piece.count(b"\n") == 2 and b"\r" not in piece
        assert taken.one(piece) == events
    else:
        assert taken.feed(piece) == events
    for later in rest:
        assert taken.feed(later) == fed.feed(later)
    assert taken.finish() == fed.finish()


@given(
    before=st.lists(
        st.sampled_from([b"data: a", b"data: b\n", b": c\n", b"data: d\n\n", b"\n"]), min_size=1, max_size=3
    ),
    chunk=st.lists(st.sampled_from([b"data: y\n\n", b"\n", b"data: z", b"\n\n", b"x", b": p\n"]), max_size=5).map(
        b"".join
    ),
    start=st.integers(0, 4),
)
def test_feed_pending_feeds_up_to_the_end_of_the_event_under_way(before: list[bytes], chunk: bytes, start: int) -> None:
    """The pipeline finishes an event a read cut through with feed_pending, then takes whole events
    itself: the events must be feed's for the same bytes, the decoder at a boundary after them (or
    the chunk taken whole, the event still under way), and the decoder must go on as if fed."""
    fed, pending = SSEDecoder(), SSEDecoder()
    for piece in before:
        assert pending.feed(piece) == fed.feed(piece)
    assume(pending.plain and not pending.at_boundary)
    start = min(start, len(chunk))
    events, end = pending.feed_pending(chunk, start)
    assert start <= end <= len(chunk)
    assert events == fed.feed(chunk[start:end])
    assert pending.at_boundary or end == len(chunk)
    if end < len(chunk) or chunk[start:].find(b"\n\n") >= 0:
        assert pending.at_boundary  # it stopped at the event's end, not before
    assert pending.feed(chunk[end:]) == fed.feed(chunk[end:])
    assert pending.finish() == fed.finish()
