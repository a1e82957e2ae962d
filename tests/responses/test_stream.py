"""The Responses translator, sans-I/O: the translator contract, the body transform, properties."""

from __future__ import annotations

import gc
import itertools
import json
from typing import Any

import msgspec
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from gateway_mw import ModelProfile, ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder, SSEEvent
from gateway_mw.surfaces.base import Counts
from gateway_mw.surfaces.responses import ResponsesStream, rebuild, transform_body, translate_stream
from gateway_mw.surfaces.responses import items as items_module
from gateway_mw.surfaces.responses.reference import replayer

from ..hypothesis_examples import examples
from ..responseswire import (
    USAGE,
    added,
    completed,
    created,
    ev,
    function_call,
    in_progress,
    item_done,
    message,
    message_events,
    normalize,
    numbered,
    output_text,
    part_added,
    part_done,
    read_events,
    reasoning,
    reasoning_events,
    response,
    sse,
    text_delta,
    text_done,
    upstream,
)

CFG = ThinkExtractConfig()
CONTENT = ThinkExtractConfig(responses_reasoning_format="content")  # one form: event counts as in the API docs


def translate(stream: bytes, config: ThinkExtractConfig = CFG, cuts: list[int] | None = None) -> bytes:
    pipeline = StreamPipeline("responses", config)
    points = [0, *sorted(c for c in (cuts or []) if 0 < c < len(stream)), len(stream)]
    out = b"".join(pipeline.feed(stream[a:b]) for a, b in itertools.pairwise(points))
    out += pipeline.finish()
    assert pipeline.error is None
    return out


