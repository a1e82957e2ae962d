"""An agent's next Responses request whose earlier one the transform left as it came: under the same
settings the transform goes on from where the earlier request ended, its items not walked again; it
starts over whenever anything they depend on differs (the plan, an item's scope, the record's
reasoning for a turn). Either way each request is told what it is told read afresh."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import Request, record_keys, responses, transform_request
from gateway_mw.history.carry import CARRIED_BYTES, CarriedStates
from gateway_mw.history.recall import Recalled
from gateway_mw.history.responses_reading import Responses
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples
from .strategies import configs, responses_requests
from .test_carried_digests import _agent

SIDE = SURFACES["responses"]
CONFIG = ThinkExtractConfig(upstream_server="vllm")
CALL = {"type": "function_call", "call_id": "c99", "name": "w", "arguments": "{}"}
RESULT = {"type": "function_call_output", "call_id": "c99", "output": "Rain."}
QUERY = {"role": "user", "content": "And tomorrow?"}
PAD = "." * CARRIED_BYTES  # a body this large carries its reading


def _as_upstream_reads(config: ThinkExtractConfig, surface: str = "responses", turns: int = 10) -> bytes:
    """An agent's history as the gateway gave it to the upstream: nothing left to change."""
    side = SURFACES[surface]  # type: ignore[index]
    body = _agent(surface, turns)
    new = transform_request(side, Request(side, body), config)
    out = body if new is None else new
    assert transform_request(side, Request(side, out), config) is None
    return out


def _more(body: bytes, *items: Any) -> bytes:
    """``body`` with ``items`` (or messages) added at the end of its list, every earlier byte as it was."""
    assert body.endswith(b"]}")
    return body[:-2] + b"".join(b"," + json.dumps(item).encode() for item in items) + b"]}"


def told_in_turn(side: Any, bodies: list[bytes], config: ThinkExtractConfig) -> list[tuple[bytes | None, int]]:
    """Each body's transform, each read on from the one before (one client's requests, one scope),
    each what it is read afresh; with the count of its messages or items."""
    states = CarriedStates()
    told = []
    for body in bodies:
        carried = Request(side, body, (states, b"scope"))
        new = transform_request(side, carried, config)
        carried.keep(new)
        assert new == transform_request(side, Request(side, body), config)
        told.append((new, carried.count))
    return told


def _walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Where each transform began walking the items (what the earlier request said of them)."""
    began: list[int] = []
    known = responses._unchanged_before

    def spy(request: Responses, *args: Any) -> int:
        began.append(known(request, *args))
        return began[-1]

    monkeypatch.setattr(responses, "_unchanged_before", spy)
    return began


def _told(body: bytes, states: CarriedStates, config: ThinkExtractConfig, began: list[int]) -> tuple[bytes | None, int]:
    request = Request(SIDE, body, (states, b"scope"))
    new = transform_request(SIDE, request, config)
    request.keep(new)
    assert new == transform_request(SIDE, Request(SIDE, body), config)  # as read afresh
    assert began.pop() == 0  # which walks every item
    assert request.read is not None
    return new, request.read.count


def test_the_next_request_goes_on_from_where_the_earlier_one_was_left_as_it_came(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    states = CarriedStates()
    first = _as_upstream_reads(CONFIG)
    began = _walked(monkeypatch)
    told = [_told(body, states, CONFIG, began) for body in (first, _more(first, CALL), _more(first, CALL, RESULT))]
    counts = [count for _, count in told]
    assert [new for new, _ in told] == [None, None, None]
    assert began == [0, counts[0], counts[1]]  # afresh, then each from the one before's end


@pytest.mark.parametrize(
    "later",
    [
        pytest.param(CONFIG.replace(history_reasoning="strip"), id="another plan"),
        pytest.param(CONFIG.replace(history_scope="all"), id="another scope"),
    ],
)
def test_other_settings_walk_every_item_again(monkeypatch: pytest.MonkeyPatch, later: ThinkExtractConfig) -> None:
    states = CarriedStates()
    first = _as_upstream_reads(CONFIG)
    began = _walked(monkeypatch)
    _told(first, states, CONFIG, began)
    _told(_more(first, CALL), states, later, began)
    assert began == [0, 0]


def test_a_new_query_that_takes_earlier_turns_out_of_scope_walks_every_item_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = CONFIG.replace(history_scope="current_turn")
    states = CarriedStates()
    first = _as_upstream_reads(config)
    began = _walked(monkeypatch)
    assert _told(first, states, config, began)[0] is None
    new, _ = _told(_more(first, QUERY), states, config, began)  # the earlier turns' reasoning is dropped now
    assert new is not None
    assert began == [0, 0]


def test_reasoning_the_record_holds_for_a_turn_walks_every_item_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The earlier request's turns carried their reasoning; the next one's record gives reasoning for
    one of them, in the same scope: the earlier verdict on them says nothing of that."""
    states = CarriedStates()
    bare = json.loads(_as_upstream_reads(CONFIG))
    bare["input"] = [item for item in bare["input"] if item.get("type") != "reasoning"]
    first = json.dumps(bare).encode()
    began = _walked(monkeypatch)
    request = Request(SIDE, first, (states, b"scope"))
    assert transform_request(SIDE, request, CONFIG) is None  # nothing in the record yet
    request.keep()
    body = _more(first, CALL)
    later = Request(SIDE, body, (states, b"scope"))
    keys = record_keys(SIDE, later, CONFIG)
    recall = {keys[0]: Recalled(reasoning="Look it up.")}
    new = transform_request(SIDE, later, CONFIG, recall)
    assert new is not None and new == transform_request(SIDE, Request(SIDE, body), CONFIG, recall)
    assert began == [0, 0, 0]  # the earlier request, this one, this one afresh


