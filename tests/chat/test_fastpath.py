"""The chat fast paths against the plain reference translator: same events, same fields, same order.

The fast paths pass runs of events without decoding them, or rename one key on their bytes; they
must give exactly what decoding every event and rebuilding it gives, or decline. Hypothesis builds
hostile chunks: escapes (``\\u003c`` spelling ``<``), unicode, spaced JSON, duplicate and nested
``content`` keys, logprobs, finish reasons, native reasoning, other choices, comments, bad JSON.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.chat import ChatReference
from gateway_mw.surfaces.chat import fast as chat_fast

from ..chatlayouts import LAYOUTS, body, dumps, event
from ..hypothesis_examples import examples
from ..spelling import SPACING, Spelling
from ..ssecompare import events_of
from .support import CFG, EXTRA, TEXT, WORDS, run_events

FIELDS = st.sampled_from(["both", "reasoning_content", "reasoning"])  # every chat_reasoning_field


def run(stream: bytes, piece: int, full: bool, config: ThinkExtractConfig = CFG) -> tuple[bytes, tuple[int, ...]]:
    pipeline = StreamPipeline("chat", config)
    if full:
        pipeline._translator = ChatReference(config)
    out = b"".join(pipeline.feed(stream[i : i + piece]) for i in range(0, len(stream), piece)) + pipeline.finish()
    counts = pipeline.counts
    # Not unreadable_events: an event the fast path proves tag-free is passed without being read.
    return out, (counts.reasoning_blocks, counts.reasoning_chars, counts.unclosed, counts.overflows)


@st.composite
def string(draw: st.DrawFn, text: str) -> str:
    """``text`` as a JSON string, spelled one of several valid ways."""
    encoded = json.dumps(text, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 5)) == 0 and "<" in text:
        encoded = encoded.replace("<", "\\u003c")
    if draw(st.integers(0, 5)) == 0:
        encoded = encoded.replace("/", "\\/")
    return encoded


@st.composite
def chunk(draw: st.DrawFn) -> bytes:
    colon, comma = draw(st.sampled_from([(":", ","), (": ", ", ")]))

    def obj(items: list[tuple[str, str]]) -> str:
        return "{" + comma.join(f'"{k}"{colon}{v}' for k, v in items) + "}"

    delta: list[tuple[str, str]] = []
    if draw(st.integers(0, 4)) == 0:
        delta.append(("role", '"assistant"'))
    shape = draw(st.integers(0, 12))
    text = draw(TEXT)
    delta.append(("content", draw(string(text)) if shape else "null"))
    if shape == 1:
        delta.append(("content", draw(string(draw(TEXT)))))  # a duplicate key
    if shape == 2:
        delta.append(("extra", obj([("content", draw(string("nested")))])))
    if shape == 3:
        delta.append(("reasoning_content", draw(st.sampled_from(["null", '""', '"native"']))))
    if shape == 4:
        delta.append(("tool_calls", "null"))
    if shape == 5:  # the other name, empty (both names written then trade with the one spelled)
        delta.insert(draw(st.integers(0, len(delta))), ("reasoning", draw(st.sampled_from(["null", '""']))))
    choice = [("index", draw(st.sampled_from(["0", "0", "0", "1"]))), ("delta", obj(delta))]
    if draw(st.integers(0, 5)) == 0:
        choice.append(("logprobs", obj([("content", '[{"token":"t","logprob":-0.5,"bytes":[116]}]')])))
    else:
        choice.append(("logprobs", "null"))
    choice.append(("finish_reason", draw(st.sampled_from(["null"] * 8 + ['"stop"']))))
    envelope = [("id", '"chatcmpl-1"'), ("object", '"chat.completion.chunk"'), ("created", "1730000000")]
    envelope.append(("model", '"m"'))
    if draw(st.booleans()):
        envelope.append(("system_fingerprint", draw(st.sampled_from(["null", '"fp"', "1e999"]))))
    choices = "[" + obj(choice) + "]" if draw(st.integers(0, 15)) else "[]"
    body = obj([*envelope, ("choices", choices)])
    return b"data: " + body.encode() + b"\n\n"


OTHER = st.sampled_from(
    [b": keepalive\n\n", b"data: {bad json\n\n", b"event: e\ndata: {}\n\n", b"data: [DONE]\n\n", b"\n", b"\n\n"]
)


@st.composite
def stream(draw: st.DrawFn) -> bytes:
    start = draw(st.sampled_from(["Hello", "<think>", "<think>r</think>answer"]))
    first = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
    first += b'"choices":[{"index":0,"delta":{"content":' + json.dumps(start).encode() + b"}}]}\n\n"
    plain = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m",'
    plain += b'"choices":[{"index":0,"delta":{"content":"word"},"logprobs":null,"finish_reason":null}]}\n\n'
    parts = [first]
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.integers(0, 9))
        if kind < 5:
            parts.append(plain * draw(st.integers(1, 12)))  # runs long enough for the fast paths
        elif kind < 9:
            parts.append(draw(chunk()))
        else:
            parts.append(draw(OTHER))
    return b"".join(parts)


@settings(max_examples=examples(400), deadline=None)
@given(upstream=stream(), piece=st.sampled_from([1500, 4096, 9000, 1 << 20]), field=FIELDS)
def test_fast_paths_give_what_the_full_path_gives(upstream: bytes, piece: int, field: str) -> None:
    config = CFG.replace(chat_reasoning_field=field)
    fast, fast_counts = run(upstream, piece, full=False, config=config)
    full, full_counts = run(upstream, piece, full=True, config=config)
    assert events_of(fast) == events_of(full)
    assert fast_counts == full_counts


_STEADY = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"word"},"logprobs":null,"finish_reason":null}]}\n\n'
)
_ROLE_AGAIN = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":"abc","reasoning_content":null},"finish_reason":null}]}\n\n'
)


@pytest.mark.parametrize("field", ["both", "reasoning_content", "reasoning"])
@pytest.mark.parametrize("tail", [_ROLE_AGAIN + b": keepalive\n\n", _ROLE_AGAIN + _STEADY + b": ping\n\n"])
def test_a_comment_after_the_last_reasoning_event_of_a_read_is_not_lost(field: str, tail: bytes) -> None:
    """A read that ends with a comment after steady reasoning events (one of them saying its role
    again): the window's events are renamed one by one, and the comment after them goes on too."""
    start = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    start += b'"choices":[{"index":0,"delta":{"content":"<think>"}}]}\n\n'
    upstream = start + _STEADY * 10 + tail
    config = CFG.replace(chat_reasoning_field=field)
    fast, _ = run(upstream, 1 << 20, full=False, config=config)
    full, _ = run(upstream, 1 << 20, full=True, config=config)
    assert fast == full
    assert fast.endswith(tail[tail.rindex(b"\n\n:") + 2 :])


