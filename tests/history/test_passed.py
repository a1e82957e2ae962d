"""The controls' read of a body whose history goes on as it came, kept for the scope's next request
(``history.passed``): whatever the body, and whatever the body read before it, it gives what the
plain read of that body alone gives (``read_with_texts``, the reference); an agent's next request is
read only after the messages it shares; what is kept is counted at least at what it holds."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw.config import Surface
from gateway_mw.controls import read_with_texts
from gateway_mw.controls.fields import ControlFields
from gateway_mw.controls.side import SurfaceControls
from gateway_mw.history.carry import CARRIED_BYTES, CarriedStates
from gateway_mw.history.passed import read_on, read_whole
from gateway_mw.surfaces.registry import SURFACES

from ..controls.test_properties import conversations, encoded, odd_bodies, odd_message
from ..hypothesis_examples import examples

NAMES: list[Surface] = list(SURFACES)
LONG = "x" * CARRIED_BYTES
"""A text that makes a body large enough to be kept."""


def _outcome(both: tuple[ControlFields, list[Any]] | None) -> Any:
    """What a read gives, as plain values: each control field's bytes (or the model), each text's."""
    if both is None:
        return None
    fields, texts = both
    plain = {name: getattr(fields, name) for name in ControlFields.__struct_fields__}
    plain = {name: bytes(value) if isinstance(value, msgspec.Raw) else value for name, value in plain.items()}
    return plain, [bytes(text) if isinstance(text, msgspec.Raw) else text for text in texts]


def _read(body: bytes, side: SurfaceControls, carry: tuple[CarriedStates, bytes]) -> Any:
    """As the middleware reads a large body: on from a kept reading, or whole."""
    return read_on(body, side, carry) or read_whole(body, side, carry)


def _controls(surface: Surface) -> SurfaceControls:
    return SURFACES[surface].controls


def _long_message(surface: Surface) -> bytes:
    message: dict[str, Any] = {"role": "user", "content": LONG}
    return encoded({"type": "message", **message} if surface == "responses" else message)


def _with_list(body: bytes, surface: Surface, elements: list[bytes]) -> bytes:
    """``body`` with its conversation's list replaced by ``elements`` (written as they are)."""
    key = "input" if surface == "responses" else "messages"
    read = json.loads(body)
    read[key] = "@LIST@"
    return encoded(read).replace(b'"@LIST@"', b"[" + b",".join(elements) + b"]")


@settings(max_examples=examples(200))
@given(st.data(), st.sampled_from(NAMES))
def test_any_body_read_to_be_kept_gives_the_plain_read(data: st.DataObject, surface: Surface) -> None:
    """A large body of any shape (roles named twice or missing, contents of any type, messages that
    are no object, any surface's text members, numbers out of a double's range) read with a scope:
    what the plain read gives."""
    body = data.draw(odd_bodies(surface))
    padded = body[:-1] + b',"x_pad":' + encoded(LONG) + b"}"
    read = _read(padded, _controls(surface), (CarriedStates(), b"scope"))
    assert _outcome(read) == _outcome(read_with_texts(padded, _controls(surface)))


@settings(max_examples=examples(200))
@given(st.data(), st.sampled_from(NAMES), st.booleans())
def test_an_agent_s_next_request_read_on_gives_the_plain_read(
    data: st.DataObject, surface: Surface, same_members: bool
) -> None:
    """An agent's next request (the messages of the one before, then more, of any shape; the members
    around them the same or others) read after the scope's kept reading: what the plain read of that
    body gives (whether it goes on from the kept reading or is read whole)."""
    shared = [_long_message(surface), *data.draw(st.lists(odd_message(surface), max_size=4))]
    added = data.draw(st.lists(odd_message(surface), max_size=4))
    first = _with_list(encoded(data.draw(conversations(surface))), surface, shared)
    later = _with_list(first if same_members else encoded(data.draw(conversations(surface))), surface, shared + added)
    side, states = _controls(surface), CarriedStates()
    assert _outcome(_read(first, side, (states, b"scope"))) == _outcome(read_with_texts(first, side))
    assert _outcome(_read(later, side, (states, b"scope"))) == _outcome(read_with_texts(later, side))


