"""A reasoning budget the gateway enforces on Ollama's native API, over loopback: the middleware on a
forwarding app in front of an emulated Ollama that thinks until it is stopped and continues a final
assistant message as its sources do (:mod:`tests.controls.ollama_thinker`). On ``/api/chat`` the
client gets at most N ``thinking`` lines and then the answer, as one answer with one done line, the
``ollama`` client's stream and body alike; ``/api/generate`` cannot be continued, and is not cut."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import ollama
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import BUDGET_MESSAGE

from ..controls.ollama_thinker import CREATED, OllamaThinker, thinking_model
from ..controls.thinker import ANSWER, token
from ..relay import Front as AnyFront
from ..relay import Fronts

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "qwen3:8b"


Front = AnyFront[OllamaThinker]
Start = Callable[..., Awaitable[Front]]


@pytest.fixture
async def start(aiohttp_server: ServerFactory) -> AsyncIterator[Start]:
    async with Fronts(aiohttp_server) as fronts:

        async def make(thinker: OllamaThinker, whole: bool = False, **settings: Any) -> Front:
            config = ThinkExtractConfig(upstream_server="ollama", reasoning_store="off", **settings)
            routes = ["/api/chat", "/api/generate"]
            return await fronts.make(thinker, thinker.app(), config, routes, whole=whole, prepare=thinking_model)

        yield make


def chat(think: str, budget: int | None = None, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": think}]}
    if budget is not None:
        body["reasoning"] = {"max_tokens": budget}
    return body | more


async def post(front: Front, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    async with aiohttp.ClientSession() as session, session.post(front.url + path, json=body) as resp:
        assert resp.status == 200
        return resp.content_type, await resp.read()


async def lines(front: Front, body: dict[str, Any], path: str = "/api/chat") -> list[dict[str, Any]]:
    content_type, raw = await post(front, path, body)
    assert content_type == "application/x-ndjson" and raw.endswith(b"\n")
    return [json.loads(line) for line in raw.splitlines()]


def holder(line: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = line.get("message", line)
    return message


def thinking_of(got: list[dict[str, Any]]) -> list[str]:
    return [t for line in got if (t := holder(line).get("thinking"))]


def text_of(got: list[dict[str, Any]]) -> str:
    return "".join(holder(line).get("content", line.get("response", "")) for line in got)


def assert_one_answer(got: list[dict[str, Any]]) -> None:
    """One done line, last; every line the same model, an assistant message."""
    assert [line["done"] for line in got] == [False] * (len(got) - 1) + [True]
    assert {line["model"] for line in got} == {MODEL}
    assert {line["message"]["role"] for line in got} == {"assistant"}


def prefill(budget: int) -> str:
    return "<think>" + "".join(token(i) for i in range(budget)) + BUDGET_MESSAGE + "</think>"


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("budget", [1, 5])
async def test_a_budget_ends_the_thinking_and_the_model_answers(start: Start, native: bool, budget: int) -> None:
    front = await start(OllamaThinker(native=native))
    got = await lines(front, chat("think", budget))
    assert thinking_of(got) == [token(i) for i in range(budget)]
    assert text_of(got) == "".join(ANSWER)
    assert_one_answer(got)
    first, second = await front.thinker.over()
    assert first.stopped and budget <= first.generated < 100_000  # the model stopped generating
    assert not second.stopped and second.generated == len(ANSWER)
    assert got[-1] == {
        "model": MODEL,
        "created_at": CREATED,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "prompt_eval_count": 1 + len(prefill(budget).split()),
        "eval_count": len(ANSWER) + budget,  # the continuation's, and the reasoning lines the client got
    }
    messages = first.body["messages"] + [{"role": "assistant", "content": prefill(budget)}]
    assert second.body == first.body | {"messages": messages}
    assert first.body["think"] is True
    stats = front.stats.surface("ollama")
    assert (stats.budgets, stats.budget_reasoning_events) == ({"continued": 1}, budget)


async def test_the_ollama_client_streams_one_answer(start: Start) -> None:
    """The operator's budget (the ``ollama`` client has no member for one) and the client's stream."""
    front = await start(OllamaThinker(native=True), reasoning_control="budget:3")
    client = ollama.AsyncClient(host=front.url)
    parts = [part async for part in await client.chat(MODEL, [{"role": "user", "content": "think"}], stream=True)]
    assert [p.message.thinking for p in parts if p.message.thinking] == [token(0), token(1), token(2)]
    assert "".join(p.message.content or "" for p in parts) == "".join(ANSWER)
    assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True]
    assert (parts[-1].done_reason, parts[-1].eval_count, parts[-1].model) == ("stop", len(ANSWER) + 3, MODEL)
    assert front.stats.surface("ollama").budgets == {"continued": 1}


async def test_the_ollama_client_s_body_is_one_answer(start: Start) -> None:
    """``stream: false``: the gateway asks for a stream, cuts and continues it, and gives the body
    Ollama would have given for the whole answer."""
    front = await start(OllamaThinker(), reasoning_control="budget:3")
    client = ollama.AsyncClient(host=front.url)
    response = await client.chat(MODEL, [{"role": "user", "content": "think"}], stream=False)
    assert response.model_dump(exclude_none=True) == {
        "model": MODEL,
        "created_at": CREATED,
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "prompt_eval_count": 1 + len(prefill(3).split()),
        "eval_count": len(ANSWER) + 3,
        "message": {"role": "assistant", "content": "".join(ANSWER), "thinking": "".join(token(i) for i in range(3))},
    }
    first, second = await front.thinker.over()
    assert (first.body["stream"], second.body["stream"]) == (True, True)
    assert front.stats.surface("ollama").budgets == {"continued": 1}


async def test_reasoning_within_the_budget_is_not_cut(start: Start) -> None:
    front = await start(OllamaThinker())
    got = await lines(front, chat("think 4", 4))
    assert thinking_of(got) == [token(i) for i in range(4)]
    assert text_of(got) == "".join(ANSWER)
    assert_one_answer(got)
    assert [s.stopped for s in await front.thinker.over()] == [False]
    assert front.stats.surface("ollama").budgets == {"within": 1}


async def test_generate_cannot_be_continued_and_is_not_cut(start: Start) -> None:
    """``/api/generate`` has no messages to continue: the budget is thinking on, outcome nearest."""
    front = await start(OllamaThinker(native=True))
    got = await lines(front, {"model": MODEL, "prompt": "think 6", "reasoning": {"max_tokens": 2}}, "/api/generate")
    assert thinking_of(got) == [token(i) for i in range(6)]
    assert "".join(line["response"] for line in got) == "".join(ANSWER)
    served = await front.thinker.over()
    assert len(served) == 1 and served[0].body["think"] is True
    stats = front.stats.surface("ollama")
    assert (stats.budgets, stats.controls) == ({}, {"budget:nearest": 1})


async def test_the_continuation_may_generate_only_what_num_predict_leaves(start: Start) -> None:
    front = await start(OllamaThinker())
    got = await lines(front, chat("think", 3, options={"num_predict": 10, "temperature": 0}))
    assert_one_answer(got)
    first, second = await front.thinker.over()
    assert (first.body["options"], second.body["options"]) == (
        {"num_predict": 10, "temperature": 0},
        {"num_predict": 7, "temperature": 0},
    )


async def test_a_num_predict_that_ends_the_reasoning_first_is_ollama_s_end(start: Start) -> None:
    """Ollama counts the tags as tokens: ``num_predict`` 4 ends the answer after ``<think>`` and 3
    reasoning tokens, before the budget of 3 is passed; the answer is the server's, as it came."""
    front = await start(OllamaThinker())
    got = await lines(front, chat("think", 3, options={"num_predict": 4}))
    assert thinking_of(got) == [token(0), token(1), token(2)]
    assert_one_answer(got)
    assert (got[-1]["done_reason"], got[-1]["eval_count"]) == ("length", 4)
    assert len(await front.thinker.over()) == 1
    assert front.stats.surface("ollama").budgets == {"within": 1}


