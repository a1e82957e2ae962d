"""The record's keys, as properties on the chat surface (sans-I/O): what is written for an answer is
found by the next request that replays it, whatever reasoning the client sends back with the earlier
turns and wherever it puts its cache markers; a conversation that differs before the turn in any part
a model sees (a word, an image, the model) finds none of it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.calls import call_spellings
from gateway_mw.channels import Said
from gateway_mw.history import record_entries, record_keys
from gateway_mw.surfaces.registry import SURFACES

CONFIG = ThinkExtractConfig()
TEXTS = st.sampled_from(["Hi", "Weather?", "é🙂", "", "a\nb"])
IDS = st.sampled_from(["functions.get_weather:0", "call_x7Yq2", "toolu_01"])


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """User turns (text, maybe an image), each maybe answered by a tool call and its result."""
    out: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 3))):
        content: Any = draw(TEXTS)
        if draw(st.booleans()):
            image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{draw(st.sampled_from('AB'))}"}}
            content = [{"type": "text", "text": content}, image]
        out.append({"role": "user", "content": content})
        if draw(st.booleans()):
            call = {"id": f"{draw(IDS)}{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            out += [
                {"role": "assistant", "content": draw(TEXTS), "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": draw(TEXTS)},
            ]
    return out


def as_sent_again(messages: list[dict[str, Any]], data: st.DataObject) -> list[dict[str, Any]]:
    """The same conversation as a client may send it on a later turn: reasoning given back (or not)
    with its earlier answers, cache markers moved, keys in another order."""
    out = []
    for message in messages:
        again = dict(reversed(list(message.items()))) if data.draw(st.booleans()) else dict(message)
        if again["role"] == "assistant" and data.draw(st.booleans()):
            again["reasoning_content"] = "I thought so."
        if data.draw(st.booleans()):
            again["cache_control"] = {"type": "ephemeral"}
        out.append(again)
    return out


def body(model: str, messages: list[dict[str, Any]]) -> bytes:
    return json.dumps({"model": model, "messages": messages}).encode()


def echo_of(calls: list[str]) -> dict[str, Any]:
    """The answer as a client keeps it: its text, its calls."""
    echo: dict[str, Any] = {"role": "assistant", "content": "Let me see."}
    if calls:
        function = {"name": "f", "arguments": "{}"}
        echo["tool_calls"] = [{"id": c, "type": "function", "function": function} for c in calls]
    return echo


def echoed(calls: list[str]) -> dict[str, Any]:
    """The answer "Let me see." with its tool calls, as a client sends it back."""
    echo: dict[str, Any] = {"role": "assistant", "content": "Let me see."}
    if calls:
        echo["tool_calls"] = [
            {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}} for c in calls
        ]
    return echo


@given(messages=conversations(), calls=st.lists(IDS, max_size=2, unique=True), data=st.data())
def test_an_answer_is_found_by_the_request_that_replays_it(
    messages: list[dict[str, Any]], calls: list[str], data: st.DataObject
) -> None:
    said = Said("<think>Because.</think>Let me see.", tuple(calls))
    entries = record_entries(SURFACES["chat"], body("m", messages), [said], CONFIG)
    echo = echoed(calls)
    replay = [*as_sent_again(messages, data), echo, {"role": "user", "content": "And?"}]
    found = [key for key in record_keys(SURFACES["chat"], body("m", replay)) if key in entries]
    assert found and {entries[key].reasoning for key in found} == {"Because."}


@given(messages=conversations(), other=conversations(), calls=st.lists(IDS, max_size=2, unique=True))
def test_another_conversation_or_model_finds_nothing(
    messages: list[dict[str, Any]], other: list[dict[str, Any]], calls: list[str]
) -> None:
    said = Said("<think>Because.</think>Let me see.", tuple(calls))
    entries = record_entries(SURFACES["chat"], body("m", messages), [said], CONFIG)
    echo = echoed(calls)
    if other != messages:
        assert not set(record_keys(SURFACES["chat"], body("m", [*other, echo]))) & set(entries)
    assert not set(record_keys(SURFACES["chat"], body("n", [*messages, echo]))) & set(entries)


CALLS = st.lists(
    st.tuples(st.sampled_from(["get_weather", "get_events"]), st.sampled_from([{}, {"city": "Paris"}, {"n": 1}])),
    min_size=1,
    max_size=2,
)


@given(said=CALLS, other=CALLS, text=TEXTS, as_string=st.booleans())
def test_a_tool_call_turn_without_ids_is_found_by_what_it_said_and_only_by_it(
    said: list[tuple[str, dict[str, Any]]], other: list[tuple[str, dict[str, Any]]], text: str, as_string: bool
) -> None:
    """The answer's text and its calls' names and arguments key it (a client that keeps no ids, as the
    ``ollama`` client, finds it); an answer to the same question that called other tools does not."""
    question = [{"role": "user", "content": "Plan my day."}]
    written = [{"function": {"index": i, "name": n, "arguments": a}} for i, (n, a) in enumerate(said)]
    entries = record_entries(
        SURFACES["ollama"],
        body("qwen3:8b", question),
        [Said(f"<think>r</think>{text}", (), (), call_spellings(written))],
        CONFIG,
    )

    def replay(calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
        # sent back without ids; chat completions writes the arguments as a JSON string
        sent = [{"function": {"name": n, "arguments": json.dumps(a) if as_string else a}} for n, a in calls]
        turn = {"role": "assistant", "content": text, "tool_calls": sent}
        return record_keys(SURFACES["ollama"], body("qwen3:8b", [*question, turn]))

    assert entries.keys() & set(replay(said))
    answer_keys = {k for k in entries if k.startswith("answer:")}
    assert bool(answer_keys & set(replay(other))) == (other == said)
