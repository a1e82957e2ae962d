"""Reasoning tokens in a non-stream body's usage, over real HTTP: a body's reasoning is one piece of
text, so the middleware asks the installed token counter (here the gateway's own, asking an
emulated server's ``/tokenize`` as vLLM, SGLang and llama-server answer it) once per body, and
writes the count where the usage lacks it: chat ``completion_tokens_details.reasoning_tokens``,
Responses ``output_tokens_details.reasoning_tokens``, messages ``output_tokens_details.thinking_tokens``.
A count the server wrote is kept; a counter that fails, times out or answers nonsense leaves the
usage as it was and the answer fine; without a counter, nothing is filled. The official SDKs read
the count through their strict models."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import anthropic
import msgspec
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw import (
    THINKEXTRACT_IDS,
    THINKEXTRACT_REASONING_TOKENS,
    THINKEXTRACT_TOKEN_COUNTER,
    ThinkExtractConfig,
    setup,
    tokencount,
)
from gateway_mw.pipeline import translate_body
from gateway_mw.proxy.tokenize import UpstreamTokenizer
from gateway_mw.surfaces.registry import SURFACES
from gateway_mw.surfaces.usage import ToCount, with_counted
from gateway_mw.tokencount import ReasoningTokens, TokenCounter

from .. import responseswire
from .servers import add_tokenize, toy_tokens

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

REASONING = "Two plus two, carried over: four."
ANSWER = "It is 4."
TOKENS = len(toy_tokens(REASONING, False))
CONFIG = ThinkExtractConfig(messages_policy="unsigned")

CHAT_USAGE = {"prompt_tokens": 12, "completion_tokens": 20, "total_tokens": 32}
RESPONSES_USAGE = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                   "output_tokens": 20, "output_tokens_details": None, "total_tokens": 32}  # fmt: skip
MESSAGES_USAGE = {"input_tokens": 12, "output_tokens": 20}


def chat_body(usage: Any, texts: tuple[str, ...] = (f"<think>{REASONING}</think>{ANSWER}",)) -> dict[str, Any]:
    choices = [{"index": i, "finish_reason": "stop", "logprobs": None,
                "message": {"role": "assistant", "content": text}} for i, text in enumerate(texts)]  # fmt: skip
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1730000000, "model": "qwen3",
            "choices": choices, "usage": usage}  # fmt: skip


def responses_body(usage: Any) -> dict[str, Any]:
    item = responseswire.message("msg_1", [f"<think>{REASONING}</think>{ANSWER}"])
    return responseswire.response("completed", [item], usage=usage, model="qwen3")


def messages_body(usage: Any) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "qwen3",
            "content": [{"type": "text", "text": f"<think>{REASONING}</think>{ANSWER}"}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}  # fmt: skip


BODIES: dict[str, tuple[str, Callable[[Any], dict[str, Any]], dict[str, Any], tuple[str, str]]] = {
    # surface: its path, a body, the usage the server wrote, where the count goes
    "chat": ("/v1/chat/completions", chat_body, CHAT_USAGE, ("completion_tokens_details", "reasoning_tokens")),
    "responses": ("/v1/responses", responses_body, RESPONSES_USAGE, ("output_tokens_details", "reasoning_tokens")),
    "messages": ("/v1/messages", messages_body, MESSAGES_USAGE, ("output_tokens_details", "thinking_tokens")),
}


def filled(usage: dict[str, Any], where: tuple[str, str], tokens: int) -> dict[str, Any]:
    details, name = where
    return {**usage, details: {**(usage.get(details) or {}), name: tokens}}


# -- the upstream, its tokenizer, the gateway --------------------------------------------------------

ANSWERS: dict[str, bytes] = {}  # X-Upstream name → the body the upstream answers


async def streamed(request: web.Request) -> web.StreamResponse:
    """Writes the body named by ``X-Upstream`` as a proxy relays one: prepared, then written."""
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    await resp.write(ANSWERS[request.headers["X-Upstream"]])
    await resp.write_eof()
    return resp


async def returned(request: web.Request) -> web.Response:
    """Returns the body named by ``X-Upstream`` as one ``web.Response``."""
    return web.Response(body=ANSWERS[request.headers["X-Upstream"]], content_type="application/json")


HANDLERS = {"streamed": streamed, "returned": returned}


class Gateway:
    """The middleware in front of a canned upstream, its counter asking ``tokenizer``'s ``/tokenize``."""

    def __init__(self, url: str, asked: list[dict[str, Any]], requests: list[web.Request]) -> None:
        self.url = url
        self.asked = asked  # the /tokenize bodies, as the server received them
        self.requests = requests  # the gateway's requests, for what the middleware set on them

    async def post(self, path: str, body: dict[str, Any], name: str = "body") -> tuple[int, dict[str, Any]]:
        ANSWERS[name] = json.dumps(body).encode()
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + path, json={"model": "qwen3"}, headers={"X-Upstream": name}) as resp,
        ):
            return resp.status, await resp.json()