def events_of(items: list[dict[str, Any] | str]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = decoder.feed(sse(items))
    assert decoder.finish() == ([], b"")
    return events


def run(stream: ResponsesStream, items: list[dict[str, Any] | str]) -> list[Any]:
    out: list[SSEEvent] = []
    for event in events_of(items):
        out += stream.event(event)
    return read_events(b"".join(e.raw for e in out))


# -- the translator contract ---------------------------------------------------------------------


def test_events_without_data_are_answered_by_themselves() -> None:
    stream = ResponsesStream(CFG)
    comment = SSEEvent(raw=b": keepalive\n\n")
    assert stream.event(comment) == [comment]


def test_unreadable_event_is_sent_after_the_flush_and_counted() -> None:
    stream = ResponsesStream(CONTENT)
    head = numbered([created(), in_progress(), *message_events("msg_1", 0, ["<think>abc</th"])[:3]])
    assert run(stream, head) == numbered(
        [created(), in_progress(), *reasoning_events("rs_1", 0, ["abc"], fmt="content")[:3]]
    )
    bad = [
        SSEDecoder().feed(raw)[0]
        for raw in (
            b"data: {oops\n\n",
            b'data: ["a list"]\n\n',
            b'data: {"type":"response.output_text.delta","output_index":0,"delta":5}\n\n',
        )
    ]
    first = stream.event(bad[0])
    assert first[1:] == [bad[0]]
    delta = ev("response.reasoning_text.delta", item_id="rs_1", output_index=0, content_index=0, delta="</th")
    assert read_events(first[0].raw) == [{**delta, "sequence_number": 5}]
    assert [stream.event(e) for e in bad[1:]] == [[bad[1]], [bad[2]]]
    assert stream.counts.unreadable_events == 3


def test_flush_sends_held_text_and_translation_goes_on() -> None:
    stream = ResponsesStream(CONTENT)
    head = numbered([created(), in_progress(), *message_events("msg_1", 0, ["Hi <thi"])[:3]])
    assert run(stream, head) == numbered([created(), in_progress(), *message_events("msg_1", 0, ["Hi "])[:3]])
    flushed = read_events(b"".join(e.raw for e in stream.flush()))
    assert flushed == [{**text_delta("msg_1", 0, "<thi"), "sequence_number": 5}]
    assert stream.flush() == []
    rest = numbered([created(), in_progress(), *message_events("msg_1", 0, ["Hi <thi", "nk>x</think>y"])])[5:]
    want = numbered([created(), in_progress(), *message_events("msg_1", 0, ["Hi ", "<thi", "nk>x</think>y"])])[6:]
    assert run(stream, rest) == want  # the tag was cut by the flush: it stays text, nothing is lost


def test_finish_without_a_terminal_event() -> None:
    stream = ResponsesStream(CONTENT)
    head = numbered([created(), in_progress(), *message_events("msg_1", 0, ["<think>r</think>a <thi"])[:3]])
    run(stream, head)
    # The answer's held text goes out; the message stays open, as the upstream left it.
    tail = read_events(b"".join(e.raw for e in stream.finish()))
    assert tail == [{**text_delta("msg_1", 1, "<thi"), "sequence_number": 11}]
    assert stream.finish() == []


def test_finish_closes_an_open_reasoning_item_and_sends_a_held_empty_message() -> None:
    stream = ResponsesStream(CONTENT)
    items = numbered(
        [created(), *message_events("msg_1", 0, ["<think>r"])[:3], added(1, message("msg_2", None, "in_progress"))]
    )
    run(stream, items)
    assert (
        read_events(b"".join(e.raw for e in stream.finish()))
        == numbered(
            [
                created(),
                *reasoning_events("rs_1", 0, ["r"], fmt="content"),
                added(1, message("msg_2", None, "in_progress")),
            ]
        )[4:]
    )


def test_nothing_is_synthesized_after_the_terminal_event() -> None:
    stream = ResponsesStream(CFG)
    items: list[Any] = upstream(["<think>r</think>a"])
    run(stream, items)
    late = events_of([numbered(message_events("msg_9", 5, ["<think>late"]))[2], "[DONE]"])
    assert [stream.event(e) for e in late] == [[late[0]], [late[1]]]
    assert (stream.flush(), stream.finish()) == ([], [])


def test_a_part_done_without_its_text_done_gets_one() -> None:
    """An upstream that closes a part without ``output_text.done``: the client is sent the text's done
    event, then the upstream's ``content_part.done`` (not that one twice)."""
    events = message_events("msg_1", 0, ["<think>r</think>Hel", "lo"])
    del events[4]  # output_text.done
    items = [created(), *events, completed([message("msg_1", ["<think>r</think>Hello"])])]
    got = read_events(translate(sse(numbered(items)), CONTENT))
    want = [
        created(),
        *reasoning_events("rs_1", 0, ["r"], fmt="content"),
        *message_events("msg_1", 1, ["Hel", "lo"]),
        completed([reasoning("rs_1", "r", fmt="content"), message("msg_1", ["Hello"])]),
    ]
    assert got == numbered(want)


def test_upstream_without_sequence_numbers_gets_them() -> None:
    items = [created(), in_progress(), *message_events("msg_1", 0, ["plain"]), completed([message("msg_1", ["plain"])])]
    assert read_events(translate(sse(items))) == numbered(items)


def test_refusal_part_and_annotation_follow_their_message_item() -> None:
    refusal = {"type": "refusal", "refusal": ""}
    annotation = {"type": "url_citation", "start_index": 0, "end_index": 1, "title": "t", "url": "https://e.x"}
    items = [
        created(),
        added(0, message("msg_1", None, "in_progress")),
        part_added("msg_1", 0, output_text("")),
        text_delta("msg_1", 0, "<think>r</think>No."),
        ev(
            "response.output_text.annotation.added",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            annotation_index=0,
            annotation=annotation,
        ),
        text_done("msg_1", 0, "<think>r</think>No."),
        part_done("msg_1", 0, output_text("<think>r</think>No.")),
        part_added("msg_1", 0, refusal, content_index=1),
        ev("response.refusal.delta", item_id="msg_1", output_index=0, content_index=1, delta="Sorry"),
        ev("response.refusal.done", item_id="msg_1", output_index=0, content_index=1, refusal="Sorry"),
        part_done("msg_1", 0, {**refusal, "refusal": "Sorry"}, content_index=1),
    ]
    final = {**message("msg_1", ["No."]), "content": [output_text("No."), {**refusal, "refusal": "Sorry"}]}
    raw_final = {**final, "content": [output_text("<think>r</think>No."), {**refusal, "refusal": "Sorry"}]}
    items += [item_done(0, raw_final), completed([raw_final])]
    assert read_events(translate(sse(numbered(items)))) == numbered(
        [
            created(),
            *reasoning_events("rs_1", 0, ["r"]),
            added(1, message("msg_1", None, "in_progress")),
            part_added("msg_1", 1, output_text("")),
            text_delta("msg_1", 1, "No."),
            ev(
                "response.output_text.annotation.added",
                item_id="msg_1",
                output_index=1,
                content_index=0,
                annotation_index=0,
                annotation=annotation,
            ),
            text_done("msg_1", 1, "No."),
            part_done("msg_1", 1, output_text("No.")),
            part_added("msg_1", 1, refusal, content_index=1),
            ev("response.refusal.delta", item_id="msg_1", output_index=1, content_index=1, delta="Sorry"),
            ev("response.refusal.done", item_id="msg_1", output_index=1, content_index=1, refusal="Sorry"),
            part_done("msg_1", 1, {**refusal, "refusal": "Sorry"}, content_index=1),
            item_done(1, final),
            completed([reasoning("rs_1", "r"), final]),
        ]
    )


def test_profile_that_disables_the_model_leaves_the_stream_untouched() -> None:
    body = sse(upstream(["<think>r</think>a"], model="raw-model"))
    config = ThinkExtractConfig(profiles=(ModelProfile(match="raw-*", enabled=False),))
    assert translate(body, config) == body


async def test_async_generator_form_matches_the_pipeline() -> None:
    items: list[Any] = upstream(["<think>r", "</think>a"], after=[function_call()])

    async def source() -> Any:
        for event in events_of(items):
            yield event

    got = [e.raw async for e in translate_stream(source(), CFG)]
    assert read_events(b"".join(got)) == read_events(translate(sse(items)))


# -- the body transform ---------------------------------------------------------------------------


def test_body_transform_unchanged_and_unreadable_bodies() -> None:
    plain = response("completed", [message("msg_1", ["no tags"]), function_call()])
    for body in (b"{oops", b"[]", b'{"object":"response"}', json.dumps(plain).encode()):
        new, counts = transform_body(body, CFG)
        assert (new, counts.reasoning_blocks) == (None, 0)


def test_body_transform_counts_and_keeps_unknown_fields() -> None:
    doc = response("completed", [message("msg_1", ["<think>ab</think>c"])], output_text="raw", x_extra={"k": 1})
    doc["output"][0]["phase"] = "final_answer"
    new, counts = transform_body(json.dumps(doc).encode(), CFG)
    assert new is not None
    assert normalize(json.loads(new)) == response(
        "completed",
        [reasoning("rs_1", "ab"), {**message("msg_1", ["c"]), "phase": "final_answer"}],
        output_text="c",
        x_extra={"k": 1},
    )
    assert (counts.reasoning_blocks, counts.reasoning_chars, counts.unclosed) == (1, 2, 0)


def replayed(body: bytes, config: ThinkExtractConfig) -> tuple[bytes | None, Counts]:
    """The body's output replayed through the stream translator, however plain (the reference)."""
    return rebuild.transform_body(body, config, replayer, direct=False)


def test_a_body_replayed_writes_only_the_events_its_items_are_read_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay of a body's output reads its items back from their ``output_item.done`` events:
    those are the only events it encodes (the upstream message's own done event among them, whose
    type is read raw), the others only numbered."""
    written: list[str] = []
    encode = items_module.event_of

    def counted(body: dict[str, Any], fields: bytes | None, name: str | None) -> SSEEvent:
        written.append(msgspec.json.decode(body["type"]) if isinstance(body["type"], msgspec.Raw) else body["type"])
        return encode(body, fields, name)

    monkeypatch.setattr(items_module, "event_of", counted)
    doc = response("completed", [message("msg_1", ["<think>ab</think>c"])])
    new, _ = replayed(json.dumps(doc).encode(), CFG)
    assert new is not None
    assert normalize(json.loads(new)) == response("completed", [reasoning("rs_1", "ab"), message("msg_1", ["c"])])
    assert written == ["response.output_item.done"] * 2


def test_a_body_replayed_leaves_nothing_for_the_garbage_collector() -> None:
    """The replay's translator and its writer make no cycle: what a body's translation made goes as
    soon as it returns (a cycle kept it, and whatever it held, until the collector's next pass)."""
    doc = response("completed", [message("msg_1", ["<think>ab</think>c"])])
    body = json.dumps(doc).encode()
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            new, _ = replayed(body, CFG)
            transform_body(body, CFG)  # written directly
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0
    assert new is not None
    assert normalize(json.loads(new)) == response("completed", [reasoning("rs_1", "ab"), message("msg_1", ["c"])])


def test_body_with_only_reasoning_has_no_message_item() -> None:
    doc = response("incomplete", [message("msg_1", ["<think>cut off"], "incomplete")])
    new, counts = transform_body(json.dumps(doc).encode(), CFG)
    assert new is not None
    assert normalize(json.loads(new)) == response("incomplete", [reasoning("rs_1", "cut off")])
    assert counts.unclosed == 1


# -- configuration ----------------------------------------------------------------------------------


def test_responses_reasoning_format_config() -> None:
    assert ThinkExtractConfig().responses_reasoning_format == "both"
    env = {"THINK_EXTRACT_RESPONSES_REASONING_FORMAT": " Summary "}
    assert ThinkExtractConfig.from_env(env).responses_reasoning_format == "summary"
    with pytest.raises(ValueError) as exc:
        ThinkExtractConfig.from_env({"THINK_EXTRACT_RESPONSES_REASONING_FORMAT": "text"})
    assert (
        str(exc.value)
        == "THINK_EXTRACT_RESPONSES_REASONING_FORMAT='text' is invalid: expected one of both, content, summary"
    )
    with pytest.raises(ValueError) as exc:
        ThinkExtractConfig(responses_reasoning_format="text")  # type: ignore[arg-type]
    assert str(exc.value) == "responses_reasoning_format must be one of 'both', 'content', 'summary', got 'text'"
    with pytest.raises(ValueError):
        ModelProfile(match="*", responses_reasoning_format="text")  # type: ignore[arg-type]
    profile = ModelProfile(match="codex-*", responses_reasoning_format="summary")
    cfg = ThinkExtractConfig(profiles=(profile,))
    assert cfg.for_model("Codex-Mini").responses_reasoning_format == "summary"
    assert cfg.for_model("other").responses_reasoning_format == "both"
    profiles = '[{"match": "m*", "responses_reasoning_format": "summary"}]'
    assert ThinkExtractConfig.from_env({"THINK_EXTRACT_PROFILES": profiles}).profiles == (
        ModelProfile(match="m*", responses_reasoning_format="summary"),
    )


# -- properties -------------------------------------------------------------------------------------

FRAGMENTS = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<thi",
        "nk>",
        "</th",
        "ink>",
        "a",
        "b c",
        "\n",
        " ",
        "é",
        "🙂",
        "`",
        "```\n",
        "[THINK]",
        "[/THINK]",
        "<thinking>",
        "</thinking>",
        "x<",
        "ok.",
    ]
)
TEXT = st.lists(FRAGMENTS, max_size=10).map("".join)
CONFIGS = st.sampled_from(
    [
        CFG,
        ThinkExtractConfig(stream_mode="buffered"),
        ThinkExtractConfig(responses_reasoning_format="summary"),
        ThinkExtractConfig(start_with_reasoning=True, separator=""),
        ThinkExtractConfig(strip_whitespace=True, code_aware=False),
    ]
)
_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def split(text: str, cuts: list[int]) -> list[str]:
    points = [0, *sorted({c % (len(text) + 1) for c in cuts}), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


def build(messages: list[tuple[str, list[int]]], call_at: int | None) -> list[dict[str, Any]]:
    """Upstream events: message items with the given texts and delta cuts, a function call."""
    events: list[dict[str, Any]] = [created(), in_progress()]
    output: list[dict[str, Any]] = []
    for i, (text, cuts) in enumerate(messages):
        if call_at == i:
            events += [added(len(output), function_call(status="in_progress")), item_done(len(output), function_call())]
            output.append(function_call())
        events += message_events(f"msg_{i}", len(output), split(text, cuts), text)
        output.append(message(f"msg_{i}", [text]))
    events.append(completed(output))
    return numbered(events)


def check_stream(events: list[Any]) -> dict[str, Any]:
    """The structural rules every client relies on; returns the completed response."""
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=openai.omit, text_format=openai.omit)
    texts: dict[str, list[str]] = {}
    done_texts: dict[str, str] = {}
    added_ids: list[str] = []
    done_items: dict[int, Any] = {}
    for n, event in enumerate(events):
        assert event["sequence_number"] == n
        state.handle_event(_EVENT.validate_python(event))
        kind = event["type"]
        if kind == "response.output_item.added":
            assert event["output_index"] == len(added_ids)
            added_ids.append(event["item"]["id"])
        elif kind == "response.output_item.done":
            assert added_ids[event["output_index"]] == event["item"]["id"]
            done_items[event["output_index"]] = event["item"]
        elif kind.endswith(".delta") and "text" in kind and "summary" not in kind:
            texts.setdefault(event["item_id"], []).append(event["delta"])
        elif kind.endswith("text.done") and "summary" not in kind:
            done_texts[event["item_id"]] = event["text"]
    assert events[-1]["type"] == "response.completed"
    final = events[-1]["response"]
    assert final["output"] == [done_items[i] for i in range(len(added_ids))]
    assert {k: "".join(v) for k, v in texts.items()} == {k: v for k, v in done_texts.items() if v}
    assert state._completed_response is not None
    result: dict[str, Any] = final
    return result


