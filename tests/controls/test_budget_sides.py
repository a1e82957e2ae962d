"""Every surface that declares a budget side (``SurfaceDefinition.budget``), held to the same rules: a
stream within the budget goes as it came; a cut one gives N reasoning events and, with no
continuation, ends as one well-formed answer; a body made a stream and collected again is the same
body; and whatever their input, a counter passes bytes it cannot read (a stream that says nothing
is not cut), an echo of nothing passes all, a request with nowhere for the prefill is not continued,
a body that is no answer is no stream. A surface that declares a side and has no sample stream here
fails (add its sample)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import Surface
from gateway_mw.marks import gateway_signature
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.budgeting import BudgetSide
from gateway_mw.surfaces.registry import SURFACES

CONFIG = ThinkExtractConfig(messages_policy="unsigned")
REASONING = ["Two", " plus", " two", " is"]


def _chat() -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m"}
        return (
            b"data: "
            + json.dumps(body | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).encode()
            + b"\n\n"
        )

    texts = ["<think>", *REASONING, "</think>", "4", "."]
    return (
        b"".join(
            [chunk({"role": "assistant", "content": ""}), *(chunk({"content": t}) for t in texts), chunk({}, "stop")]
        )
        + b"data: [DONE]\n\n"
    )


def _messages() -> bytes:
    def event(data: dict[str, Any]) -> bytes:
        return b"event: " + data["type"].encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"

    start = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m"}
    start |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 0}}
    out = [event({"type": "message_start", "message": start})]
    out.append(event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
    texts = ["<think>", *REASONING, "</think>", "4", "."]
    out += [
        event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}) for t in texts
    ]
    out.append(event({"type": "content_block_stop", "index": 0}))
    end = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}}
    out += [event(end | {"usage": {"output_tokens": 8}}), event({"type": "message_stop"})]
    return b"".join(out)


def _ollama() -> bytes:
    def line(content: str, **more: Any) -> bytes:
        message = {"role": "assistant", "content": content}
        return json.dumps({"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": message} | more).encode()

    texts = ["<think>", *REASONING, "</think>", "4", "."]
    lines = [line(t, done=False) for t in texts]
    lines.append(line("", done=True, done_reason="stop", eval_count=8))
    return b"\n".join(lines) + b"\n"


def _responses() -> bytes:
    def event(data: dict[str, Any], seq: int) -> bytes:
        return b"data: " + json.dumps(data | {"sequence_number": seq}).encode() + b"\n\n"

    response = {"id": "resp_1", "object": "response", "created_at": 7, "model": "m", "status": "in_progress"}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    texts = ["<think>", *REASONING, "</think>", "4", "."]
    part = {"type": "output_text", "text": "".join(texts), "annotations": []}
    done = item | {"status": "completed", "content": [part]}
    events = [
        {"type": "response.created", "response": response | {"output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", **where, "part": part | {"text": ""}},
        *({"type": "response.output_text.delta", **where, "delta": t, "logprobs": []} for t in texts),
        {"type": "response.output_text.done", **where, "text": part["text"], "logprobs": []},
        {"type": "response.content_part.done", **where, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": response | {"status": "completed", "output": [done]}},
    ]
    return b"".join(event(e, seq) for seq, e in enumerate(events))


SAMPLES = {"chat": _chat, "messages": _messages, "ollama": _ollama, "responses": _responses}
"""An upstream stream per surface: the model thinks 4 tokens in tags, then answers."""


def _chat_cut(reasoning: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": ""} | (
        {"reasoning_content": reasoning, "reasoning": reasoning} if reasoning else {}
    )
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "length"}
    return {"id": "c1", "object": "chat.completion", "created": 7, "model": "m", "choices": [choice]}


def _messages_cut(reasoning: str) -> dict[str, Any]:
    thinking = {"type": "thinking", "thinking": reasoning, "signature": gateway_signature(reasoning)}
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [thinking],
        "stop_reason": "max_tokens",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 0},
    }


def _ollama_cut(reasoning: str) -> dict[str, Any]:
    """As Ollama ends an answer at its limit: one done line, ``eval_count`` the tokens (lines) written."""
    message = {"role": "assistant", "content": ""} | ({"thinking": reasoning} if reasoning else {})
    lines = next(n for n in range(len(REASONING) + 1) if "".join(REASONING[:n]) == reasoning)
    done = {"done": True, "done_reason": "length", "eval_count": lines}
    return {"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": message} | done


def _responses_cut(reasoning: str) -> dict[str, Any]:
    texts = [{"type": "reasoning_text", "text": reasoning}]
    summary = [{"type": "summary_text", "text": reasoning}]
    item = {"id": "rs_1", "type": "reasoning", "summary": summary, "content": texts, "status": "completed"}
    response = {"id": "resp_1", "object": "response", "created_at": 7, "model": "m", "status": "incomplete"}
    response |= {"output": [item], "parallel_tool_calls": False, "tool_choice": "auto", "tools": []}
    return response | {"incomplete_details": {"reason": "max_output_tokens"}}


CUT = {"chat": _chat_cut, "messages": _messages_cut, "ollama": _ollama_cut, "responses": _responses_cut}
"""The body of the sample cut after its reasoning so far, with no continuation: stopped at the limit."""

SIDES = sorted(name for name, definition in SURFACES.items() if definition.budget is not None)


def side_of(surface: Surface) -> BudgetSide:
    side = SURFACES[surface].budget
    assert side is not None
    return side


def translated(surface: Surface, raw: bytes, config: ThinkExtractConfig = CONFIG) -> bytes:
    pipeline = StreamPipeline(surface, config, lambda prefix: prefix + "1")  # the ids it makes up, known
    return pipeline.feed(raw) + pipeline.finish()


def collected(surface: Surface, out: bytes) -> dict[str, Any]:
    collector = side_of(surface).collector(CONFIG.max_event_bytes)
    collector.feed(out)
    body: dict[str, Any] = json.loads(collector.body())
    return body


@pytest.mark.parametrize("surface", SIDES)
def test_a_stream_within_the_budget_goes_as_it_came(surface: Surface) -> None:
    whole = translated(surface, SAMPLES[surface]())
    count = side_of(surface).counter(len(REASONING), CONFIG.max_event_bytes)
    assert count.feed(whole) + count.finish() == whole
    assert (count.cut, count.counted, count.reasoning) == (False, len(REASONING), "".join(REASONING))


@pytest.mark.parametrize("surface", SIDES)
@pytest.mark.parametrize("budget", [0, 1, 3])
def test_a_cut_stream_with_no_continuation_is_one_answer(surface: Surface, budget: int) -> None:
    whole = translated(surface, SAMPLES[surface]())
    count = side_of(surface).counter(budget, CONFIG.max_event_bytes)
    passed = count.feed(whole)
    assert (count.cut, count.counted, count.reasoning) == (True, budget, "".join(REASONING[:budget]))
    joiner = count.joiner(CONFIG.max_event_bytes)
    ended = passed + joiner.closing()
    body = collected(surface, ended)
    assert body == CUT[surface]("".join(REASONING[:budget]))
    again = side_of(surface).as_stream(json.dumps(body).encode())
    assert again is not None
    # Translated again, the reasoning is counted again into a usage that lacks a count (the
    # gateway's own fill, tested in test_usage.py): the round trip is the same body but for that.
    assert _without_count(surface, collected(surface, translated(surface, again))) == _without_count(surface, body)


def _without_count(surface: Surface, body: dict[str, Any]) -> dict[str, Any]:
    counted = SURFACES[surface].usage
    field = None if counted is None else counted.field
    usage = body.get("usage")
    if field is None or not isinstance(usage, dict) or field.details not in usage:
        return body
    details = {k: v for k, v in usage[field.details].items() if k != field.name}
    kept = {k: v for k, v in usage.items() if k != field.details} | ({field.details: details} if details else {})
    return body | {"usage": kept}


@pytest.mark.parametrize("surface", SIDES)
def test_a_stream_that_says_nothing_is_not_cut(surface: Surface) -> None:
    counter = side_of(surface).counter(0, CONFIG.max_event_bytes)
    got = (counter.feed(b""), counter.finish(), counter.cut, counter.counted, counter.reasoning)
    assert got == (b"", b"", False, 0, "")


@pytest.mark.parametrize("surface", SIDES)
def test_the_body_of_an_empty_stream_is_a_json_object(surface: Surface) -> None:
    assert isinstance(json.loads(side_of(surface).collector(CONFIG.max_event_bytes).body()), dict)


BYTES = st.binary(max_size=300) | st.text(alphabet='data: {}"\n:ab', max_size=200).map(str.encode)
READS = st.lists(st.integers(0, 300), max_size=6)


def pieces(raw: bytes, reads: list[int]) -> list[bytes]:
    edges = [0, *sorted({r for r in reads if 0 < r < len(raw)}), len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(edges)]


@pytest.mark.parametrize("surface", SIDES)
@given(raw=BYTES, reads=READS)
def test_a_counter_passes_what_it_cannot_read_whole(surface: Surface, raw: bytes, reads: list[int]) -> None:
    """Bytes that hold no reasoning (noise, broken events) go to the client as they came, in any reads."""
    counter = side_of(surface).counter(3, 1024)
    out = b"".join(counter.feed(p) for p in pieces(raw, reads)) + counter.finish()
    assert not counter.cut and counter.counted == 0
    assert out == raw


@pytest.mark.parametrize("surface", SIDES)
@given(raw=BYTES, reads=READS)
def test_an_echo_of_nothing_passes_everything(surface: Surface, raw: bytes, reads: list[int]) -> None:
    echo = side_of(surface).echo("", 1024)
    assert b"".join(echo.feed(p) for p in pieces(raw, reads)) + echo.finish() == raw


@pytest.mark.parametrize("surface", SIDES)
def test_a_request_with_nowhere_to_put_the_prefill_is_not_continued(surface: Surface) -> None:
    assert side_of(surface).continued({}, "<think>x</think>", 0) is None


@pytest.mark.parametrize("surface", SIDES)
@pytest.mark.parametrize(
    "body", [b"", b"[", b"not json", b"null", b'"text"', b"[]", b"{}", b'{"choices": 3, "content": 3, "output": 3}']
)
def test_a_body_that_is_no_answer_is_no_stream(surface: Surface, body: bytes) -> None:
    assert side_of(surface).as_stream(body) is None
