"""A request read once (``history.Request``: each surface's lean decode, shared by the record's keys,
the plan, the transform and the record's entries) against the request side as it was, which decoded
the body at every step (``reference``), over generated histories on every surface: the same bytes
out, the same entries kept, and no key asked for that the transform would not read."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.channels import Said
from gateway_mw.config import Surface
from gateway_mw.history import Recalled, Request, record_entries, record_keys, splice, surrogates, transform_request
from gateway_mw.history.recall import Thread
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples
from . import reference
from .strategies import REASONING, chat_requests, configs, messages_requests, responses_requests, tagged

REQUESTS = {
    "chat": chat_requests(),
    "ollama": chat_requests(),
    "messages": messages_requests(),
    "responses": responses_requests(),
}


@st.composite
def cases(draw: st.DrawFn) -> tuple[Surface, bytes]:
    """A request of any surface, spelled as some client spells JSON (spaces or not, escapes or not)."""
    surface: Surface = draw(st.sampled_from(list(REQUESTS)))
    request = draw(REQUESTS[surface])
    compact = draw(st.booleans())
    body = json.dumps(request, separators=(",", ":") if compact else None, ensure_ascii=draw(st.booleans())).encode()
    return surface, body


def a_record(keys: list[str], data: st.DataObject) -> dict[str, Recalled]:
    """A record that holds an answer for every key a request may name (or for none of them)."""
    if not data.draw(st.booleans()):
        return {}
    return {
        key: Recalled(reasoning=data.draw(REASONING) or "recalled", original=data.draw(st.none() | tagged()))
        for key in keys
    }


_LIST = {"chat": "messages", "ollama": "messages", "messages": "messages", "responses": "input"}
_top = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_elements = msgspec.json.Decoder(list[msgspec.Raw]).decode


def _client_side(raw: msgspec.Raw) -> bool:
    item = msgspec.json.decode(raw)
    return isinstance(item, dict) and (item.get("role") == "user" or item.get("type") == "function_call_output")


def encoded_whole(surface: Surface, new: bytes | None, old: bytes | None, body: bytes) -> None:
    """The reference's bytes; on Responses (where the reference encoded the whole input again and
    the transform every item it read) the same JSON, every item of the client's side in the bytes
    it came in."""
    if surface != "responses" or new is None or old is None:
        assert new == old
        return
    assert json.loads(new) == json.loads(old)
    came, went = (_elements(_top(doc)["input"]) for doc in (body, new))
    assert [bytes(i) for i in came if _client_side(i)] == [bytes(i) for i in went if _client_side(i)]


def same(surface: Surface, new: bytes | None, old: bytes | None, body: bytes) -> None:
    """What the reference changed, and nothing more: the same JSON as its body, every value it left
    as it came in the bytes it came in, spacing included (the reference encoded the whole body
    again; only the elements of the history that change are written now). On Responses, whose
    items the transform may write in or leave out, its client's items keep their bytes (how a
    list's elements are replaced and left out in place: ``test_splice.py``)."""
    if new is None or old is None:
        assert new == old
        return
    assert json.loads(new) == json.loads(old)
    key = _LIST[surface]
    before, after = _top(body), _top(new)
    assert {k: bytes(v) for k, v in after.items() if k != key} == {k: bytes(v) for k, v in before.items() if k != key}
    came, went, made = (_elements(doc[key]) for doc in (before, after, _top(old)))
    if surface == "responses":  # items may be written in or left out (a turn's reasoning moved)
        assert [bytes(i) for i in came if _client_side(i)] == [bytes(i) for i in went if _client_side(i)]
        return
    for at, (one, was, ref) in enumerate(zip(went, came, made, strict=True)):  # message for message
        assert bytes(one) == bytes(was) or json.loads(bytes(one)) == json.loads(bytes(ref)), at
    grown = sum(len(one) - len(was) for one, was in zip(went, came, strict=True) if bytes(one) != bytes(was))
    assert len(new) - len(body) == grown  # no other byte changed


