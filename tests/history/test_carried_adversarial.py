"""A carried reading under a hostile client and under real agents: whatever a scope sends, in whatever
order, each request is told what the same request read afresh (``Request(side, body)``, no carry) is
told — its record keys, its rewritten body under the record its scope's earlier answers filled, its
answer's record entries, its reasoning controls — and what is kept stays within its bound.

The requests come as agents send them: a conversation goes on, rewinds, is edited in the middle, has
a message dropped, a cache marker moved (Claude Code), its keys rebuilt in another order, its body
spelled with other whitespace, its model or the settings changed, a retry sent again, and two or more
conversations (an agent and its subagents) interleaved under one key, reading one record, with tool
call ids that repeat across conversations (Kimi K2's ``functions.NAME:0``). Requests that are in
flight at once are modelled by interleaving their steps (keys, transform, keep, record entries) in
every order the middleware allows, so that no test depends on a thread's timing."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import tracemalloc
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import THINKEXTRACT_RECORD, incoming, setup
from gateway_mw.channels import Said
from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import Recalled, Request, record_entries, record_keys, transform_request
from gateway_mw.history.carry import CARRIED_BYTES, CarriedStates
from gateway_mw.marks import encode_blob
from gateway_mw.profiles import ModelProfile
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples
from .strategies import MODELS, chat_requests, configs, messages_requests, responses_requests
from .test_carried_agents_http import _carry_in
from .tracing import traced

REQUESTS = {
    "chat": chat_requests(),
    "ollama": chat_requests(),
    "messages": messages_requests(),
    "responses": responses_requests(),
}
"""Each surface's requests (a surface of the registry without one here fails every test below)."""

PAD = "." * CARRIED_BYTES  # a body this large carries its reading
KIMI = "functions.get_weather:0"  # Kimi K2 numbers its calls from 0 in every conversation


def _key(surface: str) -> str:
    return "input" if surface == "responses" else "messages"


def _spelled(doc: dict[str, Any], spelling: int) -> bytes:
    """``doc`` as JSON, spelled one of the ways clients spell it (whitespace, escapes)."""
    if spelling == 0:
        return json.dumps(doc).encode()
    if spelling == 1:
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    if spelling == 2:
        return json.dumps(doc, indent=1).encode()
    return json.dumps(doc, separators=(" ,", " : ")).encode()


def _body(surface: str, model: str, history: list[Any], spelling: int, extra: dict[str, Any]) -> bytes:
    doc: dict[str, Any] = {"model": model, _key(surface): history, **extra, "x_pad": PAD}
    if surface == "messages":
        doc.setdefault("max_tokens", 64)
    return _spelled(doc, spelling)


@st.composite
def settings_(draw: st.DrawFn) -> ThinkExtractConfig:
    """Settings as operators write them: the global ones, or profiles giving one model another plan."""
    config = draw(configs())
    if draw(st.booleans()):
        profile = ModelProfile(
            match=(draw(MODELS),),
            history_reasoning=draw(st.sampled_from(["field", "inline", "strip", "pass"])),
            history_scope=draw(st.sampled_from(["all", "current_turn", "tool_turns"])),
        )
        config = config.replace(profiles=(profile,))
    return config