async def test_a_budget_of_zero_gives_no_reasoning(start: Start) -> None:
    front = await start(OllamaThinker(native=True))
    got = await lines(front, chat("think", 0))
    assert thinking_of(got) == []
    assert text_of(got) == "".join(ANSWER)
    assert_one_answer(got)
    assert front.thinker.served[1].body["messages"][-1] == {"role": "assistant", "content": prefill(0)}


@pytest.mark.parametrize("fault", ["refused", "dropped"])
async def test_a_failed_continuation_ends_the_answer_where_it_was(start: Start, fault: str) -> None:
    thinker = OllamaThinker(fail=500 if fault == "refused" else None, drop=fault == "dropped")
    front = await start(thinker)
    got = await lines(front, chat("think", 3))
    assert thinking_of(got) == [token(0), token(1), token(2)]
    assert text_of(got) == ("" if fault == "refused" else ANSWER[0])
    assert_one_answer(got)
    assert (got[-1]["done_reason"], got[-1]["eval_count"]) == ("length", 3 if fault == "refused" else 4)
    assert front.stats.surface("ollama").budgets == {"continuation_failed": 1}


@pytest.mark.parametrize("thinker", [OllamaThinker(reopen=True), OllamaThinker(closes_turn=True)])
async def test_a_model_that_thinks_again_is_not_cut_twice(start: Start, thinker: OllamaThinker) -> None:
    """The model reopens its reasoning in the continuation, or its template closed the prefilled turn
    and opened a new one, so that it starts again: its reasoning goes to the client, uncounted."""
    front = await start(thinker)
    got = await lines(front, chat("think 6", 2))
    again = ["more "] if thinker.reopen else [token(i) for i in range(6)]
    assert thinking_of(got) == [token(0), token(1), *again]
    assert text_of(got) == "".join(ANSWER)
    assert_one_answer(got)
    assert front.stats.surface("ollama").budgets == {"continued": 1}


