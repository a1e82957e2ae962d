"""A carried reading at its edges, as a hostile client meets it: messages equal as values but written
otherwise, settings that change between two requests of one scope, agents that rewind, requests of
one scope read at once in worker threads. Each request is told what the same request read afresh is."""

from __future__ import annotations

import gc
import json
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw import incoming
from gateway_mw.channels import Said
from gateway_mw.config import ModelProfile, ThinkExtractConfig
from gateway_mw.history import Request, record_entries, record_keys, splice, transform_request
from gateway_mw.history.carry import CARRIED_BYTES, ByScope, CarriedStates
from gateway_mw.history.recall import Thread
from gateway_mw.surfaces.registry import SURFACES

from .strategies import chat_requests, configs
from .test_carried_digests import CONFIG, _agent
from .test_carried_readings import SAID, _body, _told
from .tracing import traced


def _reordered(message: Any, order: list[int]) -> Any:
    """``message`` with its keys in another order (the same object as a value)."""
    if not isinstance(message, dict):
        return message
    keys = list(message)
    ranked = sorted(range(len(keys)), key=lambda at: order[at % len(order)] if order else at)
    return {keys[at]: message[keys[at]] for at in ranked}


@given(
    surface=st.sampled_from(["chat", "ollama"]),
    earlier=chat_requests(),
    more=chat_requests(),
    order=st.lists(st.integers(0, 9), max_size=8),
    config=configs(),
)
def test_a_message_whose_keys_come_in_another_order_is_rewritten_as_afresh(
    surface: str, earlier: dict[str, Any], more: dict[str, Any], order: list[int], config: ThinkExtractConfig
) -> None:
    """Two chat messages with the same keys and values in another order are equal as values, but the
    transform writes a changed message's keys in its own order: the later request's rewritten body is
    the one its own bytes give, not the earlier request's order."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    first = Request(side, _body(earlier), (states, b"scope"))
    _told(side, first, config)
    first.keep()
    later = {**more, "messages": [_reordered(m, order) for m in earlier["messages"]] + more["messages"]}
    carried = Request(side, _body(later), (states, b"scope"))
    assert _told(side, carried, config) == _told(side, Request(side, _body(later)), config)


def _long_answer(surface: str, text: str) -> bytes:
    """A request whose history is mostly one assistant answer (``text``, after the model's tags)."""
    answer = "<think>Why.</think>" + text
    if surface == "messages":
        said: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": answer}]}
    elif surface == "responses":
        said = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}
    else:
        said = {"role": "assistant", "content": answer}
    history = [{"role": "user", "content": "Write."}, said, {"role": "user", "content": "Again."}]
    key = "input" if surface == "responses" else "messages"
    return json.dumps({"model": "llama-3.1-8b", key: history}, ensure_ascii=False).encode()


@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize("text", ["a" * (256 << 10), "a" * (256 << 10) + "🙂"], ids=["ascii", "one-emoji"])
@pytest.mark.parametrize("server", ["vllm", "anthropic"])
@pytest.mark.parametrize("form", ["auto", "pass"])
def test_a_kept_reading_is_counted_at_no_less_than_it_holds(surface: str, text: str, server: str, form: str) -> None:
    """The readings kept for later requests are bounded by the bytes they are counted at: a reading
    holds its body and what it decoded of it (an answer's text, as the transform split it, is held
    again, four bytes a character when one character needs them), all of which it is counted at, the
    history its answer's record entries read after it was kept too (a plan that passes it on reads
    none of it before)."""
    side = SURFACES[surface]  # type: ignore[index]
    config = ThinkExtractConfig(upstream_server=server, history_reasoning=form)  # type: ignore[arg-type]
    body = _long_answer(surface, text)

    def kept(states: CarriedStates) -> None:
        request = Request(side, body, (states, b"scope"))
        record_keys(side, request, config)
        request.keep(transform_request(side, request, config))
        assert record_entries(side, request, SAID, config)  # after the response, as the middleware asks

    states, made = traced(kept)
    assert states.size >= len(body) + made  # the body, made before, and all made since