def _marker_moved(surface: str, history: list[Any]) -> list[Any]:
    """Claude Code's cache marker: on the last message only (its last block, or the message)."""
    out: list[Any] = []
    for at, message in enumerate(history):
        if not isinstance(message, dict):
            out.append(message)
            continue
        message = {k: v for k, v in message.items() if k != "cache_control"}
        content = message.get("content")
        if isinstance(content, list):
            content = [
                {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
                for block in content
            ]
            message["content"] = content
        if at == len(history) - 1:
            if isinstance(content, list) and content and isinstance(content[-1], dict):
                content[-1] = {**content[-1], "cache_control": {"type": "ephemeral"}}
            else:
                message["cache_control"] = {"type": "ephemeral"}
        out.append(message)
    return out


SYSTEMS = st.sampled_from(
    [
        "Be brief.",
        "Be thorough.",
        [{"type": "text", "text": "Be brief."}],
        [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        None,
    ]
)


@st.composite
def heads(draw: st.DrawFn, surface: str) -> dict[str, Any]:
    """What stands before the history, as clients change it between requests: the messages' system
    prompt (its cache marker moved too), Responses' instructions; chat's is a message."""
    field = {"messages": "system", "responses": "instructions"}.get(surface)
    if field is None or draw(st.booleans()):
        return {}
    value = draw(SYSTEMS)
    if surface == "responses" and isinstance(value, list):
        value = "Be brief."
    return {field: value}


def _reordered(message: Any) -> Any:
    return dict(reversed(message.items())) if isinstance(message, dict) else message


@st.composite
def next_history(draw: st.DrawFn, surface: str, history: list[Any]) -> list[Any]:
    """What an agent sends next, from what it sent last."""
    more: list[Any] = draw(REQUESTS[surface])[_key(surface)]
    edit = draw(st.sampled_from(["append", "append", "append", "rewind", "edit", "drop", "reorder", "marker", "same"]))
    at = draw(st.integers(0, max(len(history) - 1, 0)))
    if edit == "append":
        return history + more
    if edit == "rewind":
        return history[:at] + more
    if edit == "edit" and history:
        return history[:at] + more[:1] + history[at + 1 :]
    if edit == "drop" and history:
        return history[:at] + history[at + 1 :] + more
    if edit == "reorder" and history:
        return [*history[:at], _reordered(history[at]), *history[at + 1 :], *more]
    if edit == "marker":
        return _marker_moved(surface, history + more)
    return list(history)


def _said(turn: int, conversation: int, calls: bool) -> list[Said]:
    """An answer whose reasoning names its conversation (a Kimi K2 call id, the same in every one)."""
    text = f"<think>Reasoning {turn} of conversation {conversation}.</think>Answer {turn}."
    if calls:
        return [Said(original=text, call_ids=(KIMI,), calls=('get_weather {"city":"Paris"}',))]
    return [Said(original=text)]


class Record:
    """A scope's reasoning record: what the answers' entries put, what a request's keys find."""

    def __init__(self) -> None:
        self.entries: dict[str, Recalled] = {}

    def recall(self, keys: list[str]) -> dict[str, Recalled]:
        return {key: self.entries[key] for key in keys if key in self.entries}


def _told_afresh(
    side: Any, body: bytes, config: ThinkExtractConfig, record: Record, said: list[Said]
) -> tuple[Any, ...]:
    """All a request read with no carry is told, as the middleware asks it."""
    request = Request(side, body)
    keys = record_keys(side, request, config)
    recall = record.recall(keys)
    return (
        keys,
        record_keys(side, request),
        transform_request(side, request, config, recall),
        record_entries(side, request, said, config),
        request.controls,
        request.texts(),
        request.model,
        request.count,
    )


def _told_carried(
    side: Any, body: bytes, config: ThinkExtractConfig, record: Record, said: list[Said], states: CarriedStates
) -> tuple[tuple[Any, ...], Request]:
    """All a request read with the scope's carried readings is told, as the middleware asks it (its
    reading then kept), in the order of :func:`_told_afresh`; and the request."""
    carried = Request(side, body, (states, b"scope"))
    keys = record_keys(side, carried, config)
    new = transform_request(side, carried, config, record.recall(keys))
    carried.keep(new)
    told = (keys, record_keys(side, carried), new, record_entries(side, carried, said, config))
    return (*told, carried.controls, carried.texts(), carried.model, carried.count), carried


@settings(max_examples=examples(60))
@given(surface=st.sampled_from(list(SURFACES)), data=st.data())
def test_a_scopes_requests_in_any_sequence_are_told_what_reading_each_afresh_does(
    surface: str, data: st.DataObject
) -> None:
    """Several conversations of one key, interleaved, each going on, rewinding, edited, its marker
    moved, its keys reordered, its body spelled otherwise, its model and settings changed, filling
    and reading one record: every request is told what it is told read afresh."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    record = Record()
    conversations: list[tuple[str, list[Any]]] = []
    config = data.draw(settings_())
    for turn in range(data.draw(st.integers(2, 6))):
        which = data.draw(st.integers(0, len(conversations)))
        if which == len(conversations):  # a new conversation: a subagent, maybe with the same first message
            first = data.draw(REQUESTS[surface])
            start = first[_key(surface)]
            if data.draw(st.booleans()) and conversations:
                start = conversations[0][1][:1] + start
            conversations.append((first["model"], start))
        else:
            model, history = conversations[which]
            if data.draw(st.integers(0, 4)) == 0:
                model = data.draw(MODELS)
            conversations[which] = (model, data.draw(next_history(surface, history)))
        model, history = conversations[which]
        if data.draw(st.integers(0, 3)) == 0:
            config = data.draw(settings_())
        body = _body(surface, model, history, data.draw(st.integers(0, 3)), data.draw(heads(surface)))
        said = _said(turn, which, data.draw(st.booleans()))
        afresh = _told_afresh(side, body, config, record, said)
        told, _ = _told_carried(side, body, config, record, said, states)
        assert told == afresh
        record.entries.update(told[3])
        assert states.size <= states.readings.max_bytes


# -- requests in flight at once: each step of each in any order the middleware allows -------------

STEPS = ("read", "keys", "transform", "keep", "entries")


@st.composite
def interleavings(draw: st.DrawFn, requests: int) -> list[int]:
    """The order in which ``requests`` requests take their steps (each its own in order)."""
    left = [len(STEPS)] * requests
    order: list[int] = []
    while any(left):
        which = draw(st.sampled_from([at for at, n in enumerate(left) if n]))
        order.append(which)
        left[which] -= 1
    return order


@settings(max_examples=examples(60))
@given(surface=st.sampled_from(list(SURFACES)), data=st.data(), config=settings_())
def test_requests_of_one_scope_in_flight_at_once_are_each_told_what_reading_afresh_does(
    surface: str, data: st.DataObject, config: ThinkExtractConfig
) -> None:
    """An agent's next request read while its previous one is still being answered (its reading kept,
    its answer's entries not yet made, which hash its whole conversation and count it again), a retry
    sent twice at once, subagents reading and keeping at once: whatever order their steps take."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    record = Record()
    base = data.draw(REQUESTS[surface])
    model, history = base["model"], base[_key(surface)]
    bodies: list[bytes] = [_body(surface, model, history, 0, {})]  # a request before, already answered
    for _ in range(data.draw(st.integers(2, 3))):
        if data.draw(st.booleans()):
            history = data.draw(next_history(surface, history))
        bodies.append(_body(surface, model, history, 0, {}))
    said = [_said(turn, 0, data.draw(st.booleans())) for turn in range(len(bodies))]
    first = Request(side, bodies[0], (states, b"scope"))
    new = transform_request(side, first, config, record.recall(record_keys(side, first, config)))
    first.keep(new)
    record.entries.update(record_entries(side, first, said[0], config))
    # What each request is told afresh, under the record as it is when its keys are asked for.
    requests: list[Request | None] = [None] * (len(bodies) - 1)
    told: list[dict[str, Any]] = [{} for _ in requests]
    expected: list[dict[str, Any]] = [{} for _ in requests]
    for which in data.draw(interleavings(len(requests))):
        step = STEPS[_taken(told[which], requests[which])]
        body, config_now = bodies[which + 1], config
        if step == "read":
            requests[which] = Request(side, body, (states, b"scope"))
            continue
        request = requests[which]
        assert request is not None
        if step == "keys":
            told[which]["keys"] = record_keys(side, request, config_now)
            told[which]["recall"] = record.recall(told[which]["keys"])
            afresh = Request(side, body)
            expected[which]["keys"] = record_keys(side, afresh, config_now)
            expected[which]["new"] = transform_request(side, afresh, config_now, told[which]["recall"])
        elif step == "transform":
            told[which]["new"] = transform_request(side, request, config_now, told[which]["recall"])
        elif step == "keep":
            request.keep(told[which]["new"])
            told[which]["keep"] = True
        else:
            told[which]["entries"] = record_entries(side, request, said[which + 1], config_now)
            expected[which]["entries"] = record_entries(side, Request(side, body), said[which + 1], config_now)
            record.entries.update(told[which]["entries"])
    for done, wanted in zip(told, expected, strict=True):
        assert (done["keys"], done["new"], done["entries"]) == (wanted["keys"], wanted["new"], wanted["entries"])
    assert states.size <= states.readings.max_bytes


def _taken(told: dict[str, Any], request: Request | None) -> int:
    """How many steps a request took (the next one's index in :data:`STEPS`)."""
    if request is None:
        return 0
    return 1 + sum(name in told for name in ("keys", "new", "keep", "entries"))


# -- what is kept stays within its bound, whatever the body holds -----------------------------------


def _counted_and_held(surface: str, body: bytes) -> tuple[int, int]:
    """The bytes a kept reading of ``body`` is counted at, and those it holds (its body, and all that
    its request made and left alive), read and kept as the middleware does."""
    side = SURFACES[surface]  # type: ignore[index]
    config = ThinkExtractConfig(upstream_server="vllm")

    def kept(states: CarriedStates) -> None:
        request = Request(side, body, (states, b"scope"))
        record_keys(side, request, config)
        request.keep(transform_request(side, request, config))
        record_entries(side, request, _said(0, 0, False), config)

    states, made = traced(kept)
    return states.size, (len(body) if states.size else 0) + made  # the body, when kept


def _short_history(surface: str) -> list[Any]:
    return [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "<think>Look it up.</think>Sunny."},
        {"role": "user", "content": "Tomorrow?"},
    ]


NOTHING_HELD = 64 << 10
"""What a request that is not kept may leave allocated: the process's caches it filled (a table at its
bound, filled by the tests before, may replace an entry and grow), none of its body (these bodies are
about 1.2 MB, and their decoded values many times that)."""

HOSTILE_MODELS = {
    "empty-lists": [[] for _ in range(300_000)],  # 3 bytes each in the body, 64 once decoded
    "long-string": "m" * 1_000_000,  # held decoded, and again in the digest's head
}


@pytest.mark.parametrize("model", list(HOSTILE_MODELS))
@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_reading_whose_model_is_no_model_name_is_counted_at_no_less_than_it_holds_or_not_kept(
    surface: str, model: str
) -> None:
    body = json.dumps({"model": HOSTILE_MODELS[model], _key(surface): _short_history(surface)}).encode()
    counted, held = _counted_and_held(surface, body)
    if model == "empty-lists":  # no client names its model so: not kept, and nothing of it held
        assert (counted, held < NOTHING_HELD) == (0, True)
    else:
        assert counted >= held


@pytest.mark.parametrize(("surface", "field"), [("messages", "system"), ("responses", "instructions")])
def test_a_kept_reading_whose_system_prompt_is_long_is_counted_at_no_less_than_it_holds(
    surface: str, field: str
) -> None:
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "Tomorrow?"},
    ]
    doc = {"model": "qwen3-8b", field: "Be brief. " * 100_000, _key(surface): history, "max_tokens": 64}
    counted, held = _counted_and_held(surface, json.dumps(doc).encode())
    assert counted >= held


