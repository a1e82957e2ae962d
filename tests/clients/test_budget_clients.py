"""Real clients with a reasoning budget the gateway enforces (``reasoning_budget_enforcement = "gateway"``),
through the packaged gateway to the real ``llama-server``: each client shows one answer, with at most N
reasoning events and an answer after them, and the server received the cut request and its continuation.

The server is the tiny model of ``llama.py``, ``decided.py``'s way: it opens its reasoning right after the
generation prompt and never right after a closing tag, so it always thinks, as long as its grammar says
(:data:`THINKS_LONG`: more tokens than any budget here), and the continuation, which ends with the
gateway's ``</think>``, is answered without a second reasoning. Every request passes through a recorder,
so each test reads what the server received, whole. llama.cpp continues a final assistant message by
itself (its assistant prefill), so the continuation is the first request with that message added and
its token limit reduced by the reasoning events the client got.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway_mw.config import BUDGET_MESSAGE
from gateway_mw.marks import gateway_signature

from ..controls.thinker import ANSWER, Thinker, token
from .conftest import Proxy, free_port, llama_server_binary, offline_env
from .drive_aisdk import run as run_aisdk
from .drive_claude_code import ClaudeCode, shown
from .drive_codex import Codex, items
from .drive_langchain import make, reasoning_of
from .llama import WORDS
from .recorder import Recorder
from .scripted import AppThread
from .thinking import Thinking

MODEL = "qwen3-8b"
BUDGET = 16  # a client's or the operator's, where the client's own least is not the point
REASONING_BUDGET = {"reasoning": {"max_tokens": BUDGET}}  # OpenRouter's, on chat completions
ON = {"chat_template_kwargs": {"enable_thinking": True}}  # what the gateway writes for a budget on llama.cpp
# At least 1,100 tokens of reasoning (a word is one token or more): past Claude Code's least budget.
THINKS_LONG = r"""
root   ::= think? answer
think  ::= "<think>" word (" " word){1100,1200} "</think>"
answer ::= " " word (" " word){2,4}
word   ::= "alpha" | "beta" | "gamma" | "delta"
"""
# Every top-level field a client or the gateway says thinking or a budget with, on any surface.
CONTROL_FIELDS = (
    "reasoning_effort",
    "reasoning",
    "thinking",
    "output_config",
    "chat_template_kwargs",
    "thinking_budget_tokens",
)


def controls(body: dict[str, Any]) -> dict[str, Any]:
    return {name: body[name] for name in CONTROL_FIELDS if name in body}


def prefill(reasoning: str) -> str:
    """The final assistant message of the continuation: the reasoning the client got, stopped."""
    return f"<think>{reasoning}{BUDGET_MESSAGE}</think>"


def an_answer(text: str) -> bool:
    """What the grammar lets the model answer after its reasoning: three to five of its words."""
    words = text.split()
    return 3 <= len(words) <= 5 and set(words) <= set(WORDS)


def chat_continued(recorder: Recorder, reasoning: str, streamed: bool) -> dict[str, Any]:
    """The first request llama-server received, after checking that it was a stream (a client that asked
    for none is answered from one with its usage) and that the second is its continuation: the same
    request with the reasoning the client got as a final assistant message, and ``max_tokens`` (where the
    client set one) reduced by its events."""
    first, continuation = recorder.posts("/chat/completions")
    assert first["stream"] is True
    assert streamed or first["stream_options"] == {"include_usage": True}
    limit = {"max_tokens": first["max_tokens"] - BUDGET} if "max_tokens" in first else {}
    assistant = {"role": "assistant", "content": prefill(reasoning)}
    assert continuation == {**first, "messages": [*first["messages"], assistant], **limit}
    return first


def messages_continued(recorder: Recorder, reasoning: str, budget: int = BUDGET) -> dict[str, Any]:
    """The first messages request llama-server received (its limit, stream and controls), after checking
    that the second is its continuation, ``max_tokens`` reduced by the reasoning events the client got."""
    first, continuation = recorder.posts("/messages")
    assistant = {"role": "assistant", "content": prefill(reasoning)}
    assert continuation == {
        **first,
        "messages": [*first["messages"], assistant],
        "max_tokens": first["max_tokens"] - budget,
    }
    return {"max_tokens": first["max_tokens"], "stream": first["stream"], **controls(first)}


def responses_continued(recorder: Recorder, reasoning: str) -> dict[str, Any]:
    """The first Responses request llama-server received (its stream and controls), after checking that
    the second is its continuation: the answer so far as a final assistant message item, in progress."""
    first, continuation = recorder.posts("/responses")
    assistant = {
        "type": "message",
        "id": "msg_prefill",
        "role": "assistant",
        "status": "in_progress",
        "content": [{"type": "output_text", "text": prefill(reasoning), "annotations": []}],
    }
    assert continuation == {**first, "input": [*first["input"], assistant]}
    return {"stream": first["stream"], **controls(first)}


@pytest.fixture(scope="module")
def decided_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Thinking]:
    workdir = tmp_path_factory.mktemp("llama-budget-clients")
    server = Thinking(
        llama_server_binary(),
        workdir,
        free_port(),
        offline_env(),
        THINKS_LONG,
        decided=True,
        context=131072,
        predict=4096,
    )
    yield server
    server.stop()


@pytest.fixture(scope="module")
def recorder(decided_server: Thinking) -> Iterator[Recorder]:
    recorder = Recorder(decided_server.base)
    recorder.start()
    yield recorder
    recorder.stop()


@pytest.fixture(scope="module")
def gateways(recorder: Recorder) -> Iterator[Callable[..., str]]:
    """``gateway(*settings)``: the base URL of the packaged gateway in front of the recorder, enforcing
    budgets itself, with more of its ``settings``; the recorder's log emptied."""
    proxies: dict[tuple[str, ...], Proxy] = {}

    def get(*settings: str) -> str:
        recorder.requests.clear()
        if settings not in proxies:
            base = ("upstream_server=llamacpp", "reasoning_budget_enforcement=gateway")
            proxies[settings] = Proxy(recorder.base, *(f for s in (*base, *settings) for f in ("--set", s)))
        return proxies[settings].base

    yield get
    for proxy in proxies.values():
        proxy.stop()


