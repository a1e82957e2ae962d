"""An agent's next request of role messages (chat, Ollama, Anthropic messages) whose earlier one the
transform left as it came: under the same settings its transform (and on chat and Ollama its keys)
goes on from where the earlier request ended, or from the last message they share, the shared
messages not walked again; each starts over whenever anything they depend on differs (the plan, the
current turn a new query moves, the record's reasoning). Either way each request is told what it is
told read afresh."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import Request, chat, messages, record_keys, transform_request
from gateway_mw.history.carry import CarriedStates
from gateway_mw.history.recall import Recalled
from gateway_mw.surfaces.registry import SURFACES

from .test_carried_digests import _agent
from .test_carried_unchanged import _as_upstream_reads, _more, told_in_turn

CONFIG = ThinkExtractConfig(upstream_server="vllm")
QUERY = {"role": "user", "content": "And tomorrow?"}
SURFACE_NAMES = ["chat", "ollama"]


def _spied(monkeypatch: pytest.MonkeyPatch, name: str, module: Any = chat) -> list[int]:
    """Where each call of ``module.<name>`` said the walk begins."""
    began: list[int] = []
    known = getattr(module, name)

    def spy(*args: Any) -> Any:
        out = known(*args)
        began.append(out if isinstance(out, int) else out[0])
        return out

    monkeypatch.setattr(module, name, spy)
    return began


def _told(
    surface: str, body: bytes, states: CarriedStates, config: ThinkExtractConfig, spies: list[list[int]]
) -> tuple[list[str], bytes | None, int]:
    """The keys and the transform of ``body``, read on from the scope's kept reading, each as read
    afresh (which walks every message)."""
    side = SURFACES[surface]  # type: ignore[index]
    request = Request(side, body, (states, b"scope"))
    keys = record_keys(side, request, config)
    new = transform_request(side, request, config)
    request.keep(new)
    afresh = Request(side, body)
    assert (keys, new) == (record_keys(side, afresh, config), transform_request(side, afresh, config))
    assert [spy.pop() for spy in spies] == [0, 0]
    assert request.read is not None
    return keys, new, request.read.count


@pytest.mark.parametrize("surface", SURFACE_NAMES)
def test_the_next_request_goes_on_from_where_the_earlier_one_was_left_as_it_came(
    monkeypatch: pytest.MonkeyPatch, surface: str
) -> None:
    states = CarriedStates()
    bodies = [_as_upstream_reads(CONFIG, surface, turns) for turns in (10, 11, 12)]
    spies = [_spied(monkeypatch, "asked_before"), _spied(monkeypatch, "_unchanged_before")]
    told = [_told(surface, body, states, CONFIG, spies) for body in bodies]
    counts = [count for _, _, count in told]
    assert [(keys, new) for keys, new, _ in told] == [([], None)] * 3
    assert spies == [[0, counts[0], counts[1]]] * 2  # afresh, then each from the one before's end


@pytest.mark.parametrize("surface", SURFACE_NAMES)
@pytest.mark.parametrize(
    "later",
    [
        pytest.param(CONFIG.replace(history_reasoning="strip"), id="another plan"),
        pytest.param(CONFIG.replace(upstream_server="sglang"), id="another server"),
    ],
)
def test_other_settings_walk_every_message_again(
    monkeypatch: pytest.MonkeyPatch, surface: str, later: ThinkExtractConfig
) -> None:
    states = CarriedStates()
    first, second = (_as_upstream_reads(CONFIG, surface, turns) for turns in (10, 11))
    spies = [_spied(monkeypatch, "asked_before"), _spied(monkeypatch, "_unchanged_before")]
    _told(surface, first, states, CONFIG, spies)
    _told(surface, second, states, later, spies)
    assert spies == [[0, 0]] * 2


@pytest.mark.parametrize("surface", SURFACE_NAMES)
def test_a_new_query_that_takes_earlier_turns_out_of_scope_walks_every_message_again(
    monkeypatch: pytest.MonkeyPatch, surface: str
) -> None:
    config = CONFIG.replace(history_scope="current_turn")
    states = CarriedStates()
    first = _as_upstream_reads(config, surface, 10)
    spies = [_spied(monkeypatch, "asked_before"), _spied(monkeypatch, "_unchanged_before")]
    assert _told(surface, first, states, config, spies)[1] is None
    _, new, count = _told(surface, _more(first, QUERY), states, config, spies)  # earlier reasoning dropped now
    assert new is not None
    assert spies == [[0, count - 1], [0, 0]]  # the keys go on: which messages carry reasoning is the same


@pytest.mark.parametrize("surface", SURFACE_NAMES)
def test_reasoning_the_record_holds_walks_every_message_again(monkeypatch: pytest.MonkeyPatch, surface: str) -> None:
    """The earlier request left its messages as they came with nothing from the record; the next one
    is given the record's reasoning for a turn: the earlier verdict on them says nothing of that."""
    side = SURFACES[surface]  # type: ignore[index]

    def bare(turns: int) -> bytes:  # as a client that does not send reasoning back sends the history
        doc = json.loads(_as_upstream_reads(CONFIG, surface, turns))
        for message in doc["messages"]:
            for field in ("reasoning", "reasoning_content", "thinking"):
                message.pop(field, None)
        return json.dumps(doc).encode()

    first, body = bare(10), bare(11)
    states = CarriedStates()
    began = _spied(monkeypatch, "_unchanged_before")
    request = Request(side, first, (states, b"scope"))
    assert transform_request(side, request, CONFIG) is None  # nothing in the record yet
    request.keep()
    later = Request(side, body, (states, b"scope"))
    keys = record_keys(side, later, CONFIG)
    recall = {keys[-1]: Recalled(reasoning="Look it up.")}
    new = transform_request(side, later, CONFIG, recall)
    assert new is not None and new == transform_request(side, Request(side, body), CONFIG, recall)
    assert b"Look it up." in new
    assert began == [0, 0, 0]  # the earlier request, this one, this one afresh