def test_a_responses_reading_whose_include_is_no_short_list_of_names_is_not_kept() -> None:
    include = ["reasoning.encrypted_content", *([] for _ in range(300_000))]
    body = json.dumps({"model": "qwen3-8b", "include": include, "input": _short_history("responses")}).encode()
    counted, held = _counted_and_held("responses", body)
    assert (counted, held < NOTHING_HELD) == (0, True)


@pytest.mark.parametrize("surface", ["chat", "ollama"])
def test_a_kept_chat_reading_whose_messages_have_many_keys_is_counted_at_no_less_than_it_holds(surface: str) -> None:
    history = _short_history(surface)
    history[0] = {**history[0], **{f"k{n}": 0 for n in range(100_000)}}
    body = json.dumps({"model": "qwen3-8b", "messages": history}).encode()
    counted, held = _counted_and_held(surface, body)
    assert counted >= held


def test_the_readings_kept_hold_no_more_than_their_bound() -> None:
    """Clients under several keys (or none: one scope) send bodies whose `model` is a long list: the
    readings the process keeps, at most ``max_bytes`` as counted, hold at most that much."""
    side = SURFACES["chat"]
    config = ThinkExtractConfig(upstream_server="vllm")
    states = CarriedStates(max_bytes=2 << 20)
    history = _short_history("chat")
    bodies = [
        json.dumps(
            {"model": [[] for _ in range(100_000)], "messages": [*history, {"role": "user", "content": str(n)}]}
        ).encode()
        for n in range(8)
    ]
    gc.collect()
    tracemalloc.start()
    try:
        for n, body in enumerate(bodies):
            request = Request(side, body, (states, b"key %d" % n))
            request.keep(transform_request(side, request, config))
            del request
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    kept = sum(
        len(reading.body) for scope in (b"key %d" % n for n in range(8)) for _, reading in states.readings.of(scope)
    )
    assert (states.size <= states.readings.max_bytes, kept + held <= states.readings.max_bytes) == (True, True)


# -- an agent and its subagents under one key -------------------------------------------------------

SHARED_FIRST = "You are a coding agent. Follow the repository's conventions. " * 600  # 36 KB