@settings(max_examples=examples(150), deadline=None)
@given(
    messages=st.lists(st.tuples(TEXT, st.lists(st.integers(0, 60), max_size=4)), min_size=1, max_size=2),
    call_at=st.none() | st.integers(0, 1),
    config=CONFIGS,
    cuts=st.lists(st.integers(0, 6000), max_size=6),
)
def test_random_streams(messages: Any, call_at: int | None, config: ThinkExtractConfig, cuts: list[int]) -> None:
    items = build(messages, call_at)
    body = sse(items)
    whole = normalize(translate(body, config))
    assert normalize(translate(body, config, cuts)) == whole  # any chunking, the same bytes
    final = check_stream(read_events(whole))
    new, _ = transform_body(msgspec.json.encode(items[-1]["response"]), config)
    non_stream = items[-1]["response"] if new is None else normalize(json.loads(new))
    assert final == non_stream  # stream = non-stream, ids aside


def test_crlf_stream_is_answered_in_crlf() -> None:
    items = upstream(["<think>r</think>", "a"], after=[function_call()])
    lf = translate(sse(items))
    crlf = translate(sse(items).replace(b"\n", b"\r\n"))
    assert crlf.count(b"\n") == crlf.count(b"\r\n")  # every line ends in CRLF, synthesized ones too
    assert (
        read_events(crlf)
        == read_events(lf)
        == numbered(
            [
                created(),
                in_progress(),
                *reasoning_events("rs_1", 0, ["r"]),
                *message_events("msg_1", 1, ["a"]),
                added(2, function_call(status="in_progress")),
                item_done(2, function_call()),
                completed([reasoning("rs_1", "r"), message("msg_1", ["a"]), function_call()]),
            ]
        )
    )


