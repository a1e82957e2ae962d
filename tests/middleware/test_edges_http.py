"""Whitespace at block edges (``trim_tag_edges``) on every surface, over HTTP, with the official SDKs.

The upstream answers as Qwen3 writes: ``<think>\\n…\\n</think>\\n\\nanswer``. The client sees the
reasoning and the answer without the blank lines around the tags, stream and non-stream alike;
with the setting off, exactly as the model wrote them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, setup

from .. import messageswire as mw
from .. import responseswire as rw
from ..chatwire import chunk
from ..chatwire import sse as chat_sse
from ..conftest import Closing

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

REASONING = "The user asks for 2+2.\n\nAdding: 2 + 2 = 4."
ANSWER = "It is **4**.\n"  # the answer's own trailing newline touches no tag: it stays
TEXT = f"<think>\n{REASONING}\n</think>\n\n{ANSWER}"
PIECES = ["<think>", "\n", "The user asks for 2+2.", "\n\n", "Adding: 2 + 2 = 4.", "\n", "</think>", "\n\n", ANSWER]
assert "".join(PIECES) == TEXT
MODEL = "qwen3-8b"
TRIMMED = (f"{REASONING}\n", ANSWER)  # the reasoning's own tail stays (trim_reasoning_tail is off)
UNTRIMMED = (f"\n{REASONING}\n", f"\n\n{ANSWER}")


def app_for(
    config: ThinkExtractConfig, path: str, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.Application:
    app = web.Application()
    setup(app, config)
    app.router.add_post(path, handler)
    return app


async def stream_out(request: web.Request, frames: list[bytes]) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for frame in frames:
        await resp.write(frame)
    await resp.write_eof()
    return resp


# -- chat completions ---------------------------------------------------------------------------


async def chat_handler(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    usage = {"prompt_tokens": 5, "completion_tokens": 30, "total_tokens": 35}
    if not body.get("stream"):
        return web.json_response(
            {
                "id": "chatcmpl-9",
                "object": "chat.completion",
                "created": 1730000000,
                "model": MODEL,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": TEXT},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
        )
    frames = [chat_sse(chunk("", delta={"role": "assistant"}, model=MODEL))]
    frames += [chat_sse(chunk(piece, model=MODEL)) for piece in PIECES]
    frames.append(chat_sse(chunk("", finish="stop", model=MODEL), "[DONE]"))
    return await stream_out(request, frames)


@pytest.mark.parametrize(("trim", "expected"), [(True, TRIMMED), (False, UNTRIMMED)])
async def test_chat(aiohttp_server: ServerFactory, trim: bool, expected: tuple[str, str]) -> None:
    server = await aiohttp_server(
        app_for(ThinkExtractConfig(trim_tag_edges=trim), "/v1/chat/completions", chat_handler)
    )
    client = openai.AsyncOpenAI(
        api_key="x", base_url=str(server.make_url("/v1")), max_retries=0, _strict_response_validation=True
    )
    args: Any = {"model": MODEL, "messages": [{"role": "user", "content": "What is 2+2?"}]}
    completion = await client.chat.completions.create(**args)
    message = completion.choices[0].message.model_dump()
    assert message == {
        "role": "assistant",
        "content": expected[1],
        "reasoning_content": expected[0],
        "reasoning": expected[0],
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
        "tool_calls": None,
    }
    reasoning, content, finish = "", "", []
    async for part in await client.chat.completions.create(**args, stream=True):
        for choice in part.choices:
            extra = choice.delta.model_extra or {}
            assert extra.get("reasoning") == extra.get("reasoning_content")  # both names, one text
            reasoning += extra.get("reasoning_content") or ""
            content += choice.delta.content or ""
            finish.append(choice.finish_reason)
    assert (reasoning, content) == expected
    assert finish[-1] == "stop"


# -- Anthropic messages ---------------------------------------------------------------------------


async def messages_handler(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    if not body.get("stream"):
        return web.json_response(mw.message(mw.tb(TEXT), model=MODEL))
    frames = [mw.sse(mw.message_start(MODEL), mw.start(0))]
    frames += [mw.sse(mw.text(0, piece)) for piece in PIECES]
    frames.append(mw.sse(mw.stop(0), *mw.end()))
    return await stream_out(request, frames)


@pytest.mark.parametrize(("trim", "expected"), [(True, TRIMMED), (False, UNTRIMMED)])
async def test_messages(aiohttp_server: ServerFactory, trim: bool, expected: tuple[str, str], closing: Closing) -> None:
    config = ThinkExtractConfig(messages_policy="unsigned", trim_tag_edges=trim)
    server = await aiohttp_server(app_for(config, "/v1/messages", messages_handler))
    client = closing(
        anthropic.AsyncAnthropic(
            api_key="x", base_url=str(server.make_url("")), max_retries=0, _strict_response_validation=True
        )
    )
    args: Any = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "What is 2+2?"}]}
    want = [mw.th(expected[0]), mw.tb(expected[1])]
    msg = await client.messages.create(**args)
    assert [_block(b) for b in msg.content] == want
    async with client.messages.stream(**args) as stream:
        deltas = [(e.index, e.delta.type) async for e in stream if e.type == "content_block_delta"]
        final = await stream.get_final_message()
    assert [_block(b) for b in final.content] == want
    assert deltas[-1] == (1, "text_delta") and (0, "signature_delta") in deltas
    assert final.content[0].signature == mw.signature(expected[0])  # type: ignore[union-attr]


def _block(block: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = block.to_dict()
    dumped.pop("parsed_output", None)  # the stream helper's own attribute
    if dumped.get("citations", ()) is None:
        del dumped["citations"]
    return dumped


# -- OpenAI Responses -----------------------------------------------------------------------------

EVENTS = rw.upstream(PIECES, model=MODEL)


async def responses_handler(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    if not body.get("stream"):
        return web.json_response(EVENTS[-1]["response"])
    return await stream_out(request, [rw.sse([event]) for event in EVENTS])


@pytest.mark.parametrize(("trim", "expected"), [(True, TRIMMED), (False, UNTRIMMED)])
async def test_responses(aiohttp_server: ServerFactory, trim: bool, expected: tuple[str, str]) -> None:
    config = ThinkExtractConfig(trim_tag_edges=trim)
    server = await aiohttp_server(app_for(config, "/v1/responses", responses_handler))
    client = openai.AsyncOpenAI(
        api_key="x", base_url=str(server.make_url("/v1")), max_retries=0, _strict_response_validation=True
    )
    args: Any = {"model": MODEL, "input": "What is 2+2?"}
    summary = config.responses_reasoning_format == "summary"
    want = [rw.reasoning("rs_1", expected[0], summary=summary), rw.message("msg_1", [expected[1]])]
    resp = await client.responses.create(**args)
    assert _items(resp.output) == want
    assert resp.output_text == expected[1]
    async with client.responses.stream(**args) as stream:
        texts = [e.delta async for e in stream if e.type == "response.output_text.delta"]  # type: ignore[union-attr]
        final = await stream.get_final_response()
    assert _items(final.output) == want
    assert "".join(texts) == expected[1]


def _items(output: list[Any]) -> Any:
    items = [item.model_dump(mode="json", exclude_unset=True) for item in output]
    for item in items:
        for part in item.get("content") or []:
            if part.get("parsed", 0) is None:
                del part["parsed"]  # added by the stream helper's ParsedResponse: not on the wire
    return rw.normalize(items)