def _subagent(surface: str, task: str, turns: int) -> bytes:
    """A conversation that begins as every conversation of its application does (a system message,
    or a first message of context as Claude Code and Codex send), then its own task and ``turns``
    tool calls."""
    result = "ok " * 50
    first: dict[str, Any] = {"role": "system" if surface in ("chat", "ollama") else "user", "content": SHARED_FIRST}
    history: list[Any] = [first, {"role": "user", "content": task}]
    for n in range(turns):
        if surface == "responses":
            history += [
                {"type": "function_call", "call_id": f"c{n}", "name": "grep", "arguments": "{}"},
                {"type": "function_call_output", "call_id": f"c{n}", "output": result},
            ]
        elif surface == "messages":
            history += [
                {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "grep", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": result}]},
            ]
        else:
            call = {"id": f"c{n}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            history += [
                {"role": "assistant", "content": "<think>Search.</think>", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{n}", "content": result},
            ]
    return json.dumps({"model": "qwen3-8b", _key(surface): history, "max_tokens": 64}).encode()


@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_subagent_that_shares_its_first_message_with_its_agent_leaves_the_agents_reading_kept(
    surface: str,
) -> None:
    """An agent and a subagent it runs under the same key begin alike (the application's system
    prompt, or its first message of context) and go on apart: each keeps its own reading (a scope keeps
    several conversations'), and the agent's next request goes on from all of its own."""
    side = SURFACES[surface]  # type: ignore[index]
    config = ThinkExtractConfig(upstream_server="vllm")
    states = CarriedStates()

    def answered(body: bytes) -> Request:
        request = Request(side, body, (states, b"scope"))
        request.keep(transform_request(side, request, config, {}))
        return request

    agent = answered(_subagent(surface, "Fix the failing test.", 6))
    subagent = answered(_subagent(surface, "Find where the config is read.", 3))
    assert [kept for _, kept in states.readings.of(b"scope")] == [agent.read, subagent.read]
    going_on = Request(side, _subagent(surface, "Fix the failing test.", 7), (states, b"scope"))
    assert going_on._carried is not None and going_on._carried[2] == (side, agent.read)


# -- over real HTTP: two conversations of one key, interleaved, through the middleware --------------

PATHS = {
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "responses": "/v1/responses",
    "ollama": "/api/chat",
}
ARGS = '{"city":"Paris"}'
SYSTEM = "Be brief. " + "." * CARRIED_BYTES  # every body carries its reading


def _thought(conversation: str, turn: int) -> str:
    return f"{conversation} thinks at turn {turn}."


def _upstream_answer(surface: str, model: str, conversation: str, turn: int, calls: bool) -> dict[str, Any]:
    """What the upstream answers: its reasoning (naming its conversation) in the model's tags, maybe
    a tool call with Kimi K2's id, the same in every conversation."""
    text = f"<think>{_thought(conversation, turn)}</think>Answer {turn}."
    if surface == "messages":
        content: list[Any] = [{"type": "text", "text": text}]
        if calls:
            content.append({"type": "tool_use", "id": KIMI, "name": "get_weather", "input": json.loads(ARGS)})
        return {
            "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if calls else "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1},
        }  # fmt: skip
    if surface == "responses":
        part = {"type": "output_text", "text": text, "annotations": []}
        output: list[Any] = [{"type": "message", "id": "msg_up", "role": "assistant", "content": [part]}]
        if calls:
            output.append(
                {"type": "function_call", "id": "fc_1", "call_id": KIMI, "name": "get_weather", "arguments": ARGS}
            )
        return {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": model,
            "status": "completed",
            "output": output,
        }
    if surface == "ollama":
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [{"function": {"name": "get_weather", "arguments": json.loads(ARGS)}}]
        return {
            "model": model,
            "created_at": "2026-12-01T10:00:00Z",
            "message": message,
            "done": True,
            "done_reason": "stop",
        }
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": KIMI, "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
        ]
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    return {"id": "c", "object": "chat.completion", "created": 1, "model": model, "choices": [choice]}


