"""A request's reading carried from the one before it in its scope (``history.carry``): what an agent's
next request is told — its rewritten body, the record keys it asks for, the entries kept of its
answer — is what the same request read afresh is told, whatever the two requests share and under
whatever settings each is read; what it shares is not read again; and the reading it goes on from
keeps no part of the earlier body alive."""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.channels import Said
from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import Request, record_entries, record_keys, transform_request
from gateway_mw.history import chat as chat_history
from gateway_mw.history import messages as messages_history
from gateway_mw.history.carry import CARRIED_BYTES, CarriedStates, latest_index, shared_prefix
from gateway_mw.surfaces.registry import SURFACES

from .strategies import chat_requests, configs, messages_requests, responses_requests
from .test_carried_digests import _agent

REQUESTS = {
    "chat": chat_requests(),
    "ollama": chat_requests(),
    "messages": messages_requests(),
    "responses": responses_requests(),
}
"""Each surface's requests (a surface of the registry without one here fails every test below)."""

SAID = [Said(original="<think>It is sunny.</think>It is sunny.")]
PAD = {"x_pad": "." * CARRIED_BYTES}  # a body this large carries its reading (a field no surface reads)


def _history_key(request: dict[str, Any]) -> str:
    return "input" if "input" in request else "messages"


def _body(request: dict[str, Any]) -> bytes:
    return json.dumps({**request, **PAD}).encode()


def _told(side: Any, request: Request, config: ThinkExtractConfig) -> tuple[Any, ...]:
    """All a request is told under ``config``: its record keys, its body rewritten, its answer's entries."""
    return (
        record_keys(side, request, config),
        transform_request(side, request, config),
        record_entries(side, request, SAID, config),
    )


