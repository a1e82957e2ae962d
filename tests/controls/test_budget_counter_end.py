"""The end of a first answer's stream through each surface's budget counter: the events the reader
still holds at the end are counted and passed once, whatever ends their lines. A stream whose lines
end with a bare CR has its last event told only at the end (a CR may yet be followed by an LF)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from gateway_mw.surfaces.budgeting import BudgetSide
from gateway_mw.surfaces.chat.budget import SIDE as CHAT
from gateway_mw.surfaces.messages.budget import SIDE as MESSAGES
from gateway_mw.surfaces.responses.budgetside import SIDE as RESPONSES

CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m"}


def chat(text: str) -> bytes:
    return json.dumps(CHUNK | {"choices": [{"index": 0, "delta": {"reasoning_content": text}}]}).encode()


def messages(text: str) -> bytes:
    return json.dumps(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": text}}
    ).encode()


def responses(text: str) -> bytes:
    kind = "response.reasoning_text.delta"
    return json.dumps({"type": kind, "output_index": 0, "content_index": 0, "delta": text}).encode()


SURFACES = [(CHAT, chat), (MESSAGES, messages), (RESPONSES, responses)]


@pytest.mark.parametrize(("side", "data"), SURFACES, ids=["chat", "messages", "responses"])
@pytest.mark.parametrize("newline", [b"\r", b"\n", b"\r\n"])
def test_the_last_event_held_until_the_end_is_counted_and_passed(
    side: BudgetSide, data: Callable[[str], bytes], newline: bytes
) -> None:
    stream = b"".join(b"data: " + data(text) + newline + newline for text in ("a", "b"))
    counter = side.counter(5, 1 << 20)
    out = counter.feed(stream) + counter.finish()
    assert (out, counter.counted, counter.reasoning, counter.cut) == (stream, 2, "ab", False)


@pytest.mark.parametrize(("side", "data"), SURFACES, ids=["chat", "messages", "responses"])
def test_the_budget_falls_on_the_last_event_held_until_the_end(side: BudgetSide, data: Callable[[str], bytes]) -> None:
    first = b"data: " + data("a") + b"\r\r"
    counter = side.counter(1, 1 << 20)
    out = counter.feed(first + b"data: " + data("b") + b"\r\r") + counter.finish()
    assert (out, counter.counted, counter.reasoning, counter.cut) == (first, 1, "a", True)