def _sent_back(surface: str, conversation: str, turn: int, calls: bool, shape: str) -> list[Any]:
    """The answer as the agent sends it back (``dropped``: without its reasoning, which the record
    holds; ``tagged``; ``field``: in the surface's own carrier), and what it says next."""
    thought = _thought(conversation, turn)
    text = f"<think>{thought}</think>Answer {turn}." if shape == "tagged" else f"Answer {turn}."
    question = f"And then, {conversation}?"
    if surface == "messages":
        content: list[Any] = [{"type": "text", "text": text}]
        if shape == "field":
            content.insert(0, {"type": "thinking", "thinking": thought, "signature": "sig"})
        if calls:
            content.append({"type": "tool_use", "id": KIMI, "name": "get_weather", "input": json.loads(ARGS)})
        after: Any = [{"type": "tool_result", "tool_use_id": KIMI, "content": "Sunny."}] if calls else question
        return [{"role": "assistant", "content": content}, {"role": "user", "content": after}]
    if surface == "responses":
        items: list[Any] = []
        if shape == "field":  # Codex: the reasoning item as given, its text in the gateway's blob
            items.append({"type": "reasoning", "summary": [], "encrypted_content": encode_blob(thought)})
        part = {"type": "output_text", "text": text, "annotations": []}
        items.append({"type": "message", "role": "assistant", "content": [part]})
        if calls:
            items.append({"type": "function_call", "call_id": KIMI, "name": "get_weather", "arguments": ARGS})
            return [*items, {"type": "function_call_output", "call_id": KIMI, "output": "Sunny."}]
        return [*items, {"role": "user", "content": question}]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if shape == "field":
        message["thinking" if surface == "ollama" else "reasoning_content"] = thought
    if calls and surface == "ollama":
        message["tool_calls"] = [{"function": {"name": "get_weather", "arguments": json.loads(ARGS)}}]
        return [message, {"role": "tool", "content": "Sunny.", "tool_name": "get_weather"}]
    if calls:
        message["tool_calls"] = [
            {"id": KIMI, "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
        ]
        return [message, {"role": "tool", "tool_call_id": KIMI, "content": "Sunny."}]
    return [message, {"role": "user", "content": question}]


Sent = tuple[str, int, bool, list[Any]]
"""One request: its conversation, its turn, whether the upstream calls a tool, its history."""


@st.composite
def two_agents(draw: st.DrawFn, surface: str) -> list[Sent]:
    """Two conversations of one key, interleaved: each goes on, now and then rewinds, has its cache
    marker moved or its keys rebuilt in another order."""
    histories: dict[str, list[Any]] = {}
    for name in ("alice", "bob"):
        start: list[Any] = [{"role": "user", "content": f"Weather for {name}?"}]
        if surface in ("chat", "ollama"):
            start.insert(0, {"role": "system", "content": SYSTEM})
        histories[name] = start
    sent: list[Sent] = []
    for turn in range(draw(st.integers(3, 7))):
        name = draw(st.sampled_from(["alice", "bob"]))
        calls = draw(st.booleans())
        sent.append((name, turn, calls, list(histories[name])))
        history = histories[name]
        event = draw(st.sampled_from(["none", "none", "none", "rewind", "reorder", "marker"]))
        if event == "rewind" and len(history) > 3:
            history = history[: draw(st.integers(2, len(history) - 1))]
        elif event == "reorder":
            history = [_reordered(message) for message in history]
        elif event == "marker" and surface == "messages":
            history = _marker_moved(surface, history)
        shape = draw(st.sampled_from(["dropped", "tagged", "field"]))
        histories[name] = history + _sent_back(surface, name, turn, calls, shape)
    return sent


async def _received(
    surface: str, config: ThinkExtractConfig, model: str, sent: list[Sent], carried: bool
) -> list[bytes]:
    """The bodies the handler receives for ``sent`` (``carried``: the scope's readings carried from
    one request to the next; else each request finds none)."""
    seen: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.read())
        conversation, turn = request.headers["x-conversation"], int(request.headers["x-turn"])
        answer = _upstream_answer(surface, model, conversation, turn, request.headers["x-calls"] == "1")
        return web.json_response(answer)

    app = web.Application()
    setup(app, config)
    app.router.add_post(PATHS[surface], handler)
    server = TestServer(app)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as session:
            for conversation, turn, calls, history in sent:
                if not carried:
                    _carry_in(CarriedStates())
                headers = {
                    "Authorization": "Bearer sk-one-key",
                    "x-conversation": conversation,
                    "x-turn": str(turn),
                    "x-calls": "1" if calls else "0",
                }
                body: dict[str, Any] = {"model": model, _key(surface): history}
                if surface == "messages":
                    body.update(system=SYSTEM, max_tokens=64)
                elif surface == "responses":
                    body.update(instructions=SYSTEM, include=["reasoning.encrypted_content"], store=False)
                elif surface == "ollama":
                    body.update(stream=False)
                async with session.post(server.make_url(PATHS[surface]), json=body, headers=headers) as resp:
                    assert resp.status == 200
                    await resp.read()
                await incoming.entries_handed_over()
                await app[THINKEXTRACT_RECORD].drain()
    finally:
        await server.close()
    return seen


@settings(max_examples=examples(25))
@given(
    data=st.data(),
    surface=st.sampled_from(list(PATHS)),
    model=st.sampled_from(["kimi-k2-thinking", "qwen3-8b", "llama-3.1-8b", "gpt-oss-20b"]),
    config=configs(),
)
def test_two_conversations_of_one_key_reach_the_handler_as_they_do_without_carried_readings(
    data: st.DataObject, surface: str, model: str, config: ThinkExtractConfig
) -> None:
    """Every body the handler receives is the one it receives when no reading is carried, and no
    conversation is given the other's reasoning (their tool calls' ids are the same)."""
    sent = data.draw(two_agents(surface))
    config = config.replace(messages_policy="unsigned")  # the messages surface on, its blocks unsigned
    kept = _carry_in(CarriedStates())
    try:
        with_carry = asyncio.run(_received(surface, config, model, sent, carried=True))
        without = asyncio.run(_received(surface, config, model, sent, carried=False))
    finally:
        _carry_in(kept)
    assert with_carry == without
    for (conversation, *_), body in zip(sent, with_carry, strict=True):
        other = "bob" if conversation == "alice" else "alice"
        assert f"{other} thinks".encode() not in body


@pytest.mark.parametrize("model", ["kimi-k2-thinking", "llama-3.1-8b"])
@pytest.mark.parametrize("surface", list(PATHS))
def test_each_conversation_of_one_key_gets_its_own_reasoning_back_from_a_carried_reading(
    surface: str, model: str
) -> None:
    """Alice's and Bob's agents call a tool with the same id (Kimi K2's), then send the calls back
    without their reasoning: each request, read on from the scope's kept readings, is given its own
    conversation's reasoning from the record, and the handler receives what it does with no carry."""

    def start(name: str) -> list[Any]:
        history: list[Any] = [{"role": "user", "content": f"Weather for {name}?"}]
        return [{"role": "system", "content": SYSTEM}, *history] if surface in ("chat", "ollama") else history

    alice, bob = start("alice"), start("bob")
    sent: list[Sent] = [("alice", 0, True, alice), ("bob", 1, True, bob)]
    sent += [
        ("alice", 2, False, alice + _sent_back(surface, "alice", 0, True, "dropped")),
        ("bob", 3, False, bob + _sent_back(surface, "bob", 1, True, "dropped")),
    ]
    config = ThinkExtractConfig(messages_policy="unsigned")
    kept = _carry_in(CarriedStates())
    try:
        with_carry = asyncio.run(_received(surface, config, model, sent, carried=True))
        states = _carry_in(CarriedStates())
        without = asyncio.run(_received(surface, config, model, sent, carried=False))
    finally:
        _carry_in(kept)
    assert (len(states.readings._scopes), states.size > 0) == (1, True)  # one key, its readings kept
    assert with_carry == without
    restored = [(b"alice thinks at turn 0." in body, b"bob thinks at turn 1." in body) for body in with_carry]
    assert restored == [(False, False), (False, False), (True, False), (False, True)]