@given(
    surface=st.sampled_from(list(SURFACES)),
    data=st.data(),
    shared=st.integers(0, 12),
    settings=st.tuples(configs(), configs()),
    same_settings=st.booleans(),
)
def test_a_carried_reading_tells_a_request_what_reading_it_afresh_does(
    surface: str,
    data: st.DataObject,
    shared: int,
    settings: tuple[ThinkExtractConfig, ThinkExtractConfig],
    same_settings: bool,
) -> None:
    side = SURFACES[surface]  # type: ignore[index]
    earlier, more = data.draw(REQUESTS[surface]), data.draw(REQUESTS[surface])
    key = _history_key(earlier)
    if not isinstance(earlier[key], list) or not isinstance(more.get(key), list):
        return  # Responses' input as one string: no turns to share
    later = {**more, key: earlier[key][:shared] + more[key]}
    first_config, later_config = settings[0], settings[0] if same_settings else settings[1]
    states = CarriedStates()
    first = Request(side, _body(earlier), (states, b"scope"))
    _told(side, first, first_config)
    first.keep()
    carried = Request(side, _body(later), (states, b"scope"))
    assert _told(side, carried, later_config) == _told(side, Request(side, _body(later)), later_config)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_reading_never_serves_another_scope(surface: str) -> None:
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    config = ThinkExtractConfig(upstream_server="vllm")
    alice = Request(side, _agent(surface, 10), (states, b"alice"))
    _told(side, alice, config)
    alice.keep()
    assert states.readings.of(b"bob") == []
    bob = Request(side, _agent(surface, 10), (states, b"bob"))
    assert bob._carried is not None and bob._carried[2] is None  # nothing of alice's was taken


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_carried_reading_keeps_no_earlier_body_but_the_one_its_messages_were_read_from(surface: str) -> None:
    """The reading a request goes on from is replaced by its own once kept; what it took from that
    reading (roles, reasoning, the transform's verdicts) holds no raw value of the earlier body.
    A request that continues the earlier one byte for byte takes its messages (or items) as they
    were read: the body they were first read from stays alive with them, counted in what is
    kept, and no later body does. An agent's conversation never keeps every body it sent."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    config = ThinkExtractConfig(upstream_server="vllm")
    bodies = [_agent(surface, turns) for turns in (10, 12, 14)]
    held = [sys.getrefcount(body) for body in bodies]
    for at in range(len(bodies)):
        request = Request(side, bodies[at], (states, b"scope"))
        _told(side, request, config)
        request.keep()
        del request
    gc.collect()
    still = [now > before for now, before in zip([sys.getrefcount(body) for body in bodies], held, strict=True)]
    assert still == [True, False, True]  # the last one's reading is kept, with its body
    assert states.size >= len(bodies[-1]) + len(bodies[0])


def test_the_chat_messages_an_earlier_request_read_are_neither_read_nor_hashed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[int] = []
    reading = chat_history.read_message

    def counted(msg: Any, config: ThinkExtractConfig, carriers: tuple[str, ...]) -> Any:
        read.append(len(read))
        return reading(msg, config, carriers)

    monkeypatch.setattr(chat_history, "read_message", counted)
    side = SURFACES["chat"]
    states = CarriedStates()
    config = ThinkExtractConfig(upstream_server="vllm")
    first = Request(side, _agent("chat", 10), (states, b"scope"))
    _told(side, first, config)
    first.keep()
    assert len(read) == 10  # each assistant message once, for the keys and the transform alike
    later = Request(side, _agent("chat", 13), (states, b"scope"))
    assert later.read is not None
    assert later.read.thread()._done == first.count  # its digest goes on after all the earlier one hashed
    _told(side, later, config)
    assert len(read) == 13  # only the three new ones


@given(old=st.lists(st.integers(0, 3), max_size=9), new=st.lists(st.integers(0, 3), max_size=9))
def test_the_shared_prefix_is_the_longest_equal_one(old: list[int], new: list[int]) -> None:
    plain = 0
    while plain < min(len(old), len(new)) and old[plain] == new[plain]:
        plain += 1
    assert shared_prefix(old, new) == plain


_ROLES = st.sampled_from(["user", "assistant", "tool", "system", "developer", "other", None])


@given(values=st.lists(_ROLES, max_size=12), wanted=st.lists(_ROLES, max_size=3).map(tuple))
def test_the_latest_index_is_the_last_one_wanted(values: list[Any], wanted: tuple[Any, ...]) -> None:
    plain = next((at for at in range(len(values) - 1, -1, -1) if values[at] in wanted), -1)
    assert latest_index(values, wanted) == plain


def test_the_messages_an_earlier_messages_request_read_are_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each message's outline (role, blocks), each assistant message's reading and what the transform
    made of it are taken from the scope's earlier request for the messages the two share: only the
    new turns are read."""
    calls: dict[str, int] = {"_outline": 0, "_reading": 0, "_message": 0}
    for name in calls:
        original = getattr(messages_history, name)

        def counted(*args: Any, name: str = name, original: Any = original) -> Any:
            calls[name] += 1
            return original(*args)

        monkeypatch.setattr(messages_history, name, counted)
    side = SURFACES["messages"]
    states = CarriedStates()
    config = ThinkExtractConfig(upstream_server="vllm")
    first = Request(side, _agent("messages", 10), (states, b"scope"))
    first.keep()  # as the middleware keeps it: before the answer's entries hash the conversation
    _told(side, first, config)
    # 21 messages (a question, then an assistant turn and its tool result ten times), each read once.
    assert calls == {"_outline": 21, "_reading": 10, "_message": 10}
    later = Request(side, _agent("messages", 12), (states, b"scope"))
    assert later.read is not None
    assert later.read.thread()._done == first.count  # its digest goes on after all the earlier one hashed
    _told(side, later, config)
    assert calls == {"_outline": 25, "_reading": 12, "_message": 12}  # only the two new turns


