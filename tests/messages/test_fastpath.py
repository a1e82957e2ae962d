"""The messages fast path against the reference translator: the same bytes, event for event.

:class:`MessagesStream` is :class:`MessagesReference` with a layer that passes runs of steady
``text_delta`` events without reading them one by one. The pipeline with it must give exactly the
bytes (and counts) of the pipeline with the reference alone, which reads every event: the oracle.
Hypothesis writes whole streams as the upstreams do (Anthropic's own layout, vLLM's ``delta``
before ``index``, llama.cpp's sorted keys, Python's ``json.dumps`` spacing, with or without
``event:`` lines), then reorders keys, adds unknown ones, escapes text and keys with ``\\uXXXX``
(``\\u0069ndex``, a ``<`` of a tag), and feeds it one event per feed, in batched reads or cut
anywhere.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.channels import Transcripts
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.messages import MessagesReference, MessagesStream

from ..hypothesis_examples import examples
from ..messageswire import end, message_start, read_sse, signature
from ..spelling import SPACING, Spelling

UNSIGNED = ThinkExtractConfig(messages_policy="unsigned")
CONFIGS = [
    UNSIGNED,
    ThinkExtractConfig(messages_policy="redacted"),
    ThinkExtractConfig(messages_policy="redacted", max_buffer_bytes=64),
    UNSIGNED.replace(trim_tag_edges=True),
    UNSIGNED.replace(trim_tag_edges=True, trim_reasoning_tail=True),
]
LAYOUTS = ("anthropic", "vllm", "llamacpp", "pyjson", "pyjson-utf8")


# -- the upstreams' layouts -------------------------------------------------------------------------


def delta_event(index: int, text: str, layout: str) -> dict[str, Any]:
    """A ``text_delta`` event with its keys in ``layout``'s order."""
    if layout == "vllm":  # pydantic's field order: type, delta, index
        return {"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}, "index": index}
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}


def dumps(doc: Any, layout: str) -> str:
    if layout == "llamacpp":  # nlohmann::json keeps its keys sorted
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    if layout == "pyjson":
        return json.dumps(doc)
    if layout == "pyjson-utf8":
        return json.dumps(doc, ensure_ascii=False)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def frame(doc: dict[str, Any], encoded: str, named: bool = True, lines: bool = False) -> bytes:
    """An event; ``lines``: its data in two ``data:`` lines (joined by a line break, whitespace)."""
    head = f"event: {doc['type']}\n" if named else ""
    if lines:
        encoded = encoded.replace("{", "{\ndata: ", 1)
    return f"{head}data: {encoded}\n\n".encode()


def head_events(layout: str, named: bool) -> list[bytes]:
    start = message_start()
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    return [frame(d, dumps(d, layout), named) for d in (start, block)]


def tail_events(layout: str, named: bool, tool: bool) -> list[bytes]:
    docs: list[dict[str, Any]] = [{"type": "content_block_stop", "index": 0}]
    if tool:  # a block after the text: renumbered after the blocks the text became
        tool_block = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}
        docs += [
            {"type": "content_block_start", "index": 1, "content_block": tool_block},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
            {"type": "content_block_stop", "index": 1},
        ]
    docs += end()
    return [frame(d, dumps(d, layout), named) for d in docs]


# -- streams ------------------------------------------------------------------------------------------

WORDS = st.sampled_from(
    # 'q",': a text whose spelling holds '","' where it meets the next one
    [" step", " by", " the", "ü", "数", "🙂", ' "q"', 'q",', " a\\b", " x/y", " tab\t", "word", " \u2028"]
)
TAGGY = st.sampled_from(["<think>", "</think>", "<think>r</think>a", "<", "`", "\n", " ", "text", '"index":0'])
DELTAS = st.one_of(WORDS, WORDS, WORDS, WORDS, TAGGY)
EXTRA_VALUES = st.sampled_from(
    [
        None,
        0,
        "x",
        [1],
        {"a": None},
        {"index": 0},
        {"index": 3},
        {"text": "nested"},
        "text_delta",
        {"type": "text_delta"},
    ]
)


def escaped_key(key: str) -> str:
    """``key`` as a JSON string with its first character a ``\\uXXXX`` escape."""
    return f'"\\u{ord(key[0]):04x}{key[1:]}"'