# -- the same values spelled otherwise, the same bytes on other surfaces, bodies that leave --------


def _shadowed(item: Any) -> str:
    """``item`` as JSON with its first key written twice, another value first: a decoder keeps the
    last, so that it is the same value as ``item`` (in the same key order), in other bytes."""
    spelled = json.dumps(item)
    if not isinstance(item, dict) or not item:
        return spelled
    return "{" + json.dumps(next(iter(item))) + ': "shadowed", ' + spelled[1:]


def _with_shadows(surface: str, model: str, history: list[Any], shadowed: list[bool]) -> bytes:
    items = [_shadowed(item) if shadowed[at % len(shadowed)] else json.dumps(item) for at, item in enumerate(history)]
    head = {"model": model, "max_tokens": 64} if surface == "messages" else {"model": model}
    return (json.dumps(head)[:-1] + f', "{_key(surface)}": [' + ", ".join(items) + f'], "x_pad": "{PAD}"}}').encode()


@settings(max_examples=examples(60))
@given(
    surface=st.sampled_from(list(SURFACES)),
    data=st.data(),
    shadows=st.tuples(st.lists(st.booleans(), min_size=1, max_size=4), st.lists(st.booleans(), min_size=1, max_size=4)),
    config=settings_(),
)
def test_messages_with_duplicate_keys_are_told_what_reading_afresh_does(
    surface: str, data: st.DataObject, shadows: tuple[list[bool], list[bool]], config: ThinkExtractConfig
) -> None:
    """A message whose first key comes twice (the value kept is the last) is the same value as the
    message written once: a later request that writes the earlier one's messages so, or the other
    way round, is told what it is told afresh."""
    side = SURFACES[surface]  # type: ignore[index]
    earlier, more = data.draw(REQUESTS[surface]), data.draw(REQUESTS[surface])
    history = earlier[_key(surface)]
    first_body = _with_shadows(surface, earlier["model"], history, shadows[0])
    later_body = _with_shadows(surface, earlier["model"], history + more[_key(surface)], shadows[1])
    states, record = CarriedStates(), Record()
    first = Request(side, first_body, (states, b"scope"))
    first.keep(transform_request(side, first, config, record.recall(record_keys(side, first, config))))
    record.entries.update(record_entries(side, first, _said(0, 0, True), config))
    afresh = _told_afresh(side, later_body, config, record, _said(1, 0, False))
    carried = Request(side, later_body, (states, b"scope"))
    keys = record_keys(side, carried, config)
    new = transform_request(side, carried, config, record.recall(keys))
    told = (keys, record_keys(side, carried), new, record_entries(side, carried, _said(1, 0, False), config))
    assert (*told, carried.controls, carried.texts(), carried.model, carried.count) == afresh


@settings(max_examples=examples(60))
@given(
    request=chat_requests(),
    surfaces=st.lists(st.sampled_from(list(SURFACES)), min_size=2, max_size=4),
    config=settings_(),
)
def test_the_same_bytes_read_by_other_surfaces_are_each_told_what_reading_afresh_does(
    request: dict[str, Any], surfaces: list[str], config: ThinkExtractConfig
) -> None:
    """One body, its history under both keys (``messages`` and ``input``), sent to every surface under
    one key: each reading is its surface's own, as afresh."""
    body = json.dumps({**request, "input": request["messages"], "max_tokens": 64, "x_pad": PAD}).encode()
    states, record = CarriedStates(), Record()
    for turn, surface in enumerate(surfaces):
        side = SURFACES[surface]  # type: ignore[index]
        said = _said(turn, 0, turn % 2 == 0)
        afresh = _told_afresh(side, body, config, record, said)
        told, _ = _told_carried(side, body, config, record, said, states)
        assert told == afresh
        record.entries.update(told[3])