def _bare_agent(surface: str, turns: int) -> bytes:
    """An agent's history whose tool-calling turns came back without their reasoning (the record
    holds it): each turn's record keys hold the digest of the conversation before it."""
    result = "18°C, sunny. " * 300
    history: list[Any] = [{"role": "user", "content": "Weather?"}]
    for i in range(turns):
        if surface == "responses":
            history += [
                {"type": "function_call", "call_id": f"c{i}", "name": "w", "arguments": "{}"},
                {"type": "function_call_output", "call_id": f"c{i}", "output": result},
            ]
        elif surface == "messages":
            history += [
                {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "w", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": result}]},
            ]
        else:
            call = {"id": f"c{i}", "type": "function", "function": {"name": "w", "arguments": "{}"}}
            history += [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": result},
            ]
    key = "input" if surface == "responses" else "messages"
    return json.dumps({"model": "qwen3-8b", key: history}).encode()


def _hashed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many messages each digest hashes from here on, one count per run of them."""
    spelled: list[int] = []
    feed = Thread._feed

    def counted(thread: Thread, at: Any, start: int, end: int, states: Any = None) -> None:
        spelled.append(end - start)
        feed(thread, at, start, end, states)

    monkeypatch.setattr(Thread, "_feed", counted)
    return spelled


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_carried_request_hashes_no_more_than_reading_it_afresh(surface: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request whose every turn asks the record (its keys hold the digest before each turn, asked
    in growing order) hashes each message at most once, as afresh: the digests of the prefixes shorter
    than the one it went on from are not each hashed again from the conversation's start."""
    side = SURFACES[surface]  # type: ignore[index]
    spelled = _hashed(monkeypatch)
    states = CarriedStates()
    earlier = Request(side, _bare_agent(surface, 40), (states, b"scope"))
    _told(side, earlier, CONFIG)
    earlier.keep()
    spelled.clear()
    afresh = _told(side, Request(side, _bare_agent(surface, 41)), CONFIG)
    fresh = sum(spelled)
    spelled.clear()
    carried = Request(side, _bare_agent(surface, 41), (states, b"scope"))
    assert carried._carried is not None and carried._carried[2] is not None  # it went on from the earlier one
    assert _told(side, carried, CONFIG) == afresh
    assert sum(spelled) <= fresh


def test_a_reading_counted_again_is_held_to_the_bound_and_never_kept_again_once_gone() -> None:
    kept: ByScope[object] = ByScope(max_bytes=100, per_scope=1)
    first, second, other = object(), object(), object()
    kept.put(b"scope", first, 10)
    kept.put(b"scope", second, 10)  # the first out: one a scope
    kept.recount(b"scope", first, 50)
    assert (kept.of(b"scope"), kept.size) == ([second], 10)
    kept.put(b"other", other, 40)
    kept.recount(b"scope", second, 70)  # past the bound: the scope used least recently out
    assert (kept.of(b"scope"), kept.of(b"other"), kept.size) == ([], [other], 40)
    kept.recount(b"other", other, 101)  # larger than all that may be kept
    assert (kept.of(b"other"), kept.size) == ([], 0)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_an_earlier_body_is_freed_once_replaced_without_waiting_for_a_collection(surface: str) -> None:
    """No reference cycle holds a body, with the cycle collector off (it may not run for long): the
    one a later request went on from is freed when that request's reading replaces its own, and on
    chat, Ollama and messages (whose continuing request takes the messages as they were first read) the body
    they were read from when no kept reading holds them any more (here: one conversation a scope, the
    next request another model's)."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates(per_scope=1)
    bodies = [_agent(surface, 10), _agent(surface, 12), _agent(surface, 14).replace(b"qwen3", b"other")]
    held = [sys.getrefcount(body) for body in bodies[:2]]
    gc.disable()
    try:
        for at in range(len(bodies)):
            request = Request(side, bodies[at], (states, b"scope"))
            _told(side, request, CONFIG)
            request.keep()
            del request
        assert [sys.getrefcount(body) for body in bodies[:2]] == held
    finally:
        gc.enable()


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_continued_conversation_is_counted_at_no_less_than_it_holds(surface: str) -> None:
    """An agent's requests each continuing the one before byte for byte: the kept reading holds its
    body, the body its first messages (or items) were read from and what each later request read of its own
    tail, and is counted at no less."""
    side = SURFACES[surface]  # type: ignore[index]
    bodies = [_agent(surface, turns) for turns in (10, 12, 14, 16)]

    def go_on(states: CarriedStates) -> None:
        for at in range(len(bodies)):
            request = Request(side, bodies[at], (states, b"scope"))
            _told(side, request, CONFIG)
            request.keep()
            del request

    states, made = traced(go_on)
    assert states.size >= len(bodies[0]) + len(bodies[-1]) + made  # the two bodies kept, made before


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_long_chain_of_continued_readings_is_started_again(surface: str) -> None:
    """Each continuing request keeps viewing the buffers its messages were read from: after enough of
    them (or once they hold a body's worth again) a request is read whole, and the chain starts anew."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    longest = 0
    for turns in range(10, 210, 2):
        request = Request(side, _agent(surface, turns), (states, b"scope"))
        places = request.read.places()
        longest = max(longest, len(places.segments))
        assert places.retained <= 2 * len(request.body)
        _told(side, request, CONFIG)
        request.keep()
    assert 3 <= longest <= splice.SEGMENTS  # continued, and started again


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_body_that_names_its_list_again_after_the_shared_messages_is_read_whole(surface: str) -> None:
    """A body whose bytes begin as the earlier one's, with its list of messages named again after
    (the second one, which a reader of the whole body takes, beginning with an empty message): it is
    read whole, and told what reading it afresh tells."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    earlier = _agent(surface, 10)
    first = Request(side, earlier, (states, b"scope"))
    _told(side, first, CONFIG)
    first.keep()
    key = "input" if surface == "responses" else "messages"
    again = json.dumps({key: [{}, {"role": "user", "content": "Now this."}]})
    body = earlier[:-1] + b", " + again[1:].encode()
    later = Request(side, body, (states, b"scope"))
    assert later.read is not None and later.read.count == 2
    assert _told(side, later, CONFIG) == _told(side, Request(side, body), CONFIG)


def _with_tools(body: bytes, tools: int) -> bytes:
    """``body`` with a ``tools`` member after its history, about ``tools`` bytes long."""
    listed = json.dumps([{"type": "function", "name": f"t{n}", "parameters": {}} for n in range(tools // 60)])
    return body[:-1] + b', "tools": ' + listed.encode() + b"}"


@pytest.mark.parametrize("tools", [0, 80 << 10])
@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_request_is_read_on_from_the_earlier_one_within_a_bound_only_when_all_it_decodes_is(
    surface: str, tools: int
) -> None:
    """An agent's next request read on from its earlier one within a bound of bytes to read (as the
    middleware reads one on its event loop): what is decoded is all that stands outside the shared
    messages, those it adds and the members before and after the list (here a long ``tools``), not
    only the bytes it adds. Beyond the bound it is read without one, as afresh tells."""
    side = SURFACES[surface]  # type: ignore[index]
    most = 64 << 10
    states = CarriedStates()
    earlier, body = (_with_tools(_agent(surface, turns), tools) for turns in (10, 11))
    first = Request(side, earlier, (states, b"scope"))
    _told(side, first, CONFIG)
    first.keep()
    assert len(body) - len(earlier) < most
    within = Request.continuing(side, body, (states, b"scope"), most)
    assert (within is None) == (tools > most)
    later = Request(side, body, (states, b"scope"))  # no bound: read on from the earlier one
    assert later.fresh[1] == later.count - first.count
    assert _told(side, later, CONFIG) == _told(side, Request(side, body), CONFIG)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_request_sent_again_and_again_is_counted_at_no_less_than_it_holds(surface: str) -> None:
    """A client that sends the same request again (its retries): each is read on from the one before
    and adds nothing to it but the buffer its tail was read from (its head replaces the one before),
    which the kept reading holds, with what places them, as far as the longest chain; it is counted
    at no less."""
    side = SURFACES[surface]  # type: ignore[index]
    body = _long_answer(surface, "a" * 2 * CARRIED_BYTES)  # two of them: more than the chain holds

    def again(states: CarriedStates) -> None:
        for _ in range(splice.SEGMENTS - 1):
            request = Request(side, bytes(bytearray(body)), (states, b"scope"))  # each its own bytes, as read
            request.keep(_told(side, request, CONFIG)[1])  # with the body it was rewritten to, as the middleware
            del request

    states, held = traced(again)  # the first body and the last among what the traced run made
    [(_, kept)] = states.readings.of(b"scope")
    assert len(kept.places().segments) == splice.SEGMENTS  # the first body, each tail since, the last head
    assert states.size >= held


@pytest.mark.parametrize("surface", list(SURFACES))
def test_an_agents_next_request_counts_as_its_own_work_every_message_its_keys_hash_again(
    surface: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work a request is counted at says whether its keys, transform and record entries run on
    the event loop: of an agent's next request read on from the earlier one, a message it shares
    counts as read and learned already (``CARRIED_WORK``). One its keys hash again would be work of
    its own, as much as reading it afresh (``MESSAGE_WORK``): the earlier request's answer moved no
    reasoning, so nothing digested its whole conversation, but its keys kept the digest's states
    where they stopped, and the next one's keys go on from there."""
    later, spelled = _after_an_answer_that_moved_no_reasoning(surface, CONFIG, monkeypatch)
    record_keys(later.side, later, CONFIG)
    assert incoming._work(later) >= incoming.MESSAGE_WORK * sum(spelled)


def _after_an_answer_that_moved_no_reasoning(
    surface: str, config: ThinkExtractConfig, monkeypatch: pytest.MonkeyPatch
) -> tuple[Request, list[int]]:
    """An agent's next request (a bare agent's, one turn more), read on from the earlier one, whose
    answer moved no reasoning; and the count of messages each digest step hashes from then on."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    earlier, body = _bare_agent(surface, 40), _bare_agent(surface, 41)
    first = Request(side, earlier, (states, b"scope"))
    record_keys(side, first, config)
    first.keep(transform_request(side, first, config))
    assert record_entries(side, first, [Said(original="It is sunny.")], config) == {}  # moved no reasoning
    spelled = _hashed(monkeypatch)
    later = Request(side, body, (states, b"scope"))
    assert later.read is not None and later.read.places().segments  # read on from the earlier one
    return later, spelled


@pytest.mark.parametrize("surface", list(SURFACES))
def test_an_agents_next_request_counts_as_its_own_work_every_message_its_record_entries_hash_again(
    surface: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose history goes on as it came (its plan ``pass``: no keys asked) and whose earlier
    answer moved no reasoning: nothing digested the conversation, so the next answer's record entries
    hash every message. Those count as its own work (a large history's then go to a worker thread),
    not as messages learned already."""
    config = CONFIG.replace(profiles=(ModelProfile(match=("qwen3-8b",), history_reasoning="pass"),))
    assert record_keys(SURFACES[surface], _bare_agent(surface, 40), config) == []  # type: ignore[index]
    later, spelled = _after_an_answer_that_moved_no_reasoning(surface, config, monkeypatch)
    work = incoming._work(later)
    assert record_entries(later.side, later, [Said(original="<think>Look.</think>It is sunny.")], config)
    assert sum(spelled) > 40 and work >= incoming.MESSAGE_WORK * sum(spelled)


def test_a_request_that_shares_less_than_the_one_before_clips_every_buffer_it_views_there() -> None:
    """A client sends a request again, then moves its cache marker (Claude Code): the next request
    shares all but the last message of the one before, fewer bytes than that one shared with its own
    earlier one. Every buffer the new reading's values may view is placed only as far as the bytes
    it shares, and each request is told what it is told read afresh."""
    side = SURFACES["messages"]
    marker = {"type": "ephemeral"}

    def body(turns: int) -> bytes:
        messages: list[Any] = [{"role": "user", "content": "Write."}]
        for n in range(turns):
            answer = {"type": "text", "text": f"<think>Why {n}.</think>" + "a" * CARRIED_BYTES}
            messages += [
                {"role": "assistant", "content": [answer]},
                {"role": "user", "content": [{"type": "text", "text": f"Go on {n}."}]},
            ]
        messages[-1]["content"][-1]["cache_control"] = marker
        return json.dumps({"model": "llama-3.1-8b", "max_tokens": 9, "messages": messages}).encode()

    states = CarriedStates()
    for sent in (body(2), body(2), body(3)):
        request = Request(side, sent, (states, b"scope"))
        assert _told(side, request, CONFIG) == _told(side, Request(side, sent), CONFIG)
        places = request.read.places()
        assert all(at + until <= places._reach for _, at, until in places.segments[:-2])
        request.keep()
    assert len(places.segments) == 4  # read on from each one before: the first body, a tail, its head and tail