@settings(max_examples=examples(100))
@given(st.data(), st.sampled_from(NAMES))
def test_an_agent_s_next_request_is_read_after_the_messages_it_shares(data: st.DataObject, surface: Surface) -> None:
    """Where the bytes before and after the shared messages are the same, the next request is read
    on from the kept reading (which it replaces), and gives what the plain read gives."""
    body = data.draw(conversations(surface))
    key = "input" if surface == "responses" else "messages"
    turns = body[key] if isinstance(body[key], list) else []
    shared = [_long_message(surface), *map(encoded, turns)]
    more = data.draw(conversations(surface))[key]
    added = [encoded(message) for message in more] if isinstance(more, list) else []
    first = _with_list(encoded(body), surface, shared)
    later = _with_list(encoded(body), surface, shared + added)
    side, states = _controls(surface), CarriedStates()
    _read(first, side, (states, b"scope"))
    (was,) = states.readings.of(b"scope")
    assert _outcome(_read(later, side, (states, b"scope"))) == _outcome(read_with_texts(later, side))
    (now,) = states.readings.of(b"scope")
    assert now is not was and now[1].places.segments  # read after the shared messages, kept in its place


def _message(surface: Surface, role: str, text: str) -> bytes:
    said: dict[str, Any] = {"role": role, "content": text}
    return encoded({"type": "message", **said} if surface == "responses" else said)


def _texts_of(read: Any) -> list[bytes]:
    assert read is not None
    return [bytes(text) for text in read[1]]


@pytest.mark.parametrize("surface", NAMES)
def test_a_switch_in_the_kept_messages_stands_until_a_later_message_says_another(surface: Surface) -> None:
    """The latest user message's switch is found in the kept reading while the new messages are the
    assistant's and the tools' (each request read on from the one before), and a later user
    message's replaces it."""
    side, states = _controls(surface), CarriedStates()
    body = encoded({"model": "qwen3-8b", "messages": [], "input": [], "stream": True})
    turns = [_long_message(surface), _message(surface, "user", "go on /no_think")]
    _read(_with_list(body, surface, turns), side, (states, b"scope"))
    for more in ([_message(surface, "assistant", "a")], [_message(surface, "user", "now /think")]):
        turns += more
        read = read_on(_with_list(body, surface, turns), side, (states, b"scope"))
        assert _outcome(read) == _outcome(read_with_texts(_with_list(body, surface, turns), side))
        ((_, kept),) = states.readings.of(b"scope")
        assert kept.places.segments  # read on from the one before, in its place
    assert _texts_of(read)[0] == b'"now /think"'


@pytest.mark.parametrize("surface", NAMES)
def test_a_last_message_changed_leaves_the_switch_of_the_messages_before_it(surface: Surface) -> None:
    """A next request whose last message is another (a retry of the user's turn, written by the
    assistant; or none at all) goes on from the messages before it: the switch is the latest among
    them and those it adds, not the replaced message's."""
    side = _controls(surface)
    body = encoded({"model": "qwen3-8b", "messages": [], "input": []})
    said = [_long_message(surface), _message(surface, "user", "go /no_think"), _message(surface, "assistant", "a")]
    first = _with_list(body, surface, [*said, _message(surface, "user", "now /think")])
    for last in ([_message(surface, "assistant", "retry")], []):
        states = CarriedStates()
        _read(first, side, (states, b"scope"))
        later = _with_list(body, surface, [*said, *last])
        read = read_on(later, side, (states, b"scope"))
        assert (_outcome(read), _texts_of(read)[0]) == (_outcome(read_with_texts(later, side)), b'"go /no_think"')