# -- Claude Code -------------------------------------------------------------------------------------

# Claude Code sends ``thinking: {type: enabled, budget_tokens: N}`` for a model it believes has no adaptive
# thinking, N its ``MAX_THINKING_TOKENS`` raised to Anthropic's least budget, 1024; for any other model it
# sends ``adaptive`` thinking, which has no budget.
CLAUDE_BUDGET = {"MAX_THINKING_TOKENS": "1024", "CLAUDE_CODE_MODEL_CAPABILITIES": "qwen3*=-adaptive_thinking"}


def claude_deltas(events: list[dict[str, Any]], kind: str, name: str) -> list[str]:
    """The texts of the ``kind`` deltas Claude Code received (its partial messages)."""
    deltas = [e["event"].get("delta", {}) for e in events if e.get("type") == "stream_event"]
    return [d[name] for d in deltas if d.get("type") == kind and d[name]]


@pytest.mark.parametrize(
    ("settings", "budget", "sent"),
    [
        # The client's ``thinking`` is not sent on: llama.cpp's own budget would cut first.
        ((), 1024, {"output_config": {"effort": "high"}, **ON}),
        # The pinned control replaces the client's (its effort too); of the two budgets, the smaller.
        ((f"reasoning_control=budget:{BUDGET}", "reasoning_control_pinned=true"), BUDGET, ON),
    ],
    ids=["its-own", "operator-ceiling"],
)
def test_claude_code(
    settings: tuple[str, ...],
    budget: int,
    sent: dict[str, Any],
    claude: Path,
    tmp_path: Path,
    gateways: Callable[..., str],
    recorder: Recorder,
) -> None:
    """Its own budget of 1024, and an operator's pinned smaller one, a ceiling on the client's."""
    base = gateways(*settings)
    events = ClaudeCode(claude, base, tmp_path, MODEL, CLAUDE_BUDGET).run("hi", "--include-partial-messages")
    thinking, signatures, texts, result = shown(events)
    got = claude_deltas(events, "thinking_delta", "thinking")
    assert len(got) == budget and thinking == ["".join(got)], thinking
    assert signatures == [gateway_signature(thinking[0])]
    assert len(texts) == 1 and an_answer(texts[0]) and result == texts[0], texts
    assert messages_continued(recorder, thinking[0], budget) == {"max_tokens": 32000, "stream": True, **sent}


# -- LangChain ---------------------------------------------------------------------------------------


def test_langchain_chat_deepseek(gateways: Callable[..., str], recorder: Recorder) -> None:
    """ChatDeepSeek (a ChatOpenAI that keeps ``reasoning_content``), the budget in its ``extra_body``:
    streamed, then asked for one body (the same model, seed and prompt: the same reasoning)."""
    model = make("ChatDeepSeek", gateways(), MODEL, extra_body=REASONING_BUDGET)
    chunks = list(model.stream("hi"))
    events = [r for r in (c.additional_kwargs.get("reasoning_content") for c in chunks) if r]
    streamed = sum(chunks[1:], chunks[0])
    reasoning = "".join(events)
    assert len(events) == BUDGET and streamed.additional_kwargs["reasoning_content"] == reasoning
    assert an_answer(streamed.text), streamed
    assert controls(chat_continued(recorder, reasoning, streamed=True)) == {**REASONING_BUDGET, **ON}

    recorder.requests.clear()
    message = model.invoke("hi")
    assert message.additional_kwargs["reasoning_content"] == reasoning and message.text == streamed.text, message
    assert controls(chat_continued(recorder, reasoning, streamed=False)) == {**REASONING_BUDGET, **ON}


