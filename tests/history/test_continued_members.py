"""A body that holds the earlier one's history byte for byte, then more, is read only before and
after the shared elements: whatever a client writes there — its members named again (the history
too), other values of the model, the instructions, ``include`` or the reasoning, spacing, escaped
keys, elements that are no objects, a lone surrogate escape, bytes after the end — each request is
told what the same request read afresh is told."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw.history import Request
from gateway_mw.history.carry import CarriedStates
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples
from .test_carried_adversarial import PAD, REQUESTS, Record, _said, _told_afresh, _told_carried, settings_

SPACES = st.sampled_from(["", " ", "\n", "\t ", "\r\n  "])
NAMES = st.sampled_from(
    ["model", "instructions", "include", "reasoning", "system", "stream", "x", "\\u006dodel", "HISTORY", "\\u0069nput"]
)
VALUES = st.sampled_from(
    [
        '"qwen3-8b"',
        '"llama-3.1-8b"',
        "null",
        '"Be brief."',
        '["reasoning.encrypted_content"]',
        '"reasoning.encrypted_content"',
        '{"effort":"low"}',
        "[]",
        '[{"role":"user","content":"hi"}]',
        '"hi"',
        "5",
        '"\\ud800"',
        "true",
    ]
)
ELEMENTS = st.sampled_from(
    [
        '{"role":"user","content":"more"}',
        '{"type":"message","role":"assistant","content":[{"type":"output_text","text":"<think>t</think>a"}]}',
        '{"role":"assistant","content":"<think>t</think>a"}',
        '{"type":"function_call_output","call_id":"c","output":"5"}',
        '{"role":"user","content":"\\ud800"}',
        '{"type":"item_reference","id":"msg_1"}',
        "5",
        "null",
        "{}",
    ]
)


@st.composite
def members(draw: st.DrawFn, key: str) -> str:
    """Members as a client writes them, each followed by a comma."""
    out = ""
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        name = draw(NAMES).replace("HISTORY", key)
        out += f'"{name}"{draw(SPACES)}:{draw(SPACES)}{draw(VALUES)}{draw(SPACES)},{draw(SPACES)}'
    return out


@st.composite
def ends(draw: st.DrawFn, key: str) -> str:
    """What a body writes after the elements it shares: more of them, the list's end, members."""
    out = "".join(f"{draw(SPACES)},{draw(SPACES)}{draw(ELEMENTS)}" for _ in range(draw(st.integers(0, 2))))
    out += f"{draw(SPACES)}]"
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2]))):
        name = draw(NAMES).replace("HISTORY", key)
        out += f'{draw(SPACES)},{draw(SPACES)}"{name}"{draw(SPACES)}:{draw(SPACES)}{draw(VALUES)}'
    return out + draw(SPACES) + "}" + draw(st.sampled_from(["", "", "", "", "", "", " ", "x"]))


@settings(max_examples=examples(150))
@given(surface=st.sampled_from(list(SURFACES)), data=st.data())
def test_what_a_body_writes_around_the_history_it_shares_is_read_as_afresh(surface: str, data: st.DataObject) -> None:
    side = SURFACES[surface]  # type: ignore[index]
    key = "input" if surface == "responses" else "messages"
    first: dict[str, Any] = data.draw(REQUESTS[surface])
    config = data.draw(settings_())
    head = f'{{{data.draw(members(key))}"model":{json.dumps(first["model"])},"max_tokens":9,"x_pad":"{PAD}",'
    head += f'{data.draw(members(key))}"{key}"{data.draw(SPACES)}:{data.draw(SPACES)}[{data.draw(SPACES)}'
    written = f"{data.draw(SPACES)},{data.draw(SPACES)}".join(json.dumps(one) for one in first[key])
    states, record = CarriedStates(), Record()
    for turn in range(data.draw(st.integers(2, 4))):
        body = (head + written + data.draw(ends(key))).encode()
        said = _said(turn, 0, data.draw(st.booleans()))
        afresh = _told_afresh(side, body, config, record, said)
        told, carried = _told_carried(side, body, config, record, said, states)
        assert (told, carried.blobs) == (afresh, Request(side, body).blobs)
        record.entries.update(told[3])
        written += "".join(f",{data.draw(ELEMENTS)}" for _ in range(data.draw(st.integers(0, 2))))


def test_what_is_read_around_the_list_has_the_fields_of_what_a_whole_body_gives() -> None:
    """The head and the tail are read into one struct whose fields the request's struct has, in the
    same order (their values are handed over by position, :func:`~gateway_mw.history.tail.fields`)."""
    from gateway_mw.history import chat, messages, responses_reading

    for module in (chat, messages, responses_reading):
        assert issubclass(module._Part, module._Request)
        assert module._Part.__struct_fields__ == module._Request.__struct_fields__, module.__name__


def test_an_agents_requests_read_the_bytes_before_their_history_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of an agent's requests holds the one before it from its start, so the bytes before its
    history (Codex's instructions, Claude Code's system prompt) are those of the first: the second
    request decodes them, every later one takes what that decode gave (and counts what its decoded
    values hold with the reading that keeps them)."""
    from gateway_mw.history import responses_reading

    side, states = SURFACES["responses"], CarriedStates()
    parts: list[bytes] = []
    decode = responses_reading._decode_part
    monkeypatch.setattr(responses_reading, "_decode_part", lambda part: parts.append(part) or decode(part))
    model = "m" * 1000
    items = [{"role": "user", "content": f"turn {n}", "x_pad": PAD} for n in range(6)]
    heads = []
    for turn in range(2, 6):
        body = json.dumps({"model": model, "instructions": "Be brief. " * 500, "input": items[:turn]}).encode()
        request = Request(side, body, (states, b"scope"))
        request.keep()
        read = request.read
        assert read is not None and read.model == model and read.count == turn
        heads.append([part for part in parts if not part.startswith(b'{"input":[')])
        parts.clear()
    assert [len(decoded) for decoded in heads] == [0, 1, 0, 0]  # read whole, then its head once
    places = read.places()
    assert places.head_read is not None and places.retained >= sys.getsizeof(model) + len(places.segments[-2][0])
