"""Through the middleware over loopback: a front application forwards what its handler reads to an
upstream that records the body it gets; the controls are written into that body, on the history
transform's result when both change it, and a body that says nothing arrives as the same bytes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import (
    THINKEXTRACT_CONTROLS,
    THINKEXTRACT_MODEL_INFO,
    THINKEXTRACT_REQUEST_BODY,
    THINKEXTRACT_SERVER,
    Controlled,
    Intent,
    ModelInfo,
    ThinkExtractConfig,
    setup,
)
from gateway_mw.history import passed

from ..workers import worker_calls

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
ROUTES = {
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "responses": "/v1/responses",
    "ollama": "/api/chat",
    "generate": "/api/generate",
}


class Gateway:
    """The front application and what its upstream and its handler saw."""

    def __init__(self) -> None:
        self.upstream: list[bytes] = []
        self.controls: list[Controlled | None] = []
        self.handed: list[bytes | None] = []
        self.asked: list[str] = []
        self.url = ""
        self.stats: Any = None

    async def post(self, route: str, body: bytes) -> int:
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + route, data=body, headers={"Content-Type": "application/json"}) as resp,
        ):
            await resp.read()
            return resp.status


@pytest.fixture
async def start(aiohttp_server: ServerFactory) -> AsyncIterator[Callable[..., Awaitable[Gateway]]]:
    async def make(config: ThinkExtractConfig, info: ModelInfo | None = None) -> Gateway:
        gateway = Gateway()

        async def upstream(request: web.Request) -> web.Response:
            gateway.upstream.append(await request.read())
            return web.json_response({"ok": True})

        back = web.Application()
        for route in ROUTES.values():
            back.router.add_post(route, upstream)
        back_server = await aiohttp_server(back)

        async def forward(request: web.Request) -> web.Response:
            gateway.controls.append(request.get(THINKEXTRACT_CONTROLS))
            gateway.handed.append(request.get(THINKEXTRACT_REQUEST_BODY))
            body = await request.read()
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    back_server.make_url(request.path), data=body, headers={"Content-Type": "application/json"}
                ) as resp,
            ):
                return web.Response(body=await resp.read(), status=resp.status, content_type="application/json")

        async def model_info(model: str) -> ModelInfo | None:
            gateway.asked.append(model)
            return info

        front = web.Application()
        gateway.stats = setup(front, config)
        if info is not None:
            front[THINKEXTRACT_MODEL_INFO] = model_info
        for route in ROUTES.values():
            front.router.add_post(route, forward)
        gateway.url = str((await aiohttp_server(front)).make_url("")).rstrip("/")
        return gateway

    yield make


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


USER = [{"role": "user", "content": "What is 2+2?"}]
VLLM = ThinkExtractConfig(upstream_server="vllm")

CASES: list[tuple[str, ThinkExtractConfig, dict[str, Any], dict[str, Any], str]] = [
    (
        "chat",
        VLLM,
        {"model": "qwen3-8b", "messages": USER, "reasoning_effort": "none"},
        {"model": "qwen3-8b", "messages": USER, "reasoning_effort": "none",
         "chat_template_kwargs": {"enable_thinking": False}},
        "off:applied",
    ),
    (
        "chat",
        ThinkExtractConfig(upstream_server="llamacpp"),
        {"model": "deepseek-v3.1", "messages": USER, "reasoning": {"max_tokens": 1000}},
        {"model": "deepseek-v3.1", "messages": USER, "reasoning": {"max_tokens": 1000},
         "chat_template_kwargs": {"thinking": True}, "thinking_budget_tokens": 1000},
        "budget:applied",
    ),
    (
        "messages",
        ThinkExtractConfig(upstream_server="llamacpp", messages_policy="unsigned"),
        {"model": "qwen3-8b", "max_tokens": 100, "messages": USER, "thinking": {"type": "disabled"}},
        {"model": "qwen3-8b", "max_tokens": 100, "messages": USER, "thinking": {"type": "disabled"},
         "chat_template_kwargs": {"enable_thinking": False}},
        "off:applied",
    ),
    (
        "messages",
        VLLM.replace(messages_policy="unsigned"),
        {"model": "gpt-oss-20b", "max_tokens": 100, "messages": USER, "thinking": {"type": "disabled"}},
        {"model": "gpt-oss-20b", "max_tokens": 100, "messages": USER, "thinking": {"type": "disabled"},
         "output_config": {"effort": "low"}},
        "off:nearest",
    ),
    (
        "responses",
        VLLM,
        {"model": "qwen3-8b", "input": "What is 2+2?", "reasoning": {"effort": "max", "summary": "auto"}},
        {"model": "qwen3-8b", "input": "What is 2+2?", "reasoning": {"effort": "xhigh", "summary": "auto"}},
        "effort:nearest",
    ),
    (
        "ollama",
        ThinkExtractConfig(upstream_server="ollama"),
        {"model": "gpt-oss:20b", "messages": USER, "think": False},
        {"model": "gpt-oss:20b", "messages": USER, "think": "low"},
        "off:nearest",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("surface", "config", "sent", "forwarded", "counted"), CASES)
async def test_the_upstream_gets_the_control_where_its_server_reads_it(
    start: Callable[..., Awaitable[Gateway]],
    surface: str,
    config: ThinkExtractConfig,
    sent: dict[str, Any],
    forwarded: dict[str, Any],
    counted: str,
) -> None:
    gateway = await start(config)
    assert await gateway.post(ROUTES[surface], compact(sent)) == 200
    assert gateway.upstream == [compact(forwarded)]
    assert gateway.handed == [compact(forwarded)]
    assert gateway.stats.surface(surface).controls == {counted: 1}


@pytest.mark.parametrize(
    ("server", "field"), [("vllm", "thinking_token_budget"), ("llamacpp", "thinking_budget_tokens")]
)
async def test_a_budget_past_any_server_s_integer_is_written_as_the_largest_one(
    start: Callable[..., Awaitable[Gateway]], server: str, field: str
) -> None:
    """A budget no server's integer holds (the client's, in a form the server does not read) is
    written as the largest one every server holds: the same "no limit", not a field the server
    cannot take."""
    gateway = await start(ThinkExtractConfig(upstream_server=server))
    sent = {"model": "qwen3-8b", "messages": USER, "reasoning": {"max_tokens": 10**23}}
    assert await gateway.post(ROUTES["chat"], compact(sent)) == 200
    assert gateway.upstream == [compact({**sent, "chat_template_kwargs": {"enable_thinking": True}, field: 2**31 - 1})]
    assert gateway.stats.surface("chat").controls == {"budget:applied": 1}


@pytest.mark.parametrize(("own", "kept"), [(500, 50), (10, 10)])
async def test_a_pinned_operator_budget_is_a_ceiling_on_the_client_s_own_budget_field(
    start: Callable[..., Awaitable[Gateway]], own: int, kept: int
) -> None:
    """Pinned, the operator's budget wins over the client's own, in the server's field: the smaller."""
    gateway = await start(VLLM.replace(reasoning_control="budget:50", reasoning_control_pinned=True))
    sent = {"model": "qwen3-8b", "messages": USER, "thinking_token_budget": own}
    assert await gateway.post(ROUTES["chat"], compact(sent)) == 200
    (forwarded,) = gateway.upstream
    assert json.loads(forwarded) == {
        **sent,
        "chat_template_kwargs": {"enable_thinking": True},
        "thinking_token_budget": kept,
    }