def test_langchain_chat_openai(gateways: Callable[..., str], recorder: Recorder) -> None:
    """ChatOpenAI keeps no reasoning field on chat completions: it shows the answer after the budget."""
    message = make("ChatOpenAI", gateways(), MODEL, extra_body=REASONING_BUDGET).invoke("hi")
    prefilled = recorder.posts("/chat/completions")[-1]["messages"][-1]["content"]
    reasoning = prefilled.removeprefix("<think>").removesuffix(f"{BUDGET_MESSAGE}</think>")
    assert (reasoning_of(message), an_answer(message.text)) == ([], True), message
    assert controls(chat_continued(recorder, reasoning, streamed=False)) == {**REASONING_BUDGET, **ON}


def test_langchain_responses(gateways: Callable[..., str], recorder: Recorder) -> None:
    """ChatOpenAI on the Responses API, the budget in its own ``reasoning`` (which it sends as it is):
    streamed (the reasoning summary's deltas), then invoked (the same model, seed and prompt)."""
    model = make("ChatOpenAI(responses)", gateways(), MODEL, reasoning=REASONING_BUDGET["reasoning"])
    chunks = list(model.stream("hi"))
    blocks = [b for c in chunks for b in c.content if isinstance(b, dict) and b.get("type") == "reasoning"]
    events = [part["text"] for b in blocks for part in b.get("summary", []) if part["text"]]
    streamed = sum(chunks[1:], chunks[0])
    reasoning = "".join(events)
    assert len(events) == BUDGET and reasoning_of(streamed) == [reasoning], streamed
    assert an_answer(streamed.text), streamed
    sent = {"reasoning": REASONING_BUDGET["reasoning"], **ON}
    assert responses_continued(recorder, reasoning) == {"stream": True, **sent}

    recorder.requests.clear()
    message = model.invoke("hi")
    assert (reasoning_of(message), message.text) == ([reasoning], streamed.text), message
    assert responses_continued(recorder, reasoning) == {"stream": True, **sent}


# -- the AI SDK (its openai-compatible and anthropic providers) --------------------------------------
#
# The openai-compatible provider's own ``reasoning`` option is an effort (``reasoning_effort``): it has no
# budget. Members of its provider options that are not its own go into the request body as they are: the
# budget goes there. The anthropic provider has one: ``thinking: {type: "enabled", budgetTokens: N}``.


def aisdk_streamed(node_modules: Path, provider: str, base: str, options: dict[str, Any]) -> tuple[str, str]:
    """(reasoning, answer) of a ``streamText`` call, after checking its parts: one reasoning of the
    budget's deltas, then one text."""
    shown = run_aisdk(node_modules, provider, base, "stream", model=MODEL, provider_options=options)
    events = [p[1] for p in shown["parts"] if p[0] == "reasoning-delta" and p[1]]
    kinds = [p[0] for p in shown["parts"] if p[0] != "reasoning-delta"]
    assert len(events) == BUDGET and shown["reasoningText"] == "".join(events), shown
    assert kinds == ["reasoning-start", "reasoning-end", "text-start", "text-end", "finish-step"], shown
    assert an_answer(shown["text"]), shown
    return shown["reasoningText"], shown["text"]


def aisdk_generated(node_modules: Path, provider: str, base: str, options: dict[str, Any]) -> tuple[str, str]:
    shown = run_aisdk(node_modules, provider, base, "generate", model=MODEL, provider_options=options)
    return shown["reasoningText"], shown["text"]


def test_aisdk_chat(node_modules: Path, gateways: Callable[..., str], recorder: Recorder) -> None:
    """Streamed, then generated (the same model, seed and prompt: the same reasoning)."""
    base, options = gateways(), {"gateway": REASONING_BUDGET}
    reasoning, answer = aisdk_streamed(node_modules, "chat", base, options)
    assert controls(chat_continued(recorder, reasoning, streamed=True)) == {**REASONING_BUDGET, **ON}
    recorder.requests.clear()
    assert aisdk_generated(node_modules, "chat", base, options) == (reasoning, answer)
    assert controls(chat_continued(recorder, reasoning, streamed=False)) == {**REASONING_BUDGET, **ON}


