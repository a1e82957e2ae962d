"""What one request costs the middleware besides its history: work done only when the request needs
it, and done once. Each test counts the calls of a step a request of that kind did not need (or
needed once) and checks that the request comes out as before."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_RECORD, ThinkExtractConfig, setup
from gateway_mw import incoming as incoming_module
from gateway_mw.credentials import scope_for

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}


class Upstream:
    """Answers each chat request with the next of ``answers`` (a tool call with it)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.bodies: list[dict[str, Any]] = []

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        message = {"role": "assistant", "content": self.answers[len(self.bodies) - 1], "tool_calls": [CALL]}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        answer = {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
        return web.json_response(answer)


async def _gateway(aiohttp_server: ServerFactory, answers: list[str]) -> tuple[str, Upstream, web.Application]:
    up = Upstream(answers)
    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/v1/chat/completions", up.chat)
    server = await aiohttp_server(app)
    return str(server.make_url("/v1/chat/completions")), up, app


async def _post(url: str, messages: list[dict[str, Any]], key: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        body = {"model": "llama-3.1-8b", "messages": messages}
        async with session.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) as resp:
            assert resp.status == 200
            answer: dict[str, Any] = json.loads(await resp.read())
            return answer


@pytest.fixture
def digests(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every record scope digested from a request's keys."""
    made: list[bytes] = []

    def counted(keys: list[str]) -> bytes:
        made.append(scope_for(keys))
        return made[-1]

    monkeypatch.setattr(incoming_module, "scope_for", counted)
    return made


async def test_a_request_that_neither_reads_nor_writes_the_record_digests_no_key(
    aiohttp_server: ServerFactory, digests: list[bytes]
) -> None:
    """A first turn (nothing to recall) whose answer moved no reasoning: the record is not touched,
    and the client's key is not digested into a scope."""
    url, up, app = await _gateway(aiohttp_server, ["It is sunny."])
    question = [{"role": "user", "content": "Weather in Paris?"}]
    answer = await _post(url, question, "key-a")
    await app[THINKEXTRACT_RECORD].drain()
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "It is sunny.", "tool_calls": [CALL]}
    assert up.bodies == [{"model": "llama-3.1-8b", "messages": question}]
    assert digests == []
    assert app[THINKEXTRACT_RECORD].counts.written == 0


async def test_a_request_that_reads_and_writes_the_record_digests_its_key_once(
    aiohttp_server: ServerFactory, digests: list[bytes]
) -> None:
    """Each request's key is digested once, however often its scope is used (the record read for its
    history, written with its answer); the answer's reasoning is kept under that scope alone."""
    written = "<think>I need the weather first.</think>Let me look."
    url, up, app = await _gateway(aiohttp_server, [written, "<think>Sunny.</think>It is sunny.", "It is sunny."])
    record = app[THINKEXTRACT_RECORD]
    question = [{"role": "user", "content": "Weather in Paris?"}]
    first = await _post(url, question, "key-a")
    await record.drain()
    assert digests == [scope_for(["key-a"])]  # written: the first answer moved reasoning
    assert record.counts.written == 3
    turn = {"role": "assistant", "content": first["choices"][0]["message"]["content"], "tool_calls": [CALL]}
    history = [*question, turn, {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    await _post(url, history, "key-a")
    await record.drain()
    assert digests == [scope_for(["key-a"])] * 2  # read (its turn's reasoning) and written: once
    # The reasoning the client dropped came back from the record, in the model's own text.
    assert up.bodies[1]["messages"][1] == {"role": "assistant", "content": written, "tool_calls": [CALL]}
    assert (record.counts.written, record.counts.hits) == (6, 1)
    await _post(url, history, "key-b")  # another key: its own scope, where nothing was kept
    assert up.bodies[2]["messages"][1] == turn
    assert digests[-1] == scope_for(["key-b"]) != scope_for(["key-a"])
