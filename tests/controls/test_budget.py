"""A reasoning budget the gateway enforces itself, over loopback: the middleware on a forwarding app in
front of an emulated server that thinks until it is stopped (:mod:`.thinker`). The client gets at most
N reasoning events and then an answer, as one well-formed stream; the upstream saw its first stream
stopped and the continuation asked as the server continues a final assistant message."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, proxy
from gateway_mw.config import BUDGET_MESSAGE
from gateway_mw.middleware import THINKEXTRACT_STATS
from gateway_mw.surfaces.chat.budgetbody import as_stream

from ..relay import Front as AnyFront
from ..relay import Fronts
from .thinker import ANSWER, Served, Thinker, token

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "Qwen/Qwen3-8B"
ROUTE = "/v1/chat/completions"


Front = AnyFront[Thinker]
Start = Callable[..., Awaitable[Front]]


@pytest.fixture
async def start(aiohttp_server: ServerFactory) -> AsyncIterator[Start]:
    async with Fronts(aiohttp_server) as fronts:

        async def make(thinker: Thinker, cancelling: bool = True, whole: bool = False, **settings: Any) -> Front:
            back = web.Application()
            back.router.add_post(ROUTE, thinker.chat)
            config = ThinkExtractConfig(upstream_server=thinker.server, reasoning_store="off", **settings)
            return await fronts.make(thinker, back, config, [ROUTE], whole=whole, cancelling=cancelling)

        yield make


def request(think: str, budget: int | None, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": think}], "stream": True}
    if budget is not None:
        body["reasoning"] = {"max_tokens": budget}
    return body | more


async def events(front: Front, body: dict[str, Any]) -> list[Any]:
    """The client's stream: each event's data, decoded (``[DONE]`` as the string)."""
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert resp.status == 200
        raw = await resp.read()
    assert raw.endswith(b"\n\n")
    out: list[Any] = []
    for block in raw.decode().split("\n\n")[:-1]:
        assert block.startswith("data: "), block
        data = block[len("data: ") :]
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


def reasoning_of(chunks: list[Any]) -> list[str]:
    """The reasoning events of choice 0, in order (each once, whichever name it is under)."""
    out = []
    for chunk in chunks:
        for choice in chunk["choices"] if isinstance(chunk, dict) else []:
            delta = choice["delta"]
            text = delta.get("reasoning_content", delta.get("reasoning"))
            if choice["index"] == 0 and text:
                out.append(text)
    return out


def content_of(chunks: list[Any]) -> str:
    return "".join(
        choice["delta"].get("content") or ""
        for chunk in chunks
        if isinstance(chunk, dict)
        for choice in chunk["choices"]
    )


def assert_one_answer(chunks: list[Any]) -> None:
    """One answer: ``[DONE]`` once and last, every chunk with the first's id, created and model, one
    role, one finish."""
    assert chunks[-1] == "[DONE]" and chunks.count("[DONE]") == 1
    heads = {(c["id"], c["created"], c["model"]) for c in chunks[:-1]}
    assert heads == {("chatcmpl-1", 1001, MODEL)}
    roles = [c for c in chunks[:-1] for ch in c["choices"] if "role" in ch["delta"]]
    assert len(roles) == 1 and chunks.index(roles[0]) == 0
    finishes = [ch["finish_reason"] for c in chunks[:-1] for ch in c["choices"] if ch.get("finish_reason")]
    assert len(finishes) == 1


@pytest.mark.parametrize("server", ["vllm", "sglang", "llamacpp"])
@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("budget", [1, 5, 32])
async def test_a_budget_ends_the_thinking_and_the_model_answers(
    start: Start, server: str, native: bool, budget: int
) -> None:
    front = await start(Thinker(server, native=native), reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("think", budget))
    assert reasoning_of(chunks) == [token(i) for i in range(budget)]
    assert content_of(chunks) == "".join(ANSWER)
    assert_one_answer(chunks)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"

    first, second = await front.thinker.over()
    assert first.stopped and budget <= first.generated < 100_000  # the model stopped generating
    assert not second.stopped and second.generated == len(ANSWER)
    prefill = "<think>" + "".join(token(i) for i in range(budget)) + BUDGET_MESSAGE + "</think>"
    asked = {"continue_final_message": True, "add_generation_prompt": False} if server != "llamacpp" else {}
    expected = first.body | {"messages": first.body["messages"] + [{"role": "assistant", "content": prefill}]}
    assert second.body == expected | asked
    assert "thinking_token_budget" not in first.body and "thinking_budget_tokens" not in first.body
    stats = front.stats.surface("chat")
    assert (stats.budgets, stats.budget_reasoning_events) == ({"continued": 1}, budget)


async def test_the_openai_sdk_reads_one_answer(start: Start) -> None:
    front = await start(Thinker("vllm"), reasoning_budget_enforcement="gateway")
    client = openai.AsyncOpenAI(base_url=front.url + "/v1", api_key="x", max_retries=0)
    try:
        async with client.chat.completions.stream(
            model=MODEL,
            messages=[{"role": "user", "content": "think"}],
            extra_body={"reasoning": {"max_tokens": 3}},
            stream_options={"include_usage": True},
        ) as stream:
            reasoning = [
                event.chunk.choices[0].delta.model_extra["reasoning_content"]
                async for event in stream
                if event.type == "chunk" and event.chunk.choices and event.chunk.choices[0].delta.model_extra
                if event.chunk.choices[0].delta.model_extra.get("reasoning_content")
            ]
            completion = await stream.get_final_completion()
    finally:
        await client.close()
    assert reasoning == [token(0), token(1), token(2)]
    assert (completion.id, completion.created, completion.model) == ("chatcmpl-1", 1001, MODEL)
    assert [(c.index, c.finish_reason, c.message.role, c.message.content) for c in completion.choices] == [
        (0, "stop", "assistant", "".join(ANSWER))
    ]
    second = front.thinker.served[1]
    prompt = sum(len(str(m["content"]).split()) for m in second.body["messages"])
    assert completion.usage is not None
    assert completion.usage.model_dump(exclude_none=True) == {
        "prompt_tokens": prompt,
        "completion_tokens": len(ANSWER),
        "total_tokens": prompt + len(ANSWER),
    }


async def test_reasoning_within_the_budget_is_not_cut(start: Start) -> None:
    front = await start(Thinker("sglang"))  # auto: SGLang has no budget field, the gateway's
    chunks = await events(front, request("think 4", 4))
    assert reasoning_of(chunks) == [token(i) for i in range(4)]
    assert content_of(chunks) == "".join(ANSWER)
    assert [s.stopped for s in await front.thinker.over()] == [False]
    assert front.stats.surface("chat").budgets == {"within": 1}


@pytest.mark.parametrize("limit", ["max_tokens", "max_completion_tokens", "n_predict"])
async def test_the_continuation_may_generate_only_what_the_client_s_limit_leaves(start: Start, limit: str) -> None:
    """The client's limit on the answer's tokens holds for the two requests together: the
    continuation is asked for what the reasoning cut at the budget left of it."""
    front = await start(Thinker("vllm"), reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("think", 3, **{limit: 10}))
    assert_one_answer(chunks)
    first, second = await front.thinker.over()
    assert (first.body[limit], second.body[limit]) == (10, 7)


async def test_a_limit_the_reasoning_used_up_ends_the_answer_at_its_length(start: Start) -> None:
    front = await start(Thinker("vllm"), reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("think", 3, max_tokens=3))
    assert reasoning_of(chunks) == [token(0), token(1), token(2)]
    assert_one_answer(chunks)
    assert chunks[-2]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "length"}]
    assert len(await front.thinker.over()) == 1
    assert front.stats.surface("chat").budgets == {"not_continued": 1}


async def test_a_conversation_with_a_lone_surrogate_escape_is_continued(start: Start) -> None:
    """A JavaScript client's text cut inside an emoji (``"\\ud83d"`` alone) is valid JSON no decoder
    takes: the continuation is still asked for, the escape given back as the client spelled it."""
    front = await start(Thinker("vllm"), reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("\ud83d think", 3))
    assert reasoning_of(chunks) == [token(0), token(1), token(2)]
    assert content_of(chunks) == "".join(ANSWER)
    assert_one_answer(chunks)
    first, second = await front.thinker.over()
    assert second.body["messages"][0] == first.body["messages"][0] == {"role": "user", "content": "\ud83d think"}
    assert front.stats.surface("chat").budgets == {"continued": 1}


async def test_auto_leaves_a_budget_to_a_server_that_has_its_own(start: Start) -> None:
    front = await start(Thinker("vllm"))
    chunks = await events(front, request("think 6", 2))
    assert len(reasoning_of(chunks)) == 6  # the emulator does not enforce vLLM's field: the gateway did not cut
    assert front.thinker.served[0].body["thinking_token_budget"] == 2
    assert front.stats.surface("chat").budgets == {}


async def test_a_budget_of_zero_gives_no_reasoning(start: Start) -> None:
    front = await start(Thinker("vllm"), reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("think", 0))
    assert reasoning_of(chunks) == []
    assert content_of(chunks) == "".join(ANSWER)
    assert_one_answer(chunks)
    prefill = front.thinker.served[1].body["messages"][-1]
    assert prefill == {"role": "assistant", "content": "<think>" + BUDGET_MESSAGE + "</think>"}


@pytest.mark.parametrize("fault", ["refused", "dropped"])
async def test_a_failed_continuation_ends_the_answer_where_it_was(start: Start, fault: str) -> None:
    thinker = Thinker("vllm", fail=500 if fault == "refused" else None, drop=fault == "dropped")
    front = await start(thinker, reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("think", 3))
    assert reasoning_of(chunks) == [token(0), token(1), token(2)]
    assert content_of(chunks) == ("" if fault == "refused" else ANSWER[0])
    assert_one_answer(chunks)
    assert chunks[-2]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "length"}]
    assert front.stats.surface("chat").budgets == {"continuation_failed": 1}


@pytest.mark.parametrize("cancelling", [True, False])
async def test_a_client_gone_before_the_continuation_gets_none(start: Start, cancelling: bool) -> None:
    """The client leaves after N reasoning events, and the model goes on thinking: the handler is
    cancelled (a server that cancels it) or its next write fails and the middleware finds the client
    gone before it would ask for the continuation; either way, none is asked for."""
    budget = 2
    thinker = Thinker("vllm", wait_at=budget)
    front = await start(thinker, cancelling, reasoning_budget_enforcement="gateway")
    thinker.wait = front.client_gone
    seen = []
    async with aiohttp.ClientSession() as session:
        resp = await session.post(front.url + ROUTE, json=request("think", budget))
        async for line in resp.content:
            if line.startswith(b"data: "):
                seen.append(json.loads(line[len(b"data: ") :]))
            if len(reasoning_of(seen)) == budget:
                break
        resp.connection.transport.close()  # type: ignore[union-attr]
        resp.close()
    served = await thinker.over()
    assert reasoning_of(seen) == [token(0), token(1)]
    assert len(served) == 1 and served[0].stopped
    if not cancelling:
        while not front.stats.surface("chat").budgets:  # until the middleware is done with it
            await asyncio.sleep(0)
    assert front.stats.surface("chat").budgets == ({} if cancelling else {"client_gone": 1})


class AnsweringAfterTheClientLeft(Thinker):
    """Holds the continuation until the client has gone, then answers it."""

    gone: Callable[[], bool] = staticmethod(lambda: True)

    async def _answer(self, request: web.Request, served: Served) -> web.StreamResponse:
        if len(self.served) == 2:
            while not self.gone():
                await asyncio.sleep(0)
        return await super()._answer(request, served)


async def test_a_client_gone_during_the_continuation_is_counted_gone(start: Start) -> None:
    """The client leaves once the continuation is asked for: the answer is not the upstream's
    failure, and is counted as the client's leaving."""
    budget = 2
    thinker = AnsweringAfterTheClientLeft("vllm")
    front = await start(thinker, False, reasoning_budget_enforcement="gateway")
    thinker.gone = front.client_gone
    seen = []
    async with aiohttp.ClientSession() as session:
        resp = await session.post(front.url + ROUTE, json=request("think", budget))
        async for line in resp.content:
            if line.startswith(b"data: "):
                seen.append(json.loads(line[len(b"data: ") :]))
            if len(reasoning_of(seen)) == budget:
                break
        while len(thinker.served) < 2:  # until the continuation is asked for
            await asyncio.sleep(0)
        resp.connection.transport.close()  # type: ignore[union-attr]
        resp.close()
    served = await thinker.over()
    assert len(served) == 2 and served[0].stopped
    while not front.stats.surface("chat").budgets:  # until the middleware is done with it
        await asyncio.sleep(0)
    assert front.stats.surface("chat").budgets == {"client_gone": 1}