@pytest.mark.parametrize("surface", NAMES)
def test_a_next_request_goes_on_from_its_own_conversation_not_from_a_branch_of_it(surface: Surface) -> None:
    """A branch of a conversation (its first messages and one of its own, a title asked, say), kept
    after it, is not what the conversation's next request goes on from: that one goes on from its
    own earlier request (all its messages shared), and the branch's reading stays for its own next."""
    side, states = _controls(surface), CarriedStates()
    body = encoded({"model": "qwen3-8b", "messages": [], "input": []})
    turns = [_long_message(surface), *(_message(surface, "user", f"step {at}") for at in range(6))]
    _read(_with_list(body, surface, turns), side, (states, b"scope"))
    branch = [*turns[:-2], _message(surface, "user", "a title for this /no_think")]
    _read(_with_list(body, surface, branch), side, (states, b"scope"))
    (_, mine), (_, kept_branch) = states.readings.of(b"scope")
    later = _with_list(body, surface, [*turns, _message(surface, "assistant", "done")])
    assert _outcome(read_on(later, side, (states, b"scope"))) == _outcome(read_with_texts(later, side))
    (_, stays), (_, went_on) = states.readings.of(b"scope")  # the one it went on from replaced
    assert (stays, went_on.ends[0].number, went_on is not mine) == (kept_branch, 8, True)


@pytest.mark.parametrize("surface", NAMES)
def test_a_body_read_whole_takes_the_place_of_the_reading_whose_messages_it_holds_but_the_last(
    surface: Surface,
) -> None:
    """A body that holds a kept reading's messages but the last (its cache marker moved) and adds more
    than can be read on the loop is read whole, in that reading's place."""
    side, states = _controls(surface), CarriedStates()
    body = encoded({"model": "qwen3-8b", "messages": [], "input": []})
    turns = [_long_message(surface), _message(surface, "user", "a"), _message(surface, "user", "b")]
    _read(_with_list(body, surface, turns), side, (states, b"scope"))
    marked = turns[-1][:-1] + b',"cache_control":{"type":"ephemeral"}}'
    later = _with_list(body, surface, [*turns[:-1], marked, _long_message(surface)])
    assert read_on(later, side, (states, b"scope"), CARRIED_BYTES // 2) is None
    assert _outcome(read_whole(later, side, (states, b"scope"))) == _outcome(read_with_texts(later, side))
    ((_, kept),) = states.readings.of(b"scope")
    assert kept.ends[0].number == 4


@pytest.mark.parametrize("surface", NAMES)
def test_a_body_read_on_only_when_it_continues(surface: Surface) -> None:
    """With ``most``, a body is read on only when it continues a kept reading of its own scope (the
    rest is read whole, in a worker thread); one that is no JSON object is not kept."""
    side, states = _controls(surface), CarriedStates()
    body = _with_list(encoded({"model": "m", "messages": [], "input": []}), surface, [_long_message(surface)])
    assert read_on(body, side, (states, b"scope"), 1 << 18) is None
    assert read_whole(b"[" + encoded(LONG) + b"]", side, (states, b"scope")) is None
    assert states.readings.of(b"scope") == []
    read_whole(body, side, (states, b"scope"))
    more = _with_list(body, surface, [_long_message(surface), _long_message(surface)])
    assert read_on(more, side, (states, b"other scope"), 1 << 18) is None  # another scope's is never read
    assert _outcome(read_on(more, side, (states, b"scope"), 1 << 18)) == _outcome(read_with_texts(more, side))


HOSTILE = {
    # (keys of 40 characters: the decoder keeps short ones in a cache of its own, which is not the reading's)
    "members": lambda: encoded({"role": "user", "content": "hi", **{f"{at:040x}": 0 for at in range(10_000)}}),
    "model": lambda: encoded({"role": "user", "content": "hi"}),
}
"""Messages whose members (or a body whose model) decode to much more than their bytes."""


@pytest.mark.parametrize("surface", NAMES)
@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_what_a_kept_reading_holds_is_counted(surface: Surface, hostile: str) -> None:
    """The bytes a kept reading is counted at are at least what it holds in memory (its body, the
    body it goes on from): none of its messages' members nor its model is kept, however many."""
    side, states = _controls(surface), CarriedStates()
    model = [[] for _ in range(20_000)] if hostile == "model" else "m"
    turns = [HOSTILE[hostile]() for _ in range(3)]
    body = _with_list(encoded({"model": model, "messages": [], "input": [], "x": LONG}), surface, turns)
    later = _with_list(body, surface, turns + turns[:2])
    gc.collect()
    tracemalloc.start()
    try:
        read = _read(body, side, (states, b"scope")), _read(later, side, (states, b"scope"))
        assert read[1] is not None and len(states.readings.of(b"scope")) == 1
        del read
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] + len(body) + len(later)  # the bodies made before
    finally:
        tracemalloc.stop()
    assert held <= states.size < 3 * held  # (and not so far over that the bound keeps much less than it could)