@contextlib.contextmanager
def splicing(spliced: bool) -> Iterator[None]:
    """Every changed history written in place (``True``: however many elements change), or every
    one encoded whole, as the reference does (``False``)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("ELEMENT_BYTES", "OBJECT_BYTES", "ITEM_BYTES"):
            patch.setattr(splice, name, 0 if spliced else 1 << 62)
        yield


@pytest.mark.parametrize("spliced", [True, False], ids=["written in place", "encoded whole"])
@settings(max_examples=examples(400), deadline=None)
@given(case=cases(), config=configs(), data=st.data())
def test_the_request_read_once_rewrites_as_the_reference(
    spliced: bool, case: tuple[Surface, bytes], config: ThinkExtractConfig, data: st.DataObject
) -> None:
    surface, body = case
    held = a_record(reference.record_keys(surface, body), data)
    request = Request(SURFACES[surface], body)
    asked = record_keys(SURFACES[surface], request, config)
    assert set(asked) <= set(reference.record_keys(surface, body))
    recall = {key: held[key] for key in asked if key in held}
    with splicing(spliced):
        new = transform_request(SURFACES[surface], request, config, recall)
    old = reference.transform_request(surface, body, config, held)
    if spliced:
        same(surface, new, old, body)
    else:
        encoded_whole(surface, new, old, body)


@settings(max_examples=examples(200), deadline=None)
@given(case=cases(), config=configs(), data=st.data())
def test_the_record_keeps_what_the_reference_kept(
    case: tuple[Surface, bytes], config: ThinkExtractConfig, data: st.DataObject
) -> None:
    surface, body = case
    said = [
        Said(
            original=data.draw(tagged()), call_ids=tuple(data.draw(st.lists(st.sampled_from(["c1", "c2"]), max_size=2)))
        )
        for _ in range(data.draw(st.integers(1, 2)))
    ]
    side = SURFACES[surface]
    request = Request(side, body)
    transform_request(side, request, config)  # the digests it makes are the ones the entries read
    kept = reference.record_entries(surface, body, said, config)
    assert record_entries(side, request, said, config) == kept
    assert record_entries(side, body, said, config, request.model) == kept  # after the response


def test_after_a_response_that_moved_no_reasoning_the_request_is_not_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = json.dumps({"model": "qwen3-8b", "messages": [{"role": "user", "content": "Hi"}]}).encode()
    reads: list[Any] = []
    chat = SURFACES["chat"]
    for piece in ("read_history", "answer_prefix"):
        read = getattr(chat, piece)
        monkeypatch.setattr(chat, piece, lambda body, read=read: reads.append(body) or read(body))
    config = ThinkExtractConfig()
    assert record_entries(chat, body, [Said(original="It is sunny.")], config, "qwen3-8b") == {}
    assert reads == []
    assert record_entries(chat, body, [Said(original="<think>Sunny.</think>It is.")], config, "qwen3-8b") != {}
    assert reads == [body]  # once, for the conversation's digest


ESCAPES = st.sampled_from(
    ["\\ud83d", "\\ude00", "\\uD83D\\uDE00", "\\ud83d\\ude00", "\\\\ud83d", "\\u005c", "x", "\\n"]
)


@settings(max_examples=examples(300), deadline=None)
@given(strings=st.lists(st.lists(ESCAPES, max_size=4).map("".join), min_size=1, max_size=3))
def test_a_body_a_decoder_reads_holds_no_lone_surrogate_to_mask(strings: list[str]) -> None:
    """Why a body read whole is not scanned for lone surrogate escapes: the decoder refuses one
    anywhere, even in a value it skips, so that a body it reads has none to mask."""
    body = ("[" + ",".join(f'"{s}"' for s in strings) + "]").encode()
    try:
        msgspec.json.decode(body, type=list[msgspec.Raw])
    except msgspec.DecodeError:
        return
    assert surrogates.mask(body) is None


TEXT_PIECES = st.sampled_from(
    ["<think>", "</think>", "<thinking>", "◁think▷", "[THINK]", "<", "`", "```\n", "a", "\n", " "]
)


@settings(max_examples=examples(500), deadline=None)
@given(pieces=st.lists(TEXT_PIECES, max_size=8), model=st.sampled_from(["qwen3-8b", "gpt-oss-20b", "kimi-k2", None]))
def test_a_replayed_text_is_split_as_the_scanner_splits_it(pieces: list[str], model: str | None) -> None:
    """The shortcut of a replayed text with no open tag in it (all answer) against the scanner."""
    from gateway_mw.history.text import _reading, split_inline
    from gateway_mw.scanner import CONTENT, extract

    text = "".join(pieces)
    config = ThinkExtractConfig().for_model(model)
    segments = extract(text, _reading(config))
    reasoning = "".join(s.text for s in segments if s.kind != CONTENT)
    expected = ("", text) if not reasoning else (reasoning, "".join(s.text for s in segments if s.kind == CONTENT))
    assert split_inline(text, config) == expected


@pytest.mark.parametrize("surface", ["chat", "messages", "ollama"])
@pytest.mark.parametrize("messages", [["Hi"], [{"role": "user", "content": "Hi"}, 4], [], None])
def test_a_body_whose_messages_are_not_all_objects_keeps_nothing_as_the_reference(
    surface: Surface, messages: Any
) -> None:
    body = json.dumps({"model": "qwen3-8b", "messages": messages}).encode()
    said = [Said(original="<think>Sunny.</think>It is.")]
    config = ThinkExtractConfig()
    assert record_entries(SURFACES[surface], body, said, config, "qwen3-8b") == reference.record_entries(
        surface, body, said, config
    )
    assert record_entries(SURFACES[surface], body, said, config) == {}


def test_a_raw_value_starts_at_its_own_first_byte() -> None:
    """What the light read of a conversation's messages relies on to tell an object."""
    from gateway_mw.rawjson import all_objects

    raws = msgspec.json.decode(b'[ {"a":1} ,\n\t{} , "x",[ ] ]', type=list[msgspec.Raw])
    assert [all_objects([r]) for r in raws] == [True, True, False, False]
    assert (all_objects(raws[:2]), all_objects(raws), all_objects([])) == (True, False, False)


