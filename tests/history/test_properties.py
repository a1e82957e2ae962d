"""The request transforms, over generated histories: idempotent, every message and tool call kept in
order, nothing changed where there is no reasoning, and nothing the plan does not write left behind."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.history import plan_for, request_model, server_of, transform_request
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples
from .strategies import chat_requests, configs, messages_requests, responses_requests

CARRIERS = ("reasoning_content", "reasoning", "reasoning_details")


def apply(surface: Any, request: dict[str, Any], config: ThinkExtractConfig) -> tuple[dict[str, Any], bytes | None]:
    body = json.dumps(request).encode()
    once = transform_request(SURFACES[surface], body, config)
    after = json.loads(once) if once is not None else request
    if once is not None:
        assert transform_request(SURFACES[surface], once, config) is None, "not idempotent"
    assert {k: v for k, v in after.items() if k not in ("messages", "input")} == {
        k: v for k, v in request.items() if k not in ("messages", "input")
    }
    return after, once


def chat_shape(request: dict[str, Any]) -> list[Any]:
    return [
        (m["role"], [c["id"] for c in m.get("tool_calls") or []], m.get("tool_call_id")) for m in request["messages"]
    ]


@settings(max_examples=examples(300), deadline=None)
@given(request=chat_requests(), config=configs())
def test_chat(request: dict[str, Any], config: ThinkExtractConfig) -> None:
    after, _ = apply("chat", request, config)
    assert chat_shape(after) == chat_shape(request)
    plan = plan_for(config, request["model"], server_of(config))
    for before, message in zip(request["messages"], after["messages"], strict=True):
        if message["role"] != "assistant":
            assert message == before
            continue
        if plan.form == "pass":
            assert message == before
            continue
        parts = message.get("content") if isinstance(message.get("content"), list) else []
        assert not any(p.get("type") == "thinking" for p in parts)  # no server reads a thinking part
        assert "reasoning_details" not in message
        present = {k for k in CARRIERS if k in message}
        if plan.form == "field":
            assert present <= {"reasoning_content", "reasoning"}
            assert all(message[k] for k in present)  # empty reasoning is dropped
        else:
            assert not present
        if present and message.get("content") is None:
            assert "tool_calls" in message  # a reasoning-only message has content ""


@settings(max_examples=examples(300), deadline=None)
@given(request=messages_requests(), config=configs())
def test_messages(request: dict[str, Any], config: ThinkExtractConfig) -> None:
    after, _ = apply("messages", request, config)
    plan = plan_for(config, request["model"], server_of(config))

    def shape(r: dict[str, Any]) -> list[Any]:
        out = []
        for m in r["messages"]:
            blocks = m["content"] if isinstance(m["content"], list) else []
            out.append(
                (
                    m["role"],
                    [
                        b.get("id") or b.get("tool_use_id")
                        for b in blocks
                        if "use" in b["type"] or "result" in b["type"]
                    ],
                )
            )
        return out

    assert shape(after) == shape(request)
    for message in after["messages"]:
        blocks = message["content"] if isinstance(message["content"], list) else []
        thinking = [b for b in blocks if b["type"] == "thinking"]
        if message["role"] == "assistant" and plan.form not in ("pass", "field") and plan.server != "anthropic":
            assert not thinking and not [b for b in blocks if b["type"] == "redacted_thinking"]
        if plan.form == "field" and plan.server != "anthropic":
            assert len(thinking) <= 1 and all(b["thinking"] and b["signature"].startswith("gw1:") for b in thinking)


@settings(max_examples=examples(300), deadline=None)
@given(request=responses_requests(), config=configs())
def test_responses(request: dict[str, Any], config: ThinkExtractConfig) -> None:
    after, _ = apply("responses", request, config)
    plan = plan_for(config, request["model"], server_of(config))

    def shape(r: dict[str, Any]) -> list[Any]:
        return [
            (i.get("type", "message"), i.get("role"), i.get("call_id"))
            for i in r["input"]
            if i.get("type") not in ("reasoning", "item_reference") and i.get("role") != "assistant"
        ]

    assert shape(after) == shape(request)  # user turns, calls and their outputs, in order
    if plan.form == "pass":
        assert after == request
        return
    for item in after["input"]:
        if item.get("type") == "reasoning" and plan.server != "openai":
            texts = [c["text"] for c in item["content"]]
            assert texts and all(texts), item  # llama.cpp refuses an item without content text
            assert isinstance(item["summary"], list)
            if plan.server == "ollama":
                assert item["encrypted_content"] == texts[0]
            else:
                assert "encrypted_content" not in item  # vLLM refuses any


@settings(max_examples=examples(200), deadline=None)
@given(request=st.one_of(chat_requests(), messages_requests(), responses_requests()), config=configs())
def test_a_request_without_reasoning_is_never_changed(request: dict[str, Any], config: ThinkExtractConfig) -> None:
    """Strip every reasoning carrier and tag from the history first: then no form changes a byte."""
    text = json.dumps(request)
    if any(word in text for word in ("<think>", "reasoning", "thinking", "encrypted_content", "item_reference")):
        return
    surface = (
        "chat"
        if "messages" in request and "max_tokens" not in request
        else "messages"
        if "messages" in request
        else "responses"
    )
    assert request_model(text.encode()) == request["model"]
    assert transform_request(SURFACES[surface], text.encode(), config) is None
