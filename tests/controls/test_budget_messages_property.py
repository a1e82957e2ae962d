"""Where a budget falls on a messages stream, whatever the upstream's tokens and reads: inside a tag,
between the halves of a surrogate pair, at an event's edge, in the middle of a batched read. What the
client gets before the cut is the stream translated without a budget, cut at the budget; with the
continuation joined, it is one well-formed message that lost nothing the model wrote."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.marks import gateway_signature
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.messages.budget import SIDE, BudgetCount
from gateway_mw.surfaces.messages.budgetbody import MessagesBody, as_stream

from ..budgetcuts import (
    BUDGETS,
    CUTS,
    READS,
    TEXT,
    assert_cut_at_the_budget,
    budgeted,
    echoes,
    filtered,
    paired,
    pieces,
    tokens,
    unbudgeted,
    units,
)
from ..hypothesis_examples import examples
from .messages_thinker import assert_one_message

CONFIG = ThinkExtractConfig(messages_policy="unsigned")
# The continuation is read as the gateway reads it: its answer starts after the reasoning.
AFTER = CONFIG.replace(start_with_reasoning=False, families=False, profiles=())
MODEL = "Qwen/Qwen3-8B"


def event(data: dict[str, Any]) -> bytes:
    return b"event: " + data["type"].encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"


def block(index: int, kind: str, key: str, pieces: list[str]) -> list[bytes]:
    start = {"type": kind, key: ""} | ({"signature": ""} if kind == "thinking" else {})
    out = [event({"type": "content_block_start", "index": index, "content_block": start})]
    delta = f"{kind}_delta"
    out += [event({"type": "content_block_delta", "index": index, "delta": {"type": delta, key: p}}) for p in pieces]
    if kind == "thinking":
        signature = {"type": "signature_delta", "signature": ""}
        out.append(event({"type": "content_block_delta", "index": index, "delta": signature}))
    return [*out, event({"type": "content_block_stop", "index": index})]


def stream(reasoning: str, answer: str, cuts: list[int], native: bool, message_id: str = "msg_1") -> bytes:
    start = {"id": message_id, "type": "message", "role": "assistant", "content": [], "model": MODEL}
    start |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 0}}
    out = [event({"type": "message_start", "message": start})]
    if native:
        out += block(0, "thinking", "thinking", tokens(reasoning, cuts))
        out += block(1, "text", "text", tokens(answer, cuts))
    else:
        out += block(0, "text", "text", tokens("<think>" + reasoning + "</think>" + answer, cuts))
    end = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}}
    out += [event(end | {"usage": {"output_tokens": 9}}), event({"type": "message_stop"})]
    return b"".join(out)


def read(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for frame in raw.split(b"\n\n")[:-1]:
        name, data = frame.split(b"\n")
        out.append((name.decode().removeprefix("event: "), json.loads(data.removeprefix(b"data: "))))
    return out


def thinking_events(raw: bytes) -> list[str]:
    """The thinking events with text (the ones a budget counts)."""
    deltas = [d["delta"] for _, d in read(raw) if d["type"] == "content_block_delta"]
    return [d["thinking"] for d in deltas if d["type"] == "thinking_delta" and d["thinking"]]


def counted(raw: bytes, reads: list[int], budget: int) -> tuple[BudgetCount, bytes]:
    """What the client gets of ``raw`` under ``budget``, read in ``reads``: the handler's next
    write after the cut fails, so nothing more is fed."""
    count = BudgetCount(budget, CONFIG.max_event_bytes)
    return count, budgeted(count, StreamPipeline("messages", CONFIG), raw, reads)


PLAIN = st.text(alphabet=st.sampled_from(["a", " ", ">", "/", "t", "\n", "😀"]), max_size=40)
"""An answer that opens no tag (one that thinks again is the translator's to read, tested apart)."""


@given(
    reasoning=TEXT,
    answer=TEXT,
    cuts=CUTS,
    reads=READS,
    budget=BUDGETS,
    native=st.booleans(),
)
@example(reasoning="<<😀", answer="", cuts=[3], reads=[], budget=2, native=True)  # a pair's halves apart
@example(reasoning="ab</thi", answer="", cuts=[1, 2, 5], reads=[], budget=2, native=False)  # inside a tag
@settings(max_examples=examples(300))
def test_the_cut_is_at_the_budget_and_what_went_before_is_the_unbudgeted_stream(
    reasoning: str, answer: str, cuts: list[int], reads: list[int], budget: int, native: bool
) -> None:
    raw = stream(reasoning, answer, cuts, native)
    whole = unbudgeted(StreamPipeline("messages", CONFIG), raw, reads)
    count, passed = counted(raw, reads, budget)
    assert_cut_at_the_budget(count, budget, whole, passed, thinking_events)


@given(
    reasoning=TEXT,
    answer=PLAIN,
    cuts=CUTS,
    reads=READS,
    budget=BUDGETS,
    native=st.booleans(),
    echoed=st.booleans(),
)
@example(reasoning="<<😀", answer="a😀", cuts=[3], reads=[], budget=2, native=True, echoed=True)
@settings(max_examples=examples(200))
def test_the_continuation_makes_one_message_with_nothing_lost(
    reasoning: str, answer: str, cuts: list[int], reads: list[int], budget: int, native: bool, echoed: bool
) -> None:
    """The first answer cut, the continuation (echoing the prefill, as llama.cpp does, or not)
    joined: one message, at most N thinking events before the answer, the thinking the client got
    signed as the gateway signs, the continuation's answer whole, the usage of both summed."""
    count, passed = counted(stream(reasoning, "", cuts, native), reads, budget)
    assume(count.cut)
    prefill = "<think>" + count.reasoning + "!</think>"
    frames = read_raw(stream("", "", [], True, "msg_2"))  # its thinking closed by the prefill: only an answer
    said = tokens((prefill if echoed else "") + answer, cuts)
    continued = b"".join([frames[0], *block(0, "text", "text", said), *frames[-2:]])
    joined = count.joiner(CONFIG.max_event_bytes)
    echo = SIDE.echo(prefill, CONFIG.max_event_bytes)
    pipeline = StreamPipeline("messages", AFTER)
    out = b"".join(joined.feed(pipeline.feed(echo.feed(p))) for p in pieces(continued, reads))
    out += joined.feed(pipeline.feed(echo.finish()) + pipeline.finish()) + joined.finish()
    message = assert_one_message(read(passed + out))
    assert len(thinking_events(passed + out)) <= budget
    thinking = [b for b in message["content"] if b["type"] == "thinking"]
    assert thinking[-1]["signature"] == gateway_signature(paired(thinking[-1]["thinking"]))  # the cut one
    assert paired("".join(b["thinking"] for b in thinking)) == count.reasoning
    said = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    if answer.strip():  # an answer of white space alone is held by the translator as without a budget
        assert units(said).endswith(units(answer))
    assert message["id"] == "msg_1" and message["stop_reason"] == "end_turn"
    assert message["usage"] == {"input_tokens": 10, "output_tokens": 9}


@echoes
def test_an_echoed_prefill_is_taken_out(
    prefill: str, answer: str, cuts: list[int], reads: list[int], echoed: bool
) -> None:
    text = (prefill if echoed else "") + answer
    frames = read_raw(stream("", "", [], True))
    raw = b"".join([frames[0], *block(0, "text", "text", tokens(text, cuts)), *frames[-2:]])
    echo = SIDE.echo(prefill, 1 << 20)
    out = filtered(echo, raw, reads)
    said = "".join(d["delta"]["text"] for _, d in read(out) if d.get("delta", {}).get("type") == "text_delta")
    if echoed or not text.startswith(prefill):
        assert units(said) == units(answer if echoed else text)
    if not echoed and not prefill.startswith(text[:1]):
        assert out == raw


def read_raw(raw: bytes) -> list[bytes]:
    return [frame + b"\n\n" for frame in raw.split(b"\n\n")[:-1]]


def test_the_body_a_stream_makes_and_the_stream_a_body_makes() -> None:
    """A message read from its events, and made events again: the same message, usage as the SDKs
    read it (message_delta's over message_start's), a tool call's input from its JSON."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            {"type": "thinking", "thinking": "😀 hm", "signature": "gw1:x"},
            {"type": "text", "text": "ok"},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": [1]}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    raw = as_stream(json.dumps(message).encode())
    assert raw is not None
    assert assert_one_message(read(raw)) == message
    body = MessagesBody(1 << 20)
    for frame in read_raw(raw):
        body.feed(frame)
    assert json.loads(body.body()) == message
    assert as_stream(b'{"type":"error"}') is None and as_stream(b"[") is None