@settings(max_examples=examples(100), deadline=None)
@given(
    messages=st.lists(st.tuples(TEXT, st.lists(st.integers(0, 60), max_size=4)), min_size=1, max_size=2),
    config=CONFIGS,
    bad_at=st.none() | st.integers(1, 60),
    cut_at=st.none() | st.integers(1, 60),
)
def test_random_faulty_streams_stay_well_formed(
    messages: Any, config: ThinkExtractConfig, bad_at: int | None, cut_at: int | None
) -> None:
    """An unreadable event anywhere, a stream cut anywhere: what the client reads is still well formed."""
    items: list[Any] = build(messages, None)
    if cut_at is not None:
        items = items[: cut_at % len(items)] or items[:1]
    if bad_at is not None:
        items.insert(1 + bad_at % len(items), "{not json")
    got = read_events(translate(sse(items), config))
    readable = [e for e in got if isinstance(e, dict)]
    assert [e["sequence_number"] for e in readable] == list(range(len(readable)))
    assert got.count("{not json") == items.count("{not json")
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=openai.omit, text_format=openai.omit)
    added_ids: list[str] = []
    for event in readable:
        state.handle_event(_EVENT.validate_python(event))
        if event["type"] == "response.output_item.added":
            assert event["output_index"] == len(added_ids)
            added_ids.append(event["item"]["id"])
        elif event["type"] == "response.output_item.done":
            assert added_ids[event["output_index"]] == event["item"]["id"]
    terminal = [i for i, e in enumerate(readable) if e["type"] == "response.completed"]
    assert terminal in ([], [len(readable) - 1])
    assert (state._completed_response is not None) == bool(terminal)


