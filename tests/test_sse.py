"""The SSE codec: events cut anywhere, every line ending, byte-for-byte re-emission."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw.sse import SSEDecoder, SSEEvent, encode_event


def decode_all(pieces: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for piece in pieces:
        events += decoder.feed(piece)
    return events + decoder.finish()


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


def test_last_event_without_blank_line_is_kept_at_eof() -> None:
    assert decode_all([b"data: a\n\ndata: tail\n"]) == [
        SSEEvent(raw=b"data: a\n\n", data=b"a"),
        SSEEvent(raw=b"data: tail\n", data=b"tail"),
    ]
    assert decode_all([b"data: a\n\ndata: partial"]) == [
        SSEEvent(raw=b"data: a\n\n", data=b"a"),
        SSEEvent(raw=b"data: partial", data=b"partial"),
    ]
    assert decode_all([b"data: x\r"]) == [SSEEvent(raw=b"data: x\r", data=b"x")]


def test_split_inside_crlf_and_inside_a_utf8_character() -> None:
    stream = "data: é日🙂\r\n\r\ndata: b\r\n\r\n".encode()
    for cut in range(len(stream) + 1):
        events = decode_all([stream[:cut], stream[cut:]])
        assert [e.data for e in events] == ["é日🙂".encode(), b"b"], cut
        assert b"".join(e.raw for e in events) == stream


def test_encode_event_keeps_the_replaced_event_fields() -> None:
    assert encode_event(b'{"x":1}').raw == b'data: {"x":1}\n\n'
    assert encode_event(b"{}", event="ping").raw == b"event: ping\ndata: {}\n\n"
    assert encode_event(b"{}", fields=b"event: a\r\nid: 3\r\n").raw == b"event: a\r\nid: 3\r\ndata: {}\n\n"


def test_take_pending_returns_the_unfinished_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b") == [SSEEvent(raw=b"data: a\n\n", data=b"a")]
    assert decoder.pending == len(b"data: b")
    assert decoder.take_pending() == b"data: b"
    assert decoder.finish() == []


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


@settings(max_examples=500, deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 200), max_size=8))
def test_any_chunking_gives_the_same_events_and_the_same_bytes(stream: bytes, cuts: list[int]) -> None:
    bounds = sorted({0, len(stream), *[c for c in cuts if c < len(stream)]})
    pieces = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    events = decode_all(pieces)
    assert b"".join(e.raw for e in events) == stream
    assert events == decode_all([stream])


@settings(max_examples=500, deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 200), max_size=8))
def test_the_lf_fast_path_agrees_with_the_line_reader(stream: bytes, cuts: list[int]) -> None:
    stream = stream.replace(b"\r", b"")  # the fast path serves "\n" streams
    bounds = sorted({0, len(stream), *[c for c in cuts if c < len(stream)]})
    pieces = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    line_reader = SSEDecoder()
    line_reader._lf_only = False
    slow = [e for p in pieces for e in line_reader.feed(p)] + line_reader.finish()
    assert decode_all(pieces) == slow