@pytest.mark.parametrize("trim", [False, True, "tail"])
def test_the_fast_paths_are_taken(trim: bool | str) -> None:
    """The property above would hold vacuously if the fast paths never ran: check they do.

    The chat fast path reads triggers in each event's decoded text, not its raw bytes, so
    whitespace as a trigger (``trim_reasoning_tail``) costs it nothing on text without any."""
    plain = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    plain += b'"choices":[{"index":0,"delta":{"content":"word"},"logprobs":null,"finish_reason":null}]}\n\n'
    both = plain.replace(b'"content":"word"', b'"reasoning_content":"word","reasoning":"word"')
    for start, expected in ((b'"Hello"', plain), (b'"<think>"', both)):
        first = b'data: {"model":"m","choices":[{"index":0,"delta":{"content":' + start + b"}}]}\n\n"
        config = CFG.replace(trim_tag_edges=bool(trim), trim_reasoning_tail=trim == "tail")
        pipeline = StreamPipeline("chat", config)
        pipeline.feed(first)
        calls = 0
        translator = pipeline._translator
        original = translator.event

        def counting(event: Any, original: Any = original) -> Any:
            nonlocal calls
            calls += 1
            return original(event)

        translator.event = counting  # type: ignore[method-assign]
        assert pipeline.feed(plain * 100) == expected * 100
        # a block's first text is read: it starts the block
        assert calls == (1 if start == b'"<think>"' else 0)
        assert translator.counts.reasoning_chars == 0  # counted when the choice finishes
        pipeline.finish()
        assert translator.counts.reasoning_chars == (400 if start == b'"<think>"' else 0)


# -- every upstream layout, one event per feed ------------------------------------------------------

DELTAS = st.one_of(WORDS, WORDS, WORDS, TEXT)