@st.composite
def upstream(draw: st.DrawFn) -> tuple[list[bytes], ThinkExtractConfig]:
    """A whole stream in one server's layout, with the hostile spellings drawn: its events one by one."""
    layout = draw(st.sampled_from(LAYOUTS))
    named = draw(st.integers(0, 4)) > 0
    rnd = draw(st.randoms(use_true_random=False))
    mangle = draw(st.integers(0, 2)) == 0  # respelled: spacing, key order, escapes, unknown keys
    comma, colon = draw(st.sampled_from(SPACING)) if mangle else (",", ":")
    ascii_only, reorder = draw(st.booleans()), mangle and draw(st.booleans())
    lt, slash, key_escapes = draw(st.booleans()), draw(st.booleans()), mangle and draw(st.booleans())

    def key(value: str) -> str | None:
        return escaped_key(value) if key_escapes and rnd.random() < 0.3 else None

    encode = Spelling(comma, colon, ascii_only, slash, lt, rnd if reorder else None, key).encode

    opening = draw(st.sampled_from(["", "<think>", "<think>\n", "Hello", "<think>r</think>"]))
    deltas = [opening]
    for word in draw(st.lists(DELTAS, min_size=1, max_size=30)):  # runs long enough for batched reads
        deltas += [word] * draw(st.sampled_from([1, 1, 1, 3, 12, 40]))
    events = head_events(layout, named)
    for word in deltas:
        if not word:
            continue
        doc = delta_event(0, word, layout)
        if mangle and draw(st.integers(0, 2)) == 0:  # an unknown member, at the top or in the delta
            where = draw(st.sampled_from([doc, doc["delta"]]))
            where[draw(st.sampled_from(["extra", "usage", "citation", "text_hint"]))] = draw(EXTRA_VALUES)
        encoded = encode(doc) if mangle else dumps(doc, layout)
        if not mangle and lt:
            encoded = encoded.replace("<", "\\u003c")
        events.append(frame(doc, encoded, named, lines=mangle and draw(st.integers(0, 9)) == 0))
        if draw(st.integers(0, 40)) == 0:
            events.append(frame({"type": "ping"}, '{"type":"ping"}', named))
    events += tail_events(layout, named, draw(st.booleans()))
    return events, draw(st.sampled_from(CONFIGS))


def run(
    events: list[bytes], config: ThinkExtractConfig, translator: type[MessagesReference], piece: int | list[int]
) -> Any:
    """The pipeline with ``translator``, fed ``events`` one per feed (``piece`` 0), in reads of
    ``piece`` bytes, or cut at the offsets in ``piece``."""
    pipeline = StreamPipeline("messages", config)
    pipeline._translator = translator(config)
    stream = b"".join(events)
    if isinstance(piece, list):
        cuts = sorted({0, len(stream), *(c % (len(stream) + 1) for c in piece)})
        feeds = [stream[a:b] for a, b in itertools.pairwise(cuts)]
    elif piece:
        feeds = [stream[i : i + piece] for i in range(0, len(stream), piece)]
    else:
        feeds = events
    out = b"".join(pipeline.feed(f) for f in feeds) + pipeline.finish()
    counts = pipeline.counts
    return out, (counts.reasoning_blocks, counts.reasoning_chars, counts.unclosed, counts.overflows)


FEEDS = st.one_of(
    st.sampled_from([0, 0, 1500, 2500, 4096, 9000, 1 << 20]),
    st.lists(st.integers(0, 1 << 16), min_size=1, max_size=12),  # cut anywhere
)


@settings(max_examples=examples(400), deadline=None)
@given(case=upstream(), piece=FEEDS)
def test_the_production_translator_gives_what_the_reference_gives(
    case: tuple[list[bytes], ThinkExtractConfig], piece: int | list[int]
) -> None:
    events, config = case
    fast, fast_counts = run(events, config, MessagesStream, piece)
    reference, counts = run(events, config, MessagesReference, 0)
    assert fast == reference  # byte for byte
    assert fast_counts == counts
    read_sse(fast)  # and every event is one the SDK reads


