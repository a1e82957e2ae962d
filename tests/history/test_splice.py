"""A history written in place (``history.splice``): the places of raw values found from the bytes
they were read from, against where a body built piece by piece put them; a list's elements replaced
and left out, against the same list edited as Python values."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.history import Request, transform_request
from gateway_mw.history.carry import CarriedStates
from gateway_mw.history.splice import Places, replaced
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples

SPACES = st.sampled_from(["", " ", "\n  ", "\t", "\r\n"])
KEYS = st.sampled_from(["role", "content", "type", "id", "na\u00efve", 'quote"d', "tab\t"])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    max_leaves=6,
)


class _Listed(msgspec.Struct):
    items: list[msgspec.Raw]


class _Objects(msgspec.Struct):
    items: list[dict[str, msgspec.Raw]]


@st.composite
def spelled_objects(draw: st.DrawFn) -> tuple[str, bool]:
    """An object as a client may write it: any spacing, keys with or without escapes, a key given
    twice; and whether its members are written once each (no duplicate key)."""
    members = draw(st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=4))
    space = draw(SPACES)
    ascii_only = draw(st.booleans())
    written = [
        f"{space}{json.dumps(key, ensure_ascii=ascii_only)}{space}:{space}{json.dumps(value)}{space}"
        for key, value in members
    ]
    return "{" + ",".join(written) + "}", len({key for key, _ in members}) == len(members)


@st.composite
def bodies(draw: st.DrawFn, elements: st.SearchStrategy[str]) -> tuple[bytes, list[tuple[int, int]], list[str]]:
    """A body whose member ``items`` is a list of ``elements``, spaced as any client spaces JSON, with
    members before and after it; and where each element stands in it."""
    texts = draw(st.lists(elements, min_size=1, max_size=6))
    head = "{" + draw(st.sampled_from(["", '"model": "m",', '"a":{"items":[{}]} ,'])) + draw(SPACES) + '"items"'
    head += draw(SPACES) + ":" + draw(SPACES) + "[" + draw(SPACES)
    text, spans = head, []
    for at, element in enumerate(texts):
        if at:
            text += draw(SPACES) + "," + draw(SPACES)
        start = len(text.encode())
        text += element
        spans.append((start, len(text.encode())))
    text += draw(SPACES) + "]" + draw(st.sampled_from(["", ', "tools": []', ',"items2":[1]'])) + "}"
    return text.encode(), spans, texts


@settings(max_examples=examples(300), deadline=None)
@given(case=bodies(spelled_objects().map(lambda spelled: spelled[0])), data=st.data())
def test_an_objects_place_is_where_it_was_written_or_none_when_its_bytes_cannot_prove_it(
    case: tuple[bytes, list[tuple[int, int]], list[str]], data: st.DataObject
) -> None:
    body, spans, texts = case
    objects = msgspec.json.decode(body, type=_Objects).items
    places = Places(body)
    for fields, span, text in zip(objects, spans, texts, strict=True):
        found = places.of_object(fields)
        keys = [key for key, _ in json.loads(text, object_pairs_hook=list)]
        plain = len(set(keys)) == len(keys) and all(json.dumps(k, ensure_ascii=False) in text for k in keys[:1])
        if plain:  # written once each, its first key without escapes: found
            assert found == span
        else:  # else found where it is, or not at all
            assert found in (span, None)


@st.composite
def edits(draw: st.DrawFn, count: int) -> dict[int, Any]:
    """Some elements of a list of ``count`` replaced (by a value, or by several: a tuple) or left
    out (``...``)."""
    several = st.lists(VALUES, min_size=2, max_size=3).map(tuple)
    return draw(st.dictionaries(st.integers(0, count - 1), st.just(...) | VALUES | several, max_size=count))


def _spelled(value: Any) -> bytes | None:
    if value is ...:
        return None
    return b",".join(json.dumps(one).encode() for one in (value if isinstance(value, tuple) else (value,)))


@settings(max_examples=examples(300), deadline=None)
@given(case=bodies(VALUES.map(json.dumps)), data=st.data())
def test_a_lists_elements_replaced_and_left_out_as_python_would_and_nothing_else_changed(
    case: tuple[bytes, list[tuple[int, int]], list[str]], data: st.DataObject
) -> None:
    body, spans, texts = case
    changed = data.draw(edits(len(texts)))
    raws = msgspec.json.decode(body, type=_Listed).items
    new = replaced(Places(body), raws, {at: _spelled(value) for at, value in changed.items()})
    assert new is not None
    expected = json.loads(body)
    expected["items"] = []
    for at, text in enumerate(texts):
        value = changed.get(at, json.loads(text))
        if value is not ...:
            expected["items"] += list(value) if isinstance(value, tuple) else [value]
    assert json.loads(new) == expected
    # Before the element ahead of the first one changed, and after the list's last, every byte as it came.
    kept = spans[min(changed) - 1][1] if changed and min(changed) > 0 else spans[0][0]
    assert new[:kept] == body[:kept]
    assert new.endswith(body[spans[-1][1] :])
    # Every element left as it was keeps its bytes, in order.
    at = 0
    for index, (start, end) in enumerate(spans):
        if index not in changed:
            at = new.index(body[start:end], at) + (end - start)


def test_a_value_read_from_other_bytes_has_no_place() -> None:
    body = b'{"items": [1, 2]}'
    copied = msgspec.Raw(bytes(msgspec.json.decode(body, type=_Listed).items[0]))
    assert Places(body).of(copied) is None
    assert replaced(Places(body), [copied], {0: b"3"}) is None


def test_an_object_whose_first_key_is_written_with_escapes_has_no_place() -> None:
    # Counted back from its value by the key's plain spelling, the object would start at the brace
    # inside the key: the key's bytes are checked, and no place is given.
    body = b'{"items": [{"ab{\\u00e9": 1}]}'
    fields = msgspec.json.decode(body, type=_Objects).items[0]
    assert list(fields) == ["ab{\u00e9"]
    assert Places(body).of_object(fields) is None
    plain = '{"items": [{"ab{\u00e9": 1}]}'.encode()
    assert Places(plain).of_object(msgspec.json.decode(plain, type=_Objects).items[0]) == (11, len(plain) - 2)


def _agent(surface: str, turns: int, *, twice: bool = False) -> bytes:
    """An agent's history whose every assistant turn must be rewritten (its reasoning inline, in
    tags, before a server that reads it in a field); ``twice``: the body names its list twice, the
    first spelled as this history, the second (the one a JSON reader takes) with another last answer."""
    long = "result " * 800
    history: list[Any] = [{"role": "user", "content": "Fix it."}]
    for n in range(turns):
        history += [
            {"role": "assistant", "content": f"<think>Turn {n}.</think>Step {n}."},
            {"role": "user", "content": long},
        ]
    key = "messages"
    text = json.dumps({"model": "qwen3-8b", key: history})
    if twice:
        other = [*history[:-2], {"role": "assistant", "content": "<think>Other.</think>Other."}, history[-1]]
        text = text[:-1] + ", " + json.dumps({key: other})[1:]
    return text.encode()


CONFIG = ThinkExtractConfig(upstream_server="vllm")


def _after_one(surface: str, body: bytes) -> tuple[Request, Request]:
    """An agent's request of 10 turns, kept, and ``body`` read after it in the same scope."""
    side = SURFACES[surface]
    states = CarriedStates()
    first = Request(side, _agent(surface, 10), (states, b"scope"))
    first.keep(transform_request(side, first, CONFIG))
    return first, Request(side, body, (states, b"scope"))