def _strip_ids(output: list[Any]) -> list[Any]:
    return [{k: v for k, v in item.items() if k != "id"} for item in output]


def _final(body: bytes) -> dict[str, Any]:
    terminal = [e for e in read_events(body) if isinstance(e, dict) and e["type"] == "response.completed"]
    assert len(terminal) == 1
    result: dict[str, Any] = terminal[0]["response"]
    return result


def test_start_with_reasoning_opens_only_the_first_text_of_a_response() -> None:
    """A template injects <think> once per turn: a message after a tool call is answer text."""
    config = CFG.replace(profiles=(ModelProfile(match="r1*", start_with_reasoning=True),))
    fc = function_call()
    events = [
        created("r1"),
        in_progress("r1"),
        *message_events("msg_1", 0, ["plan</think>", "Calling f."]),
        added(1, {**fc, "status": "in_progress"}),
        item_done(1, fc),
        *message_events("msg_2", 2, ["The result is 4."]),
        completed([message("msg_1", ["plan</think>Calling f."]), fc, message("msg_2", ["The result is 4."])], "r1"),
    ]
    final = _final(translate(sse(numbered(events)), config))
    expected = [reasoning("rs", "plan"), message("msg_1", ["Calling f."]), fc, message("msg_2", ["The result is 4."])]
    assert _strip_ids(final["output"]) == _strip_ids(expected)
    body = response("completed", events[-1]["response"]["output"], usage=USAGE, model="r1")
    new, _ = transform_body(json.dumps(body).encode(), config)
    assert new is not None
    assert _strip_ids(json.loads(new)["output"]) == _strip_ids(expected)


