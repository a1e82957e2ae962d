"""Invariants of reading and writing: a body that says nothing goes as it came; edits keep every
other member's bytes and place; reading takes any bytes; and no server is ever given a value it
refuses (the oracle: each server's accepted values, as its sources read them)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw.config import Surface, ThinkExtractConfig
from gateway_mw.controls import ModelInfo, apply_edits, read_fields, read_intent, write_controls
from gateway_mw.history import Request
from gateway_mw.history.carry import CARRIED_BYTES, CarriedStates
from gateway_mw.surfaces.registry import SURFACES as SURFACES_BY_NAME

from ..hypothesis_examples import examples
from .writing import MODELS

SURFACES: list[Surface] = list(SURFACES_BY_NAME)
SERVERS = ["vllm", "sglang", "llamacpp", "ollama", "openai", "anthropic", "generic", "auto"]
EFFORT_WORDS = ["none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra", "", "HIGH"]
FLOATS = st.floats(allow_nan=False, allow_infinity=False)  # JSON has neither
ODD = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), FLOATS, st.text(max_size=5))
TEXT = st.text(max_size=20).filter(lambda t: "/think" not in t and "/no_think" not in t)

LEVEL = st.one_of(st.sampled_from(EFFORT_WORDS), ODD)
BUDGET = st.one_of(st.integers(-10, 50_000), ODD)


@st.composite
def controls(draw: st.DrawFn) -> dict[str, Any]:
    """Any mix of the control fields, valid and not."""
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["reasoning_effort"] = draw(LEVEL)
    if draw(st.booleans()):
        keys = st.fixed_dictionaries(
            {}, optional={"effort": LEVEL, "max_tokens": BUDGET, "enabled": ODD, "exclude": ODD, "summary": ODD}
        )
        out["reasoning"] = draw(st.one_of(keys, ODD))
    if draw(st.booleans()):
        kind = st.sampled_from(["enabled", "disabled", "adaptive", "auto"])
        keys = st.fixed_dictionaries({"type": kind}, optional={"budget_tokens": BUDGET})
        out["thinking"] = draw(st.one_of(keys, ODD))
    if draw(st.booleans()):
        out["output_config"] = draw(st.one_of(st.fixed_dictionaries({}, optional={"effort": LEVEL}), ODD))
    if draw(st.booleans()):
        out["think"] = draw(st.one_of(LEVEL, ODD))
    if draw(st.booleans()):
        switch = st.one_of(st.booleans(), ODD)
        keys = st.fixed_dictionaries(
            {}, optional={"enable_thinking": switch, "thinking": switch, "reasoning_effort": LEVEL, "x": ODD}
        )
        out["chat_template_kwargs"] = draw(st.one_of(keys, ODD))
    return out


FAMILY = st.sampled_from(sorted(MODELS))
INFOS = st.builds(
    ModelInfo,
    thinking=st.sampled_from([None, True, False]),
    version=st.sampled_from(
        [None, (0, 9, 0), (0, 17, 6), (0, 17, 7), (0, 21, 0), (0, 22, 0), (0, 23, 3), (0, 23, 4), (0, 33, 0)]
    ),
)
OPERATOR = st.sampled_from(["default", "off", "on", "minimal", "high", "max", "budget:0", "budget:3000"])


def encoded(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# -- (a) nothing said, nothing written ---------------------------------------------------------


@given(
    st.dictionaries(
        st.text(max_size=8).filter(
            lambda k: (
                k
                not in (
                    "reasoning_effort",
                    "reasoning",
                    "thinking",
                    "output_config",
                    "think",
                    "chat_template_kwargs",
                    "messages",
                )
            )
        ),
        st.one_of(ODD, st.lists(ODD, max_size=3)),
        max_size=5,
    ),
    st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant"]), "content": TEXT})),
    st.sampled_from(SURFACES),
    st.sampled_from(SERVERS),
    FAMILY,
)
def test_a_body_that_says_nothing_goes_as_it_came(
    others: dict[str, Any], messages: list[Any], surface: Surface, server: str, family: str
) -> None:
    body = encoded({"model": MODELS[family], **others, "messages": messages})
    fields = read_fields(body)
    assert fields is not None
    config = ThinkExtractConfig().for_model(MODELS[family])
    side = SURFACES_BY_NAME[surface]
    done = write_controls(read_intent(body, side, fields), fields, side, server, config)
    assert (done.outcome, done.edits) == ("unchanged", {})


# -- (b) edits keep every other member ---------------------------------------------------------

RAW_VALUES = st.sampled_from([b"1", b"1.0e2", b'"\\u00e9"', b'"\\ud83d"', b"[ 1 , 2 ]", b'{"a" : null}', b"true"])


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=6), RAW_VALUES), max_size=6, unique_by=lambda kv: kv[0]),
    st.dictionaries(st.text(min_size=1, max_size=6), st.one_of(st.none(), st.just(b'"x"'), st.just(b"{}")), max_size=3),
)
def test_edits_keep_every_other_member_s_bytes_and_place(
    members: list[tuple[str, bytes]], edits: dict[str, Any]
) -> None:
    """Each value as its bytes; a key as the same string (spelled as msgspec spells it: an escape
    in a key may become the character)."""
    body = b"{" + b",".join(json.dumps(k).encode() + b":" + v for k, v in members) + b"}"
    new = apply_edits(body, edits)
    assert new is not None
    expected = [(k, edits.get(k, v)) for k, v in members if not (k in edits and edits[k] is None)]
    expected += [(k, v) for k, v in edits.items() if v is not None and k not in dict(members)]
    assert new == b"{" + b",".join(msgspec.json.encode(k) + b":" + v for k, v in expected) + b"}"


# -- (c) reading is total -----------------------------------------------------------------------


@given(st.binary(max_size=200), st.sampled_from(SURFACES))
def test_reading_takes_any_bytes(body: bytes, surface: Surface) -> None:
    read_intent(body, SURFACES_BY_NAME[surface])


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), FLOATS, st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20,
)


@given(
    st.one_of(JSON, controls()),
    st.sampled_from(SURFACES),
    st.sampled_from(SERVERS),
    FAMILY,
    INFOS,
)
def test_reading_and_writing_take_any_json(
    value: Any, surface: Surface, server: str, family: str, info: ModelInfo
) -> None:
    body = encoded(value)
    fields = read_fields(body)
    if fields is None:
        assert not isinstance(value, dict)
        return
    side = SURFACES_BY_NAME[surface]
    done = write_controls(read_intent(body, side, fields), fields, side, server, ThinkExtractConfig(), info)
    if done.edits:
        assert apply_edits(body, done.edits) is not None


# -- (d) never a value the server refuses ----------------------------------------------------------

ALL = {"none", "minimal", "low", "medium", "high", "xhigh", "max"}
HARMONY = {"low", "medium", "high"}


def ollama_levels(info: ModelInfo, harmony: bool) -> set[str]:
    """The think levels an Ollama of this version takes (its ThinkValue, and before 0.17.7 its check
    that only a harmony model takes a level)."""
    if harmony:
        return HARMONY
    if info.version is None:
        return HARMONY  # not known: those every version with levels takes
    if info.version < (0, 17, 7):
        return set()
    return HARMONY | {"max"} if info.version >= (0, 22) else HARMONY


def accepted(server: str, surface: Surface, name: str, value: Any, family: str, info: ModelInfo) -> bool:
    """Whether ``server`` takes ``value`` (what the gateway wrote of the top-level member ``name``:
    for an object, the keys it set) on ``surface`` for a model of ``family``."""
    harmony = family == "C"
    efforts = HARMONY if harmony else ALL
    if name == "chat_template_kwargs":
        return all(_template_kwarg(key, item, efforts) for key, item in value.items())
    if name in ("thinking_token_budget", "thinking_budget_tokens"):
        return _count(value)
    if name == "stream":  # a budget the gateway enforces: every endpoint it enforces one on streams
        return value is True
    if name == "stream_options":  # asked of a chat stream, for its usage: no other endpoint takes it
        return surface == "chat" and value == {"include_usage": True}
    if server == "ollama" and surface in ("chat", "responses") and name in ("reasoning_effort", "reasoning"):
        effort = value.get("effort") if isinstance(value, dict) else value
        if effort == "none" or (isinstance(value, dict) and "effort" not in value):
            return True
        return info.thinking is not False and effort in ollama_levels(info, harmony)
    if server == "ollama" and name == "think":
        if value is False:
            return True
        if info.thinking is not True and not harmony:
            return False  # true or a level to a model not known to think may be refused
        return value is True or value in ollama_levels(info, harmony)
    if name == "reasoning_effort":
        return value in efforts
    if name == "reasoning":
        ladder = {"vllm": ALL - {"max", "none"}, "sglang": HARMONY}.get(server, ALL)
        return set(value) <= {"effort"} and value.get("effort", "low") in (ladder & efforts)
    if name == "output_config":
        return set(value) == {"effort"} and value["effort"] in ({"low", "medium", "high", "xhigh", "max"} & efforts)
    if name == "thinking":
        return (
            set(value) <= {"type", "budget_tokens"}
            and value.get("type", "enabled") in ("enabled", "disabled")
            and ("budget_tokens" not in value or _count(value["budget_tokens"]))
        )
    return False  # a member no writer touches


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _template_kwarg(key: str, value: Any, efforts: set[str]) -> bool:
    if key in ("enable_thinking", "thinking"):
        return isinstance(value, bool)
    if key == "thinking_budget":
        return _count(value)
    return key == "reasoning_effort" and value in efforts


def written(before: Any, after: Any) -> Any:
    """What the gateway wrote of a member: an object's keys it set, else the value."""
    if isinstance(after, dict) and isinstance(before, dict):
        return {k: v for k, v in after.items() if k not in before or before[k] != v or type(before[k]) is not type(v)}
    return after