def gateway_app(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    counter: TokenCounter | None,
    requests: list[web.Request],
    config: ThinkExtractConfig = CONFIG,
) -> web.Application:
    app = web.Application()
    setup(app, config, record="off")
    app[THINKEXTRACT_IDS] = lambda prefix: f"{prefix}_gateway"  # the same ids with a counter or without
    if counter is not None:
        app[THINKEXTRACT_TOKEN_COUNTER] = counter

    async def keep(request: web.Request) -> web.StreamResponse:
        requests.append(request)
        return await handler(request)

    for path, *_ in BODIES.values():
        app.router.add_post(path, keep)
    return app


@pytest.fixture
async def tokenizer_session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def gateway(
    aiohttp_server: ServerFactory,
    session: aiohttp.ClientSession,
    server: str = "vllm",
    handler: str = "streamed",
    config: ThinkExtractConfig = CONFIG,
) -> Gateway:
    asked: list[dict[str, Any]] = []
    upstream = web.Application()
    add_tokenize(upstream, server, asked)
    base = str((await aiohttp_server(upstream)).make_url("")).rstrip("/")
    counter = UpstreamTokenizer(session, base, {}, lambda: server)
    requests: list[web.Request] = []
    front = await aiohttp_server(gateway_app(HANDLERS[handler], counter, requests, config))
    return Gateway(str(front.make_url("")).rstrip("/"), asked, requests)


async def without_counter(aiohttp_server: ServerFactory, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """What the bare middleware (no counter) answers for ``body``."""
    front = await aiohttp_server(gateway_app(streamed, None, []))
    ANSWERS["bare"] = json.dumps(body).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.post(str(front.make_url(path)), json={}, headers={"X-Upstream": "bare"}) as resp,
    ):
        assert resp.status == 200
        out: dict[str, Any] = await resp.json()
        return out


# -- the count, where the server wrote none ----------------------------------------------------------


@pytest.mark.parametrize("handler", list(HANDLERS))
@pytest.mark.parametrize("server", ["vllm", "sglang", "llamacpp"])
@pytest.mark.parametrize("surface", list(BODIES))
async def test_a_body_gets_its_reasoning_tokens_from_the_servers_tokenizer(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession, surface: str, server: str, handler: str
) -> None:
    path, make, usage, where = BODIES[surface]
    front = await gateway(aiohttp_server, tokenizer_session, server, handler)
    status, out = await front.post(path, make(usage))
    bare = await without_counter(aiohttp_server, path, make(usage))
    assert status == 200
    assert bare["usage"] == usage  # the bare middleware fills nothing
    assert out == {**bare, "usage": filled(usage, where, TOKENS)}
    if server == "llamacpp":
        assert front.asked == [{"content": REASONING, "add_special": False}]
    else:
        assert front.asked == [{"model": "qwen3", "prompt": REASONING, "add_special_tokens": False}]
    assert front.requests[0][THINKEXTRACT_REASONING_TOKENS] == ReasoningTokens(TOKENS, "tokenizer")


async def test_every_choice_is_counted_in_one_ask(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession
) -> None:
    front = await gateway(aiohttp_server, tokenizer_session)
    texts = (f"<think>{REASONING}</think>{ANSWER}", f"<think>Four.</think>{ANSWER}", ANSWER)
    status, out = await front.post("/v1/chat/completions", chat_body(CHAT_USAGE, texts))
    assert status == 200
    assert front.asked == [{"model": "qwen3", "prompt": REASONING + "Four.", "add_special_tokens": False}]
    tokens = len(toy_tokens(REASONING + "Four.", False))
    assert out["usage"] == filled(CHAT_USAGE, BODIES["chat"][3], tokens)


async def test_reasoning_the_client_does_not_get_is_still_counted(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession
) -> None:
    front = await gateway(aiohttp_server, tokenizer_session, config=CONFIG.replace(reasoning_exclude=True))
    status, out = await front.post("/v1/chat/completions", chat_body(CHAT_USAGE))
    assert status == 200
    assert out["choices"][0]["message"] == {"role": "assistant", "content": ANSWER}
    assert out["usage"] == filled(CHAT_USAGE, BODIES["chat"][3], TOKENS)


# -- what is left as the server wrote it -------------------------------------------------------------