@pytest.mark.parametrize("second", ["", "  "])
def test_an_empty_second_part_is_kept_in_stream_and_non_stream(second: str) -> None:
    parts = ["<think>r</think>hello", second]
    item = message("msg_1", parts)
    events = [
        created(),
        in_progress(),
        added(0, message("msg_1", None, "in_progress")),
        part_added("msg_1", 0, output_text("")),
        text_delta("msg_1", 0, parts[0]),
        text_done("msg_1", 0, parts[0]),
        part_done("msg_1", 0, output_text(parts[0])),
        part_added("msg_1", 0, output_text(""), content_index=1),
        text_done("msg_1", 0, second, content_index=1),
        part_done("msg_1", 0, output_text(second), content_index=1),
        item_done(0, item),
        completed([item]),
    ]
    final = _final(translate(sse(numbered(events))))
    new, _ = transform_body(json.dumps(response("completed", [item], usage=USAGE)).encode(), CFG)
    assert new is not None
    assert _strip_ids(json.loads(new)["output"]) == _strip_ids(final["output"])
    # One channel per message item: the second part's whitespace continues the answer's text.
    assert [p["text"] for p in final["output"][1]["content"]] == ["hello", second]
    if not second:  # nothing to change without a tag
        unchanged = response("completed", [message("msg_1", ["hello", second])], usage=USAGE)
        assert transform_body(json.dumps(unchanged).encode(), CFG)[0] is None


def test_a_terminal_event_larger_than_the_event_cap_is_still_translated() -> None:
    """response.completed repeats the whole output: it may grow to max_body_bytes, not max_event_bytes."""
    answer = "word " * 400
    events = upstream(["<think>plan</think>", *["word "] * 400])
    out = translate(sse(events), CFG.replace(max_event_bytes=1024), cuts=list(range(0, 20_000, 700)))
    final = _final(out)
    assert _strip_ids(final["output"]) == _strip_ids([reasoning("rs", "plan"), message("msg_1", [answer])])


def test_invalid_utf8_in_a_field_the_translator_skips_makes_the_event_unreadable_not_a_fault() -> None:
    raw = sse(upstream(["<think>plan</think>", "answer"]))
    at = raw.find(b'"delta":"answer"')
    raw = raw[:at] + b'"x":"\xff",' + raw[at:]
    pipeline = StreamPipeline("responses", CFG)
    pipeline.feed(raw)
    pipeline.finish()
    assert (pipeline.error, pipeline.counts.unreadable_events) == (None, 1)
