"""Where a budget falls on a Responses stream, whatever the upstream's tokens and reads: inside a tag,
between the halves of a surrogate pair, at an event's edge, in the middle of a batched read. The
first answer through :class:`~gateway_mw.surfaces.responses.budget.BudgetCount` is held to the same
stream translated without a budget; the continuation joined after it makes one well-formed response
that loses nothing the model wrote; llama.cpp's echo of the prefill is taken out whole."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import example, given, settings

from gateway_mw import ThinkExtractConfig
from gateway_mw.continuing import continuation_config
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.responses.budget import BudgetCount
from gateway_mw.surfaces.responses.budgetbody import ResponsesBody, as_stream
from gateway_mw.surfaces.responses.budgetside import SIDE

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
    units,
)
from ..hypothesis_examples import examples

CONFIG = ThinkExtractConfig()
MODEL = "Qwen/Qwen3-8B"


def upstream(response_id: str, text: str, cuts: list[int]) -> bytes:
    """A vLLM-style stream of one message whose text comes one token per delta."""
    events: list[dict[str, Any]] = []
    response = {"id": response_id, "object": "response", "created_at": 5, "model": MODEL, "status": "in_progress"}
    events.append({"type": "response.created", "response": response | {"output": []}})
    item = {"id": "msg_up", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    events.append({"type": "response.output_item.added", "output_index": 0, "item": item})
    where = {"item_id": "msg_up", "output_index": 0, "content_index": 0}
    events.append({"type": "response.content_part.added", **where, "part": {"type": "output_text", "text": ""}})
    events += [{"type": "response.output_text.delta", **where, "delta": t, "logprobs": []} for t in tokens(text, cuts)]
    events.append({"type": "response.output_text.done", **where, "text": text, "logprobs": []})
    part = {"type": "output_text", "text": text, "annotations": []}
    events.append({"type": "response.content_part.done", **where, "part": part})
    done = item | {"status": "completed", "content": [part]}
    events.append({"type": "response.output_item.done", "output_index": 0, "item": done})
    usage = {"input_tokens": 3, "output_tokens": 9, "total_tokens": 12}
    events.append({"type": "response.completed", "response": response | {"status": "completed", "output": [done]}})
    events[-1]["response"]["usage"] = usage
    return b"".join(  # ensure_ascii: a lone half is an escape
        b"data: " + json.dumps(e | {"sequence_number": n}).encode() + b"\n\n" for n, e in enumerate(events)
    )


def read(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for block in raw.split(b"\n\n")[:-1]:
        data = b"\n".join(line[6:] for line in block.split(b"\n") if line.startswith(b"data: "))
        out.append(json.loads(data))
    return out


def reasoning_deltas(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "response.reasoning_text.delta"]


def ids() -> Any:
    counter = itertools.count()
    return lambda prefix: f"{prefix}{next(counter)}"


def translated(raw: bytes, reads: list[int], config: ThinkExtractConfig, new_id: Any) -> list[bytes]:
    pipeline = StreamPipeline("responses", config, new_id)
    return [*(pipeline.feed(p) for p in pieces(raw, reads)), pipeline.finish()]


@given(
    reasoning=TEXT,
    answer=TEXT,
    cuts=CUTS,
    reads=READS,
    budget=BUDGETS,
)
@example(reasoning="<<😀", answer="", cuts=[3], reads=[], budget=1)  # the cut between a pair's halves
@example(reasoning="abc def", answer="xy😀", cuts=list(range(1, 30)), reads=[7, 300], budget=3)  # cut, continued
@example(reasoning="<", answer="x<think>y", cuts=[], reads=[], budget=0)  # the continuation thinks again
@example(reasoning="<", answer=" ", cuts=[], reads=[], budget=0)
@settings(max_examples=examples(200), deadline=None)
def test_the_cut_is_at_the_budget_and_the_continuation_makes_one_response(
    reasoning: str, answer: str, cuts: list[int], reads: list[int], budget: int
) -> None:
    raw = upstream("resp_first", "<think>" + reasoning + "</think>" + answer, cuts)
    whole = b"".join(translated(raw, reads, CONFIG, ids()))
    expected = reasoning_deltas(read(whole))

    count = BudgetCount(budget, CONFIG.max_event_bytes)
    passed = budgeted(count, StreamPipeline("responses", CONFIG, ids()), raw, reads)

    assert_cut_at_the_budget(count, budget, whole, passed, lambda raw: reasoning_deltas(read(raw)))
    if not count.cut:
        return

    # The continuation: the answer alone (the prefill closed the reasoning), in its own reads.
    joiner = count.joiner(CONFIG.max_event_bytes)
    then = upstream("resp_second", answer, cuts)
    config = continuation_config(CONFIG, count.model)
    alone = read(b"".join(translated(then, reads, config, ids())))  # the continuation as it translates
    joined = passed + b"".join(joiner.feed(out) for out in translated(then, reads, config, ids())) + joiner.finish()
    events = read(joined)
    kinds = [e["type"] for e in events]
    assert kinds.count("response.created") == 1 and kinds[-1] == "response.completed" and joiner.done
    assert sum(k == "response.completed" for k in kinds) == 1
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    done = [e for e in events if e["type"] == "response.output_item.done"]
    assert added == list(range(len(added))) == [e["output_index"] for e in done]
    response = events[-1]["response"]
    assert (response["id"], response["created_at"]) == ("resp_first", 5)
    assert response["output"] == [e["item"] for e in done]
    assert response["output"][0]["type"] == "reasoning"
    assert units(response["output"][0]["content"][0]["text"]) == units("".join(expected[:budget]))
    # Nothing of what the model answered is lost: its text, and any reasoning it opened again.
    said = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert said == [e["delta"] for e in alone if e["type"] == "response.output_text.delta"]
    assert reasoning_deltas(events) == expected[:budget] + reasoning_deltas(alone)
    if "<think>" not in answer and answer.strip():  # (an answer of whitespace alone is no message)
        assert units("".join(said)) == units(answer)

    collect = ResponsesBody(CONFIG.max_event_bytes)
    for piece in pieces(joined, reads):
        collect.feed(piece)
    assert json.loads(collect.body()) == response


@echoes
def test_an_echoed_prefill_is_taken_out(
    prefill: str, answer: str, cuts: list[int], reads: list[int], echoed: bool
) -> None:
    """A server that streams the prefill back (in any tokens, any reads) gives the client only what
    follows it; one that does not is untouched."""
    text = (prefill if echoed else "") + answer
    raw = upstream("resp", text, cuts)
    echo = SIDE.echo(prefill, CONFIG.max_event_bytes)
    out = filtered(echo, raw, reads)
    said = "".join(e["delta"] for e in read(out) if e["type"] == "response.output_text.delta")
    if echoed or not text.startswith(prefill):
        assert units(said) == units(answer if echoed else text)
    if not echoed and not prefill.startswith(text[:1]):
        assert out == raw


def test_a_body_as_the_stream_of_the_same_answer() -> None:
    """A continuation answered with one body: its items added, a message's text as a delta, done,
    and the body completed; translated, it is the answer the body holds."""
    body = {
        "id": "resp_9",
        "object": "response",
        "created_at": 3,
        "model": MODEL,
        "status": "completed",
        "output": [
            {
                "id": "msg_9",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "<think>x</think>4 \ud83d", "annotations": []}],
            },
            {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        ],
        "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    }
    raw = as_stream(json.dumps(body).encode())
    assert raw is not None
    events = read(raw)
    assert [(e["type"], e.get("output_index"), e.get("delta")) for e in events] == [
        ("response.created", None, None),
        ("response.output_item.added", 0, None),
        ("response.content_part.added", 0, None),
        ("response.output_text.delta", 0, "<think>x</think>4 \ud83d"),
        ("response.output_text.done", 0, None),
        ("response.content_part.done", 0, None),
        ("response.output_item.done", 0, None),
        ("response.output_item.added", 1, None),
        ("response.output_item.done", 1, None),
        ("response.completed", None, None),
    ]
    assert events[-1]["response"] == body
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert as_stream(b"not json") is None
    assert as_stream(b'{"output": null}') is None
