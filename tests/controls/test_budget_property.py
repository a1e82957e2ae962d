"""Where a budget falls, whatever the upstream's tokens and reads: inside a tag, between the halves of
a surrogate pair, at an event's edge, in the middle of a batched read. The translator's output through
:class:`~gateway_mw.surfaces.chat.budget.BudgetCount` is held to the same stream translated without a budget."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.chat.budget import SIDE, BudgetCount, Joined
from gateway_mw.surfaces.chat.budgetbody import ChatBody

from ..budgetcuts import (
    BUDGETS,
    CUTS,
    READS,
    TEXT,
    assert_cut_at_the_budget,
    budgeted,
    echoes,
    filtered,
    pieces,
    tokens,
    unbudgeted,
    units,
)
from ..hypothesis_examples import examples

CONFIG = ThinkExtractConfig()
MODEL = "Qwen/Qwen3-8B"


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": MODEL}
    body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps(body).encode() + b"\n\n"  # ensure_ascii: a lone half is an escape


def stream(reasoning: str, answer: str, cuts: list[int], native: bool) -> bytes:
    out = [chunk({"role": "assistant", "content": ""})]
    if native:
        out += [chunk({"reasoning_content": t}) for t in tokens(reasoning, cuts)]
        out += [chunk({"content": t}) for t in tokens(answer, cuts)]
    else:
        out += [chunk({"content": t}) for t in tokens("<think>" + reasoning + "</think>" + answer, cuts)]
    return b"".join([*out, chunk({}, "stop"), b"data: [DONE]\n\n"])


def reasoning_events(raw: bytes) -> list[str]:
    out = []
    for block in raw.split(b"\n\n")[:-1]:
        data = block.removeprefix(b"data: ")
        if data == b"[DONE]":
            continue
        for choice in json.loads(data)["choices"]:
            delta = choice["delta"]
            text = delta.get("reasoning_content", delta.get("reasoning"))
            if text:
                out.append(text)
    return out


@given(
    reasoning=TEXT,
    answer=TEXT,
    cuts=CUTS,
    reads=READS,
    budget=BUDGETS,
    native=st.booleans(),
)
# Native reasoning cut between a pair's halves: each half is an event of its own, with a lone escape.
@example(reasoning="<<😀", answer="", cuts=[3], reads=[], budget=0, native=True)
@example(reasoning="<<😀", answer="", cuts=[3], reads=[], budget=1, native=True)
@example(reasoning="<<😀", answer="", cuts=[3], reads=[], budget=2, native=True)
@settings(max_examples=examples(300))
def test_the_cut_is_at_the_budget_and_what_went_before_is_the_unbudgeted_stream(
    reasoning: str, answer: str, cuts: list[int], reads: list[int], budget: int, native: bool
) -> None:
    raw = stream(reasoning, answer, cuts, native)
    whole = unbudgeted(StreamPipeline("chat", CONFIG), raw, reads)

    count = BudgetCount(budget, CONFIG.max_event_bytes)
    passed = budgeted(count, StreamPipeline("chat", CONFIG), raw, reads)

    assert_cut_at_the_budget(count, budget, whole, passed, reasoning_events)


@given(answer=TEXT, cuts=st.lists(st.integers(0, 60), max_size=20), reads=st.lists(st.integers(0, 2000), max_size=8))
@example(answer="<<<😀", cuts=[4], reads=[])  # a pair's halves in two chunks: each a lone escape
def test_a_continuation_is_joined_as_the_same_answer(answer: str, cuts: list[int], reads: list[int]) -> None:
    """The continuation's chunks take the first answer's head, lose their role, and keep their text."""
    first = {"id": b'"chatcmpl-first"', "created": b"1", "model": b'"m"'}
    joined = Joined({k: msgspec.Raw(v) for k, v in first.items()}, CONFIG.max_event_bytes)
    raw = b"".join(
        [chunk({"role": "assistant", "content": ""})] + [chunk({"content": t}) for t in tokens(answer, cuts)]
    )
    raw += chunk({}, "stop") + b"data: [DONE]\n\n"
    out = b"".join(joined.feed(p) for p in pieces(raw, reads)) + joined.finish()
    chunks = [json.loads(b.removeprefix(b"data: ")) for b in out.split(b"\n\n")[:-2]]
    assert out.endswith(b"data: [DONE]\n\n") and joined.done
    assert {(c["id"], c["created"], c["model"]) for c in chunks} == {("chatcmpl-first", 1, "m")}
    assert all("role" not in ch["delta"] for c in chunks for ch in c["choices"])
    text = "".join(ch["delta"].get("content", "") for c in chunks for ch in c["choices"])
    assert units(text) == units(answer)
    assert [ch["finish_reason"] for c in chunks for ch in c["choices"]][-1] == "stop"


def test_the_body_a_stream_makes() -> None:
    """Tool calls put together by index, usages summed number by number, a pair's halves from two
    events joined (written as escapes), the first head kept."""
    body = ChatBody(CONFIG.max_event_bytes)
    events = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "\ud83d"}),
        chunk({"reasoning_content": "\ude00 ok"}),
        chunk(
            {"tool_calls": [{"index": 1, "id": "b", "type": "function", "function": {"name": "g", "arguments": "{"}}]}
        ),
        chunk(
            {"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": ""}}]}
        ),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": "}"}}]}),
        chunk({}, "tool_calls"),
        b'data: {"id":"c2","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,'
        b'"completion_tokens_details":{"reasoning_tokens":2}}}\n\n',
        b'data: {"id":"c3","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,'
        b'"completion_tokens_details":{"reasoning_tokens":0}}}\n\n',
        b"data: [DONE]\n\n",
    ]
    for event in events:
        body.feed(event)
    assert json.loads(body.body()) == {
        "id": "c1",
        "object": "chat.completion",
        "created": 7,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "😀 ok",
                    "tool_calls": [
                        {"function": {"arguments": "", "name": "f"}, "id": "a", "type": "function"},
                        {"function": {"arguments": "{}", "name": "g"}, "id": "b", "type": "function"},
                    ],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 8, "completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 2}},
    }
    assert b"\\ud83d\\ude00 ok" in body.body()


@echoes
def test_an_echoed_prefill_is_taken_out(
    prefill: str, answer: str, cuts: list[int], reads: list[int], echoed: bool
) -> None:
    """A server that streams the prefill back (in any tokens, any reads) gives the client only what
    follows it; one that does not is untouched."""
    text = (prefill if echoed else "") + answer
    raw = b"".join(
        [chunk({"role": "assistant", "content": None})] + [chunk({"content": t}) for t in tokens(text, cuts)]
    )
    echo = SIDE.echo(prefill, CONFIG.max_event_bytes)
    out = filtered(echo, raw, reads)
    said = "".join(
        ch["delta"].get("content") or "" for b in out.split(b"\n\n")[:-1] for ch in json.loads(b[6:])["choices"]
    )
    if echoed or not text.startswith(prefill):
        assert units(said) == units(answer if echoed else text)
    if not echoed and not prefill.startswith(text[:1]):
        assert out == raw