# -- the fast path is taken ---------------------------------------------------------------------------


def counting_events(pipeline: StreamPipeline) -> list[int]:
    calls = [0]
    translator = pipeline._translator
    original = translator.event

    def counting(ev: Any) -> Any:
        calls[0] += 1
        return original(ev)

    translator.event = counting  # type: ignore[method-assign]
    return calls


def thinking(doc: dict[str, Any], index: int) -> dict[str, Any]:
    """``doc`` as the translator writes it in a thinking block: renamed in place, renumbered."""
    delta = {
        ("thinking" if k == "text" else k): ("thinking_delta" if k == "type" else v) for k, v in doc["delta"].items()
    }
    return {k: (index if k == "index" else delta if k == "delta" else v) for k, v in doc.items()}


def rewritten(layout: str) -> str:
    """How the translator writes a reasoning event of ``layout``: afresh, compact, in the upstream's
    key order (``json.dumps`` spacing is gone; vLLM's and llama.cpp's order stays)."""
    return "anthropic" if layout.startswith("pyjson") else layout


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("named", [True, False], ids=["event-lines", "data-only"])
@pytest.mark.parametrize("opening", ["Hello", "<think>", "<think>r</think>"])
def test_every_layout_takes_the_fast_path_one_event_per_feed(layout: str, named: bool, opening: str) -> None:
    """Steady answer text (as it came, or renumbered after a thinking block) and steady reasoning:
    no event of any deployed layout reaches the reference, and each goes out as the reference
    writes it."""
    pipeline = StreamPipeline("messages", UNSIGNED)
    # The block's first text after a tag opens its output block: read by the event path.
    first = [delta_event(0, opening, layout), delta_event(0, " first", layout)]
    for ev in [*head_events(layout, named), *(frame(d, dumps(d, layout), named) for d in first)]:
        pipeline.feed(ev)
    calls = counting_events(pipeline)
    words = [" step", " by", " é", " 数", " 4"]
    docs = [delta_event(0, w, layout) for w in words]
    out = [pipeline.feed(frame(d, dumps(d, layout), named)) for d in docs]
    assert calls == [0]
    if opening == "Hello":
        expected = [frame(d, dumps(d, layout)) for d in docs]
    elif opening == "<think>":
        expected = [frame(d, dumps(thinking(d, 0), rewritten(layout))) for d in docs]
    else:  # the answer after a thinking block: block 1
        expected = [frame(d, dumps({**d, "index": 1}, layout)) for d in docs]
    assert out == expected


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("opening", ["Hello", "<think>", "<think>r</think>"])
def test_batched_reads_take_the_fast_path(layout: str, opening: str) -> None:
    """Runs of events in one read go through whole, as they came or edited alike."""
    pipeline = StreamPipeline("messages", UNSIGNED)
    first = [delta_event(0, opening, layout), delta_event(0, " first", layout)]
    pipeline.feed(b"".join([*head_events(layout, True), *(frame(d, dumps(d, layout)) for d in first)]))
    calls = counting_events(pipeline)
    docs = [delta_event(0, w, layout) for w in [" step", " by", " é"] * 20]
    out = pipeline.feed(b"".join(frame(d, dumps(d, layout)) for d in docs))
    assert calls == [0]
    if opening == "Hello":
        expected = [frame(d, dumps(d, layout)) for d in docs]
    elif opening == "<think>":
        expected = [frame(d, dumps(thinking(d, 0), rewritten(layout))) for d in docs]
    else:
        expected = [frame(d, dumps({**d, "index": 1}, layout)) for d in docs]
    assert out == b"".join(expected)


def test_a_trigger_behind_an_escape_is_seen() -> None:
    """``\\u003c`` spells ``<``: the fast path reads the decoded text, so the tag is found."""
    pipeline = StreamPipeline("messages", UNSIGNED)
    for ev in head_events("anthropic", True):
        pipeline.feed(ev)
    pipeline.feed(frame(delta_event(0, "Hi", "anthropic"), dumps(delta_event(0, "Hi", "anthropic"), "anthropic")))
    hidden = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u003cthink>r"}}'
    closing = dumps(delta_event(0, "</think>ok", "anthropic"), "anthropic")
    out = pipeline.feed(frame(json.loads(hidden), hidden)) + pipeline.feed(frame(json.loads(closing), closing))
    assert read_sse(out) == [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "thinking_delta", "thinking": "r"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "signature_delta", "signature": signature("r")}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "text_delta", "text": "\nok"},
        },  # after the separator
    ]