@pytest.mark.parametrize("surface", ["chat", "ollama"])
def test_a_chat_body_read_in_two_passes_goes_on_from_one_read_in_one(surface: str) -> None:
    """A chat body over a megabyte is read in two passes (its outline, then each message): a request
    that goes on from one read in a single pass, and the next from it, are told what they are afresh."""
    side = SURFACES[surface]  # type: ignore[index]
    config = ThinkExtractConfig(upstream_server="vllm")
    states, record = CarriedStates(), Record()
    result = "18°C, sunny. " * 2000
    history: list[Any] = [{"role": "user", "content": "Weather?"}]
    for turns in (2, 60, 62):
        while len(history) < 1 + 2 * turns:
            n = len(history) // 2
            call = {"id": f"c{n}", "type": "function", "function": {"name": "w", "arguments": "{}"}}
            history += [
                {"role": "assistant", "content": "<think>I call.</think>", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{n}", "content": result},
            ]
        body = json.dumps({"model": "qwen3-8b", "messages": history}).encode()
        said = _said(turns, 0, True)
        afresh = _told_afresh(side, body, config, record, said)
        told, _ = _told_carried(side, body, config, record, said, states)
        assert told == afresh
        record.entries.update(told[3])
    assert len(body) > 1 << 20


@settings(max_examples=examples(40))
@given(surface=st.sampled_from(list(SURFACES)), data=st.data())
def test_a_body_whose_reading_is_no_longer_kept_is_held_by_nothing(surface: str, data: st.DataObject) -> None:
    """An agent's requests, going on, rewinding, edited, under changing settings: once a request is
    done, its body is held only by its reading while that is kept, and by the reading
    of a request that continued it while that is kept (the messages taken as they were read: the
    kept reading names the bodies its values view); what other later readings took holds none of it."""
    side = SURFACES[surface]  # type: ignore[index]
    states, record = CarriedStates(per_scope=2), Record()
    first = data.draw(REQUESTS[surface])
    model, history = first["model"], first[_key(surface)]
    bodies: list[bytes] = []
    held: list[int] = []
    for turn in range(data.draw(st.integers(2, 6))):
        if turn:
            history = data.draw(next_history(surface, history))
        config = data.draw(settings_())
        bodies.append(_body(surface, model, history, data.draw(st.integers(0, 3)), {}))
        held.append(sys.getrefcount(bodies[-1]))
        request = Request(side, bodies[-1], (states, b"scope"))
        request.keep(transform_request(side, request, config, record.recall(record_keys(side, request, config))))
        record.entries.update(record_entries(side, request, _said(turn, 0, data.draw(st.booleans())), config))
        del request
    gc.collect()
    readings = [reading for _, reading in states.readings.of(b"scope")]
    kept = [reading.body for reading in readings]
    kept += [buffer for r in readings if getattr(r, "_places", None) for buffer, _, _ in r._places.segments]
    gone = [at for at in range(len(bodies)) if not any(one is bodies[at] for one in kept)]
    assert [sys.getrefcount(bodies[at]) for at in gone] == [held[at] for at in gone]  # each as it was made


@settings(max_examples=examples(60))
@given(surface=st.sampled_from(list(SURFACES)), data=st.data(), config=settings_())
def test_a_request_that_sends_back_the_rewritten_history_is_told_what_reading_afresh_does(
    surface: str, data: st.DataObject, config: ThinkExtractConfig
) -> None:
    """A client that sends on what the upstream was given (a gateway behind another, a client that
    logs and replays the forwarded body): its first messages are the earlier request's as the transform
    wrote them, not as they came, and nothing the earlier reading learned of its own is taken."""
    side = SURFACES[surface]  # type: ignore[index]
    earlier, more = data.draw(REQUESTS[surface]), data.draw(REQUESTS[surface])
    states, record = CarriedStates(), Record()
    first_body = _body(surface, earlier["model"], earlier[_key(surface)], 0, {})
    first = Request(side, first_body, (states, b"scope"))
    new = transform_request(side, first, config, record.recall(record_keys(side, first, config)))
    first.keep(new)
    record.entries.update(record_entries(side, first, _said(0, 0, True), config))
    forwarded = json.loads(first_body if new is None else new)[_key(surface)]
    keep = data.draw(st.integers(0, len(forwarded)))
    later_body = _body(
        surface, earlier["model"], forwarded[:keep] + earlier[_key(surface)][keep:] + more[_key(surface)], 0, {}
    )
    said = _said(1, 0, False)
    afresh = _told_afresh(side, later_body, config, record, said)
    carried = Request(side, later_body, (states, b"scope"))
    keys = record_keys(side, carried, config)
    new = transform_request(side, carried, config, record.recall(keys))
    told = (keys, record_keys(side, carried), new, record_entries(side, carried, said, config))
    assert (*told, carried.controls, carried.texts(), carried.model, carried.count) == afresh


@pytest.mark.parametrize("where", ["new", "shared"])
@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_lone_surrogate_escape_between_two_requests_of_a_scope_is_read_as_afresh(surface: str, where: str) -> None:
    """A request with a lone surrogate escape (``\\ud800``, which no decoder reads) in a message, new or
    in one it shares with the request before, is read as afresh (masked), and the scope's next
    request, without it, goes on as afresh too."""
    side = SURFACES[surface]  # type: ignore[index]
    config = ThinkExtractConfig(upstream_server="vllm")
    states, record = CarriedStates(), Record()
    answer: dict[str, Any] = {"role": "assistant", "content": "<think>Look it up.</think>Sunny."}
    if surface == "responses":
        text = {"type": "output_text", "text": "<think>Look it up.</think>Sunny."}
        answer = {"type": "message", "role": "assistant", "content": [text]}
    plain = [{"role": "user", "content": "Weather?"}, answer, {"role": "user", "content": "Tomorrow?"}]
    if where == "new":
        second = [*plain, answer, {"role": "user", "content": "And then? LONE"}]
    else:
        second = [{"role": "user", "content": "Weather? LONE"}, *plain[1:], answer]
    histories = [plain, second, [*plain, answer, {"role": "user", "content": "And then?"}]]
    read: list[bool] = []
    for turn, history in enumerate(histories):
        body = _body(surface, "qwen3-8b", history, 0, {}).replace(b"LONE", b"\\ud800")
        said = _said(turn, 0, False)
        afresh = _told_afresh(side, body, config, record, said)
        told, carried = _told_carried(side, body, config, record, said, states)
        read.append(carried.read is not None)
        assert told == afresh
        record.entries.update(told[3])
    assert read == [True, False, True]  # the escape keeps the body from being read: it is masked


async def _in_flight(
    surface: str, config: ThinkExtractConfig, model: str, result: str, carried: bool, seen: list[bytes]
) -> None:
    """An agent's request (its body read, kept, in a worker thread when large) still being answered
    when the next request of its scope, going on from it, is read; the first's record entries are
    made after that. The order is set by the handler, not by timing: the first answer waits until the
    second request reached the handler. The bodies the handler receives go to ``seen``, not into the
    result: Python 3.11's ``asyncio.run`` writes out its finished task, result and all, each time it
    looks at its SIGINT handler (a tenth of a second for these megabytes)."""
    second_reached = asyncio.Event()

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.read())
        turn = int(request.headers["x-turn"])
        if request.headers["x-order"] == "wait":
            await second_reached.wait()
        elif request.headers["x-order"] == "release":
            second_reached.set()
        return web.json_response(_upstream_answer(surface, model, "alice", turn, True))

    def history_for(turns: int) -> list[Any]:
        out: list[Any] = [{"role": "user", "content": "Weather?"}]
        for turn in range(turns):
            answer = _sent_back(surface, "alice", turn, True, "dropped")
            out += answer
        if surface in ("chat", "ollama"):
            out = [
                {**m, "content": result} if m.get("role") == "tool" else m
                for m in [{"role": "system", "content": "Be brief."}, *out]
            ]
        elif surface == "messages":
            for message in out:
                if isinstance(message["content"], list) and message["content"][0].get("type") == "tool_result":
                    message["content"] = [{**message["content"][0], "content": result}]
        else:
            out = [{**item, "output": result} if item.get("type") == "function_call_output" else item for item in out]
        return out

    app = web.Application()
    setup(app, config)
    app.router.add_post(PATHS[surface], handler)
    server = TestServer(app)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as session:

            async def post(turn: int, order: str = "") -> None:
                if not carried:
                    _carry_in(CarriedStates())  # no reading to go on from
                body: dict[str, Any] = {"model": model, _key(surface): history_for(turn)}
                if surface == "messages":
                    body.update(max_tokens=64)
                elif surface == "ollama":
                    body.update(stream=False)
                headers = {"Authorization": "Bearer sk-one-key", "x-turn": str(turn), "x-order": order}
                async with session.post(server.make_url(PATHS[surface]), json=body, headers=headers) as resp:
                    assert resp.status == 200
                    await resp.read()

            await post(0)
            await post(1)  # its answer's entries: the record holds turn 1 for the next requests
            await incoming.entries_handed_over()
            await app[THINKEXTRACT_RECORD].drain()
            first = asyncio.ensure_future(post(2, "wait"))
            while (
                len(seen) < 3 and not first.done()
            ):  # the first is at the handler: its reading kept, its answer not given yet
                await asyncio.sleep(0)
            await post(3, "release")
            await first
            await incoming.entries_handed_over()
            await app[THINKEXTRACT_RECORD].drain()
            await post(4)
    finally:
        await server.close()


