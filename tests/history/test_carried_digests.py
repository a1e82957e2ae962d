"""A conversation's digest carried from one request to its next (``history.carry``): the digests are
those of the conversation hashed afresh, byte for byte, whatever the two requests share; the messages
proven shared are not spelled again; and a state never serves another scope."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.channels import Said
from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import Request, record_entries
from gateway_mw.history.carry import CARRIED_BYTES, CHECKPOINTS, CarriedStates, Carry
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


def carried(states: CarriedStates, scope: bytes, model: str | None, head: bytes, messages: list[bytes]) -> Thread:
    thread = Thread(model, head, messages, Spelled(messages))
    thread.carry = Carry(states, scope, sum(map(len, messages)))
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
    """The reference is the thread without a carry (the digest as every earlier version computed it)."""
    states = CarriedStates()
    earlier = carried(states, b"scope", models[0], heads[0], first)
    earlier.upto(len(first))
    later_messages = first[:shared] + more
    later = carried(states, b"scope", models[1], heads[1], later_messages)
    wanted = [n for n in [*asked, len(later_messages)] if n <= len(later_messages)]
    alone = Thread(models[1], heads[1], later_messages, bytes)
    assert [later.upto(n) for n in wanted] == [alone.upto(n) for n in wanted]


@given(first=st.lists(st.binary(max_size=12), min_size=1, max_size=20), more=MESSAGES)
def test_the_messages_an_earlier_request_hashed_are_not_spelled_again(first: list[bytes], more: list[bytes]) -> None:
    states = CarriedStates()
    carried(states, b"scope", "m", b"", first).upto(len(first))
    later = carried(states, b"scope", "m", b"", [*first, *more])
    later.upto(len(first) + len(more))
    assert isinstance(later._spell, Spelled)
    assert later._spell.seen == more


def test_a_message_that_changed_is_hashed_again_with_every_one_after_it() -> None:
    """Claude Code moves its cache marker from the last message to the next one: the message it left
    differs by its bytes, and is spelled again (the checkpoint before it is the latest good one)."""
    states = CarriedStates()
    first = [b"a", b"b", b"c", b"d+marker"]
    carried(states, b"scope", "m", b"", first).upto(4)
    carried(states, b"scope", "m", b"", first).upto(4)  # sent again (a retry): its states are all kept
    later = carried(states, b"scope", "m", b"", [b"a", b"b", b"c", b"d", b"e+marker"])
    assert later.upto(5) == Thread("m", b"", [b"a", b"b", b"c", b"d", b"e+marker"], bytes).upto(5)
    assert isinstance(later._spell, Spelled)
    assert later._spell.seen == [b"d", b"e+marker"]


def test_a_state_never_serves_another_scope() -> None:
    states = CarriedStates()
    messages = [b"a", b"b", b"c"]
    carried(states, b"alice", "m", b"", messages).upto(3)
    assert states.resume(b"bob", Thread("m", b"", messages, bytes)._head, messages, 3) is None
    bob = carried(states, b"bob", "m", b"", messages)
    bob.upto(3)
    assert isinstance(bob._spell, Spelled)
    assert bob._spell.seen == messages  # hashed afresh: nothing of alice's was used


def test_the_states_kept_are_bounded_by_bytes_and_by_conversations_per_scope() -> None:
    states = CarriedStates(max_bytes=10_000, per_scope=2)
    for scope in range(6):
        for conversation in range(3):
            messages = [b"%d-%d-%d" % (scope, conversation, i) for i in range(CHECKPOINTS + 2)]
            thread = Thread("m", b"", messages, bytes)
            thread.carry = Carry(states, b"%d" % scope, 3_000)
            thread.upto(len(messages))
    kept = {scope: len(conversations) for scope, conversations in states.kept._scopes.items()}
    assert kept == {b"4": 1, b"5": 2}  # the least recently used out first, two per scope at most
    assert states.size == 9_000
    assert [sorted(one.states) for one in states.kept.of(b"5")] == [list(range(3, CHECKPOINTS + 3))] * 2


def test_a_conversation_that_goes_on_replaces_the_state_it_went_on_from() -> None:
    states = CarriedStates()
    messages = [b"a", b"b"]
    for turn in range(5):
        messages = [*messages, b"call %d" % turn, b"result %d" % turn]
        thread = Thread("m", b"", messages, bytes)
        thread.carry = Carry(states, b"scope", 100)
        thread.upto(len(messages))
    assert len(states.kept.of(b"scope")) == 1
    assert states.size == 100


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
    record_entries(side, Request(side, first, (states, b"scope")), SAID, CONFIG)
    carried_entries = record_entries(side, Request(side, later, (states, b"scope")), SAID, CONFIG)
    assert carried_entries == record_entries(side, Request(side, later), SAID, CONFIG)
    assert len(carried_entries) == 2  # the answer's text in its conversation, and the conversation
    # The later request went on from the earlier one (whose state it replaced) only if they share it all.
    assert len(states.kept.of(b"scope")) == (1 if numbers[0] == numbers[1] else 2)