@settings(max_examples=examples(500), deadline=None)
@given(
    pieces=st.lists(TEXT_PIECES, max_size=8),
    model=st.sampled_from(["qwen3-8b", "deepseek-r1", "gpt-oss-20b", "kimi-k2", None]),
)
def test_an_answer_said_to_hold_no_reasoning_holds_none(pieces: list[str], model: str | None) -> None:
    """The shortcut that spares the record's look at an answer the scanner: never wrong."""
    from gateway_mw.history.text import may_hold_reasoning, split_written

    text = "".join(pieces)
    config = ThinkExtractConfig().for_model(model)
    assert may_hold_reasoning(text, config) or split_written(text, config)[0] == ""


def test_the_keys_of_turns_that_carry_their_own_reasoning_take_no_digest_of_the_conversation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Responses history whose turns carry reasoning items (ids the server made) names no key the
    record holds: the conversation is not spelled and hashed for it before the request goes on."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    for turn in range(3):
        items += [
            {"type": "reasoning", "id": f"rs_{turn}", "summary": [{"type": "summary_text", "text": "Call it."}]},
            {"type": "function_call", "name": "weather", "arguments": "{}", "call_id": f"call_{turn}"},
            {"type": "function_call_output", "call_id": f"call_{turn}", "output": "sunny"},
        ]
    body = json.dumps({"model": "qwen3-8b", "input": items}).encode()
    side = SURFACES["responses"]
    digests: list[int] = []
    monkeypatch.setattr(Thread, "upto", lambda thread, n: digests.append(n) or b"")
    assert record_keys(side, Request(side, body), ThinkExtractConfig()) == []
    assert digests == []


@given(case=cases(), odd=st.sampled_from([None, "[]", '["Hi"]', '[{"role":"user","content":"Hi"},4]']))
@settings(max_examples=examples(60), deadline=None)
def test_a_large_chat_body_read_in_two_passes_is_read_as_in_one(case: tuple[Surface, bytes], odd: str | None) -> None:
    """A body over the one-pass size is read as its outline, then each message (no decoder call holds
    the lock for long): the same model and the same messages' fields, or nothing, as one pass gives."""
    from gateway_mw.history import chat

    _, body = case
    if odd is not None:  # messages that are no list of objects: neither way reads them
        body = b'{"model":"qwen3-8b","messages":' + odd.encode() + b"}"
    one = chat.read(body)
    original = chat._ONE_PASS_BYTES
    chat._ONE_PASS_BYTES = -1
    try:
        two = chat.read(body)
    finally:
        chat._ONE_PASS_BYTES = original
    seen = [(r.model, [{k: bytes(v) for k, v in f.items()} for f in r.fields]) if r else None for r in (one, two)]
    assert seen[0] == seen[1]
