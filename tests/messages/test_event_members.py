"""Messages: a block's ``index`` key spelled with escapes is renumbered like a plain one.

``"\\u0069ndex"`` is the key ``index`` to every JSON parser (the SDKs' ``json`` and msgspec alike),
but a scan of the bytes for ``"index"`` does not see it. The translator reads such an event's
index, so it must also write the new one where a parser reads it: else a client finds the text of
the answer on the thinking block before it (and drops it), or a tool block on the text block's
index. Whatever the key's spelling, and a decoy plain key beside it, the stream the client reads
is the one it reads for the same events spelled plainly, on every path, one event per feed or in
one read.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.messages import MessagesReference, MessagesStream

from ..hypothesis_examples import examples
from ..messageswire import (
    end,
    json_delta,
    message_start,
    read_sse,
    sig,
    start,
    stop,
    text,
    thinking,
    thinking_start,
    tool_start,
)

UNSIGNED = ThinkExtractConfig(messages_policy="unsigned")
CONFIGS = [UNSIGNED, ThinkExtractConfig(messages_policy="redacted"), UNSIGNED.replace(trim_tag_edges=True)]

# The key as JSON strings a parser reads as "index", none of them spelled so on its bytes.
SPELLINGS = [
    '"\\u0069ndex"',
    '"ind\\u0065x"',
    '"inde\\u0078"',
    '"i\\u006Edex"',
    '"\\u0069\\u006e\\u0064\\u0065\\u0078"',
]


def spelled(doc: dict[str, Any], key: str, decoy: str | None) -> str:
    """``doc`` compact, its top-level ``index`` key written as ``key``; ``decoy``: a plain
    ``"index"`` before it with another value (a parser keeps the last, the escaped one)."""
    parts = []
    for k, v in doc.items():
        value = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        if k == "index":
            if decoy is not None:
                parts.append(f'"index":{decoy}')
            parts.append(f"{key}:{value}")
        else:
            parts.append(f"{json.dumps(k)}:{value}")
    return "{" + ",".join(parts) + "}"


def frame(doc: dict[str, Any], data: str, named: bool) -> bytes:
    head = f"event: {doc['type']}\n" if named else ""
    return f"{head}data: {data}\n\n".encode()


def upstream_docs(opening: str) -> list[dict[str, Any]]:
    """A text block whose text opens with ``opening`` and goes on, then a tool block."""
    words = [opening, " step", " by", " step", "</think>" if opening.startswith("<think>") else " then", " the", " end"]
    return [
        message_start(),
        start(0),
        *(text(0, w) for w in words),
        stop(0),
        tool_start(1),
        json_delta(1, '{"a":1}'),
        stop(1),
        *end(),
    ]


def translate(
    events: list[bytes], config: ThinkExtractConfig, translator: type[MessagesReference], batched: bool
) -> bytes:
    pipeline = StreamPipeline("messages", config)
    pipeline._translator = translator(config)
    feeds = [b"".join(events)] if batched else events
    return b"".join(pipeline.feed(f) for f in feeds) + pipeline.finish()


@st.composite
def escaped_stream(draw: st.DrawFn) -> tuple[list[bytes], list[bytes], ThinkExtractConfig, bool]:
    """The same events spelled plainly and with escaped index keys (some with a decoy)."""
    opening = draw(st.sampled_from(["<think>r", "<think>", "Hello", "<think>r</think>a"]))
    named = draw(st.booleans())
    plain: list[bytes] = []
    hostile: list[bytes] = []
    for doc in upstream_docs(opening):
        compact = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
        plain.append(frame(doc, compact, named))
        if "index" in doc and draw(st.integers(0, 3)) > 0:
            decoy = draw(st.sampled_from([None, None, "9", "0", "-1", '"x"']))
            hostile.append(frame(doc, spelled(doc, draw(st.sampled_from(SPELLINGS)), decoy), named))
        else:
            hostile.append(frame(doc, compact, named))
    return plain, hostile, draw(st.sampled_from(CONFIGS)), draw(st.booleans())


@settings(max_examples=examples(300), deadline=None)
@given(case=escaped_stream())
def test_an_escaped_index_key_is_renumbered_as_a_plain_one(
    case: tuple[list[bytes], list[bytes], ThinkExtractConfig, bool],
) -> None:
    plain, hostile, config, batched = case
    expected = read_sse(translate(plain, config, MessagesStream, batched))
    fast = translate(hostile, config, MessagesStream, batched)
    assert read_sse(fast) == expected  # what the client reads: every event, every index
    assert fast == translate(hostile, config, MessagesReference, False)  # the oracle, event by event


def test_the_answer_after_reasoning_and_a_tool_block_keep_their_blocks() -> None:
    """The whole stream a client reads, for events whose index key is escaped."""
    docs = [
        message_start(),
        start(0),
        text(0, "<think>r</think>"),
        text(0, "Hi"),
        text(0, " there"),
        stop(0),
        tool_start(1),
        json_delta(1, "{}"),
        stop(1),
        *end(),
    ]
    events = []
    for doc in docs:
        key = SPELLINGS[0] if doc["type"] != "message_start" and doc is not docs[2] else '"index"'
        events.append(frame(doc, spelled(doc, key, "7" if doc is docs[4] else None), True))
    for batched in (False, True):
        out = translate(events, UNSIGNED, MessagesStream, batched)
        assert read_sse(out) == [
            message_start(),
            thinking_start(0),
            thinking(0, "r"),
            sig(0, "r"),
            stop(0),
            start(1),
            text(1, "Hi"),
            text(1, " there"),
            stop(1),
            tool_start(2),
            json_delta(2, "{}"),
            stop(2),
            *end(thinking=1),
        ]


def test_an_oversized_event_with_an_escaped_index_key_is_renumbered() -> None:
    """Events over ``max_event_bytes`` go through on their bytes: their escaped key too must be mapped."""
    config = UNSIGNED.replace(max_event_bytes=300)
    big = "y" * 400
    docs: list[dict[str, Any]] = [
        message_start(),
        start(0),
        text(0, "<think>r</think>"),
        text(0, "Hi"),
        text(0, big),
        stop(0),
        {**tool_start(1), "content_block": {**tool_start(1)["content_block"], "input": {"q": big}}},
        stop(1),
        *end(),
    ]
    events = [
        frame(doc, spelled(doc, SPELLINGS[0] if doc in (docs[4], docs[6]) else '"index"', None), True) for doc in docs
    ]
    for batched in (False, True):
        out = translate(events, config, MessagesStream, batched)
        assert read_sse(out) == [
            message_start(),
            thinking_start(0),
            thinking(0, "r"),
            sig(0, "r"),
            stop(0),
            start(1),
            text(1, "Hi"),
            text(1, big),
            stop(1),
            {**tool_start(2), "content_block": {**tool_start(2)["content_block"], "input": {"q": big}}},
            stop(2),
            *end(thinking=1),
        ]


# -- a text delta's own "thinking" member --------------------------------------------------------------

MEMBERS = ["null", '"zzz"', '""', "0", "{}", '{"a":1}']


@st.composite
def member_stream(draw: st.DrawFn) -> tuple[list[bytes], list[bytes], ThinkExtractConfig, bool]:
    """The same events plain, and with a ``thinking`` member (before or after the text, its key
    escaped or not) in some text deltas, as a serializer that writes every field of a union does."""
    opening = draw(st.sampled_from(["<think>r", "<think>", "<think>r</think>a"]))
    named = draw(st.booleans())
    plain: list[bytes] = []
    hostile: list[bytes] = []
    for doc in upstream_docs(opening):
        compact = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
        plain.append(frame(doc, compact, named))
        if doc.get("delta", {}).get("type") == "text_delta" and draw(st.integers(0, 3)) > 0:
            key = draw(st.sampled_from(['"thinking"', '"thinking"', '"\\u0074hinking"']))
            member = f"{key}:{draw(st.sampled_from(MEMBERS))}"
            text_member = '"text":' + json.dumps(doc["delta"]["text"], ensure_ascii=False)
            where = draw(st.sampled_from([f"{member},{text_member}", f"{text_member},{member}"]))
            compact = compact.replace(text_member, where, 1)
        hostile.append(frame(doc, compact, named))
    return plain, hostile, draw(st.sampled_from(CONFIGS)), draw(st.booleans())


def without_member(events: list[Any]) -> list[Any]:
    """The events with the ``thinking`` member of every text delta taken out (it rides on as it came)."""
    out = []
    for item in events:
        delta = item.get("delta") if isinstance(item, dict) else None
        if isinstance(delta, dict) and delta.get("type") == "text_delta":
            item = {**item, "delta": {k: v for k, v in delta.items() if k != "thinking"}}
        out.append(item)
    return out


@settings(max_examples=examples(300), deadline=None)
@given(case=member_stream())
def test_a_text_deltas_thinking_member_never_replaces_the_reasoning(
    case: tuple[list[bytes], list[bytes], ThinkExtractConfig, bool],
) -> None:
    """A ``thinking_delta`` made of a text delta carries its text as the thinking, once: the SDK
    accepts it (a ``null`` beside it would be the one a parser keeps) and no character is lost."""
    plain, hostile, config, batched = case
    expected = read_sse(translate(plain, config, MessagesStream, batched))
    fast = translate(hostile, config, MessagesStream, batched)
    assert without_member(read_sse(fast)) == expected
    assert fast == translate(hostile, config, MessagesReference, False)  # the oracle, event by event


def test_a_null_thinking_member_is_not_sent_beside_the_thinking() -> None:
    """The whole stream a client reads, for text deltas written with every field of a union."""
    docs = [message_start(), start(0), text(0, "<think>"), text(0, "r1"), text(0, "r2"), text(0, "</think>ok")]
    events = []
    for doc in docs:
        data = json.dumps(doc, separators=(",", ":"))
        events.append(frame(doc, data.replace('"}}', '","thinking":null}}') if doc in docs[2:] else data, True))
    for batched in (False, True):
        out = translate([*events, frame(stop(0), json.dumps(stop(0)), True)], UNSIGNED, MessagesStream, batched)
        assert read_sse(out) == [
            message_start(),
            thinking_start(0),
            thinking(0, "r1"),
            thinking(0, "r2"),
            sig(0, "r1r2"),
            stop(0),
            start(1),
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "ok", "thinking": None},
            },
            stop(1),
        ]