def test_aisdk_anthropic(node_modules: Path, gateways: Callable[..., str], recorder: Recorder) -> None:
    """Streamed, then generated, on ``/v1/messages``; the provider asks for ``max_tokens`` its
    ``maxOutputTokens`` (512) plus the budget, and the client's ``thinking`` is not sent on (llama.cpp's
    own budget would cut first)."""
    base, options = gateways(), {"anthropic": {"thinking": {"type": "enabled", "budgetTokens": BUDGET}}}
    reasoning, answer = aisdk_streamed(node_modules, "anthropic", base, options)
    assert messages_continued(recorder, reasoning) == {"max_tokens": 512 + BUDGET, "stream": True, **ON}
    recorder.requests.clear()
    assert aisdk_generated(node_modules, "anthropic", base, options) == (reasoning, answer)
    assert messages_continued(recorder, reasoning) == {"max_tokens": 512 + BUDGET, "stream": True, **ON}


# -- Codex (wire_api = "responses") ------------------------------------------------------------------
#
# Codex has no budget of its own (its ``model_reasoning_effort`` is an effort), and on a model name it does
# not know it says no effort: the operator's ``reasoning_control = "budget:N"`` speaks for it.


def budget_metrics(base: str) -> dict[str, float]:
    """The gateway's budget counters (``/metrics``), by name and labels, where not zero."""
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as r:
        lines = r.read().decode().splitlines()
    samples = (line.rsplit(" ", 1) for line in lines if line.startswith("thinkextract_budget"))
    return {name: float(value) for name, value in samples if "_total{" in name and float(value)}


def test_codex_operator_budget(codex: Path, tmp_path: Path, gateways: Callable[..., str], recorder: Recorder) -> None:
    """Codex shows no reasoning event, only the items: the gateway's own count says how many it sent."""
    base = gateways(f"reasoning_control=budget:{BUDGET}")
    events = Codex(codex, base, tmp_path, MODEL).run("hi")
    (reasoning,) = [i["text"] for i in items(events, "reasoning")]
    (message,) = [i["text"] for i in items(events, "agent_message")]
    assert an_answer(message), events
    # The operator's budget is the gateway's alone: thinking on is all the server is told.
    assert responses_continued(recorder, reasoning) == {"stream": True, "reasoning": {"summary": "auto"}, **ON}
    assert budget_metrics(base) == {
        'thinkextract_budgets_total{reason="continued",surface="responses"}': 1,
        'thinkextract_budget_reasoning_events_total{surface="responses"}': BUDGET,
    }


# -- ``auto`` on a server without a budget field of its own -------------------------------------------
#
# SGLang's chat has no budget field unless it was launched with strict thinking: with the default
# ``reasoning_budget_enforcement = "auto"`` the budget is the gateway's. The upstream is the emulated
# SGLang of the budget's own tests (one token per event; it continues a final assistant message when
# asked with ``continue_final_message`` and no generation prompt), which thinks as many tokens as the
# user's message says.


@pytest.fixture(scope="module")
def sglang() -> Iterator[tuple[Thinker, str]]:
    emulated = Thinker("sglang")
    app = web.Application()
    app.router.add_post("/v1/chat/completions", emulated.chat)
    server = AppThread(app, "emulated-sglang")
    port = server.start()
    proxy = Proxy(f"http://127.0.0.1:{port}", "--set", "upstream_server=sglang")
    yield emulated, proxy.base
    proxy.stop()
    server.stop()


def test_langchain_auto_on_sglang(sglang: tuple[Thinker, str]) -> None:
    """ChatDeepSeek streams, then invokes: the budget's tokens, then the answer, each time."""
    emulated, base = sglang
    model = make("ChatDeepSeek", base, MODEL, extra_body=REASONING_BUDGET)
    reasoning = "".join(token(i) for i in range(BUDGET))
    first = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "think 40"}]}
    first |= {**REASONING_BUDGET, **ON}
    assistant = {"role": "assistant", "content": prefill(reasoning)}
    continuation = {**first, "messages": [*first["messages"], assistant]}
    continuation |= {"continue_final_message": True, "add_generation_prompt": False}

    emulated.served.clear()
    chunks = list(model.stream("think 40"))
    events = [r for r in (c.additional_kwargs.get("reasoning_content") for c in chunks) if r]
    streamed = sum(chunks[1:], chunks[0])
    assert events == [token(i) for i in range(BUDGET)], events
    assert (streamed.additional_kwargs["reasoning_content"], streamed.text) == (reasoning, "".join(ANSWER))
    assert [s.body for s in emulated.served] == [first, continuation]

    emulated.served.clear()
    message = model.invoke("think 40")
    assert (message.additional_kwargs["reasoning_content"], message.text) == (reasoning, "".join(ANSWER))
    first |= {"stream_options": {"include_usage": True}}  # asked as a stream, to answer with one body
    assert [s.body for s in emulated.served] == [
        first,
        {**continuation, "stream_options": first["stream_options"]},
    ]
