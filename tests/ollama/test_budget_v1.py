"""A reasoning budget the gateway enforces on Ollama's OpenAI-compatible ``/v1/chat/completions``,
over loopback with the ``openai`` SDK: the middleware on a forwarding app in front of an emulated
Ollama whose ``/v1`` is its ``/api/chat`` (:func:`tests.controls.ollama_thinker.openai_app`), which
continues a final assistant message as Ollama's sources do. The client gets at most N reasoning
events, then the answer, as one answer with one finish and one usage, stream and body alike."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import BUDGET_MESSAGE

from ..controls.ollama_thinker import CREATED_UNIX, OllamaThinker, openai_app, thinking_model
from ..controls.thinker import ANSWER, token
from ..relay import Front as AnyFront
from ..relay import Fronts

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "qwen3:8b"
USER = [{"role": "user", "content": "think"}]


class Front(AnyFront[OllamaThinker]):
    def client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self.url + "/v1", api_key="x", max_retries=0)


Start = Callable[..., Awaitable[Front]]


@pytest.fixture
async def start(aiohttp_server: ServerFactory) -> AsyncIterator[Start]:
    async with Fronts(aiohttp_server) as fronts:

        async def make(thinker: OllamaThinker, **settings: Any) -> Front:
            config = ThinkExtractConfig(upstream_server="ollama", reasoning_store="off", **settings)
            routes = ["/v1/chat/completions"]
            front = await fronts.make(thinker, openai_app(thinker), config, routes, kind=Front, prepare=thinking_model)
            assert isinstance(front, Front)
            return front

        yield make


def prefill(budget: int) -> str:
    return "<think>" + "".join(token(i) for i in range(budget)) + BUDGET_MESSAGE + "</think>"


def reasoning_of(delta: Any) -> str | None:
    extra: dict[str, Any] = delta.model_extra or {}
    text = extra.get("reasoning")
    return text if isinstance(text, str) else None


async def stream(front: Front, budget: int, think: str = "think") -> tuple[list[Any], Any]:
    """The chunks the SDK reads, and its accumulated completion."""
    client = front.client()
    try:
        async with client.chat.completions.stream(
            model=MODEL,
            messages=[{"role": "user", "content": think}],
            extra_body={"reasoning": {"max_tokens": budget}},
            stream_options={"include_usage": True},
        ) as events:
            chunks = [event.chunk async for event in events if event.type == "chunk"]
            completion = await events.get_final_completion()
    finally:
        await client.close()
    return chunks, completion


def prompt_of(body: dict[str, Any]) -> int:
    """The emulated Ollama's ``prompt_eval_count``: the words of the messages."""
    return sum(len(str(m["content"]).split()) for m in body["messages"])


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("budget", [1, 5])
async def test_a_budget_ends_the_thinking_and_the_model_answers(start: Start, native: bool, budget: int) -> None:
    """Ollama's parser (``native``: ``delta.reasoning``) or the model's tags (split by the gateway):
    N reasoning events, then the answer from the continuation, one finish, one usage, one id."""
    front = await start(OllamaThinker(native=native))
    chunks, completion = await stream(front, budget)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert [r for d in deltas if (r := reasoning_of(d))] == [token(i) for i in range(budget)]
    reasoning_done = max(i for i, d in enumerate(deltas) if reasoning_of(d))
    assert "".join(d.content or "" for d in deltas[: reasoning_done + 1]) == ""  # the answer after
    assert "".join(d.content or "" for d in deltas) == "".join(ANSWER)
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert {c.id for c in chunks} == {"chatcmpl-1"}  # the first request's id, kept by the continuation
    assert {(c.created, c.model) for c in chunks} == {(CREATED_UNIX, MODEL)}
    first, second = await front.thinker.over()
    assert first.stopped and budget <= first.generated < 100_000  # the model stopped generating
    assert not second.stopped and second.generated == len(ANSWER)
    # What Ollama's handler got: the client's messages, then the prefill as its final assistant message.
    assert second.body["messages"] == [*USER, {"role": "assistant", "content": prefill(budget)}]
    prompt = prompt_of(second.body)
    usages = [c.usage.model_dump(exclude_none=True) for c in chunks if c.usage is not None]
    assert usages == [
        {
            "prompt_tokens": prompt,
            "completion_tokens": len(ANSWER),
            "total_tokens": prompt + len(ANSWER),
        }
    ]  # the continuation's (the cut request's never came), as on every server's chat
    assert [(c.finish_reason, c.message.content) for c in completion.choices] == [("stop", "".join(ANSWER))]
    stats = front.stats.surface("chat")
    assert (stats.budgets, stats.budget_reasoning_events) == ({"continued": 1}, budget)


async def test_the_openai_sdk_reads_the_body(start: Start) -> None:
    """A client that does not stream: the gateway asks Ollama for a stream with its usage, cuts and
    continues it, and gives the client one body."""
    front = await start(OllamaThinker(native=True))
    client = front.client()
    try:
        completion = await client.chat.completions.create(
            model=MODEL,
            messages=USER,
            extra_body={"reasoning": {"max_tokens": 2}},  # type: ignore[arg-type]
        )
    finally:
        await client.close()
    assert (completion.id, completion.object, completion.model) == ("chatcmpl-1", "chat.completion", MODEL)
    message = completion.choices[0].message
    assert (message.role, message.content, completion.choices[0].finish_reason) == (
        "assistant",
        "".join(ANSWER),
        "stop",
    )
    assert reasoning_of(message) == token(0) + token(1)
    first, second = await front.thinker.over()
    assert (first.body["stream"], second.body["stream"]) == (True, True)  # asked for as a stream
    assert second.body["messages"] == [*USER, {"role": "assistant", "content": prefill(2)}]
    assert completion.usage is not None
    prompt = prompt_of(second.body)
    assert completion.usage.model_dump(exclude_none=True) == {
        "prompt_tokens": prompt,
        "completion_tokens": len(ANSWER),
        "total_tokens": prompt + len(ANSWER),
    }
    assert front.stats.surface("chat").budgets == {"continued": 1}