def _respelled(items: list[Any], reordered: bool) -> list[Any]:
    """``items`` as a client spells them again: each object's keys in another order."""
    if not reordered:
        return items
    return [dict(reversed(item.items())) if isinstance(item, dict) else item for item in items]


@settings(max_examples=examples(80))
@given(
    earlier=responses_requests(),
    more=responses_requests(),
    config=configs(),
    reordered=st.booleans(),
    indent=st.sampled_from([None, 1]),
)
def test_items_the_transform_makes_again_equal_go_on_as_they_came_wherever_a_request_is_read_from(
    earlier: dict[str, Any], more: dict[str, Any], config: ThinkExtractConfig, reordered: bool, indent: int | None
) -> None:
    """A history the transform makes again item for item equal (as the upstream reads it, sent back
    by a client that spells it its own way: other spacing, its keys in another order) is left as it
    came; the next request that adds items to it, read on from it, writes what it writes afresh."""
    upstream = Request(SIDE, json.dumps({**earlier, "x_pad": PAD}).encode())
    new = transform_request(SIDE, upstream, config)
    history = json.loads(upstream.body if new is None else new)["input"]
    doc = {"model": earlier["model"], "x_pad": PAD, "input": _respelled(history, reordered)}
    first = json.dumps(doc, indent=indent).encode()
    later = json.dumps({**doc, "input": doc["input"] + more["input"]}, indent=indent).encode()
    states = CarriedStates()
    for body in (first, later):
        carried = Request(SIDE, body, (states, b"scope"))
        told = transform_request(SIDE, carried, config)
        carried.keep(told)
        assert told == transform_request(SIDE, Request(SIDE, body), config)


def test_a_reasoning_item_spelled_otherwise_than_the_gateway_would_goes_on_in_its_own_bytes() -> None:
    """A client's reasoning item already in the shape the server reads, spelled with spaces: the
    transform makes it again equal, so it goes on in the bytes it came in, in the request that ends
    with it (nothing to change) and in the next, which adds an answer whose tags are moved."""
    config = CONFIG.replace(history_scope="all")
    reasoning = {
        "type": "reasoning",
        "id": "rs_0",
        "summary": [{"type": "summary_text", "text": "Look it up."}],
        "content": [{"type": "reasoning_text", "text": "Look it up."}],
    }
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]}
    tagged = {**answer, "content": [{"type": "output_text", "text": "<think>Again.</think>Rain."}]}
    doc = {"model": "qwen3-8b", "x_pad": PAD, "input": [{"role": "user", "content": "Weather?"}, reasoning, answer]}
    first = json.dumps(doc).encode()
    (told, _), (told_later, _) = told_in_turn(SIDE, [first, _more(first, QUERY, tagged, QUERY)], config)
    assert told is None and told_later is not None
    assert json.dumps(reasoning).encode() in told_later


def test_the_next_requests_keys_read_on_after_the_turns_that_name_nothing_for_the_record() -> None:
    """Turns that carry their reasoning and name no id the gateway made ask nothing of the record: an
    agent's next request reads its keys on after them (the last of them read again), and a turn that
    asks (one without its reasoning) ends the run; each request's keys are those read afresh."""
    thought = {"type": "reasoning", "id": "rs_new", "summary": [{"type": "summary_text", "text": "Again."}]}
    thought["content"] = [{"type": "reasoning_text", "text": "Again."}]
    states = CarriedStates()
    first = _as_upstream_reads(CONFIG)
    second = _more(first, thought, CALL)  # a turn that carries its reasoning
    third = _more(second, RESULT, {**CALL, "call_id": "c100"})  # one that does not
    readings = []
    for body in (first, second, third):
        request = Request(SIDE, body, (states, b"scope"))
        keys = record_keys(SIDE, request, CONFIG)
        assert keys == record_keys(SIDE, Request(SIDE, body), CONFIG)
        request.keep(transform_request(SIDE, request, CONFIG))
        assert isinstance(request.read, Responses)
        readings.append((request.read.quiet, len(request.read.turns), len(keys)))
    turns = readings[0][1]
    assert readings[:2] == [(turns, turns, 0), (turns + 1, turns + 1, 0)]
    assert readings[2][:2] == (turns + 1, turns + 2) and readings[2][2] > 0