class AnsweringInOneBody(Thinker):
    """Answers the continuation with one ``chat.completion`` body, though a stream was asked for
    (as a server that does not stream a continued message, or a handler that buffers, may)."""

    async def _answer(self, request: web.Request, served: Served) -> web.StreamResponse:
        if len(self.served) == 1:
            return await super()._answer(request, served)
        message = {"role": "assistant", "content": "".join(ANSWER), "tool_calls": [CALL]}
        usage = {"prompt_tokens": 9, "completion_tokens": len(ANSWER), "total_tokens": 9 + len(ANSWER)}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        answer = {"id": "chatcmpl-2", "object": "chat.completion", "created": 1002, "model": MODEL}
        served.generated = len(ANSWER)
        return web.json_response(answer | {"choices": [choice], "usage": usage})


CALL = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a":2}'}}


async def test_a_continuation_answered_in_one_body_is_the_rest_of_the_answer(start: Start) -> None:
    """The continuation's answer in one JSON body goes to the client as the rest of its stream: the
    content and the tool call whole, the first answer's id, one finish, the usage, one ``[DONE]``."""
    front = await start(AnsweringInOneBody("vllm"), reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("think", 2, stream_options={"include_usage": True}))
    assert reasoning_of(chunks) == [token(0), token(1)]
    assert content_of(chunks) == "".join(ANSWER)
    assert_one_answer(chunks)
    calls = [call for c in chunks[:-1] for ch in c["choices"] for call in ch["delta"].get("tool_calls", ())]
    assert calls == [{"index": 0, **CALL}]
    assert [c["usage"]["completion_tokens"] for c in chunks[:-1] if c.get("usage")] == [len(ANSWER)]
    assert front.stats.surface("chat").budgets == {"continued": 1}


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"[]",
        b'{"choices": {}}',
        b'{"choices": []}',
        b'{"choices": [1]}',
        b'{"choices": [{"message": "x"}]}',
        b"\xff",
    ],
)
def test_a_body_that_is_no_answer_is_no_continuation(body: bytes) -> None:
    assert as_stream(body) is None