@pytest.mark.parametrize("control", ["budget:50", "off", "high", "on"])
@pytest.mark.parametrize(
    ("server", "field", "model"),
    [("vllm", "thinking_token_budget", "qwen3-8b"), ("llamacpp", "thinking_budget_tokens", "deepseek-r1"),
     ("vllm", "thinking_token_budget", "gpt-oss-20b")],
)  # fmt: skip
async def test_the_operator_s_default_leaves_a_client_that_set_the_server_s_own_budget_field(
    start: Callable[..., Awaitable[Gateway]], control: str, server: str, field: str, model: str
) -> None:
    """A client that set the server's own budget field said a budget: the operator's default, for
    a request that says nothing, is not this one's; its body arrives as it came."""
    gateway = await start(ThinkExtractConfig(upstream_server=server, reasoning_control=control))
    body = compact({"model": model, "messages": USER, field: 500})
    assert await gateway.post(ROUTES["chat"], body) == 200
    assert gateway.upstream == [body]
    assert gateway.stats.surface("chat").controls == {"default:unchanged": 1}


async def test_a_body_that_says_nothing_arrives_as_the_same_bytes(start: Callable[..., Awaitable[Gateway]]) -> None:
    gateway = await start(VLLM.replace(history_reasoning="pass"))
    body = b'{ "model" : "qwen3-8b", "messages" : [ {"role":"user","content":"hi \\u00e9"} ], "n": 1.0e0 }'
    assert await gateway.post(ROUTES["chat"], body) == 200
    assert (gateway.upstream, gateway.handed) == ([body], [None])
    assert gateway.controls == [Controlled(Intent(), "unchanged")]
    assert gateway.stats.surface("chat").controls == {"default:unchanged": 1}
    assert gateway.stats.surface("chat").history == {"pass": 1}


async def test_controls_are_read_when_history_is_pass(start: Callable[..., Awaitable[Gateway]]) -> None:
    gateway = await start(VLLM.replace(history_reasoning="pass"))
    sent = {"model": "glm-4.6", "messages": USER, "reasoning_effort": "none"}
    assert await gateway.post(ROUTES["chat"], compact(sent)) == 200
    assert gateway.upstream == [compact({**sent, "chat_template_kwargs": {"enable_thinking": False}})]
    assert gateway.stats.surface("chat").history == {"pass": 1}