@given(controls(), st.sampled_from(SURFACES), st.sampled_from(SERVERS), FAMILY, INFOS, OPERATOR, st.booleans())
def test_no_server_is_given_a_value_it_refuses(
    said: dict[str, Any], surface: Surface, server: str, family: str, info: ModelInfo, operator: str, pinned: bool
) -> None:
    body = encoded({"model": MODELS[family], **said})
    fields = read_fields(body)
    assert fields is not None
    config = ThinkExtractConfig(reasoning_control=operator, reasoning_control_pinned=pinned).for_model(MODELS[family])
    side = SURFACES_BY_NAME[surface]
    done = write_controls(read_intent(body, side, fields), fields, side, server, config, info)
    if server not in ("vllm", "sglang", "llamacpp", "ollama"):
        assert done.edits == {}
    for name, value in done.edits.items():
        if value is not None:
            wrote = written(said.get(name), msgspec.json.decode(value))
            assert accepted(server, surface, name, wrote, family, info), (name, wrote)


@given(controls(), INFOS, OPERATOR, st.booleans())
def test_a_level_for_gpt_oss_on_ollama_s_messages_is_one_it_reads(
    said: dict[str, Any], info: ModelInfo, operator: str, pinned: bool
) -> None:
    """Ollama's /v1/messages reads ``output_config.effort`` only when ``thinking`` sets nothing, and
    only from v0.23.4 (anthropic/anthropic.go): a level written there for gpt-oss has no enabled or
    disabled ``thinking`` beside it, and none is written for a version known not to read it."""
    body = encoded({"model": MODELS["C"], **said})
    fields = read_fields(body)
    assert fields is not None
    config = ThinkExtractConfig(reasoning_control=operator, reasoning_control_pinned=pinned).for_model(MODELS["C"])
    side = SURFACES_BY_NAME["messages"]
    done = write_controls(read_intent(body, side, fields), fields, side, "ollama", config, info)
    if done.edits.get("output_config") is None:
        return
    assert info.version is None or info.version >= (0, 23, 4)
    sent = apply_edits(body, done.edits)
    assert sent is not None
    thinking = json.loads(sent).get("thinking")
    assert not (isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled")), sent


SPACE = st.sampled_from(["", " ", "\n", "\r\n\t "])


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=6), RAW_VALUES), max_size=5, unique_by=lambda kv: kv[0]),
    st.dictionaries(st.text(min_size=1, max_size=6), st.sampled_from([b'"x"', b"{}", b"[false]"]), min_size=1),
    SPACE,
    SPACE,
)
def test_members_appended_keep_the_whole_body_as_it_came(
    members: list[tuple[str, bytes]], edits: dict[str, bytes], inside: str, after: str
) -> None:
    """Added members go after the last one; every byte of the body (its spacing, its escapes) stays."""
    edits = {k: v for k, v in edits.items() if k not in dict(members)}
    if not edits:
        return
    head = b"{" + b",".join(json.dumps(k).encode() + b" : " + v for k, v in members)
    body = head + inside.encode() + b"}" + after.encode()
    added = b",".join(msgspec.json.encode(k) + b":" + v for k, v in edits.items())
    expected = head + inside.encode() + (b"," if members else b"") + added + b"}" + after.encode()
    assert apply_edits(body, edits, appends=True) == expected


