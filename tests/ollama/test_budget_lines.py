"""A budget on Ollama's NDJSON, sans-I/O: where the budget falls (inside a tag, between a pair's
halves, at a line's edge, in a batched read), the continuation's lines joined, the non-stream body,
and the continuation's request."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.controls.continuation import continuation as continued
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.ollama_budget import SIDE, OllamaBody, OllamaBudgetCount, OllamaJoined, as_stream

from ..budgetcuts import (
    BUDGETS,
    CUTS,
    READS,
    TEXT,
    assert_cut_at_the_budget,
    budgeted,
    pieces,
    tokens,
    unbudgeted,
    units,
)
from ..hypothesis_examples import examples

CONFIG = ThinkExtractConfig()
MODEL = "qwen3:8b"
CREATED = "2026-12-01T10:00:00Z"


def line(text: str, thinking: str | None = None, done: bool = False, chat: bool = True, **extra: Any) -> bytes:
    out: dict[str, Any] = {"model": MODEL, "created_at": CREATED}
    if chat:
        out["message"] = {"role": "assistant", "content": text} | ({"thinking": thinking} if thinking else {})
    else:
        out["response"] = text
        if thinking:
            out["thinking"] = thinking
    out["done"] = done
    return json.dumps(out | extra).encode() + b"\n"  # ensure_ascii: a lone half is an escape


def stream(reasoning: str, answer: str, cuts: list[int], native: bool, chat: bool) -> bytes:
    """Ollama's lines: reasoning in ``thinking`` (its own parser, each line passed as it came: a
    pair's halves may be apart) or in tags (whole characters: Go's encoder writes no lone surrogate,
    and Ollama's runner sends no part of a character)."""
    if native:
        out = [line("", t, chat=chat) for t in tokens(reasoning, cuts)]
        out += [line(t, chat=chat) for t in tokens(answer, cuts)]
    else:
        out = [line(t, chat=chat) for t in tokens("<think>" + reasoning + "</think>" + answer, cuts, whole=True)]
    return b"".join([*out, line("", done=True, chat=chat, done_reason="stop", eval_count=len(out))])


def read(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(x) for x in raw.splitlines()]


def holder(doc: dict[str, Any]) -> dict[str, Any]:
    message = doc.get("message")
    return message if isinstance(message, dict) else doc


def reasoning_lines(raw: bytes) -> list[str]:
    return [t for doc in read(raw) if (t := holder(doc).get("thinking"))]


@given(
    reasoning=TEXT,
    answer=TEXT,
    cuts=CUTS,
    reads=READS,
    budget=BUDGETS,
    native=st.booleans(),
    chat=st.booleans(),
)
@example(reasoning="<<😀", answer="", cuts=[3], reads=[], budget=2, native=True, chat=True)  # between a pair's halves
@example(reasoning="ab", answer="c", cuts=[1], reads=[], budget=1, native=False, chat=True)  # "</think>" in one line
@example(reasoning="<<<<<<<<<😀<", answer="", cuts=[7, 17, 18], reads=[], budget=0, native=False, chat=False)
@settings(max_examples=examples(300))
def test_the_cut_is_at_the_budget_and_what_went_before_is_the_unbudgeted_stream(
    reasoning: str, answer: str, cuts: list[int], reads: list[int], budget: int, native: bool, chat: bool
) -> None:
    raw = stream(reasoning, answer, cuts, native, chat)
    whole = unbudgeted(StreamPipeline("ollama", CONFIG), raw, reads)

    count = OllamaBudgetCount(budget, CONFIG.max_event_bytes)
    passed = budgeted(count, StreamPipeline("ollama", CONFIG), raw, reads)

    assert_cut_at_the_budget(count, budget, whole, passed, reasoning_lines)
    if count.cut:
        assert (count.model, count.chat) == (MODEL, chat) or count.counted == 0


def first_cut(budget: int = 2, chat: bool = True) -> OllamaBudgetCount:
    count = OllamaBudgetCount(budget, CONFIG.max_event_bytes)
    out = count.feed(b"".join(line("", f"r{i} ", chat=chat) for i in range(budget + 1)))
    assert count.cut and len(out.splitlines()) == budget
    return count


@given(answer=TEXT, cuts=st.lists(st.integers(0, 60), max_size=20), reads=st.lists(st.integers(0, 2000), max_size=8))
@example(answer="<<<😀", cuts=[4], reads=[])  # a pair's halves in two lines: each a lone escape
def test_a_continuation_is_joined_as_the_same_answer(answer: str, cuts: list[int], reads: list[int]) -> None:
    """The continuation's lines keep their text and bytes; the one done line counts the first
    answer's reasoning lines in its ``eval_count``."""
    joined = OllamaJoined(first_cut(), CONFIG.max_event_bytes)
    texts = [line(t) for t in tokens(answer, cuts)]
    done = line("", done=True, done_reason="stop", eval_count=len(texts), prompt_eval_count=30)
    out = b"".join(joined.feed(p) for p in pieces(b"".join(texts) + done, reads)) + joined.finish()
    lines = out.splitlines(keepends=True)
    assert lines[:-1] == texts  # the same bytes
    assert json.loads(lines[-1]) == json.loads(done) | {"eval_count": len(texts) + 2}
    assert joined.done and joined.closing() == b""
    assert units("".join(d["message"]["content"] for d in read(out))) == units(answer)


def test_a_done_line_without_eval_count_gets_the_reasoning_lines() -> None:
    """Ollama leaves out an ``eval_count`` of 0 (``omitempty``): the done line gets the first's."""
    joined = OllamaJoined(first_cut(), CONFIG.max_event_bytes)
    assert read(joined.feed(line("", done=True, done_reason="stop"))) == read(
        line("", done=True, done_reason="stop", eval_count=2)
    )