async def test_reasoning_reopened_in_the_continuation_is_reasoning_not_counted(start: Start) -> None:
    front = await start(Thinker("llamacpp", reopen=True), reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("think", 2))
    assert reasoning_of(chunks) == [token(0), token(1), "more "]
    assert content_of(chunks) == "".join(ANSWER)
    assert_one_answer(chunks)
    assert (front.stats.surface("chat").budgets, front.stats.surface("chat").budget_reasoning_events) == (
        {"continued": 1},
        2,
    )


@pytest.mark.parametrize(
    ("more", "why"),
    [
        ({"n": 2}, "two answers"),
        ({"reasoning": {"max_tokens": 2, "exclude": True}}, "excluded"),
    ],
)
async def test_where_the_gateway_does_not_enforce_it_nothing_is_cut(
    start: Start, more: dict[str, Any], why: str
) -> None:
    front = await start(Thinker("sglang"), reasoning_budget_enforcement="gateway")
    body = request("think 5", 2, **more)
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        await resp.read()
    served = await front.thinker.over()
    assert len(served) == 1 and not served[0].stopped, why
    assert front.stats.surface("chat").budgets == {}


async def test_through_the_gateway_without_a_stream() -> None:
    """The packaged gateway, a client that asks for no stream: one JSON body, continued."""
    thinker = Thinker("sglang")
    back = web.Application()
    back.router.add_post(ROUTE, thinker.chat)
    runner = web.AppRunner(back, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    config = ThinkExtractConfig(upstream_server="sglang", reasoning_store="off")
    app = proxy.build_app(proxy.Settings(upstream=f"http://127.0.0.1:{runner.addresses[0][1]}", think_extract=config))
    gateway = web.AppRunner(app, access_log=None)
    await gateway.setup()
    await web.TCPSite(gateway, "127.0.0.1", 0).start()
    try:
        url = f"http://127.0.0.1:{gateway.addresses[0][1]}{ROUTE}"
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json=request("think", 2, stream=False)) as resp,
        ):
            assert (resp.status, resp.content_type) == (200, "application/json")
            answer = await resp.json()
        served = await thinker.over()
    finally:
        await gateway.cleanup()
        await runner.cleanup()
    reasoning = token(0) + token(1)
    assert answer["choices"][0]["message"] == {
        "role": "assistant",
        "content": "".join(ANSWER),
        "reasoning_content": reasoning,
        "reasoning": reasoning,
    }
    assert [s.stopped for s in served] == [True, False]
    assert app[THINKEXTRACT_STATS].surface("chat").budgets == {"continued": 1}


