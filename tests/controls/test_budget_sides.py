"""Every surface that declares a budget side (``SurfaceDefinition.budget``), held to the same rules: a
stream within the budget goes as it came; a cut one gives N reasoning events and, with no
continuation, ends as one well-formed answer; a body made a stream and collected again is the same
body; a stream that says nothing, a request with no conversation and a body that is no answer are
left alone. A surface that declares a side and has no sample stream here fails (add its sample)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import Surface
from gateway_mw.marks import gateway_signature
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.budgeting import BudgetSide
from gateway_mw.surfaces.registry import SURFACES
from gateway_mw.surfaces.usage import BODY_USAGE

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


SAMPLES = {"chat": _chat, "messages": _messages, "ollama": _ollama}
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


CUT = {"chat": _chat_cut, "messages": _messages_cut, "ollama": _ollama_cut}
"""The body of the sample cut after its reasoning so far, with no continuation: stopped at the limit."""

SIDES = sorted(name for name, definition in SURFACES.items() if definition.budget is not None)


def side_of(surface: Surface) -> BudgetSide:
    side = SURFACES[surface].budget
    assert side is not None
    return side


def translated(surface: Surface, raw: bytes, config: ThinkExtractConfig = CONFIG) -> bytes:
    pipeline = StreamPipeline(surface, config)
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
    field = BODY_USAGE.get(surface)
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
def test_a_request_without_a_conversation_is_not_continued(surface: Surface) -> None:
    """Nowhere to put the final assistant turn: no continuation (the answer ends as for a refused one)."""
    assert side_of(surface).continued({}, "<think>r</think>", 0) is None


@pytest.mark.parametrize("surface", SIDES)
@pytest.mark.parametrize("body", [b"", b"[", b"[]", b"null", b'"text"'])
def test_a_body_that_is_no_answer_is_no_stream(surface: Surface, body: bytes) -> None:
    assert side_of(surface).as_stream(body) is None


@pytest.mark.parametrize("surface", SIDES)
def test_the_body_of_an_empty_stream_is_a_json_object(surface: Surface) -> None:
    assert isinstance(json.loads(side_of(surface).collector(CONFIG.max_event_bytes).body()), dict)