KEPT = [
    ("chat", {**CHAT_USAGE, "completion_tokens_details": {"reasoning_tokens": 9, "audio_tokens": 0}}),
    ("chat", {**CHAT_USAGE, "completion_tokens_details": "n/a"}),  # not an object: not ours to rewrite
    ("responses", {**RESPONSES_USAGE, "output_tokens_details": {"reasoning_tokens": 0}}),  # vLLM's own 0
    ("messages", {**MESSAGES_USAGE, "output_tokens_details": {"thinking_tokens": 7}}),
]


@pytest.mark.parametrize(("surface", "usage"), KEPT)
async def test_a_count_the_server_wrote_is_kept_and_no_one_is_asked(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession, surface: str, usage: dict[str, Any]
) -> None:
    path, make, _, _ = BODIES[surface]
    front = await gateway(aiohttp_server, tokenizer_session)
    status, out = await front.post(path, make(usage))
    assert (status, out["usage"], front.asked) == (200, usage, [])
    assert THINKEXTRACT_REASONING_TOKENS not in front.requests[0]


async def test_sglangs_own_count_goes_where_clients_read_it_and_no_one_is_asked(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession
) -> None:
    usage = {**CHAT_USAGE, "prompt_tokens_details": None, "reasoning_tokens": 11}
    front = await gateway(aiohttp_server, tokenizer_session, "sglang")
    status, out = await front.post("/v1/chat/completions", chat_body(usage))
    assert (status, out["usage"], front.asked) == (200, filled(usage, BODIES["chat"][3], 11), [])
    assert front.requests[0][THINKEXTRACT_REASONING_TOKENS] == ReasoningTokens(11, "server")


@pytest.mark.parametrize("surface", list(BODIES))
async def test_an_answer_without_reasoning_is_not_counted(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession, surface: str
) -> None:
    path, make, usage, _ = BODIES[surface]
    body = json.loads(json.dumps(make(usage)).replace(f"<think>{REASONING}</think>", ""))
    front = await gateway(aiohttp_server, tokenizer_session)
    status, out = await front.post(path, body)
    assert (status, out["usage"], front.asked) == (200, usage, [])


# -- a counter that cannot say -------------------------------------------------------------------------


async def fails(model: str | None, text: str) -> int | None:
    raise RuntimeError("the application's counter is broken")


async def hangs(model: str | None, text: str) -> int | None:
    await asyncio.Event().wait()  # never answers
    return None


def answering(value: Any) -> TokenCounter:
    async def counter(model: str | None, text: str) -> int | None:
        result: int | None = value
        return result

    return counter


COUNTERS: dict[str, TokenCounter] = {
    "raises": fails,
    "never answers": hangs,
    "None": answering(None),
    "negative": answering(-3),
    "a string": answering("3"),
    "a bool": answering(True),
}


@pytest.mark.parametrize("handler", list(HANDLERS))
@pytest.mark.parametrize("counter", list(COUNTERS))
async def test_a_counter_that_cannot_say_leaves_the_usage_and_the_answer_fine(
    aiohttp_server: ServerFactory, monkeypatch: pytest.MonkeyPatch, counter: str, handler: str
) -> None:
    monkeypatch.setattr(tokencount, "COUNT_TIMEOUT", 0.05)  # the hanging one: it never answers at all
    requests: list[web.Request] = []
    front = await aiohttp_server(gateway_app(HANDLERS[handler], COUNTERS[counter], requests))
    ANSWERS["cannot"] = json.dumps(chat_body(CHAT_USAGE)).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.post(str(front.make_url("/v1/chat/completions")), json={}, headers={"X-Upstream": "cannot"}) as resp,
    ):
        out = await resp.json()
    assert resp.status == 200
    assert out == await without_counter(aiohttp_server, "/v1/chat/completions", chat_body(CHAT_USAGE))
    assert THINKEXTRACT_REASONING_TOKENS not in requests[0]


@pytest.mark.parametrize("status", [404, 500])
async def test_a_server_whose_tokenize_refuses_leaves_the_usage(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession, status: int
) -> None:
    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"error": "no"}, status=status)

    upstream = web.Application()
    upstream.router.add_post("/tokenize", refuse)
    base = str((await aiohttp_server(upstream)).make_url("")).rstrip("/")
    counter = UpstreamTokenizer(tokenizer_session, base, {}, lambda: "vllm")
    front = await aiohttp_server(gateway_app(streamed, counter, []))
    ANSWERS["refused"] = json.dumps(chat_body(CHAT_USAGE)).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.post(str(front.make_url("/v1/chat/completions")), json={}, headers={"X-Upstream": "refused"}) as resp,
    ):
        out = await resp.json()
    assert (resp.status, out["usage"]) == (200, CHAT_USAGE)
    assert out["choices"][0]["message"]["reasoning_content"] == REASONING