DECOYS = [
    # the decoder's key escaped, its plain spelling elsewhere: the edit would hit the wrong one
    '{"type":"content_block_delta","\\u0069ndex":0,"delta":{"type":"text_delta","text":"x"},"extra":{"index":0}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","\\u0074ext":"x"},"extra":{"text":"y"}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text\\u005fdelta","text":"x"},"extra":"text_delta"}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","text":"y"}}',
    '{"type":"content_block_delta","index":0,"index":0,"delta":{"type":"text_delta","text":"x"}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\"index"}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"a\\"index":0}',
    '{"type":"content_block_delta","index":-0,"delta":{"type":"text_delta","text":"x"}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u00e9\\ud83d\\ude42"}}',
    # the layout's bytes around something that is not one JSON string, or around an empty one
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x" }}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"q\\",","text":"y"}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\ud83d"}}',  # lenient
]


@pytest.mark.parametrize("decoy", DECOYS)
@pytest.mark.parametrize("opening", ["Hello", "<think>", "<think>r</think>"])
@pytest.mark.parametrize("named", [True, False], ids=["event-lines", "data-only"])
def test_decoys_give_what_the_reference_gives(decoy: str, opening: str, named: bool) -> None:
    """Spellings where a byte edit found by its spelling alone would be wrong: each is declined or
    proven, so the production translator gives what the reference gives, one event per feed and
    amid a run in one read."""
    first = [delta_event(0, opening, "anthropic"), delta_event(0, " first", "anthropic")]
    plain = frame(delta_event(0, " word", "anthropic"), dumps(delta_event(0, " word", "anthropic"), "anthropic"), named)
    decoys = frame(json.loads(decoy), decoy, named) * 3
    head = [*head_events("anthropic", named), *(frame(d, dumps(d, "anthropic"), named) for d in first)]
    tail = tail_events("anthropic", named, False)
    one_by_one = [*head, plain, *[frame(json.loads(decoy), decoy, named)] * 3, plain, *tail]
    for feeds in (one_by_one, [*head, plain * 3 + decoys + plain * 3, *tail]):
        assert run(feeds, UNSIGNED, MessagesStream, 0) == run(feeds, UNSIGNED, MessagesReference, 0)


@pytest.mark.parametrize(
    ("declined", "named"),
    [
        ('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a<think>b"}}', True),
        ('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a<think>b"}}', False),
        ('{"type":"content_block_stop","index":0}', False),  # read (data-only), declined
        ('{"type":"content_block_delta","index":0.0,"delta":{"type":"text_delta","text":"x"}}', True),  # lenient
    ],
)
def test_a_declined_event_is_decoded_once(monkeypatch: pytest.MonkeyPatch, declined: str, named: bool) -> None:
    """A single event the fast path declines is decoded once in all, by the reference: a decline
    costs a comparison of bytes, not a second decode."""
    from gateway_mw.surfaces.messages import events as wire

    pipeline = StreamPipeline("messages", UNSIGNED)
    first = delta_event(0, "Hello", "anthropic")
    for ev in [*head_events("anthropic", True), frame(first, dumps(first, "anthropic"))]:
        pipeline.feed(ev)
    reads = [0]
    decode = wire.decode_event

    def counting(data: bytes) -> Any:
        reads[0] += 1
        return decode(data)

    monkeypatch.setattr(wire, "decode_event", counting)
    event = frame(json.loads(declined), declined, named)
    fast = pipeline.feed(event)
    assert reads == [1]
    reference = StreamPipeline("messages", UNSIGNED)
    reference._translator = MessagesReference(UNSIGNED)
    for ev in [*head_events("anthropic", True), frame(first, dumps(first, "anthropic"))]:
        reference.feed(ev)
    assert fast == reference.feed(event)