async def test_a_continuation_answered_with_one_body_is_the_rest_of_the_stream(start: Start) -> None:
    """A handler (or a server) that answers the continuation whole, though a stream was asked for:
    its one body goes on as the done line of the same answer."""

    front = await start(OllamaThinker(whole=True))
    got = await lines(front, chat("think", 2))
    assert thinking_of(got) == [token(0), token(1)]
    assert text_of(got) == "".join(ANSWER)
    assert_one_answer(got)
    assert got[-1]["eval_count"] == len(ANSWER) + 2
    assert front.stats.surface("ollama").budgets == {"continued": 1}


async def test_a_client_gone_before_the_continuation_gets_none(start: Start) -> None:
    """The client leaves after N reasoning lines, and the model goes on thinking: the gateway
    cancels the handler of a client that left, and no continuation is asked for."""
    budget = 2
    thinker = OllamaThinker(wait_at=budget)
    front = await start(thinker)
    thinker.wait = front.client_gone
    seen: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as session:
        resp = await session.post(front.url + "/api/chat", json=chat("think", budget))
        async for raw in resp.content:
            seen.append(json.loads(raw))
            if len(thinking_of(seen)) == budget:
                break
        resp.connection.transport.close()  # type: ignore[union-attr]
        resp.close()
    served = await thinker.over()
    assert thinking_of(seen) == [token(0), token(1)]
    assert len(served) == 1 and served[0].stopped
    assert front.stats.surface("ollama").budgets == {}


async def test_a_handler_that_reads_the_stream_whole_gives_the_body_uncut(start: Start) -> None:
    """Nothing to cut in a stream the handler read whole: a client that asked for no stream gets
    the body that stream makes, all of its reasoning, as Ollama would have written it."""
    front = await start(OllamaThinker(), whole=True)
    content_type, raw = await post(front, "/api/chat", chat("think 5", 2, stream=False))
    assert content_type == "application/json"
    assert json.loads(raw) == {
        "model": MODEL,
        "created_at": CREATED,
        "message": {"role": "assistant", "content": "".join(ANSWER), "thinking": "".join(token(i) for i in range(5))},
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "prompt_eval_count": 2,
        "eval_count": 5 + 2 + len(ANSWER),
    }
    assert front.stats.surface("ollama").budgets == {"not_relayed": 1}


async def test_a_refused_continuation_gives_a_client_that_asked_for_no_stream_the_body_so_far(start: Start) -> None:
    front = await start(OllamaThinker(fail=500))
    content_type, raw = await post(front, "/api/chat", chat("think", 3, stream=False))
    assert content_type == "application/json"
    assert json.loads(raw) == {
        "model": MODEL,
        "created_at": CREATED,
        "message": {"role": "assistant", "content": "", "thinking": "".join(token(i) for i in range(3))},
        "done": True,
        "done_reason": "length",
        "eval_count": 3,
    }
    assert front.stats.surface("ollama").budgets == {"continuation_failed": 1}


async def test_lines_past_the_budget_in_the_same_read_are_not_sent(start: Start) -> None:
    """Ollama wrote past the budget before the gateway could stop it (10 lines in one write): the
    cut is at the budget as the client sees it, and the prefill is the reasoning the client got."""
    front = await start(OllamaThinker(native=True, burst=10))
    got = await lines(front, chat("think", 3))
    assert thinking_of(got) == [token(0), token(1), token(2)]
    assert text_of(got) == "".join(ANSWER)
    assert_one_answer(got)
    first, second = await front.thinker.over()
    assert first.generated >= 9  # the model wrote past the budget
    assert second.body["messages"][-1] == {"role": "assistant", "content": prefill(3)}