async def test_an_agent_s_long_history_passed_on_has_each_request_s_control_read(
    start: Callable[..., Awaitable[Gateway]],
) -> None:
    """With the history passed on, each request of a long agent history has its own control read and
    written (the body otherwise as it came), whatever the request before it said."""
    gateway = await start(VLLM.replace(history_reasoning="pass"))
    tool = {"role": "tool", "tool_call_id": "c0", "content": "x" * (40 << 10)}  # over CARRIED_BYTES
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function"}]}
    messages = [*USER, call, tool]
    said = [("none", {"enable_thinking": False}), (None, None), ("high", {"enable_thinking": True})]
    expected = []
    for effort, kwargs in said:
        messages = [*messages, call, tool]
        sent = {"messages": messages, "model": "glm-4.6"} | ({"reasoning_effort": effort} if effort else {})
        assert await gateway.post(ROUTES["chat"], compact(sent)) == 200
        expected.append(compact(sent if kwargs is None else {**sent, "chat_template_kwargs": kwargs}))
    assert gateway.upstream == expected
    assert gateway.stats.surface("chat").history == {"pass": 3}


async def test_an_agent_s_switch_in_its_first_message_holds_while_its_history_is_read_on(
    start: Callable[..., Awaitable[Gateway]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the history passed on, an agent's next request is read on from the one before (only its
    new messages read): the ``/no_think`` of its first user message still turns thinking off, until a
    later user message says ``/think``; each body otherwise as it came."""
    continued: list[bool] = []
    went_on = passed.Passed.continued_by

    def spied(self: passed.Passed, body: bytes, most: int | None, shorter: bool) -> Any:
        read = went_on(self, body, most, shorter)
        continued.append(read is not None)
        return read

    monkeypatch.setattr(passed.Passed, "continued_by", spied)
    gateway = await start(VLLM.replace(history_reasoning="pass"))
    tool = {"role": "tool", "tool_call_id": "c0", "content": "x" * (40 << 10)}  # over CARRIED_BYTES
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function"}]}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the build /no_think"}, call, tool]
    expected = []
    for more, thinking in [([], False), ([call, tool], False), ([{"role": "user", "content": "Why? /think"}], True)]:
        messages = [*messages, *more]
        sent = {"model": "qwen3-8b", "messages": messages, "stream": False}
        assert await gateway.post(ROUTES["chat"], compact(sent)) == 200
        expected.append(compact({**sent, "chat_template_kwargs": {"enable_thinking": thinking}}))
    # (another test's kept readings of the keyless scope may be tried first, and not gone on from)
    assert (gateway.upstream, continued.count(True)) == (expected, 2)
    assert gateway.stats.surface("chat").history == {"pass": 3}


async def test_a_large_passed_on_history_is_read_whole_in_a_worker_and_read_on_on_the_loop(
    start: Callable[..., Awaitable[Gateway]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the history passed on, a body over a quarter of a megabyte that continues no kept reading
    is read in a worker thread; its scope's next request, which does, is read on the event loop (only
    its own bytes), as the history side reads them."""
    sent_to_worker = worker_calls(monkeypatch)
    gateway = await start(VLLM.replace(history_reasoning="pass"))
    first = {"model": "qwen3-8b", "messages": [{"role": "user", "content": "x" * (300 << 10) + " /no_think"}]}
    later = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "Done."}]}
    forwarded = []
    for sent in (first, later):
        assert await gateway.post(ROUTES["chat"], compact(sent)) == 200
        forwarded.append(compact({**sent, "chat_template_kwargs": {"enable_thinking": False}}))
    assert (gateway.upstream, sent_to_worker) == (forwarded, ["read_whole"])


async def test_a_body_left_unread_is_history_pass_when_history_reads_none(
    start: Callable[..., Awaitable[Gateway]],
) -> None:
    gateway = await start(VLLM.replace(history_reasoning="pass"))
    body = compact({"model": "qwen3-8b", "messages": USER, "reasoning_effort": "none"})

    async def pieces() -> AsyncIterator[bytes]:
        yield body  # no Content-Length: chunked, streamed on as it comes

    async with aiohttp.ClientSession() as session, session.post(gateway.url + ROUTES["chat"], data=pieces()) as resp:
        assert resp.status == 200
    assert (gateway.upstream, gateway.controls) == ([body], [None])
    assert gateway.stats.surface("chat").history == {"pass": 1}


async def test_no_controls_leave_the_body_alone(start: Callable[..., Awaitable[Gateway]]) -> None:
    gateway = await start(VLLM.replace(history_reasoning="pass", reasoning_controls=False))
    body = compact({"model": "qwen3-8b", "messages": USER, "reasoning_effort": "none"})
    assert await gateway.post(ROUTES["chat"], body) == 200
    assert (gateway.upstream, gateway.controls) == ([body], [None])
    assert gateway.stats.surface("chat").controls == {}