def test_the_responses_items_an_earlier_request_read_are_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent's next Responses request reads, transforms and keys only its new items: what the
    earlier one read of the items they share (each item's head or value, what the transform made of
    it, what its turn's keys are made of) is taken from its reading."""
    from gateway_mw.history import responses as responses_history
    from gateway_mw.history import responses_reading

    done: dict[str, list[Any]] = {"read": [], "made": [], "keyed": []}
    for name, module, counted in (
        ("read", responses_reading, "read_item"),
        ("made", responses_history, "_made"),
        ("keyed", responses_history, "_said"),
    ):
        real = getattr(module, counted)

        def counting(*args: Any, _real: Any = real, _done: list[Any] = done[name]) -> Any:
            _done.append(args[0])
            return _real(*args)

        monkeypatch.setattr(module, counted, counting)
    side = SURFACES["responses"]
    states = CarriedStates()
    config = ThinkExtractConfig(upstream_server="vllm")
    first = Request(side, _agent("responses", 10), (states, b"scope"))
    told = _told(side, first, config)
    first.keep()
    assert told[1] is not None  # its reasoning items rewritten: what the transform made is carried too
    # 31 items (a question, then a reasoning item, a call and its output a turn); the transform works
    # on the question and each reasoning item (a call or its output goes on as it came); 10 turns.
    assert [len(done[name]) for name in done] == [31, 11, 10]
    later = Request(side, _agent("responses", 13), (states, b"scope"))
    assert later.read is not None and first.read is not None
    assert later.read.thread()._done == len(first.read.thread()._messages)  # its digest goes on after all
    assert _told(side, later, config) == _told(side, Request(side, _agent("responses", 13)), config)
    assert [len(done[name]) for name in done] == [31 + 9 + 40, 11 + 3 + 14, 10 + 3 + 13]  # then afresh: all


@pytest.mark.parametrize("form", ["field", "pass"])
def test_a_responses_reading_is_counted_again_only_when_the_entries_read_more_of_it(
    form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a request's order (keys, transform, kept, the answer's entries): a Responses reading whose
    plan passed its items on has them read by the entries' digest alone, and is counted again then;
    one whose transform read them is counted once. Either way the count kept is what counting the
    reading afresh gives."""
    side = SURFACES["responses"]
    states = CarriedStates()
    config = ThinkExtractConfig(upstream_server="vllm", history_reasoning=form)  # type: ignore[arg-type]
    request = Request(side, _agent("responses", 10), (states, b"scope"))
    assert request.read is not None
    record_keys(side, request, config)
    transform_request(side, request, config)
    request.keep()
    when_kept = states.size
    measured: list[int] = []
    held = type(request.read).held
    monkeypatch.setattr(type(request.read), "held", lambda self: measured.append(1) or held(self))
    assert record_entries(side, request, SAID, config)  # the answer moved reasoning: entries made
    counted_again = len(measured)
    afresh = request._size(0, states.readings.max_bytes)
    assert (states.size, states.size > when_kept, counted_again) == (afresh, form == "pass", int(form == "pass"))


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_reading_too_large_to_keep_is_neither_measured_nor_kept(
    surface: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measuring what a reading decoded walks every value it holds: a history whose body alone is over
    the bound (a 60 MiB one) is not walked for a count that cannot be kept anyway."""
    side = SURFACES[surface]  # type: ignore[index]
    body = _agent(surface, 10)
    states = CarriedStates(max_bytes=len(body))  # the body, and its messages' share, are over it
    request = Request(side, body, (states, b"scope"))
    _told(side, request, ThinkExtractConfig(upstream_server="vllm"))
    assert request.read is not None
    measured: list[int] = []
    monkeypatch.setattr(type(request.read), "held", lambda self: measured.append(1) or 0)
    request.keep()
    request.recount()
    assert (measured, states.readings.of(b"scope"), states.size) == ([], [], 0)


@pytest.mark.parametrize("surface", ["chat", "ollama", "messages"])
def test_a_role_no_server_knows_is_kept_short(surface: str) -> None:
    """A role is read into every message's reading, and kept with it: one that is no role (a long
    string, one emoji making it four bytes a character, or an object) is kept as a marker, so that
    what is kept stays within what it is counted at, and the message is read as before (no role a
    surface reads)."""
    side = SURFACES[surface]  # type: ignore[index]
    long_role = "r" * (64 << 10) + "🙂"
    messages = [{"role": long_role, "content": "x"}, {"role": {"nested": [long_role]}, "content": "y"}] * 4
    messages += [{"role": "user", "content": "Weather?"}]
    body = json.dumps({"model": "qwen3-8b", "messages": messages, **PAD}, ensure_ascii=False).encode()
    config = ThinkExtractConfig(upstream_server="vllm")
    afresh = _told(side, Request(side, body), config)
    states = CarriedStates()
    gc.collect()
    tracemalloc.start()
    try:
        request = Request(side, body, (states, b"scope"))
        told = _told(side, request, config)
        request.keep(told[1])
        del request
        gc.collect()
        held = len(body) + tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert (told, states.size >= held) == (afresh, True)
