"""The reasoning record on Ollama's ``/api/chat``: a client that keeps only the answer of a turn (as most
chat UIs do) still has the turn's reasoning reach Ollama when it sends the turn back, from the record,
whether the turn was streamed or not, and whether its tool call has an id or not."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_RECORD, ThinkExtractConfig, setup

from .wire import body, stream

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

WRITTEN = "<think>The user wants the weather; I call the tool.</think>Let me look."
CALLS = {  # a tool call without an id, as Ollama's own client keeps it, and with one, as a body may carry it
    "no-id": {"function": {"name": "weather", "arguments": {"city": "Paris"}}},
    "id": {"id": "call_p4x2k9", "function": {"index": 0, "name": "weather", "arguments": {"city": "Paris"}}},
}


class Ollama:
    """A model server in Ollama's format that writes its reasoning inline and keeps what it was sent."""

    def __init__(self, call: dict[str, Any]) -> None:
        self.sent: list[dict[str, Any]] = []
        self.call = call

    async def chat(self, request: web.Request) -> web.StreamResponse:
        req = await request.json()
        self.sent.append(req)
        if req.get("stream", True) is False:
            return web.json_response(body("chat", req["model"], WRITTEN, tool_calls=[self.call]))
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        pieces = stream("chat", req["model"], [WRITTEN[:20], WRITTEN[20:]]).splitlines(keepends=True)
        # the tool call on a line of its own before the done line, as Ollama streams it
        pieces.insert(-1, stream("chat", req["model"], [""], tool_calls=[self.call]).splitlines(keepends=True)[0])
        await resp.write(b"".join(pieces))
        await resp.write_eof()
        return resp


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("model", ["qwen3:8b", "llama3.2"])
@pytest.mark.parametrize("call", list(CALLS))
async def test_a_client_that_keeps_only_the_answer_gets_the_reasoning_back(
    aiohttp_server: ServerFactory, streamed: bool, model: str, call: str
) -> None:
    tool_call = CALLS[call]
    up = Ollama(tool_call)
    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/api/chat", up.chat)
    url = str((await aiohttp_server(app)).make_url("/api/chat"))
    question = [{"role": "user", "content": "Weather in Paris?"}]
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json={"model": model, "messages": question, "stream": streamed}) as resp:
            raw = await resp.read()
        lines = [json.loads(line) for line in raw.splitlines()]
        answer = "".join(line["message"]["content"] for line in lines)
        assert answer == "Let me look."  # the client was shown the answer alone
        replay = [*question, {"role": "assistant", "content": answer, "tool_calls": [tool_call]},
                  {"role": "tool", "content": "18°C, sunny"}]  # fmt: skip
        await app[THINKEXTRACT_RECORD].drain()
        async with session.post(url, json={"model": model, "messages": replay, "stream": streamed}) as resp:
            await resp.read()
    reasoning = "The user wants the weather; I call the tool."
    assistant = up.sent[1]["messages"][1]
    # Ollama reads a turn's `thinking` whatever the model (its templates render it): a model of no known
    # family gets it there too
    assert assistant == {"role": "assistant", "content": answer, "thinking": reasoning, "tool_calls": [tool_call]}