async def test_through_the_gateway(caplog: pytest.LogCaptureFixture) -> None:
    """The packaged gateway: the first stream ends as the budget's (not a client that left), the answer
    is continued, and the debug line says what the gateway did and how many events it counted."""
    thinker = Thinker("sglang")
    back = web.Application()
    back.router.add_post(ROUTE, thinker.chat)
    runner = web.AppRunner(back, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    config = ThinkExtractConfig(upstream_server="sglang", reasoning_store="off")
    settings = proxy.Settings(upstream=f"http://127.0.0.1:{runner.addresses[0][1]}", think_extract=config)
    app = proxy.build_app(settings)
    gateway = web.AppRunner(app, access_log=None)
    await gateway.setup()
    await web.TCPSite(gateway, "127.0.0.1", 0).start()
    caplog.set_level(logging.DEBUG, "gateway_mw.proxy")
    try:
        front = Front(f"http://127.0.0.1:{gateway.addresses[0][1]}", thinker, app[THINKEXTRACT_STATS])
        chunks = await events(front, request("think", 3))
        served = await thinker.over()
    finally:
        await gateway.cleanup()
        await runner.cleanup()
    assert reasoning_of(chunks) == [token(0), token(1), token(2)]
    assert content_of(chunks) == "".join(ANSWER)
    assert_one_answer(chunks)
    assert [s.stopped for s in served] == [True, False]
    line = next(r.getMessage() for r in caplog.records if "budget enforced" in r.getMessage())
    assert "budget enforced by the gateway: 3 reasoning events counted, continued" in line
    assert "client" not in line  # the cut is not a client that left
    assert front.stats.surface("chat").budgets == {"continued": 1}


async def test_a_handler_that_returns_the_whole_answer_is_not_cut(start: Start) -> None:
    front = await start(Thinker("sglang"), whole=True, reasoning_budget_enforcement="gateway")
    chunks = await events(front, request("think 5", 2))
    assert reasoning_of(chunks) == [token(i) for i in range(5)]
    assert content_of(chunks) == "".join(ANSWER)
    assert front.stats.surface("chat").budgets == {"not_relayed": 1}


@pytest.mark.parametrize("server", ["vllm", "sglang", "llamacpp"])
async def test_an_answer_that_does_not_stream_gets_one_body(start: Start, server: str) -> None:
    """Asked for as a stream (counted, cut, continued), given as the body the client asked for."""
    front = await start(Thinker(server), reasoning_budget_enforcement="gateway")
    body = request("think", 3, stream=False)
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert (resp.status, resp.content_type) == (200, "application/json")
        answer = await resp.json()
    first, second = await front.thinker.over()
    reasoning = "".join(token(i) for i in range(3))
    prompt = sum(len(str(m["content"]).split()) for m in second.body["messages"])
    assert answer == {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1001,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "".join(ANSWER),
                    "reasoning_content": reasoning,
                    "reasoning": reasoning,
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": len(ANSWER), "total_tokens": prompt + len(ANSWER)},
    }
    streamed = {"stream": True, "stream_options": {"include_usage": True}}
    assert first.stopped and first.body == body | streamed | {
        "chat_template_kwargs": first.body["chat_template_kwargs"]
    }
    assert second.body["messages"][-1]["content"] == "<think>" + reasoning + BUDGET_MESSAGE + "</think>"
    assert (second.body["stream"], second.body["stream_options"]) == (True, {"include_usage": True})


async def test_the_openai_sdk_reads_the_body(start: Start) -> None:
    front = await start(Thinker("sglang"))
    client = openai.AsyncOpenAI(base_url=front.url + "/v1", api_key="x", max_retries=0)
    try:
        completion = await client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "think"}], extra_body={"reasoning": {"max_tokens": 2}}
        )
    finally:
        await client.close()
    assert (completion.id, completion.object, completion.model) == ("chatcmpl-1", "chat.completion", MODEL)
    message = completion.choices[0].message
    assert (message.role, message.content, message.model_extra) == (
        "assistant",
        "".join(ANSWER),
        {"reasoning_content": token(0) + token(1), "reasoning": token(0) + token(1)},
    )
    assert front.stats.surface("chat").budgets == {"continued": 1}


