"""Reasoning tokens in a non-stream body's usage, on the real ``llama-server``: the packaged gateway in
front of it splits the tiny model's ``<think>`` reasoning out of the answer, asks the server's own
``/tokenize`` for its tokens, and writes them as ``completion_tokens_details.reasoning_tokens``,
which the openai SDK reads; the count is what ``/tokenize`` says of the reasoning text."""

from __future__ import annotations

import json
import urllib.request

import openai

from gateway_mw.proxy import build_app
from gateway_mw.proxy.settings import DEMO_CONFIG

from ..proxy.support import serving, settings
from .llama import WORDS, LlamaServer


def tokens(base: str, text: str) -> int:
    """What llama-server's ``/tokenize`` says of ``text``, asked directly (no special tokens)."""
    request = urllib.request.Request(
        base + "/tokenize",
        data=json.dumps({"content": text, "add_special": False}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        return len(json.load(r)["tokens"])


async def test_a_chat_bodys_reasoning_tokens_are_the_servers_tokenize_count(llama_server: LlamaServer) -> None:
    s = settings(upstream=llama_server.base, think_extract=DEMO_CONFIG.replace(upstream_server="llamacpp"))
    async with serving(s, build_app(s)) as base:
        client = openai.AsyncOpenAI(api_key="x", base_url=base + "/v1", max_retries=0, _strict_response_validation=True)
        async with client:
            completion = await client.chat.completions.create(
                model="tiny", messages=[{"role": "user", "content": "Count to three."}]
            )
    message = completion.choices[0].message.model_dump()
    reasoning = message["reasoning_content"]
    assert reasoning and set(reasoning.split()) <= set(WORDS)  # the grammar's reasoning, split out
    usage = completion.usage
    assert usage is not None and usage.completion_tokens_details is not None
    counted = usage.completion_tokens_details.reasoning_tokens
    assert counted == tokens(llama_server.base, reasoning)
    assert counted is not None and 0 < counted < usage.completion_tokens  # the answer and the tags are the rest
