"""A conversation's digest carried from one request to its next (``Thread.go_on_from``): the digests
are those of the conversation hashed afresh, byte for byte, whatever the two requests share; the
messages proven shared are not spelled again; and what is kept for later requests is bounded, by
scope (``history.carry.ByScope``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.channels import Said
from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import Request, record_entries
from gateway_mw.history.carry import CARRIED_BYTES, ByScope, CarriedStates, shared_prefix
from gateway_mw.history.recall import Thread
from gateway_mw.surfaces.registry import SURFACES

MESSAGES = st.lists(st.binary(max_size=12), max_size=14)
CONFIG = ThinkExtractConfig(upstream_server="vllm")
SAID = [Said(original="<think>It is sunny.</think>It is sunny.")]


class Spelled:
    """The messages a thread spelled (hashed), by index."""

    def __init__(self, messages: list[bytes]) -> None:
        self.messages = messages
        self.seen: list[bytes] = []

    def __call__(self, message: bytes) -> bytes:
        self.seen.append(message)
        return message


def kept(model: str | None, head: bytes, messages: list[bytes]) -> Thread:
    """A thread that hashed all its messages and kept its last states."""
    thread = Thread(model, head, messages, bytes)
    thread.keep_states()
    thread.upto(len(messages))
    return thread


def going_on(earlier: Thread, model: str | None, head: bytes, messages: list[bytes], shared: int) -> Thread:
    thread = Thread(model, head, messages, Spelled(messages))
    thread.keep_states()
    thread.go_on_from(earlier, shared)
    return thread


@given(
    first=MESSAGES,
    shared=st.integers(0, 14),
    more=MESSAGES,
    asked=st.lists(st.integers(0, 28), max_size=6),
    heads=st.sampled_from([(b"h", b"h"), (b"h", b"other")]),
    models=st.sampled_from([("m", "m"), ("m", None), ("m", "n")]),
)
def test_a_carried_digest_is_the_digest_hashed_afresh(
    first: list[bytes],
    shared: int,
    more: list[bytes],
    asked: list[int],
    heads: tuple[bytes, bytes],
    models: tuple[str | None, str | None],
) -> None:
    """The reference is the thread that goes on from nothing (the digest as every earlier version
    computed it); the count of messages shared is what the two readings prove (their values equal)."""
    earlier = kept(models[0], heads[0], first)
    later_messages = first[:shared] + more
    later = going_on(earlier, models[1], heads[1], later_messages, shared_prefix(first, later_messages))
    wanted = [n for n in [*asked, len(later_messages)] if n <= len(later_messages)]
    alone = Thread(models[1], heads[1], later_messages, bytes)
    assert [later.upto(n) for n in wanted] == [alone.upto(n) for n in wanted]


@given(first=st.lists(st.binary(max_size=12), min_size=1, max_size=20), more=MESSAGES)
def test_the_messages_an_earlier_request_hashed_are_not_spelled_again(first: list[bytes], more: list[bytes]) -> None:
    later = going_on(kept("m", b"", first), "m", b"", [*first, *more], len(first))
    later.upto(len(first) + len(more))
    assert isinstance(later._spell, Spelled)
    assert later._spell.seen == more


def test_a_message_that_changed_is_hashed_again_with_every_one_after_it() -> None:
    """Claude Code moves its cache marker from the last message to the next one: the message it left
    differs by its bytes, and is spelled again (the state before it is the latest one shared)."""
    first = [b"a", b"b", b"c", b"d+marker"]
    messages = [b"a", b"b", b"c", b"d", b"e+marker"]
    later = going_on(kept("m", b"", first), "m", b"", messages, shared_prefix(first, messages))
    assert later.upto(5) == Thread("m", b"", messages, bytes).upto(5)
    assert isinstance(later._spell, Spelled)
    assert later._spell.seen == [b"d", b"e+marker"]


def test_a_thread_that_kept_nothing_yet_gives_nothing_to_go_on_from() -> None:
    """An earlier request whose digest was never asked for (its answer moved no reasoning), or is
    being worked out still: the later one hashes afresh."""
    earlier = Thread("m", b"", [b"a", b"b"], bytes)
    earlier.keep_states()
    later = going_on(earlier, "m", b"", [b"a", b"b", b"c"], 2)
    assert later.upto(3) == Thread("m", b"", [b"a", b"b", b"c"], bytes).upto(3)
    assert isinstance(later._spell, Spelled)
    assert later._spell.seen == [b"a", b"b", b"c"]


def test_what_is_kept_is_bounded_by_bytes_and_by_conversations_per_scope() -> None:
    kept_here: ByScope[str] = ByScope(max_bytes=10_000, per_scope=2)
    for scope in range(6):
        for conversation in range(3):
            kept_here.put(b"%d" % scope, f"{scope}-{conversation}", 3_000)
    assert {scope: len(kept_here.of(scope)) for scope in (b"%d" % n for n in range(6))} == {
        b"0": 0,
        b"1": 0,
        b"2": 0,
        b"3": 0,
        b"4": 1,
        b"5": 2,
    }  # the least recently used out first, two per scope at most
    assert kept_here.size == 9_000
    assert kept_here.of(b"5") == ["5-1", "5-2"]
    kept_here.put(b"5", "too large", 10_001)
    assert kept_here.of(b"5") == ["5-1", "5-2"]


def test_a_conversation_that_goes_on_replaces_what_it_went_on_from() -> None:
    kept_here: ByScope[str] = ByScope(max_bytes=10_000, per_scope=4)
    last = None
    for turn in range(5):
        one = f"turn {turn}"
        kept_here.put(b"scope", one, 100, replaced=last)
        last = one
    assert kept_here.of(b"scope") == ["turn 4"]
    assert kept_here.size == 100


# -- the surfaces' readings: the record's entries of an agent's next request ----------------------


def _agent(surface: str, turns: int, number: str = "1") -> bytes:
    """An agent's history in ``surface``'s shape, ``turns`` tool calls long (about 40 KB and more)."""
    result = "18°C, sunny. " * 300
    if surface == "responses":
        items: list[Any] = [{"role": "user", "content": "Weather?"}]
        for i in range(turns):
            items += [
                {"type": "reasoning", "id": f"rs_{i}", "summary": [{"type": "summary_text", "text": "I call."}]},
                {"type": "function_call", "call_id": f"c{i}", "name": "w", "arguments": "{}", "n": "NUMBER"},
                {"type": "function_call_output", "call_id": f"c{i}", "output": result},
            ]
        doc: dict[str, Any] = {"model": "qwen3-8b", "instructions": "Be brief.", "input": items}
    elif surface == "messages":
        messages: list[Any] = [{"role": "user", "content": "Weather?"}]
        for i in range(turns):
            use = {"type": "tool_use", "id": f"t{i}", "name": "w", "input": {"n": "NUMBER"}}
            messages += [
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "I call.", "signature": "s"}, use]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": result}]},
            ]
        doc = {"model": "qwen3-8b", "max_tokens": 9, "system": "Be brief.", "messages": messages}
    else:
        messages = [{"role": "user", "content": "Weather?"}]
        for i in range(turns):
            call = {"id": f"c{i}", "type": "function", "function": {"name": "w", "arguments": "{}"}, "n": "NUMBER"}
            messages += [
                {"role": "assistant", "content": "<think>I call.</think>", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": result},
            ]
        doc = {"model": "qwen3-8b", "messages": messages}
    return json.dumps(doc).replace('"NUMBER"', number).encode()


@given(
    surface=st.sampled_from(list(SURFACES)),
    turns=st.integers(8, 12),
    more=st.integers(0, 3),
    numbers=st.sampled_from([("1", "1"), ("1", "1.0"), ("1", "true"), ("1e2", "100")]),
)
def test_each_surface_keys_an_agents_next_request_as_it_would_afresh(
    surface: str, turns: int, more: int, numbers: tuple[str, str]
) -> None:
    """The record's entries (every key an answer is kept under) of a request that goes on from the
    one before, a tool call or a few later, are those of the same request read with no carry; a value
    spelled otherwise (``1`` and ``1.0`` decode equal) is no shared message."""
    states = CarriedStates()
    side = SURFACES[surface]  # type: ignore[index]
    first, later = _agent(surface, turns, numbers[0]), _agent(surface, turns + more, numbers[1])
    assert len(first) >= CARRIED_BYTES
    earlier = Request(side, first, (states, b"scope"))
    earlier.keep()  # as the middleware keeps it, after the transform and before the answer's entries
    record_entries(side, earlier, SAID, CONFIG)
    going = Request(side, later, (states, b"scope"))
    carried_entries = record_entries(side, going, SAID, CONFIG)
    assert carried_entries == record_entries(side, Request(side, later), SAID, CONFIG)
    assert len(carried_entries) == 2  # the answer's text in its conversation, and the conversation
