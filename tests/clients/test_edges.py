"""What the clients see at the edges: native chat reasoning fields, deltas that spell absent fields as
nulls, newlines around the tags, the demo model's view of a replayed turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from .conftest import Proxy
from .drive_agents import run_js
from .drive_aisdk import run as aisdk
from .drive_claude_code import ClaudeCode, shown
from .drive_codex import Codex, items
from .drive_langchain import ask, make, reasoning_of
from .drive_litellm import complete
from .expect import PLAIN, demo_turn
from .scripted import ScriptedUpstream

# -- which chat field each client reads, and that each shows the reasoning once -----------------------

CHAT_CLIENTS = [
    "ChatOpenAI",
    "ChatDeepSeek",
    "litellm openai/",
    "litellm hosted_vllm/",
    "ai-sdk openai-compatible",
    "openai-agents js",
]
# Measured (chat_mirror_reasoning=false: the upstream's one name reaches the client as it came).
READS = {
    "ChatOpenAI": (),
    "ChatDeepSeek": ("reasoning", "reasoning_content"),
    "litellm openai/": ("reasoning", "reasoning_content"),
    "litellm hosted_vllm/": ("reasoning", "reasoning_content"),
    "ai-sdk openai-compatible": ("reasoning", "reasoning_content"),
    "openai-agents js": ("reasoning",),
}


def shown_by(client: str, base: str, model: str, stream: bool, request: Any) -> tuple[str, list[str]]:
    """(the answer, each reasoning text) that ``client`` shows for one chat completion of ``model``."""
    if client.startswith("Chat"):
        message = ask(make(client, base, model), "stream" if stream else "invoke", "hi")
        return message.text, reasoning_of(message)
    if client.startswith("litellm"):
        message, _ = complete(client.split()[1], base, [{"role": "user", "content": "hi"}], stream, model)
        return message.content, [r for r in [message.reasoning_content] if r]
    node_modules = request.getfixturevalue("node_modules")
    if client == "openai-agents js":
        agents = run_js(node_modules, base, model, stream)
        return agents["output"], agents["reasoning"]
    shown = aisdk(node_modules, "chat", base, "stream" if stream else "generate", model=model)
    return shown["text"], [r for r in [shown["reasoningText"]] if r]


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
@pytest.mark.parametrize("client", CHAT_CLIENTS)
def test_which_chat_field_each_client_reads(
    client: str, field: str, stream: bool, unmirrored_proxy: Proxy, scripted: ScriptedUpstream, request: Any
) -> None:
    answer, reasoning = shown_by(client, unmirrored_proxy.base, f"native-{field}", stream, request)
    assert answer == PLAIN.answer
    assert reasoning == ([PLAIN.reasoning] if field in READS[client] else [])


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("upstream", ["native-reasoning", "native-reasoning_content", "scripted", "sglang"])
@pytest.mark.parametrize("client", CHAT_CLIENTS)
def test_with_the_default_settings_each_chat_client_shows_the_reasoning_once(
    client: str, upstream: str, stream: bool, scripted_proxy: Proxy, scripted: ScriptedUpstream, request: Any
) -> None:
    """Whichever name the upstream wrote (or tags), with both names written each client shows it once."""
    answer, reasoning = shown_by(client, scripted_proxy.base, upstream, stream, request)
    assert answer == PLAIN.answer
    assert reasoning == ([] if client == "ChatOpenAI" else [PLAIN.reasoning])


# -- chunks with nothing to say -----------------------------------------------------------------------


async def chat_chunks(base: str, model: str) -> list[dict[str, Any]]:
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    async with aiohttp.ClientSession() as session, session.post(f"{base}/v1/chat/completions", json=body) as r:
        assert r.status == 200
        lines = [line async for line in r.content]
    return [json.loads(line[6:]) for line in lines if line.startswith(b"data: ") and line.strip() != b"data: [DONE]"]


def says_something(chunk: dict[str, Any]) -> bool:
    if not chunk["choices"]:
        return chunk.get("usage") is not None
    (choice,) = chunk["choices"]
    return choice.get("finish_reason") is not None or any(v not in (None, "") for v in choice["delta"].values())


async def test_null_spelled_deltas_are_translated(scripted_proxy: Proxy, scripted: ScriptedUpstream) -> None:
    chunks = await chat_chunks(scripted_proxy.base, "sglang")
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == PLAIN.reasoning
    assert "".join(d.get("content") or "" for d in deltas) == PLAIN.answer


async def test_no_chunk_without_something_to_say(scripted_proxy: Proxy, scripted: ScriptedUpstream) -> None:
    chunks = await chat_chunks(scripted_proxy.base, "sglang")
    assert [c for c in chunks if not says_something(c)] == []


# -- Qwen3-style newlines around the tags -------------------------------------------------------------


def test_claude_code_answer_has_no_leading_blank_lines(
    claude: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    thinking, _, texts, result = shown(ClaudeCode(claude, scripted_proxy.base, tmp_path, "qwen3-scripted").run("hi"))
    assert [t.strip() for t in thinking] == [PLAIN.reasoning]
    assert (texts, result) == ([PLAIN.answer], PLAIN.answer)


def test_codex_agent_message_has_no_leading_blank_lines(
    codex: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    events = Codex(codex, scripted_proxy.base, tmp_path, "qwen3-scripted").run("hi")
    assert [i["text"] for i in items(events, "agent_message")] == [PLAIN.answer]


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_chat_answer_has_no_leading_blank_lines(
    stream: bool, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    message, _ = complete("openai/", scripted_proxy.base, [{"role": "user", "content": "hi"}], stream, "qwen3-scripted")
    assert message.reasoning_content.strip() == PLAIN.reasoning
    assert message.content == PLAIN.answer


# -- the demo model answers the last real user message ------------------------------------------------


@pytest.mark.parametrize(
    "tail",
    [
        [{"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "The user asks: x"}]}],
        [
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        ],
    ],
    ids=["reasoning-last", "tool-output-last"],
)
def test_demo_model_reads_the_last_user_message(demo_proxy: Proxy, tail: list[dict[str, Any]]) -> None:
    client = openai.OpenAI(base_url=f"{demo_proxy.base}/v1", api_key="unused", max_retries=0)
    response = client.responses.create(model="demo", input=[{"role": "user", "content": "What is 2+2?"}, *tail])  # type: ignore[list-item]
    (reasoning,) = [i for i in response.output if i.type == "reasoning"]
    texts = [p.text for p in reasoning.content or []] + [s.text for s in reasoning.summary]
    assert set(texts) == {demo_turn().reasoning}
