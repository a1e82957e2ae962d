"""The messages numbering map, sans-I/O: events passed on unread, late and oversized events."""

from __future__ import annotations

import json
from typing import Any

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline

from ..messageswire import (
    PING,
    end,
    json_delta,
    message_start,
    read_sse,
    replay,
    sse,
    start,
    stop,
    tb,
    text,
    text_block,
    th,
    thinking_block,
    tool_start,
)

UNSIGNED = ThinkExtractConfig(messages_policy="unsigned")


def run(stream: bytes, config: ThinkExtractConfig = UNSIGNED, piece: int = 0) -> bytes:
    pipeline = StreamPipeline("messages", config)
    step = piece or len(stream) or 1
    out = b"".join(pipeline.feed(stream[i : i + step]) for i in range(0, len(stream), step)) + pipeline.finish()
    assert pipeline.error is None
    return out


def test_an_unknown_event_type_naming_a_renumbered_block_is_renumbered() -> None:
    note = {"type": "content_block_annotation", "index": 1, "note": 1.5}
    raw = b'event: content_block_annotation\ndata: {"type":"content_block_annotation","index":1,"note":1.50}\n\n'
    stream = sse(message_start(), *text_block(0, "<think>r</think>a"), tool_start(1)) + raw + sse(stop(1), *end())
    out = run(stream)
    assert read_sse(out) == [
        message_start(),
        *thinking_block(0, "r"),
        *text_block(1, "a"),
        tool_start(2),
        {**note, "index": 2},
        stop(2),
        *end(thinking=1),
    ]
    assert b'"note":1.50' in out.split(b"content_block_annotation", 2)[2]  # its other bytes kept as they came


def test_text_after_its_block_stop_goes_on_in_a_new_text_block() -> None:
    stream = sse(message_start(), *text_block(0, "<think>r</think>a"), text(0, "b"), tool_start(1), stop(1), *end())
    assert read_sse(run(stream)) == [
        message_start(),
        *thinking_block(0, "r"),
        *text_block(1, "a"),
        start(2),
        text(2, "b"),
        tool_start(3),
        stop(3),
        stop(2),  # closed when the message ends
        *end(thinking=1),
    ]


def test_after_the_message_ends_a_late_delta_keeps_its_block() -> None:
    stream = sse(message_start(), *text_block(0, "<think>r</think>a"), *end(), text(0, "b"))
    assert read_sse(run(stream)) == [
        message_start(),
        *thinking_block(0, "r"),
        *text_block(1, "a"),
        *end(thinking=1),
        text(1, "b"),
    ]


def test_a_late_stop_names_the_last_block_of_its_text_block() -> None:
    stream = sse(message_start(), *text_block(0, "<think>r</think>a"), stop(0), *end())
    assert read_sse(run(stream)) == [
        message_start(),
        *thinking_block(0, "r"),
        *text_block(1, "a"),
        stop(1),
        *end(thinking=1),
    ]


def test_an_oversized_tool_start_in_a_crlf_stream_cut_at_every_piece() -> None:
    big = tool_start(1) | {"content_block": {"type": "tool_use", "id": "t" * 900, "name": "w", "input": {}}}
    stream = sse(
        message_start(),
        *text_block(0, "<think>r</think>a"),
        big,
        json_delta(1, "{}"),
        stop(1),
        *text_block(2, "z"),
        *end(),
    ).replace(b"\n", b"\r\n")
    expected = [
        message_start(),
        *thinking_block(0, "r"),
        *text_block(1, "a"),
        {**big, "index": 2},
        json_delta(2, "{}"),
        stop(2),
        *text_block(3, "z"),
        *end(thinking=1),
    ]
    config = UNSIGNED.replace(max_event_bytes=512)
    for piece in (0, 7, 100):
        out = run(stream, config, piece)
        assert b"\n" not in out.replace(b"\r\n", b"")  # every line in the stream's own ending
        assert read_sse(out) == expected


def test_an_oversized_text_delta_closes_the_thinking_block_first_in_crlf() -> None:
    big = text(0, "A" * 700)
    stream = sse(message_start(), start(0), text(0, "<think>plan"), big, stop(0), *end()).replace(b"\n", b"\r\n")
    out = run(stream, UNSIGNED.replace(max_event_bytes=512), 64)
    assert b"\n" not in out.replace(b"\r\n", b"")
    assert read_sse(out) == [
        message_start(),
        *thinking_block(0, "plan"),
        start(1),
        text(1, "A" * 700),
        stop(1),
        *end(thinking=1),
    ]


def test_an_oversized_event_of_a_data_only_upstream_gets_its_event_line() -> None:
    big = text(0, "A" * 700)
    stream = sse(message_start(), start(0), text(0, "<think>plan"), big, stop(0), *end(), event_lines=False)
    items = read_sse(run(stream, UNSIGNED.replace(max_event_bytes=512)))  # read_sse checks every event: line
    assert items == [
        message_start(),
        *thinking_block(0, "plan"),
        start(1),
        text(1, "A" * 700),
        stop(1),
        *end(thinking=1),
    ]


def test_an_oversized_event_cut_off_by_the_end_of_the_stream() -> None:
    big = sse(start(1, {"type": "tool_use", "id": "t" * 900, "name": "w", "input": {}}))
    stream = sse(message_start(), *text_block(0, "<think>r</think>a")) + big[:700]
    out = run(stream, UNSIGNED.replace(max_event_bytes=512), 50)
    head = sse(message_start(), *thinking_block(0, "r"), *text_block(1, "a"))
    assert out == head + big[:700].replace(b'"index":1', b'"index":2')  # the cut-off tail, renumbered


def test_an_oversized_delta_with_sorted_keys_goes_on_the_last_text_block() -> None:
    """The index comes after the body: the block the last block event named takes it."""
    big = text(0, "A" * 700)
    big_bytes = b"event: content_block_delta\ndata: " + json.dumps(big, sort_keys=True).encode() + b"\n\n"
    stream = sse(message_start(), start(0), text(0, "<think>plan"), PING) + big_bytes + sse(stop(0), *end())
    final = replay(read_sse(run(stream, UNSIGNED.replace(max_event_bytes=512), 64)))
    assert final["content"] == [th("plan"), tb("A" * 700)]


def test_duplicate_index_keys_on_an_unknown_type_take_the_last() -> None:
    odd = b'event: content_block_annotation\ndata: {"type":"content_block_annotation","index":0,"index":1}\n\n'
    stream = sse(message_start(), *text_block(0, "<think>r</think>a"), tool_start(1)) + odd + sse(stop(1), *end())
    items: list[Any] = read_sse(run(stream))
    assert items[-4] == {"type": "content_block_annotation", "index": 2}
    assert b'"index":2,"index":2' in run(stream)  # every occurrence: no parser reads a stale one


def test_an_untranslated_stream_with_oversized_events_passes_byte_for_byte() -> None:
    big = tool_start(1) | {"content_block": {"type": "tool_use", "id": "t" * 900, "name": "w", "input": {}}}
    stream = sse(message_start(), *text_block(0, "<think>r</think>a"), big, stop(1), *end())
    for config in (ThinkExtractConfig(), UNSIGNED.replace(enabled=False)):
        assert run(stream, config.replace(max_event_bytes=512), 100) == stream
    tag_free = sse(message_start(), *text_block(0, "a"), big, stop(1), *text_block(2, "b"), *end())
    assert run(tag_free, UNSIGNED.replace(max_event_bytes=512), 100) == tag_free