def steady_state(translator: MessagesStream) -> Any:
    """Everything of the translator a fast path may change, as values."""
    (block,) = translator._blocks.values()
    scanner = translator.channels.scanner(block.upstream)
    assert scanner is not None
    digest = block.digest.hexdigest() if block.digest is not None else None
    counts = translator.counts
    return (
        (block.kind, block.out, list(block.parts), block.held, digest, block.half, translator._last),
        (scanner.reasoning_chars, scanner.reasoning_blocks, list(scanner.transcript or [])),
        (counts.reasoning_blocks, counts.reasoning_chars, counts.unclosed, counts.unreadable_events),
    )


@pytest.mark.parametrize("config", CONFIGS[:3], ids=["unsigned", "redacted", "redacted-64"])
@pytest.mark.parametrize("opening", ["Hello", "<think>", "<think>r</think>"])
def test_a_declined_span_changes_nothing(config: ThinkExtractConfig, opening: str) -> None:
    """fast_forward gives the reference's bytes for the events it proves, from the span's start, up
    to the first it does not (a tag, another event, a keep-alive, an empty text, another layout, a
    redacted block's cap), and where they end; with none proven, the translator is as it was."""
    pipeline = StreamPipeline("messages", config)
    pipeline._translator.transcripts = Transcripts()
    # The block's first text after a tag opens its output block: read by the reference.
    first = [delta_event(0, opening, "anthropic"), delta_event(0, " first", "anthropic")]
    for ev in [*head_events("anthropic", True), *(frame(d, dumps(d, "anthropic")) for d in first)]:
        pipeline.feed(ev)
    translator = pipeline._translator
    assert isinstance(translator, MessagesStream)
    word = frame(delta_event(0, " w", "anthropic"), dumps(delta_event(0, " w", "anthropic"), "anthropic"))
    one, used = translator.fast_forward(word)
    assert used == len(word)  # steady: the layer takes it
    cases = [
        (word * 3 + frame(delta_event(0, "<", "anthropic"), dumps(delta_event(0, "<", "anthropic"), "anthropic")), 3),
        (word * 3 + b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0}\n\n', 3),
        (word * 3 + b": keep-alive\n\n" + word, 3),
        (word.replace(b'" w"', b'" w"\n'), 0),
        (word * 2 + word.replace(b'" w"', b'""'), 2),
        (word * 2 + word.replace(b'" w"', b'"x" "y"'), 2),
        (word.replace(b"index", b"Index"), 0),
    ]
    if opening == "<think>" and config.max_buffer_bytes == 64:
        cases.append((word * 70, -1))  # the events that fit the redacted block's cap (below)
    for span, proven in cases:
        if proven < 0:  # a redacted block past its cap ends after the event that crosses it: the reference's
            steady = translator._steady
            assert steady is not None
            proven = translator._writer.room(steady.block) // 2
            assert proven < 70
        before = steady_state(translator)
        out, used = translator.fast_forward(span)
        assert (out, used) == (one * proven, len(word) * proven), span
        if not proven:
            assert steady_state(translator) == before


@pytest.mark.parametrize("ending", ['q",', '",', ",", '\\",'])
def test_a_run_of_reasoning_texts_one_ending_in_a_quote_and_a_comma_gives_the_references_bytes(ending: str) -> None:
    """Reasoning texts written afresh in one run meet at '","': a text ending '",' encodes to '\\","',
    whose '","' overlaps the boundary after it, and must not be taken for one."""

    def delta(text: str) -> bytes:
        doc = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        return b"event: content_block_delta\ndata: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n"

    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    head = [
        b"event: message_start\ndata: " + json.dumps(message_start()).encode() + b"\n\n",
        b"event: content_block_start\ndata: " + json.dumps(start).encode() + b"\n\n",
        delta("<think>"),
        delta("first"),
    ]
    run_ = b"".join(delta(t) for t in ["a", ending, " b", ending, ending, "c"])
    tail = [delta("</think>done"), *(b"data: " + json.dumps(e).encode() + b"\n\n" for e in end())]
    events = [*head, run_, *tail]
    fast, fast_counts = run(events, UNSIGNED, MessagesStream, 0)
    reference, counts = run(events, UNSIGNED, MessagesReference, 0)
    assert (fast, fast_counts) == (reference, counts)
    read_sse(fast)