@settings(max_examples=examples(100))
@given(st.data(), st.sampled_from(NAMES))
def test_a_next_request_whose_last_shared_message_moved_its_cache_marker_is_read_on(
    data: st.DataObject, surface: Surface
) -> None:
    """A next request that holds all the earlier messages but the last as they came, the last one
    changed (Claude Code moves its cache marker from it to the new last one), then more: read on
    from the kept reading (which it replaces), giving what the plain read gives."""
    body = data.draw(conversations(surface))
    key = "input" if surface == "responses" else "messages"
    turns = [encoded(message) for message in body[key]] if isinstance(body[key], list) else []
    shared = [_long_message(surface), _long_message(surface), *turns]  # (all but the last: one at least)
    more = data.draw(conversations(surface))[key]
    added = [encoded(message) for message in more] if isinstance(more, list) else []
    marked = shared[-1][:-1] + b',"cache_control":{"type":"ephemeral"}}'
    first = _with_list(encoded(body), surface, shared)
    later = _with_list(encoded(body), surface, [*shared[:-1], marked, *added])
    side, states = _controls(surface), CarriedStates()
    read_whole(first, side, (states, b"scope"))
    (was,) = states.readings.of(b"scope")
    assert _outcome(read_on(later, side, (states, b"scope"))) == _outcome(read_with_texts(later, side))
    (now,) = states.readings.of(b"scope")
    assert now is not was and now[1].places.segments


@pytest.mark.parametrize("surface", NAMES)
def test_a_body_read_whole_replaces_the_reading_it_continues(surface: Surface) -> None:
    """A body that holds a kept reading's messages but is read whole (too many bytes of its own to
    read on the loop; a chain of bodies grown too long) takes that reading's place: one conversation
    keeps one reading, and another conversation's stays beside it."""
    side, states = _controls(surface), CarriedStates()
    other = _with_list(encoded({"model": "m", "messages": [], "input": []}), surface, [_long_message(surface)])
    read_whole(other + b" ", side, (states, b"scope"))  # (another conversation: its first message differs)
    message = {"role": "user", "content": "go on"}
    turns = [encoded({"role": "system", "content": LONG})]
    for _ in range(70):  # more than a chain of bodies may hold (64): read whole again on the way
        turns.append(encoded({"type": "message", **message} if surface == "responses" else message))
        body = _with_list(encoded({"model": "m", "messages": [], "input": []}), surface, turns)
        assert _outcome(_read(body, side, (states, b"scope"))) == _outcome(read_with_texts(body, side))
        assert len(states.readings.of(b"scope")) == 2
    bigger = _with_list(body, surface, [*turns, _long_message(surface)])
    assert read_on(bigger, side, (states, b"scope"), CARRIED_BYTES // 2) is None  # more of its own than that
    assert _outcome(read_whole(bigger, side, (states, b"scope"))) == _outcome(read_with_texts(bigger, side))
    assert len(states.readings.of(b"scope")) == 2
    assert _outcome(read_on(bigger + b" ", side, (states, b"scope"), CARRIED_BYTES // 2)) is not None