HISTORY = {
    "model": "qwen3-8b",
    "messages": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "It is 4.", "reasoning_content": "2+2 is 4."},
        {"role": "user", "content": "And 3+3?"},
    ],
    "reasoning_effort": "none",
    "stream": False,
}


async def test_history_and_controls_both_reach_the_upstream(start: Callable[..., Awaitable[Gateway]]) -> None:
    history_only = await start(VLLM.replace(reasoning_controls=False))
    assert await history_only.post(ROUTES["chat"], compact(HISTORY)) == 200
    (rewritten,) = history_only.upstream
    assert json.loads(rewritten) != HISTORY  # the history was rewritten (vLLM reads `reasoning`)

    both = await start(VLLM)
    assert await both.post(ROUTES["chat"], compact(HISTORY)) == 200
    assert both.upstream == [rewritten[:-1] + b',"chat_template_kwargs":{"enable_thinking":false}}']
    assert both.stats.surface("chat").history == {"rewritten": 1}
    assert both.stats.surface("chat").controls == {"off:applied": 1}


async def test_an_outer_middleware_names_the_server_per_request(aiohttp_server: ServerFactory) -> None:
    seen: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.read())
        return web.json_response({"ok": True})

    @web.middleware
    async def route(request: web.Request, handler: Any) -> web.StreamResponse:
        request[THINKEXTRACT_SERVER] = "llamacpp"
        return await handler(request)

    app = web.Application(middlewares=[route])
    setup(app, VLLM)
    app.router.add_post("/v1/chat/completions", handler)
    server = await aiohttp_server(app)
    sent = {"model": "qwen3-8b", "messages": USER, "chat_template_kwargs": {"enable_thinking": False}}
    async with (
        aiohttp.ClientSession() as session,
        session.post(server.make_url("/v1/chat/completions"), data=compact(sent)) as resp,
    ):
        assert resp.status == 200
    assert seen == [compact({**sent, "reasoning_effort": "none"})]  # llama.cpp's form, not vLLM's


OLLAMA = ThinkExtractConfig(upstream_server="ollama")


async def test_the_model_is_asked_about_only_when_the_written_form_depends_on_it(
    start: Callable[..., Awaitable[Gateway]],
) -> None:
    gateway = await start(OLLAMA, ModelInfo(thinking=True, version=(0, 20, 0)))
    for think in (False, "max", True):
        sent = {"model": "qwen3:8b", "messages": USER, "think": think}
        assert await gateway.post(ROUTES["ollama"], compact(sent)) == 200
    assert gateway.asked == ["qwen3:8b", "qwen3:8b"]  # not for think: false
    assert [json.loads(b)["think"] for b in gateway.upstream] == [False, "high", True]


async def test_a_model_that_cannot_think_is_not_given_think_true(start: Callable[..., Awaitable[Gateway]]) -> None:
    gateway = await start(OLLAMA, ModelInfo(thinking=False, version=(0, 22, 0)))
    assert await gateway.post(ROUTES["ollama"], compact({"model": "llama3:8b", "messages": USER, "think": True})) == 200
    assert gateway.upstream == [compact({"model": "llama3:8b", "messages": USER})]
    assert gateway.stats.surface("ollama").controls == {"on:unsupported": 1}


async def test_a_failing_model_source_is_no_failed_request(aiohttp_server: ServerFactory) -> None:
    seen: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.read())
        return web.json_response({"ok": True})

    async def broken(model: str) -> ModelInfo | None:
        raise RuntimeError("the upstream is down")

    app = web.Application()
    setup(app, OLLAMA)
    app[THINKEXTRACT_MODEL_INFO] = broken
    app.router.add_post("/api/chat", handler)
    server = await aiohttp_server(app)
    body = compact({"model": "qwen3:8b", "messages": USER, "think": "high"})
    async with aiohttp.ClientSession() as session, session.post(server.make_url("/api/chat"), data=body) as resp:
        assert resp.status == 200
    assert seen == [body]  # nothing known: the client's own level goes as it came


async def test_ollama_s_generate_takes_the_switch_at_the_end_of_its_prompt(
    start: Callable[..., Awaitable[Gateway]],
) -> None:
    gateway = await start(OLLAMA)
    sent = {"model": "qwen3:8b", "prompt": "Why is the sky blue? /no_think", "stream": False}
    assert await gateway.post(ROUTES["generate"], compact(sent)) == 200
    assert gateway.upstream == [compact({**sent, "think": False})]
    assert gateway.asked == []  # think: false is taken by every model
    assert gateway.stats.surface("ollama").controls == {"off:applied": 1}