def test_a_continuation_under_another_model_name_takes_the_first_s() -> None:
    joined = OllamaJoined(first_cut(), CONFIG.max_event_bytes)
    out = joined.feed(line("4").replace(MODEL.encode(), b"qwen3:latest"))
    assert read(out) == read(line("4"))


@given(chat=st.booleans())
def test_no_continuation_ends_the_answer_with_a_done_line_saying_length(chat: bool) -> None:
    first = first_cut(3, chat)
    joined = OllamaJoined(first, CONFIG.max_event_bytes)
    said = joined.feed(line("The", chat=chat) + line("", chat=chat))  # a text line, then one saying nothing
    end = joined.closing()
    text: dict[str, Any] = {"message": {"role": "assistant", "content": ""}} if chat else {"response": ""}
    expected = {"model": MODEL, "created_at": CREATED} | text | {"done": True, "done_reason": "length", "eval_count": 4}
    assert read(said + end)[-1] == expected
    assert joined.closing() == b""  # one done line


def test_the_body_a_stream_makes_is_ollama_s() -> None:
    """As server/routes.go writeChatResponse: the done line, the texts joined, the tool calls and
    logprobs of every line in order; a pair's halves from two lines joined (written as escapes)."""
    body = OllamaBody(CONFIG.max_event_bytes)
    call = {"function": {"name": "f", "arguments": {"x": 1}}}
    with_call = {
        "model": MODEL,
        "created_at": CREATED,
        "message": {"role": "assistant", "content": "", "tool_calls": [call]},
    }
    for raw in [
        line("", "\ud83d"),
        line("", "\ude00 ok"),
        line("It", logprobs=[{"token": "It", "logprob": -0.1}]),
        json.dumps(with_call | {"done": False}).encode() + b"\n",
        line("", done=True, done_reason="stop", eval_count=9, total_duration=5),
    ]:
        body.feed(raw)
    answer = body.body()
    assert json.loads(answer) == {
        "model": MODEL,
        "created_at": CREATED,
        "message": {"role": "assistant", "content": "It", "thinking": "\U0001f600 ok", "tool_calls": [call]},
        "done": True,
        "done_reason": "stop",
        "eval_count": 9,
        "total_duration": 5,
        "logprobs": [{"token": "It", "logprob": -0.1}],
    }
    assert b"\\ud83d\\ude00 ok" in answer


def test_a_generate_body_has_its_texts_at_the_top() -> None:
    body = OllamaBody(CONFIG.max_event_bytes)
    body.feed(line("", "hm", chat=False) + line("4", chat=False) + line("", done=True, chat=False, eval_count=2))
    assert json.loads(body.body()) == {
        "model": MODEL,
        "created_at": CREATED,
        "response": "4",
        "thinking": "hm",
        "done": True,
        "eval_count": 2,
    }


def test_a_body_answered_in_place_of_a_stream_is_its_done_line() -> None:
    body = {"model": MODEL, "created_at": CREATED, "message": {"role": "assistant", "content": "4"}, "done": True}
    assert as_stream(json.dumps(body, indent=2).encode()) == json.dumps(body, separators=(",", ":")).encode() + b"\n"
    assert as_stream(json.dumps(body | {"done": False}).encode()) is None
    assert as_stream(b'{"error": "no"}') is None
    assert as_stream(b"[") is None


PREFILL = "<think>r0 r1 \n\nstop.\n</think>"


def continuation(body: bytes, prefill: str, spent: int = 0) -> bytes | None:
    return continued(body, prefill, SIDE, "ollama", "ollama", spent)


def test_the_continuation_asks_ollama_to_go_on_from_a_final_assistant_message() -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "think"}], "think": True,
            "options": {"num_predict": 10, "temperature": 0}}  # fmt: skip
    out = continuation(json.dumps(body).encode(), PREFILL, 2)
    assert out is not None
    assert json.loads(out) == body | {
        "messages": [{"role": "user", "content": "think"}, {"role": "assistant", "content": PREFILL}],
        "options": {"num_predict": 8, "temperature": 0},
    }


def test_a_limit_the_reasoning_used_up_or_no_messages_is_not_continued() -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "think"}], "options": {"num_predict": 2}}
    assert continuation(json.dumps(body).encode(), PREFILL, 2) is None
    unbounded = body | {"options": {"num_predict": -1}}
    assert json.loads(continuation(json.dumps(unbounded).encode(), PREFILL, 2) or b"")["options"] == {"num_predict": -1}
    assert continuation(json.dumps({"model": MODEL, "prompt": "think"}).encode(), PREFILL) is None
    assert continuation(b"[]", PREFILL) is None


def test_a_lone_surrogate_escape_in_the_request_is_given_back_as_it_came() -> None:
    raw = b'{"model":"m","messages":[{"role":"user","content":"\\ud83d think"}]}'
    out = continuation(raw, PREFILL)
    assert out is not None and b'"content":"\\ud83d think"' in out
    assert json.loads(out)["messages"][1] == {"role": "assistant", "content": PREFILL}


def test_a_budget_of_zero_knows_the_model_from_the_line_it_cut() -> None:
    """The first line is the cut: the continuation's settings (the model's family, its tags) and a
    closing done line still name the model, and say when."""
    count = OllamaBudgetCount(0, CONFIG.max_event_bytes)
    assert count.feed(line("", "r0 ", chat=False)) == b"" and count.cut
    assert (count.model, count.chat) == (MODEL, False)
    assert read(count.joiner(CONFIG.max_event_bytes).closing()) == [
        {"model": MODEL, "created_at": CREATED, "response": "", "done": True, "done_reason": "length", "eval_count": 0}
    ]