@pytest.mark.parametrize("surface", ["chat", "ollama"])
def test_a_next_request_writes_in_place_where_the_earlier_one_found_its_messages(surface: str) -> None:
    body = _agent(surface, 12)
    first, later = _after_one(surface, body)
    carried = dict(later.read.places().known)
    new = transform_request(SURFACES[surface], later, CONFIG)
    assert new == transform_request(SURFACES[surface], Request(SURFACES[surface], body), CONFIG)  # as afresh
    assert set(first.read.places().known) <= set(carried) < set(later.read.places().known)  # found once


@pytest.mark.parametrize("surface", ["chat", "ollama"])
def test_a_body_that_names_its_history_twice_takes_no_place_from_the_earlier_one(surface: str) -> None:
    body = _agent(surface, 10, twice=True)  # its first list the earlier body's, byte for byte
    _, later = _after_one(surface, body)
    assert later.read.places().known == {}
    new = transform_request(SURFACES[surface], later, CONFIG)
    assert new == transform_request(SURFACES[surface], Request(SURFACES[surface], body), CONFIG)
    assert new is not None and json.loads(new)["messages"][-2]["content"] == "Other."
    assert new.count(b"Step 0.") == 2  # the first list as it came, the second one written


@given(st.binary(min_size=1, max_size=4096))
def test_a_bodys_place_is_where_the_buffer_protocol_puts_it(data: bytes) -> None:
    """A body's place is taken from the object itself: where the buffer protocol, which places its
    raw values, says its bytes start."""
    from gateway_mw.history import splice

    body = bytes(bytearray(data))  # a fresh object, as read from a socket
    assert splice._BYTES_OFFSET is not None
    assert splice._address(body) == splice._viewed(body)