@pytest.mark.parametrize("budget", [2, 9])
async def test_a_body_within_the_budget_or_a_refused_continuation(start: Start, budget: int) -> None:
    front = await start(Thinker("vllm", fail=500), reasoning_budget_enforcement="gateway")
    async with (
        aiohttp.ClientSession() as session,
        session.post(front.url + ROUTE, json=request("think 4", budget, stream=False)) as resp,
    ):
        answer = await resp.json()
    within = budget > 4
    reasoning = "".join(token(i) for i in range(min(budget, 4)))
    assert answer["choices"] == [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "".join(ANSWER) if within else "",
                "reasoning_content": reasoning,
                "reasoning": reasoning,
            },
            "logprobs": None,
            "finish_reason": "stop" if within else "length",
        }
    ]
    assert front.stats.surface("chat").budgets == ({"within": 1} if within else {"continuation_failed": 1})


async def test_a_handler_that_returns_the_whole_stream_still_answers_with_a_body(start: Start) -> None:
    front = await start(Thinker("sglang"), whole=True, reasoning_budget_enforcement="gateway")
    async with (
        aiohttp.ClientSession() as session,
        session.post(front.url + ROUTE, json=request("think 3", 1, stream=False)) as resp,
    ):
        assert resp.content_type == "application/json"
        answer = await resp.json()
    reasoning = "".join(token(i) for i in range(3))
    assert answer["choices"][0]["message"] == {
        "role": "assistant",
        "content": "".join(ANSWER),
        "reasoning_content": reasoning,
        "reasoning": reasoning,
    }
    assert front.stats.surface("chat").budgets == {"not_relayed": 1}