def _claude_code(turns: int) -> bytes:
    """Claude Code's next request: its cache marker on the latest message only (moved from the one
    before, whose bytes change), each turn's thinking sent back as the upstream reads it."""
    side = SURFACES["messages"]
    doc = json.loads(_agent("messages", turns))
    doc["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    body = json.dumps(doc).encode()
    new = transform_request(side, Request(side, body), CONFIG)
    return body if new is None else new


def test_the_next_messages_request_goes_on_from_the_last_message_it_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code moves its cache marker to the newest message: the next request shares all but the
    last of the earlier one's messages, and its transform goes on from there."""
    side = SURFACES["messages"]
    bodies = [_claude_code(turns) for turns in (10, 11, 12)]
    began = _spied(monkeypatch, "_unchanged_before", messages)
    counts = [count for _, count in told_in_turn(side, bodies, CONFIG)]
    assert began == [0, 0, counts[0] - 1, 0, counts[1] - 1, 0]  # each also read afresh, from its start


def test_a_new_query_on_messages_walks_every_message_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the current turn's reasoning kept only, a new query takes the earlier turns out of scope:
    the transform walks every message again and drops their reasoning, as afresh."""
    side = SURFACES["messages"]
    config = CONFIG.replace(history_scope="current_turn")
    first = _claude_code(10)
    later = _more(first, {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]})
    began = _spied(monkeypatch, "_unchanged_before", messages)
    (told, _), (told_later, _) = told_in_turn(side, [first, later], config)
    assert told is None and told_later is not None
    assert began == [0, 0, 0, 0]


def _bare(body: bytes) -> bytes:
    """The same messages without their thinking blocks: as a client that sends no reasoning back."""
    doc = json.loads(body)
    for message in doc["messages"]:
        if isinstance(message["content"], list):
            blocks = message["content"]
            message["content"] = [b for b in blocks if b.get("type") not in ("thinking", "redacted_thinking")]
    return json.dumps(doc).encode()


@pytest.mark.parametrize("bare", [False, True], ids=["thinking sent back", "no thinking sent back"])
def test_the_next_messages_request_s_keys_go_on_from_the_last_message_it_shares(
    monkeypatch: pytest.MonkeyPatch, bare: bool
) -> None:
    """Which assistant messages need the record is carried as far as two requests share (all but the
    last: the cache marker moved); another server's readings start over. The keys are those read afresh."""
    side = SURFACES["messages"]
    bodies = [_claude_code(turns) for turns in (10, 11, 12)]
    bodies = [_bare(body) for body in bodies] if bare else bodies
    began = _spied(monkeypatch, "asked_before", messages)
    states = CarriedStates()
    counts, told = [], []
    for body, config in zip(bodies, [CONFIG, CONFIG, CONFIG.replace(upstream_server="sglang")], strict=True):
        request = Request(side, body, (states, b"scope"))
        keys = record_keys(side, request, config)
        assert keys == record_keys(side, Request(side, body), config)
        request.keep(transform_request(side, request, config))
        counts.append(request.count)
        told.append(keys)
    assert began == [0, 0, counts[0] - 1, 0, 0, 0]  # each also read afresh; the last under another server
    assert all(told) == bare  # a message whose thinking came back needs no record
