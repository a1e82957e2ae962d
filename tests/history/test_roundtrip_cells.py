"""The round-trip table: what each client sends back on its second turn (measured, see
docs/clients.md), through the request side with default settings, as each server reads it. Without
the gateway every client sends the model's text back with its tags, and every server's model sees the
reasoning there: with it, the model sees it too (in a field the server reads, or inline), and no
server refuses the request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway_mw import ThinkExtractConfig
from gateway_mw.history import transform_request
from gateway_mw.marks import encode_blob, gateway_signature, random_id
from gateway_mw.surfaces.registry import SURFACES

from . import servers
from .servers import b64, sglang_blob

R = "I need the weather first, so I call the tool."
A = "Let me look that up."
RS = random_id("rs_")
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
SERVERS = ["vllm", "sglang", "llamacpp", "ollama"]
MODELS = ["llama-3.1-8b", "qwen3-8b"]  # a model of no known family (inline), and one whose template reads a field


def chat(assistant: dict[str, Any], model: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [
            {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": A, "tool_calls": [CALL], **assistant},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
    }


def anthropic(blocks: list[Any], model: str) -> dict[str, Any]:
    tool = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
    return {
        "model": model,
        "max_tokens": 256,
        "messages": [
            {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": [*blocks, {"type": "text", "text": A}, tool]},
            {"role": "user", "content": [result]},
        ],
    }


def responses(item: dict[str, Any], model: str) -> dict[str, Any]:
    message = {"type": "message", "role": "assistant", "id": "msg_1", "content": [{"type": "output_text", "text": A}]}
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}
    return {
        "model": model,
        "input": [
            {"role": "user", "content": "What is the weather in Paris?"},
            item,
            message,
            call,
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        ],
    }


SUMMARY = [{"type": "summary_text", "text": R}]
CONTENT = [{"type": "reasoning_text", "text": R}]
CELLS: dict[str, tuple[str, Any]] = {
    "Claude Code / AI SDK / LangChain / LiteLLM anthropic, unsigned": (
        "messages",
        [{"type": "thinking", "thinking": R, "signature": gateway_signature(R)}],
    ),
    "the same, redacted policy": ("messages", [{"type": "redacted_thinking", "data": b64(R)}]),
    "Codex, Responses default": (
        "responses",
        {"type": "reasoning", "id": RS, "summary": SUMMARY, "content": CONTENT, "encrypted_content": None},
    ),
    "Codex, summary format": (
        "responses",
        {"type": "reasoning", "id": RS, "summary": SUMMARY, "content": None, "encrypted_content": None},
    ),
    "LangChain responses, summary format": ("responses", {"type": "reasoning", "id": RS, "summary": SUMMARY}),
    "LangChain ChatOpenAI(use_responses_api=True) stream": (
        "responses",
        {"type": "reasoning", "id": RS, "summary": SUMMARY, "content": [], "status": "in_progress"},
    ),
    "openai SDK responses": ("responses", {"type": "reasoning", "id": RS, "summary": SUMMARY, "content": CONTENT}),
    "AI SDK openai.responses, store: false (encrypted_content asked for)": (
        "responses",
        {"type": "reasoning", "summary": SUMMARY, "encrypted_content": encode_blob(R)},
    ),
    "AI SDK openai-compatible, openai SDK, LiteLLM stream, chat": ("chat", {"reasoning_content": R}),
}
READERS = {"chat": servers.chat, "messages": servers.messages, "responses": servers.responses}
BUILDERS = {"chat": chat, "messages": anthropic, "responses": responses}


def baseline(surface: str, model: str) -> dict[str, Any]:
    """What the client sends without the gateway: the model's text with its tags."""
    text = f"<think>{R}</think>{A}"
    if surface == "chat":
        return {
            **chat({}, model),
            "messages": [
                *chat({}, model)["messages"][:1],
                {"role": "assistant", "content": text, "tool_calls": [CALL]},
                chat({}, model)["messages"][2],
            ],
        }
    if surface == "messages":
        body = anthropic([], model)
        body["messages"][1]["content"][0]["text"] = text
        return body
    body = responses({}, model)
    body["input"] = [i for i in body["input"] if i]
    body["input"][1]["content"][0]["text"] = text
    return body


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("cell", list(CELLS))
def test_the_model_sees_its_reasoning_again(cell: str, server: str, model: str) -> None:
    surface, replay = CELLS[cell]
    body = BUILDERS[surface](replay, model)
    config = ThinkExtractConfig(upstream_server=server)  # type: ignore[arg-type]
    new = transform_request(SURFACES[surface], json.dumps(body).encode(), config)
    sent = json.loads(new) if new is not None else body
    (seen,) = READERS[surface](server, sent)
    (base,) = READERS[surface](server, baseline(surface, model))
    assert R in base  # the baseline: the model sees its reasoning inline
    assert R in seen, (seen, sent)
    assert A in seen.split("\x00", 1)[1]


@pytest.mark.parametrize("server", SERVERS)
def test_the_model_sees_the_whole_reasoning_not_the_items_summary(server: str) -> None:
    """An item whose summary is not its whole reasoning (a server that summarises wrote it): in the
    ``field`` form every server's model sees the whole reasoning, SGLang's too, which reads ``summary``
    before ``content``."""
    summary = [{"type": "summary_text", "text": "Weather first."}]
    body = responses({"type": "reasoning", "id": RS, "summary": summary, "content": CONTENT}, "qwen3-8b")
    config = ThinkExtractConfig(upstream_server=server)  # type: ignore[arg-type]
    new = transform_request(SURFACES["responses"], json.dumps(body).encode(), config)
    sent = json.loads(new) if new is not None else body
    assert servers.responses(server, sent) == [R + "\x00" + A]


@pytest.mark.parametrize("model", MODELS)
def test_sglang_reads_its_own_encrypted_content_through_the_gateway_too(model: str) -> None:
    """SGLang with a reasoning parser answers with reasoning items of its own and, asked for
    ``reasoning.encrypted_content``, gives them a blob it reads back. A client that replays only that
    blob (``summary`` empty, as SGLang writes it unless asked for one) gives SGLang's model its
    reasoning without the gateway: the model sees it through the gateway too."""
    item = {"type": "reasoning", "id": "rs_" + "5" * 32, "summary": [], "encrypted_content": sglang_blob(R)}
    body = responses(item, model)
    (base,) = servers.responses("sglang", body)
    assert base == R + "\x00" + A  # without the gateway
    config = ThinkExtractConfig(upstream_server="sglang")
    new = transform_request(SURFACES["responses"], json.dumps(body).encode(), config)
    (seen,) = servers.responses("sglang", json.loads(new) if new is not None else body)
    assert R in seen, seen
    assert A in seen.split("\x00", 1)[1]