# -- the official SDKs read it -------------------------------------------------------------------------


async def test_the_openai_sdk_reads_a_chat_bodys_count(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession
) -> None:
    front = await gateway(aiohttp_server, tokenizer_session, "llamacpp")
    ANSWERS["sdk-chat"] = json.dumps(chat_body(CHAT_USAGE)).encode()
    client = openai.AsyncOpenAI(
        api_key="x", base_url=front.url + "/v1", max_retries=0, _strict_response_validation=True
    )
    async with client:
        completion = await client.chat.completions.create(
            model="qwen3", messages=[], extra_headers={"X-Upstream": "sdk-chat"}
        )
    assert completion.usage is not None and completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == TOKENS
    assert completion.choices[0].message.content == ANSWER


async def test_the_openai_sdk_reads_a_responses_bodys_count(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession
) -> None:
    front = await gateway(aiohttp_server, tokenizer_session, "vllm")
    ANSWERS["sdk-responses"] = json.dumps(responses_body(RESPONSES_USAGE)).encode()
    client = openai.AsyncOpenAI(
        api_key="x", base_url=front.url + "/v1", max_retries=0, _strict_response_validation=True
    )
    async with client:
        response = await client.responses.create(
            model="qwen3", input="q", extra_headers={"X-Upstream": "sdk-responses"}
        )
    assert response.usage is not None
    assert response.usage.output_tokens_details.reasoning_tokens == TOKENS
    assert response.output_text == ANSWER


async def test_the_anthropic_sdk_reads_a_messages_bodys_count(
    aiohttp_server: ServerFactory, tokenizer_session: aiohttp.ClientSession
) -> None:
    front = await gateway(aiohttp_server, tokenizer_session, "sglang")
    ANSWERS["sdk-messages"] = json.dumps(messages_body(MESSAGES_USAGE)).encode()
    client = anthropic.AsyncAnthropic(api_key="x", base_url=front.url, max_retries=0, _strict_response_validation=True)
    async with client:
        message = await client.messages.create(
            model="qwen3", max_tokens=64, messages=[{"role": "user", "content": "2+2?"}],
            extra_headers={"X-Upstream": "sdk-messages"},
        )  # fmt: skip
    # As the SDK parsed it (one older than the field keeps it as an extra member).
    assert message.usage.model_dump()["output_tokens_details"] == {"thinking_tokens": TOKENS}
    assert [block.type for block in message.content] == ["thinking", "text"]


# -- the writing itself, over any usage ----------------------------------------------------------------

COUNTS = {k: st.integers(0, 99) for k in ("input_tokens", "output_tokens", "total_tokens")}
DETAILS = st.one_of(
    st.none(),
    st.just("n/a"),
    st.fixed_dictionaries({}, optional={"reasoning_tokens": st.one_of(st.none(), st.integers(0, 9)),
                                        "thinking_tokens": st.one_of(st.none(), st.integers(0, 9)),
                                        "audio_tokens": st.none()}),
)  # fmt: skip


DETAILED = {"output_tokens_details": DETAILS, "completion_tokens_details": DETAILS}


@given(
    surface=st.sampled_from(list(BODIES)),
    usage=st.fixed_dictionaries(COUNTS, optional=DETAILED),
    tokens=st.integers(1, 99),
)
def test_only_a_missing_count_is_written_and_every_other_value_is_kept(
    surface: str, usage: dict[str, Any], tokens: int
) -> None:
    _, make, _, (details, name) = BODIES[surface]
    body = json.dumps(make(usage)).encode()
    asked = translate_body(surface, body, CONFIG, lambda prefix: prefix, count=True).to_count  # type: ignore[arg-type]
    out = with_counted(SURFACES[surface].usage, body, tokens)  # type: ignore[index]
    inner = usage.get(details)
    if inner is None or (isinstance(inner, dict) and inner.get(name) is None):
        assert asked == ToCount("qwen3", REASONING)
        assert out is not None
        assert json.loads(out) == {**make(usage), "usage": filled(usage, (details, name), tokens)}
        before, after = (msgspec.json.decode(b, type=dict[str, msgspec.Raw]) for b in (body, out))
        assert {k: bytes(v) for k, v in after.items() if k != "usage"} == {
            k: bytes(v) for k, v in before.items() if k != "usage"
        }  # every other value keeps its bytes
    else:  # the server's count, or details that are not an object: left as they are
        assert (asked, out) == (None, None)