# -- the history's reading and the controls' own read agree -----------------------------------------

SAID = st.sampled_from(["hi", "hi /no_think", "go /think", "/no_think\n", "x /think ", "no_think", "/thinker"])
CONTENT = st.one_of(SAID, st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": SAID}), max_size=2))
ROLE = st.sampled_from(["user", "system", "developer", "assistant", "tool"])


@st.composite
def conversations(draw: st.DrawFn, surface: Surface) -> dict[str, Any]:
    """A request of ``surface`` whose texts may end with a switch, and maybe a control field."""
    turns = draw(st.lists(st.fixed_dictionaries({"role": ROLE, "content": CONTENT}), min_size=1, max_size=5))
    body: dict[str, Any] = {"model": "qwen3-8b", **(draw(controls()) if draw(st.booleans()) else {})}
    if surface == "messages":
        body["messages"] = [t for t in turns if t["role"] in ("user", "assistant")] or [turns[0] | {"role": "user"}]
        if draw(st.booleans()):
            body["system"] = draw(CONTENT)
    elif surface == "responses":
        body["input"] = draw(st.one_of(SAID, st.just([{"type": "message", **t} for t in turns])))
        if draw(st.booleans()):
            body["instructions"] = draw(SAID)
    else:
        body["messages"] = turns
    return body


@given(st.data(), st.sampled_from(SURFACES))
def test_the_history_s_reading_gives_the_intent_the_controls_read(data: st.DataObject, surface: Surface) -> None:
    """The middleware reads the controls from the history side's pass: the same intent as their own read."""
    body = encoded(data.draw(conversations(surface)))
    request = Request(SURFACES_BY_NAME[surface], body)
    assert request.controls is not None
    side = SURFACES_BY_NAME[surface]
    assert read_intent(body, side, request.controls, request.texts()) == read_intent(body, side)


ODD_CONTENT = st.one_of(
    CONTENT,
    st.fixed_dictionaries({"content": SAID}),
    st.fixed_dictionaries({"text": SAID}),
    st.lists(st.fixed_dictionaries({"type": st.just("input_text"), "text": SAID}), max_size=2),
    st.none(),
    st.integers(),
)
ODD_ROLE = st.one_of(ROLE, st.sampled_from(["User", "a-role-much-longer-than-any-role-name"]), st.none(), st.integers())


@st.composite
def odd_message(draw: st.DrawFn, surface: Surface) -> bytes:
    """A message (an item) as a hostile client may write one: a role named twice or not at all, or
    spelled after the content, a content of any type, no object at all, a number out of a double's
    range (valid JSON that no decoder of doubles takes) anywhere."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([b'"x /no_think"', b"5", b"null", b'["/think"]', b"1e400", b"[1e400]"]))
    roles = st.one_of(ODD_ROLE.map(encoded), st.just(b"1e400"))
    members = [(b"role", draw(roles)) for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2])))]
    members.append((b"content", draw(st.one_of(ODD_CONTENT.map(encoded), st.sampled_from(OUT_OF_RANGE)))))
    if surface == "responses" and draw(st.booleans()):
        kinds = st.sampled_from(["message", "function_call_output", "reasoning", "function_call"]).map(encoded)
        members.append((b"type", draw(st.one_of(kinds, st.just(b"1e400")))))
    if draw(st.integers(0, 4)) == 0:
        members.append((b"more", b'{"v":1e400}'))
    members = draw(st.permutations(members))
    return b"{" + b",".join(b'"' + key + b'":' + value for key, value in members) + b"}"


OUT_OF_RANGE = [
    b'[{"type":"text","text":"x /no_think","n":1e400}]',
    b'[{"type":"tool_use","id":"t","name":"n","input":{"v":1e400}}]',
    b"1e400",
    b'{"v":1e400}',
]
"""Contents with a number out of a double's range."""


@st.composite
def odd_bodies(draw: st.DrawFn, surface: Surface) -> bytes:
    """A request of ``surface`` with odd messages, and any surface's text members around them."""
    key = "input" if surface == "responses" else "messages"
    items = draw(st.lists(odd_message(surface), max_size=5))
    members = [(b'"model"', b'"qwen3-8b"'), (encoded(key), b"[" + b",".join(items) + b"]")]
    if surface == "responses" and draw(st.booleans()):
        members[1] = (b'"input"', encoded(draw(SAID)))
    others = [other for other in ("system", "prompt", "instructions", "input", "messages") if other != key]
    members.extend((encoded(other), encoded(draw(ODD_CONTENT))) for other in others if draw(st.integers(0, 3)) == 0)
    members = draw(st.permutations(members))
    return b"{" + b",".join(name + b":" + value for name, value in members) + b"}"


@settings(max_examples=examples(300))
@given(st.data(), st.sampled_from(SURFACES))
def test_the_history_s_reading_of_any_body_gives_the_intent_the_controls_read(
    data: st.DataObject, surface: Surface
) -> None:
    """Whatever a client writes around or in its messages, the history side's reading finds the
    texts the controls' own read finds: the intent does not depend on whether the history is read
    (nor on the body's size, which decides how it is read)."""
    body = data.draw(odd_bodies(surface))
    request = Request(SURFACES_BY_NAME[surface], body)
    side = SURFACES_BY_NAME[surface]
    if request.controls is not None:
        assert read_intent(body, side, request.controls, request.texts()) == read_intent(body, side)


@settings(max_examples=examples(100))
@given(st.data(), st.sampled_from(SURFACES))
def test_an_agent_s_next_request_read_on_from_the_one_before_gives_the_intent_read_alone(
    data: st.DataObject, surface: Surface
) -> None:
    """A long history's next request is read on from the scope's reading of the one before (what they
    share taken, not decoded again): the same intent as the body's own read, whatever either request
    says before or after the messages, in whichever order."""
    key = "input" if surface == "responses" else "messages"
    first, later = data.draw(conversations(surface)), data.draw(conversations(surface))
    long = {"role": "user", "content": "x" * CARRIED_BYTES}
    if surface == "responses":
        long = {"type": "message", **long}
    shared = [long, *(first[key] if isinstance(first[key], list) else [])]
    first[key] = shared
    later[key] = shared + (later[key] if isinstance(later[key], list) else [])
    if data.draw(st.booleans()):  # the same members around the list: the next request goes on from it
        later = {**first, key: later[key]}
    elif data.draw(st.booleans()):  # the list first, as the OpenAI SDK writes a body: read whole, or adopted
        later = {key: later.pop(key), **later}
    # The same bytes around the list (not equal values only: ``0 == False``, but not as JSON).
    continues = list(later) == list(first) and all(encoded(later[k]) == encoded(first[k]) for k in first if k != key)
    side, states = SURFACES_BY_NAME[surface], CarriedStates()
    Request(side, encoded(first), (states, b"scope")).keep()
    body = encoded(later)
    request = Request(side, body, (states, b"scope"))
    if request.read is not None and continues:
        assert request.fresh[0] < len(body) - CARRIED_BYTES  # read on from the one before
    fields = request.controls
    said = read_intent(body, side) if fields is None else read_intent(body, side, fields, request.texts())
    assert said == read_intent(body, side)


def _body(members: list[tuple[bytes, bytes]]) -> bytes:
    return b"{" + b",".join(name + b":" + value for name, value in members) + b"}"


@settings(max_examples=examples(150))
@given(st.data(), st.sampled_from(SURFACES), st.booleans())
def test_an_agent_s_next_request_of_odd_messages_read_on_gives_the_intent_read_alone(
    data: st.DataObject, surface: Surface, texts_read: bool
) -> None:
    """An agent's next request read on from the one before, whatever the messages each adds (a role
    named twice, a content of any type, no object) and whatever the members after the list say: the
    intent is the body's own read, whether the earlier request's texts were read before it was kept
    or not."""
    key = b'"input"' if surface == "responses" else b'"messages"'
    long = encoded({"role": "user", "content": "x" * CARRIED_BYTES})
    shared = [long, *data.draw(st.lists(odd_message(surface), max_size=4))]
    added = data.draw(st.lists(odd_message(surface), min_size=1, max_size=4))
    controls = st.sampled_from([b'"none"', b'"high"', b"5"]).map(lambda value: (b'"reasoning_effort"', value))
    text = SAID.map(lambda said: (b'"system"', encoded(said)))
    after = st.lists(st.one_of(controls, text), max_size=2)
    head = [(b'"model"', b'"qwen3-8b"')]
    first = _body([*head, (key, b"[" + b",".join(shared) + b"]"), *data.draw(after)])
    later = _body([*head, (key, b"[" + b",".join(shared + added) + b"]"), *data.draw(after)])
    side, states = SURFACES_BY_NAME[surface], CarriedStates()
    kept = Request(side, first, (states, b"scope"))
    if texts_read and kept.read is not None:
        kept.read.texts()
    kept.keep()
    request = Request(side, later, (states, b"scope"))
    fields = request.controls
    said = read_intent(later, side) if fields is None else read_intent(later, side, fields, request.texts())
    assert said == read_intent(later, side)