@pytest.mark.parametrize("size", [300 << 10, 2200 << 10], ids=["read-in-a-worker", "all-in-workers"])
@pytest.mark.parametrize("surface", list(PATHS))
def test_a_request_read_while_the_one_it_goes_on_from_is_being_answered_reaches_the_handler_as_afresh(
    surface: str, size: int
) -> None:
    config = ThinkExtractConfig(messages_policy="unsigned")
    result = "18°C, sunny. " * (size // 13)
    states = CarriedStates()
    kept = _carry_in(states)
    with_carry: list[bytes] = []
    without: list[bytes] = []
    try:
        asyncio.run(_in_flight(surface, config, "qwen3-8b", result, carried=True, seen=with_carry))
        assert [len(one) for one in states.readings._scopes.values()] == [1]  # each went on from the one before
        asyncio.run(_in_flight(surface, config, "qwen3-8b", result, carried=False, seen=without))
    finally:
        _carry_in(kept)
    assert with_carry == without
    restored = [[_thought("alice", turn).encode() in body for turn in range(4)] for body in with_carry]
    assert restored == [
        [False] * 4,
        [True, False, False, False],
        [True, True, False, False],
        [True, True, False, False],  # turn 2 answered after turn 3 was read: its entries came after
        [True, True, True, True],
    ]


# -- a hostile client's messages: any keys, any values ------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from(["", "x", "<think>r</think>a", "assistant", "user", "tool", "rs_1", "🙂"]),
)
_FIELDS = st.sampled_from(
    [
        "type",
        "text",
        "id",
        "thinking",
        "signature",
        "content",
        "summary",
        "call_id",
        "name",
        "encrypted_content",
        "data",
    ]
)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_FIELDS, inner, max_size=4), max_leaves=8
)
_KEYS = st.sampled_from(
    [
        "role",
        "content",
        "tool_calls",
        "reasoning_content",
        "reasoning",
        "reasoning_details",
        "thinking",
        "type",
        "id",
        "call_id",
        "summary",
        "encrypted_content",
        "name",
        "arguments",
        "output",
        "cache_control",
    ]
)
_TYPES = st.sampled_from(["message", "reasoning", "function_call", "function_call_output", "item_reference"])


@st.composite
def wild_items(draw: st.DrawFn) -> Any:
    """A message (or item) as a hostile client writes one: any of the fields a surface reads, any
    values; now and then no object at all."""
    if draw(st.integers(0, 5)) == 0:
        return draw(_VALUES)
    item = draw(st.dictionaries(_KEYS, _VALUES, max_size=5))
    if draw(st.integers(0, 3)):
        item["role"] = draw(st.sampled_from(["assistant", "user", "tool", "system", "developer"]))
    if draw(st.booleans()):
        item["type"] = draw(_TYPES)
    return item


@settings(max_examples=examples(60))
@given(surface=st.sampled_from(list(SURFACES)), data=st.data())
def test_a_hostile_clients_requests_are_told_what_reading_afresh_does(surface: str, data: st.DataObject) -> None:
    side = SURFACES[surface]  # type: ignore[index]
    states, record = CarriedStates(), Record()
    history = data.draw(st.lists(wild_items(), min_size=1, max_size=6))
    for turn in range(data.draw(st.integers(2, 4))):
        if turn:
            more, at = data.draw(st.lists(wild_items(), max_size=3)), data.draw(st.integers(0, len(history)))
            history = data.draw(
                st.sampled_from([history + more, history[:at] + more, history[:at] + more + history[at + 1 :]])
            )
        config = data.draw(settings_())
        body = _body(surface, data.draw(MODELS), history, data.draw(st.integers(0, 3)), {})
        said = _said(turn, 0, data.draw(st.booleans()))
        afresh = _told_afresh(side, body, config, record, said)
        told, _ = _told_carried(side, body, config, record, said, states)
        assert told == afresh
        record.entries.update(told[3])
