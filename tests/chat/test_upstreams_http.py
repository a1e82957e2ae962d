"""Chat over real HTTP with the official openai SDK, in front of upstreams spelled as real servers:
SGLang's explicit nulls (no chunk with nothing to say reaches the client) and native reasoning under
the other name (``reasoning`` from vLLM ≥ 0.16 or Ollama reaches a ``reasoning_content`` client)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ModelProfile, ThinkExtractConfig, setup

from ..chatlayouts import event

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MESSAGES: Any = [{"role": "user", "content": "What is 2+2?"}]
QWEN_TOKENS = ["<think>", "\n", "Okay", ",", " 2+2", ".", "\n", "</think>", "\n\n", "It", " is", " 4", "."]


def upstream(events: list[bytes], completion: dict[str, Any], config: ThinkExtractConfig) -> web.Application:
    """A model server that writes ``events`` one per write (stream) or ``completion``, behind the middleware."""

    async def completions(request: web.Request) -> web.StreamResponse:
        if not (await request.json()).get("stream"):
            return web.json_response(completion)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in events:
            await resp.write(piece)
        return resp

    app = web.Application()
    setup(app, config)
    app.router.add_post("/v1/chat/completions", completions)
    return app


def client(server: TestServer) -> openai.AsyncOpenAI:
    url = str(server.make_url("/v1"))
    return openai.AsyncOpenAI(api_key="x", base_url=url, max_retries=0, _strict_response_validation=True)


async def stream_deltas(server: TestServer, model: str = "m") -> list[tuple[dict[str, Any], str | None]]:
    """Each chunk the SDK yields: its one delta as sent (explicit nulls included) and finish reason."""
    stream = await client(server).chat.completions.create(model=model, messages=MESSAGES, stream=True)
    out = []
    async for chunk in stream:
        assert len(chunk.choices) == 1
        out.append((chunk.choices[0].delta.model_dump(exclude_unset=True), chunk.choices[0].finish_reason))
    return out


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1730000000,
        "model": "m",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
    }


# -- chunks with nothing to say ---------------------------------------------------------------------


def sglang_stream(tokens: list[str]) -> list[bytes]:
    return [
        event("sglang", "", first=True),
        *(event("sglang", t) for t in tokens),
        event("sglang", None, "stop"),
        b"data: [DONE]\n\n",
    ]


def nulls(**delta: Any) -> dict[str, Any]:
    """A delta as SGLang spells it: every field present, the absent ones null."""
    return {"role": None, "content": None, "reasoning_content": None, "tool_calls": None} | delta


async def test_sglang_explicit_nulls_send_no_empty_chunk(aiohttp_server: ServerFactory) -> None:
    server = await aiohttp_server(upstream(sglang_stream(QWEN_TOKENS), {}, ThinkExtractConfig()))
    deltas = await stream_deltas(server)
    # The role chunk goes out as it came; the tags and the whitespace held at the block's start
    # made no chunk of their own (they used to: four deltas of nulls before the first reasoning).
    # Reasoning goes under both names (the default).
    first = {"role": "assistant", "content": "", "reasoning_content": None, "tool_calls": None}

    def reasoning(text: str) -> dict[str, Any]:
        return {"role": None, "reasoning_content": text, "reasoning": text, "content": None, "tool_calls": None}

    assert deltas == [
        (first, None),
        (reasoning("Okay"), None),  # the newline after <think> touches it: trimmed
        (reasoning(","), None),
        (reasoning(" 2+2"), None),
        (reasoning("."), None),
        (reasoning("\n"), None),
        (nulls(content="It"), None),  # the blank lines after </think> too
        (nulls(content=" is"), None),
        (nulls(content=" 4"), None),
        (nulls(content="."), None),
        (nulls(), "stop"),
    ]


async def test_empty_string_reasoning_and_empty_tool_calls_say_nothing(aiohttp_server: ServerFactory) -> None:
    def chunk(content: str, **delta: str) -> bytes:
        members = "".join(f',"{k}":{v}' for k, v in delta.items())
        head = '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        body = head + '"delta":{"content":"' + content + '"' + members + '},"logprobs":null,"finish_reason":null}]}'
        return f"data: {body}\n\n".encode()

    events = [
        chunk("<think>", reasoning_content='""', tool_calls="[]"),
        chunk(" ", reasoning_content='""'),
        chunk("r", reasoning_content='""'),
        chunk("</think>", reasoning_content='""'),
        chunk("a", reasoning_content='""', role='"assistant"'),  # a role is something to say
        b"data: [DONE]\n\n",
    ]
    server = await aiohttp_server(upstream(events, {}, ThinkExtractConfig()))
    assert await stream_deltas(server) == [
        ({"reasoning_content": "r", "reasoning": "r", "content": ""}, None),  # the space after <think>: trimmed
        ({"content": "a", "reasoning_content": "", "role": "assistant"}, None),
    ]


async def test_a_held_chunk_that_carries_something_else_still_goes(aiohttp_server: ServerFactory) -> None:
    """Logprobs, a finish reason and usage are something to say: such a chunk goes, its text held."""
    logprobs = '{"content":[{"token":"<think>","logprob":-0.1,"bytes":[60],"top_logprobs":[]}],"refusal":null}'
    events = [
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"content":"<think>","role":null},"logprobs":' + logprobs.encode() + b',"finish_reason":null}]}\n\n',
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"content":"r</think>a"},"logprobs":null,"finish_reason":null}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    server = await aiohttp_server(upstream(events, {}, ThinkExtractConfig()))
    stream = await client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    chunks = [c.model_dump(exclude_unset=True) async for c in stream]
    envelope = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    token = {"token": "<think>", "logprob": -0.1, "bytes": [60], "top_logprobs": []}
    assert chunks == [
        {
            **envelope,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": None},
                    "logprobs": {"content": [token], "refusal": None},
                    "finish_reason": None,
                }
            ],
        },
        {
            **envelope,
            "choices": [
                {
                    "index": 0,
                    "delta": {"reasoning_content": "r", "reasoning": "r"},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
        },
        {**envelope, "choices": [{"index": 0, "delta": {"content": "a"}, "logprobs": None, "finish_reason": None}]},
    ]


# -- native reasoning under the other name ----------------------------------------------------------


def vllm_native(reasoning: list[str], answer: list[str]) -> list[bytes]:
    """vLLM ≥ 0.16 with its reasoning parser (Ollama alike): the reasoning under ``reasoning``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1730000000,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"

    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"reasoning": r}) for r in reasoning),
        *(chunk({"content": a}) for a in answer),
        chunk({}, "stop"),
        b"data: [DONE]\n\n",
    ]