@st.composite
def layout_stream(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """A whole stream in one server's layout, keys reordered and spaced at random, strings escaped
    one of several valid ways: the stream and its events one by one."""
    layout = draw(st.sampled_from(LAYOUTS))
    rnd = draw(st.randoms(use_true_random=False))
    comma, colon = draw(st.sampled_from(SPACING))
    ascii_only = draw(st.booleans())
    reorder = draw(st.booleans())
    slash, lt = draw(st.booleans()), draw(st.booleans())

    spelling = Spelling(comma, colon, ascii_only, slash, lt, rnd if reorder else None)
    encode = spelling.encode

    start = draw(st.sampled_from(["", "<think>", "<think>\n", "Hello"]))
    deltas = [start, *draw(st.lists(DELTAS, min_size=1, max_size=40))]
    docs = [body(layout, "", first=True)] + [body(layout, d) for d in deltas] + [body(layout, None, "stop")]
    for doc in docs[1:-1]:  # now and then a member that says nothing, or something, anywhere
        if draw(st.integers(0, 5)) == 0:
            where = draw(st.sampled_from([doc, doc["choices"][0], doc["choices"][0]["delta"]]))
            where[draw(st.sampled_from(["extra", "usage", "tool_calls", "role", "reasoning_details"]))] = draw(EXTRA)
    events = [b"data: " + encode(doc).encode() + b"\n\n" for doc in docs] + [b"data: [DONE]\n\n"]
    return b"".join(events), events


@settings(max_examples=examples(300), deadline=None)
@given(case=layout_stream(), piece=st.sampled_from([0, 1500, 1 << 20]), field=FIELDS)
def test_every_layout_one_event_per_feed_gives_what_the_full_path_gives(
    case: tuple[bytes, list[bytes]], piece: int, field: str
) -> None:
    upstream, events = case
    config = CFG.replace(chat_reasoning_field=field)
    if piece:
        fast, fast_counts = run(upstream, piece, full=False, config=config)
    else:
        fast, fast_counts = run_events(events, full=False, config=config)
    full, full_counts = run_events(events, full=True, config=config)
    assert events_of(fast) == events_of(full)
    assert fast_counts == full_counts


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("start", ["Hello", "<think>"])
def test_every_layout_takes_the_fast_path_one_event_per_feed(layout: str, start: str) -> None:
    """After the role chunk no event of any layout is decoded twice (the fast path translates the
    tag, the block's first text and the finish from its own decode), and in steady content and
    steady reasoning each goes out as the reference would write it: the same bytes, or its key
    renamed and the second name beside it."""
    pipeline = StreamPipeline("chat", CFG)
    pipeline.feed(event(layout, "", first=True))
    translator = pipeline._translator
    calls = 0
    original = translator.event

    def counting(ev: Any, original: Any = original) -> Any:
        nonlocal calls
        calls += 1
        return original(ev)

    translator.event = counting  # type: ignore[method-assign]
    pipeline.feed(event(layout, start))
    pipeline.feed(event(layout, " first"))
    words = [event(layout, w) for w in (" step", " by", " step", " é", " 4")]
    out = [pipeline.feed(ev) for ev in words]
    pipeline.feed(event(layout, None, "stop"))
    assert calls == 0
    if start == "Hello":
        assert out == words
    else:
        expected = []
        for word in (" step", " by", " step", " é", " 4"):
            doc = body(layout, word)
            delta = doc["choices"][0]["delta"]
            # Both names where content was; SGLang's explicit null reasoning_content trades with content.
            renamed: dict[str, Any] = {}
            for k, v in delta.items():
                if k == "content":
                    renamed |= {"reasoning_content": v, "reasoning": v}
                else:
                    renamed["content" if k == "reasoning_content" else k] = v
            doc["choices"][0]["delta"] = renamed
            expected.append(b"data: " + dumps(doc, layout).encode() + b"\n\n")
        # The second name is written compact, in any layout: the same JSON, key order included.
        assert [events_of(e) for e in out] == [events_of(e) for e in expected]


NOTHING = st.sampled_from(["null", '""', "[]", "{}", " [ ] ", "{ }"])
SOMETHING = st.sampled_from(['"x"', "0", "false", "[null]", '{"a":null}', '"stop"', "1.5"])


@st.composite
def all_held_chunk(draw: st.DrawFn) -> bytes:
    """A one-choice chunk whose text was all held, with members that say nothing or something
    anywhere, under the keys servers write and others."""
    keys = st.sampled_from(
        [
            "usage",
            "extra",
            "role",
            "tool_calls",
            "refusal",
            "logprobs",
            "finish_reason",
            "matched_stop",
            "stop_reason",
            "reasoning_content",
            "reasoning",
            "index",
        ]
    )

    def members(base: list[tuple[str, str]]) -> list[tuple[str, str]]:
        out = list(base)
        for _ in range(draw(st.integers(0, 3))):
            out.insert(draw(st.integers(0, len(out))), (draw(keys), draw(st.one_of(NOTHING, SOMETHING))))
        return out

    def obj(items: list[tuple[str, str]]) -> str:
        return "{" + ",".join(f'"{k}":{v}' for k, v in items) + "}"

    delta = obj(members([("content", draw(st.sampled_from(['"<think>"', '"\\u003c/think>"', "null"])))]))
    choice = obj(members([("index", draw(st.sampled_from(["0", "0.0", '"0"']))), ("delta", delta)]))
    envelope = [("id", '"c"'), ("object", '"chat.completion.chunk"'), ("created", "1"), ("model", '"m"')]
    choices = "[" + choice + (draw(st.sampled_from(["", "", ",{}"]))) + "]"
    return obj(members([*envelope, ("choices", choices)])).encode()


@settings(max_examples=examples(500), deadline=None)
@given(data=all_held_chunk())
def test_a_chunk_whose_text_is_all_held_gives_what_the_reference_gives(data: bytes) -> None:
    """A tag's chunk in steady text, spelled with members that say nothing or something anywhere:
    the fast path hands it over exactly as the reference translates it."""
    for start in (b'"Hello"', b'"<think>"'):
        first = b'data: {"model":"m","choices":[{"index":0,"delta":{"content":' + start + b"}}]}\n\n"
        steady = b'data: {"choices":[{"index":0,"delta":{"content":"word"}}]}\n\n'
        feeds = [first, steady, b"data: " + data + b"\n\n", steady, b"data: [DONE]\n\n"]
        fast_out, fast_counts = run_events(feeds, full=False)
        full, full_counts = run_events(feeds, full=True)
        assert (events_of(fast_out), fast_counts) == (events_of(full), full_counts)


@pytest.mark.parametrize(
    ("delta", "without"),
    [
        (b'{"role": "assistant", "content": %s}', b'{"role": "assistant"}'),
        (b'{ "content" : %s ,\t "role": "assistant" }', b'{ "role": "assistant" }'),
    ],
)
def test_a_tag_in_a_delta_that_says_its_role_goes_out_with_its_text_taken_off_its_bytes(
    delta: bytes, without: bytes
) -> None:
    """Ollama writes ``role`` in every delta: a tag's chunk (its text all held) goes out as its own
    bytes without the ``content`` member, its spacing kept, not rebuilt; the reference writes the
    same JSON (the property tests above hold the two to each other in every spelling)."""
    chunk = (
        b'data: {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",'
        b' "choices": [{"index": 0, "delta": %s, "finish_reason": null}]}\n\n'
    )
    feeds = [chunk % (delta % b'""'), chunk % (delta % b'"<think>"'), chunk % (delta % b'"r"')]
    feeds += [chunk % (delta % b'"</think>"'), chunk % (delta % b'"a"')]
    pipeline = StreamPipeline("chat", CFG)
    out = [pipeline.feed(f) for f in feeds]
    assert out[1] == chunk % without
    assert out[3] == chunk % without
    full, _ = run_events(feeds, full=True)
    assert events_of(b"".join(out) + pipeline.finish()) == events_of(full)


def test_a_chunk_split_over_two_events_is_two_unreadable_events() -> None:
    """Two events that are JSON only when joined (and a third holding two chunks) are each read
    alone, as the reference reads them: unreadable, passed as they came, counting nothing."""
    steady = b'data: {"choices":[{"index":0,"delta":{"content":"word"}}]}\n\n'
    straddle = b'data: {"choices":[{"index":0,"delta":{"content":"a"\n\ndata: "x":1}}]}\n\n'
    two = (
        b'data: {"choices":[{"index":0,"delta":{"content":"b"}}]},{"choices":[{"index":0,"delta":{"content":"c"}}]}\n\n'
    )
    for start in (b'"<think>"', b'"Hello"'):
        first = b'data: {"model":"m","choices":[{"index":0,"delta":{"content":' + start + b"}}]}\n\n"
        feeds = [first, steady, steady * 2 + straddle + two + steady * 3]  # the last offered as one run
        fast, fast_counts = run_events(feeds, full=False)
        full, full_counts = run_events(feeds, full=True)
        assert events_of(fast) == events_of(full)
        assert fast_counts == full_counts
        assert straddle + two in fast


def test_a_held_character_given_back_at_the_finish_leaves_the_chunk_as_it_came() -> None:
    """A finish gives back a "<" held as a possible tag: "abc<" is the chunk's own text, unchanged."""
    head = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    first = head + b'"delta":{"content":"Hello"}}]}\n\n'
    last = head + b'"delta":{"role":"assistant","content":"abc\\u003c"},"finish_reason":"stop"}]}\n\n'
    pipeline = StreamPipeline("chat", CFG)
    out = pipeline.feed(first) + pipeline.feed(last) + pipeline.feed(b"data: [DONE]\n\n") + pipeline.finish()
    assert (out, pipeline.error) == (first + last + b"data: [DONE]\n\n", None)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_lone_event_is_read_strictly_while_the_upstream_fits_and_leniently_once_it_does_not(
    layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strict read is tried on each lone event while continuations fit it; a finish or a tool
    call makes the next events lenient until text continues; an upstream whose continuations do
    not fit (an empty reasoning_details list in every delta) is read leniently for good. The bytes
    are the reference's all along."""
    strict_reads = 0
    original = chat_fast.decode_run_chunk

    def counting(data: bytes) -> Any:
        nonlocal strict_reads
        strict_reads += 1
        return original(data)

    monkeypatch.setattr(chat_fast, "decode_run_chunk", counting)

    def events(words: list[str | None], details: bool) -> list[bytes]:
        docs = [body(layout, "", first=True)] + [body(layout, w) for w in words] + [body(layout, None, "stop")]
        for doc in docs[1:]:
            if details:
                doc["choices"][0]["delta"]["reasoning_details"] = []
        return [b"data: " + dumps(doc, layout).encode() + b"\n\n" for doc in docs] + [b"data: [DONE]\n\n"]

    plain = events(["Hi", " there", None, None, " again", " and"], details=False)
    fitting = events(["Hi", " there", " again", " and", " more"], details=True)
    for stream, expected_strict in ((plain, 5), (fitting, 1)):
        strict_reads = 0
        fast, _ = run_events(stream, full=False)
        full, _ = run_events(stream, full=True)
        assert events_of(fast) == events_of(full)
        # plain: "Hi", " there", the first empty delta (declined), " and", the finish (declined);
        # the second empty delta and " again" (which makes the next read strict) leniently.
        # fitting: "Hi" declined while it continues the text, then all leniently.
        assert strict_reads == expected_strict


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_batched_read_is_decoded_about_once_per_event(monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """A whole tag-free stream in one read (the role chunk, 17 text chunks, the finish, ``[DONE]``):
    the fast path passes the events it proves and hands on only the ones it does not, so that each
    of the 19 chunks is decoded once but the finish, which ends the proven run, twice (52 decodes
    when a window was declined whole), and the bytes are the reference's."""
    from gateway_mw.surfaces.chat import reference as chat_reference

    decodes = [0]

    def counting(decode: Any) -> Any:
        def counted(data: bytes) -> Any:
            decodes[0] += 1
            return decode(data)

        return counted

    monkeypatch.setattr(chat_fast, "decode_run_chunk", counting(chat_fast.decode_run_chunk))
    monkeypatch.setattr(chat_fast, "decode_chunk", counting(chat_fast.decode_chunk))
    monkeypatch.setattr(chat_reference, "decode_chunk", counting(chat_reference.decode_chunk))
    words = [f" w{i}" for i in range(17)]
    stream = event(layout, "", first=True) + b"".join(event(layout, w) for w in words)
    stream += event(layout, None, "stop") + b"data: [DONE]\n\n"
    fast = StreamPipeline("chat", CFG)
    out = fast.feed(stream) + fast.finish()
    assert decodes[0] <= 20
    assert events_of(out) == events_of(run(stream, len(stream), full=True)[0])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_chunk_that_first_shows_the_one_choice_is_read_once(monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """The role chunk opens the one choice and goes out as it came: nothing to reorder, so its
    choice indexes are not read again (the order of several choices is read: see test_hostile)."""
    from gateway_mw.surfaces.chat import reference as chat_reference

    reads = [0]
    indexes = chat_reference.indexes

    def counted(data: bytes) -> list[int]:
        reads[0] += 1
        return indexes(data)

    monkeypatch.setattr(chat_reference, "indexes", counted)
    first = event(layout, "", first=True)
    pipeline = StreamPipeline("chat", CFG)
    assert (pipeline.feed(first), reads[0]) == (first, 0)
