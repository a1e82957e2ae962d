"""llama.cpp's ``llama-server`` as the upstream: the three surfaces, replayed reasoning, real clients.

The server (built by ``.ci/clients-llama-server``) serves a tiny random-weight model under a grammar
that forces ``<think>`` + words + ``</think>`` + words, with ``--reasoning-format none``: every answer
carries its reasoning inline, and only its shape is known in advance.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from .conftest import Proxy
from .drive_aisdk import run
from .drive_claude_code import ClaudeCode, shown
from .drive_codex import Codex, items
from .drive_langchain import make, reasoning_of
from .drive_litellm import complete
from .llama import WORDS, LlamaServer

WORD = "(?:" + "|".join(WORDS) + ")"
PHRASE = re.compile(f"{WORD}(?: {WORD}){{0,3}}")


def phrase(text: object) -> bool:
    return isinstance(text, str) and PHRASE.fullmatch(text) is not None


# -- the three surfaces ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_chat(llama_proxy: Proxy, stream: bool) -> None:
    client = openai.OpenAI(base_url=f"{llama_proxy.base}/v1", api_key="unused", max_retries=0)
    messages: Any = [{"role": "user", "content": "hi"}]
    if not stream:
        message = client.chat.completions.create(model="tiny", messages=messages).choices[0].message
        reasoning, content = (message.model_extra or {}).get("reasoning_content"), message.content
    else:
        reasoning = content = ""
        for chunk in client.chat.completions.create(model="tiny", messages=messages, stream=True):
            for choice in chunk.choices:
                reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
                content += choice.delta.content or ""
    assert phrase(reasoning) and phrase(content), (reasoning, content)


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_messages(llama_proxy: Proxy, stream: bool) -> None:
    client = anthropic.Anthropic(base_url=llama_proxy.base, api_key="unused", max_retries=0)
    messages: Any = [{"role": "user", "content": "hi"}]
    message: anthropic.types.Message
    if stream:
        with client.messages.stream(model="tiny", max_tokens=64, messages=messages) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(model="tiny", max_tokens=64, messages=messages)
    assert [b.type for b in message.content] == ["thinking", "text"]
    thinking, text = message.content
    assert thinking.type == "thinking" and text.type == "text"
    assert phrase(thinking.thinking) and phrase(text.text)
    assert thinking.signature.startswith("gw1:")


@pytest.mark.parametrize(
    "stream",
    [False, True],
    ids=["body", "stream"],
)
def test_responses(llama_proxy: Proxy, stream: bool) -> None:
    client = openai.OpenAI(base_url=f"{llama_proxy.base}/v1", api_key="unused", max_retries=0)
    response: openai.types.responses.Response
    if stream:
        with client.responses.stream(model="tiny", input="hi") as events:
            response = events.get_final_response()
    else:
        response = client.responses.create(model="tiny", input="hi")
    assert [i.type for i in response.output] == ["reasoning", "message"]
    reasoning, message = response.output
    assert reasoning.type == "reasoning" and message.type == "message"
    texts = [p.text for p in reasoning.content or []] + [s.text for s in reasoning.summary]
    assert len(texts) >= 1 and all(phrase(t) for t in texts) and len(set(texts)) == 1
    assert phrase(response.output_text)


# -- replayed reasoning: what llama-server answers to each shape, alone and behind the gateway ---------

ASK = {"role": "user", "content": "hi"}
AGAIN = {"role": "user", "content": "and again"}
CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"


def item(**fields: Any) -> dict[str, Any]:
    return {"id": "rs_0123456789abcdef0123456789abcdef", "type": "reasoning", **fields}


# name → (route, request, llama-server's status and error alone, the status behind the gateway): the
# gateway rewrites the reasoning items llama-server rejects into the one shape it reads, and leaves
# what it cannot mend (an item of no type, a reference to an item it never made) as it came.
REPLAYS: dict[str, tuple[str, dict[str, Any], int, str | None, int]] = {
    "chat reasoning_content": (
        CHAT,
        {"messages": [ASK, {"role": "assistant", "content": "beta", "reasoning_content": "alpha"}, AGAIN]},
        200,
        None,
        200,
    ),
    "thinking with signature": (
        MESSAGES,
        {
            "max_tokens": 64,
            "messages": [
                ASK,
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "alpha", "signature": "gw1:c2lnbmF0dXJl"},
                        {"type": "text", "text": "beta"},
                    ],
                },
                AGAIN,
            ],
        },
        200,
        None,
        200,
    ),
    "redacted_thinking": (
        MESSAGES,
        {
            "max_tokens": 64,
            "messages": [
                ASK,
                {
                    "role": "assistant",
                    "content": [{"type": "redacted_thinking", "data": "YWxwaGE="}, {"type": "text", "text": "beta"}],
                },
                AGAIN,
            ],
        },
        200,
        None,
        200,
    ),
    "reasoning item as emitted": (
        RESPONSES,
        {
            "input": [
                ASK,
                item(summary=[], content=[{"type": "reasoning_text", "text": "alpha"}], status="completed"),
                AGAIN,
            ]
        },
        200,
        None,
        200,
    ),
    "summary-only reasoning item": (
        RESPONSES,
        {"input": [ASK, item(summary=[{"type": "summary_text", "text": "alpha"}]), AGAIN]},
        400,
        "item['content'] is not an array",
        200,
    ),
    "reasoning item with content: []": (
        RESPONSES,
        {"input": [ASK, item(summary=[], content=[]), AGAIN]},
        400,
        "is empty",
        200,
    ),
    "Codex's replay of the content format": (
        RESPONSES,
        {
            "input": [
                ASK,
                item(summary=[], content=[{"type": "reasoning_text", "text": "alpha"}], encrypted_content=None),
                AGAIN,
            ]
        },
        200,
        None,
        200,
    ),
    "Codex's replay of the summary format (content: null)": (
        RESPONSES,
        {
            "input": [
                ASK,
                item(summary=[{"type": "summary_text", "text": "alpha"}], content=None, encrypted_content=None),
                AGAIN,
            ]
        },
        400,
        "item['content'] is not an array",
        200,
    ),
    "AI SDK store=false: an assistant message without 'type'": (
        RESPONSES,
        {"input": [ASK, {"role": "assistant", "content": "beta"}, AGAIN]},
        400,
        "Cannot determine type of 'item'",
        400,
    ),
    "item_reference": (
        RESPONSES,
        {"input": [ASK, {"type": "item_reference", "id": "rs_0123456789abcdef0123456789abcdef"}, AGAIN]},
        400,
        "Cannot determine type of 'item'",
        400,
    ),
}


@pytest.mark.parametrize("through", ["alone", "gateway"])
@pytest.mark.parametrize("case", list(REPLAYS))
def test_replayed_reasoning(llama_server: LlamaServer, llama_proxy: Proxy, case: str, through: str) -> None:
    import urllib.error
    import urllib.request

    path, body, status, message, behind_gateway = REPLAYS[case]
    base = llama_server.base
    if through == "gateway":
        base, status, message = llama_proxy.base, behind_gateway, message if behind_gateway == status else None
    data = json.dumps({"model": "tiny", **body}).encode()
    request = urllib.request.Request(base + path, data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            got, answer = response.status, json.load(response)
    except urllib.error.HTTPError as error:
        got, answer = error.code, json.load(error)
    assert got == status, answer
    if message is None:
        return
    assert message in answer["error"]["message"], answer


# -- real clients in front of it ---------------------------------------------------------------------


def test_claude_code_two_turns(llama_proxy: Proxy, claude: Path, tmp_path: Path) -> None:
    cc = ClaudeCode(claude, llama_proxy.base, tmp_path)
    for flags in ((), ("--continue",)):
        thinking, signatures, texts, result = shown(cc.run("hi", *flags))
        assert len(thinking) == 1 and phrase(thinking[0]), thinking
        assert len(texts) == 1 and phrase(texts[0]) and result == texts[0], texts
        assert signatures[0].startswith("gw1:")


@pytest.mark.parametrize("client", ["ChatDeepSeek", "ChatAnthropic"])
def test_langchain_two_turns(llama_proxy: Proxy, client: str) -> None:
    model = make(client, llama_proxy.base)
    first = model.invoke("hi")
    second = model.invoke([("human", "hi"), first, ("human", "and again")])
    for message in (first, second):
        (reasoning,) = reasoning_of(message)
        assert phrase(reasoning) and phrase(message.text), message.content_blocks


@pytest.mark.parametrize("route", ["openai/", "hosted_vllm/", "anthropic/"])
def test_litellm_two_turns(llama_proxy: Proxy, route: str) -> None:
    question = [{"role": "user", "content": "hi"}]
    first, _ = complete(route, llama_proxy.base, question)
    second, streamed = complete(
        route, llama_proxy.base, [*question, first.model_dump(), {"role": "user", "content": "again"}], True
    )
    for message in (first, second):
        assert phrase(message.reasoning_content) and phrase(message.content), message
    assert streamed == second.reasoning_content


@pytest.mark.parametrize("mode", ["generate", "stream"])
@pytest.mark.parametrize("provider", ["chat", "anthropic"])
def test_ai_sdk(llama_proxy: Proxy, node_modules: Path, provider: str, mode: str) -> None:
    shown = run(node_modules, provider, llama_proxy.base, mode, model="tiny")
    ((step),) = shown["steps"]
    assert phrase(step["reasoningText"]) and phrase(step["text"]), shown
    assert (shown["reasoningText"], shown["text"]) == (step["reasoningText"], step["text"])


def test_codex(llama_proxy: Proxy, codex: Path, tmp_path: Path) -> None:
    events = Codex(codex, llama_proxy.base, tmp_path, "tiny").run("hi")
    (message,) = [i["text"] for i in items(events, "agent_message")]
    (reasoning,) = [i["text"] for i in items(events, "reasoning")]
    assert phrase(message) and phrase(reasoning), events