@pytest.mark.parametrize(
    ("config", "model", "mirrored"),
    [
        (ThinkExtractConfig(), "m", True),
        (ThinkExtractConfig(chat_mirror_reasoning=False), "m", False),
        (ThinkExtractConfig(profiles=(ModelProfile(match="m", chat_mirror_reasoning=False),)), "m", False),
        (
            ThinkExtractConfig(
                chat_mirror_reasoning=False, profiles=(ModelProfile(match="m", chat_mirror_reasoning=True),)
            ),
            "m",
            True,
        ),
    ],
)
async def test_native_reasoning_reaches_a_reasoning_content_client(
    aiohttp_server: ServerFactory, config: ThinkExtractConfig, model: str, mirrored: bool
) -> None:
    events = vllm_native(["Two", " plus two."], ["4", "."])
    message = {"role": "assistant", "content": "4.", "reasoning": "Two plus two."}
    server = await aiohttp_server(upstream(events, completion(message), config))

    def native(text: str) -> dict[str, Any]:
        return {"reasoning": text, "reasoning_content": text} if mirrored else {"reasoning": text}

    assert await stream_deltas(server, model) == [
        ({"role": "assistant", "content": ""}, None),
        (native("Two"), None),
        (native(" plus two."), None),
        ({"content": "4"}, None),
        ({"content": "."}, None),
        ({}, "stop"),
    ]
    done = await client(server).chat.completions.create(model=model, messages=MESSAGES)
    expected = {"role": "assistant", "content": "4.", **native("Two plus two.")}
    assert done.choices[0].message.model_dump(exclude_unset=True) == expected


async def test_both_names_from_the_upstream_are_left_alone(aiohttp_server: ServerFactory) -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"reasoning_content": "a", "reasoning": "a"}, "finish_reason": None}],
    }
    events = [b"data: " + json.dumps(body).encode() + b"\n\n", b"data: [DONE]\n\n"]
    server = await aiohttp_server(upstream(events, {}, ThinkExtractConfig()))
    assert await stream_deltas(server) == [({"reasoning_content": "a", "reasoning": "a"}, None)]


async def test_reasoning_field_reasoning_gets_reasoning_content_mirrored(aiohttp_server: ServerFactory) -> None:
    """The other way round: a client reading ``reasoning`` behind a DeepSeek-style upstream."""

    def chunk(delta: dict[str, Any]) -> bytes:
        body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        body["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    events = [chunk({"reasoning_content": "r"}), chunk({"content": "a"}), b"data: [DONE]\n\n"]
    config = ThinkExtractConfig(chat_reasoning_field="reasoning")
    server = await aiohttp_server(upstream(events, {}, config))
    assert await stream_deltas(server) == [
        ({"reasoning_content": "r", "reasoning": "r"}, None),
        ({"content": "a"}, None),
    ]