@pytest.mark.parametrize(
    ("enforcement", "by_gateway"), [("auto", True), ("gateway", True), ("server", False), ("off", False)]
)
async def test_who_enforces_it(start: Start, enforcement: str, by_gateway: bool) -> None:
    """Ollama has no budget field: ``auto`` and ``gateway`` are the gateway's, ``server`` and ``off``
    leave the model thinking (8 tokens here, over the budget of 3), one request."""
    front = await start(OllamaThinker(native=True), reasoning_budget_enforcement=enforcement)
    chunks, completion = await stream(front, 3, "think 8")
    reasoning = [r for c in chunks if c.choices if (r := reasoning_of(c.choices[0].delta))]
    assert reasoning == [token(i) for i in range(3 if by_gateway else 8)]
    assert completion.choices[0].message.content == "".join(ANSWER)
    served = await front.thinker.over()
    assert len(served) == (2 if by_gateway else 1)
    assert front.stats.surface("chat").budgets == ({"continued": 1} if by_gateway else {})


async def test_reasoning_within_the_budget_is_not_cut(start: Start) -> None:
    front = await start(OllamaThinker(native=True))
    chunks, completion = await stream(front, 4, "think 4")
    assert [r for c in chunks if c.choices if (r := reasoning_of(c.choices[0].delta))] == [token(i) for i in range(4)]
    assert completion.choices[0].message.content == "".join(ANSWER)
    assert len(await front.thinker.over()) == 1


async def test_the_emulated_v1_answers_as_ollama_does(aiohttp_server: ServerFactory) -> None:
    """The emulation's own wire, without the gateway: reasoning chunks, the answer, the finish, the
    usage chunk asked for, ``[DONE]`` (middleware/openai.go ``ChatWriter``); a final assistant
    message reaches the ``/api/chat`` handler last, and is continued."""
    thinker = OllamaThinker(native=True)
    back = await aiohttp_server(openai_app(thinker))
    asked = [{"role": "user", "content": "think 1"}]
    body = {"model": MODEL, "messages": asked, "stream": True, "stream_options": {"include_usage": True}}
    async with (
        aiohttp.ClientSession() as session,
        session.post(back.make_url("/v1/chat/completions"), json=body) as resp,
    ):
        raw = await resp.read()
    events = [e.removeprefix(b"data: ") for e in raw.split(b"\n\n") if e]
    assert events[-1] == b"[DONE]"
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": CREATED_UNIX, "model": MODEL}
    head |= {"system_fingerprint": "fp_ollama"}
    deltas = [{"role": "assistant", "content": "", "reasoning": token(0)}] + [{"content": w} for w in ANSWER]
    generated = 3 + len(ANSWER)  # the tags are tokens too
    usage = {"prompt_tokens": 2, "completion_tokens": generated, "total_tokens": 2 + generated}
    assert [json.loads(e) for e in events[:-1]] == [
        *(head | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas),
        head | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        head | {"choices": [], "usage": usage},
    ]
    continued = [*asked, {"role": "assistant", "content": prefill(1)}]
    async with (
        aiohttp.ClientSession() as session,
        session.post(back.make_url("/v1/chat/completions"), json={"model": MODEL, "messages": continued}) as resp,
    ):
        answer = await resp.json()
    prompt = prompt_of({"messages": continued})
    assert answer == {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": CREATED_UNIX,
        "model": MODEL,
        "system_fingerprint": "fp_ollama",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "".join(ANSWER)}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": len(ANSWER), "total_tokens": prompt + len(ANSWER)},
    }
    assert thinker.served[1].body["messages"] == continued


@pytest.mark.parametrize("fault", ["refused", "dropped"])
async def test_a_failed_continuation_ends_the_answer_where_it_was(start: Start, fault: str) -> None:
    """Ollama refuses the continuation (its ``/v1`` error body) or drops it after one token: the
    client keeps what it got, and the answer ends there, ``length``, one finish."""
    front = await start(OllamaThinker(native=True, fail=500 if fault == "refused" else None, drop=fault == "dropped"))
    client = front.client()
    try:  # the SDK's stream helper refuses an answer that ended at its length: the chunks as they come
        created = await client.chat.completions.create(
            model=MODEL,
            messages=USER,
            stream=True,
            extra_body={"reasoning": {"max_tokens": 3}},  # type: ignore[arg-type]
        )
        chunks = [chunk async for chunk in created]
    finally:
        await client.close()
    assert [r for c in chunks if c.choices if (r := reasoning_of(c.choices[0].delta))] == [token(i) for i in range(3)]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "" if fault == "refused" else ANSWER[0]
    )
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["length"]
    assert {c.id for c in chunks} == {"chatcmpl-1"}
    assert front.stats.surface("chat").budgets == {"continuation_failed": 1}
