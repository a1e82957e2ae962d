"""Reasoning controls: each real client with its own setting for thinking off or an effort, straight to an
upstream and through the gateway, and what reached the upstream; and llama.cpp's llama-server itself, whose
chat template renders no reasoning when the request turns thinking off.

The upstream is the scripted model server standing for vLLM, llama.cpp or Ollama (``owned_by``; the
gateway is told the same with ``upstream_server``). It reads a Qwen3 hybrid's thinking switch where that
server reads it (``scripted.thinking_off``) and answers without reasoning when the switch is off there.
Each test asserts the control fields the upstream received, whole (``straight``: what the client sends;
``gateway``: what the gateway made of it), and what the client shows of the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import ollama
import openai
import pytest

from .conftest import Proxy, free_port, llama_server_binary, offline_env
from .drive_aisdk import run as run_aisdk
from .drive_claude_code import ClaudeCode, shown
from .drive_codex import Codex, items
from .drive_langchain import make, reasoning_of
from .expect import PLAIN
from .llama import SWITCH_TEMPLATE, WORDS, LlamaServer
from .recorder import Recorder
from .scripted import ScriptedUpstream

MODEL = "qwen3-8b"  # a Qwen3 hybrid: its template reads ``enable_thinking``
OWNER = {"vllm": "vllm", "llamacpp": "llamacpp", "ollama": "library"}
# Every top-level field a client or the gateway says thinking with, on any surface.
CONTROL_FIELDS = (
    "reasoning_effort",
    "reasoning",
    "thinking",
    "output_config",
    "think",
    "chat_template_kwargs",
    "thinking_token_budget",
    "thinking_budget_tokens",
)
OFF = {"chat_template_kwargs": {"enable_thinking": False}}
ON = {"chat_template_kwargs": {"enable_thinking": True}}  # an effort is thinking on, where the server passes it


def controls(body: dict[str, Any]) -> dict[str, Any]:
    return {name: body[name] for name in CONTROL_FIELDS if name in body}


def trimmed(reasoning: str | None) -> str | None:
    """The reasoning shown without the newlines a Qwen3 model writes inside its tags (the gateway keeps them)."""
    return None if reasoning is None else reasoning.strip("\n")


Upstreams = Callable[..., tuple[ScriptedUpstream, str]]


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstreams]:
    """``upstream(server, via, *settings)``: the scripted upstream standing for ``server``, its log emptied,
    and the base URL a client is given: the upstream itself (``straight``) or the gateway in front of it
    (``gateway``), with more of the gateway's ``settings`` (``reasoning_control=off``…)."""
    upstreams: dict[str, ScriptedUpstream] = {}
    proxies: dict[tuple[str, ...], Proxy] = {}

    def get(server: str, via: str, *settings: str) -> tuple[ScriptedUpstream, str]:
        if server not in upstreams:
            upstreams[server] = ScriptedUpstream(owned_by=OWNER[server])
            upstreams[server].start()
        scripted = upstreams[server]
        scripted.requests.clear()
        if via == "straight":
            return scripted, scripted.base
        key = (server, *settings)
        if key not in proxies:
            flags = [f for setting in (f"upstream_server={server}", *settings) for f in ("--set", setting)]
            proxies[key] = Proxy(scripted.base, *flags)
        return scripted, proxies[key].base

    yield get
    for proxy in proxies.values():
        proxy.stop()
    for scripted in upstreams.values():
        scripted.stop()


VIA = ["straight", "gateway"]


# -- Claude Code -------------------------------------------------------------------------------------

# Claude Code's thinking off (``MAX_THINKING_TOKENS=0``, like ``--thinking disabled``) sends
# ``thinking: {type: disabled}`` only for a model it believes accepts it: for a name it does not know, it
# assumes the model rejects disabled thinking and sends no ``thinking`` at all, unless its own
# ``CLAUDE_CODE_MODEL_CAPABILITIES`` says otherwise. Either way it sends its effort (``high`` by default).
CLAUDE_THINKING_OFF = {
    "MAX_THINKING_TOKENS": "0",
    "CLAUDE_CODE_MODEL_CAPABILITIES": "qwen3*=-rejects_disabled_thinking",
}


@pytest.mark.parametrize("via", VIA)
def test_claude_code_thinking_off_on_vllm(via: str, claude: Path, tmp_path: Path, upstream: Upstreams) -> None:
    scripted, base = upstream("vllm", via)
    cc = ClaudeCode(claude, base, tmp_path, MODEL, CLAUDE_THINKING_OFF)
    thinking, _, texts, result = shown(cc.run("What is 2+2?"))
    (body,) = scripted.posts("/messages")
    sent = {"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}}
    if via == "straight":
        # vLLM's messages endpoint has no ``thinking``: the model thinks, and Claude Code shows the tags.
        assert controls(body) == sent
        assert (thinking, texts, result) == ([], [PLAIN.written(MODEL)], PLAIN.written(MODEL))
    else:
        assert controls(body) == {**sent, **OFF}
        assert (thinking, texts, result) == ([], [PLAIN.answer], PLAIN.answer)


@pytest.mark.parametrize("via", VIA)
def test_claude_code_thinking_off_unknown_model(via: str, claude: Path, tmp_path: Path, upstream: Upstreams) -> None:
    """A client limit: with a model name Claude Code does not know, its thinking off says nothing on the
    wire but its effort; only the operator's ``reasoning_control`` can turn such a model's thinking off."""
    scripted, base = upstream("vllm", via)
    settings = {"MAX_THINKING_TOKENS": "0"}
    thinking, _, texts, result = shown(ClaudeCode(claude, base, tmp_path, MODEL, settings).run("What is 2+2?"))
    (body,) = scripted.posts("/messages")
    sent = {"output_config": {"effort": "high"}}
    if via == "straight":
        assert controls(body) == sent
        assert (thinking, texts, result) == ([], [PLAIN.written(MODEL)], PLAIN.written(MODEL))
    else:
        # An effort is thinking on: the switch says so too (vLLM itself derives it from the effort).
        assert controls(body) == {**sent, **ON}
        assert ([trimmed(t) for t in thinking], texts, result) == ([PLAIN.reasoning], [PLAIN.answer], PLAIN.answer)


def test_claude_code_operator_pins_thinking_off(claude: Path, tmp_path: Path, upstream: Upstreams) -> None:
    """The operator's way for such a model: Claude Code always says an effort, so only a pinned control wins."""
    scripted, base = upstream("vllm", "gateway", "reasoning_control=off", "reasoning_control_pinned=true")
    settings = {"MAX_THINKING_TOKENS": "0"}
    thinking, _, texts, result = shown(ClaudeCode(claude, base, tmp_path, MODEL, settings).run("What is 2+2?"))
    (body,) = scripted.posts("/messages")
    assert controls(body) == OFF  # the pinned control replaces the client's effort
    assert (thinking, texts, result) == ([], [PLAIN.answer], PLAIN.answer)


# -- Codex (wire_api = "responses") ------------------------------------------------------------------


@pytest.mark.parametrize(("server", "via"), [("vllm", "straight"), ("vllm", "gateway"), ("llamacpp", "gateway")])
def test_codex_reasoning_effort(server: str, via: str, codex: Path, tmp_path: Path, upstream: Upstreams) -> None:
    scripted, base = upstream(server, via)
    events = Codex(codex, base, tmp_path, MODEL, 'model_reasoning_effort = "high"').run("What is 2+2?")
    (body,) = scripted.posts("/responses")
    # Both servers read ``reasoning.effort`` on /v1/responses (llama.cpp copies it to ``reasoning_effort``);
    # llama.cpp's also passes ``chat_template_kwargs``, vLLM's has none.
    sent = {"reasoning": {"effort": "high", "summary": "auto"}}
    assert controls(body) == (sent if (server, via) != ("llamacpp", "gateway") else {**sent, **ON})
    messages = [i["text"] for i in items(events, "agent_message")]
    if via == "straight":
        assert (messages, items(events, "reasoning")) == ([PLAIN.written(MODEL)], [])
    else:
        reasoning = [trimmed(i["text"]) for i in items(events, "reasoning")]
        assert (messages, reasoning) == ([PLAIN.answer], [PLAIN.reasoning])


@pytest.mark.parametrize("via", VIA)
def test_codex_operator_default_off(via: str, codex: Path, tmp_path: Path, upstream: Upstreams) -> None:
    """Codex on a model name it does not know says no effort: the operator's default speaks for it."""
    scripted, base = upstream("llamacpp", via, "reasoning_control=off")
    events = Codex(codex, base, tmp_path, MODEL).run("What is 2+2?")
    (body,) = scripted.posts("/responses")
    messages = [i["text"] for i in items(events, "agent_message")]
    if via == "straight":
        assert controls(body) == {"reasoning": {"summary": "auto"}}
        assert (messages, items(events, "reasoning")) == ([PLAIN.written(MODEL)], [])
    else:
        assert controls(body) == {"reasoning": {"summary": "auto", "effort": "none"}, **OFF}
        assert (messages, items(events, "reasoning")) == ([PLAIN.answer], [])


# -- the AI SDK (@ai-sdk/openai-compatible, the call's top-level ``reasoning``) -----------------------

AISDK = {
    # (reasoning, server): what the upstream receives through the gateway
    ("high", "llamacpp"): {"reasoning_effort": "high", **ON},
    ("high", "vllm"): {"reasoning_effort": "high", **ON},
    ("none", "llamacpp"): {"reasoning_effort": "none", **OFF},
    ("none", "vllm"): {"reasoning_effort": "none", **OFF},
}


@pytest.mark.parametrize(("reasoning", "server"), list(AISDK))
@pytest.mark.parametrize("via", VIA)
def test_aisdk_reasoning(reasoning: str, server: str, via: str, node_modules: Path, upstream: Upstreams) -> None:
    scripted, base = upstream(server, via)
    shown = run_aisdk(node_modules, "chat", base, "generate", model=MODEL, reasoning=reasoning)
    (body,) = scripted.posts("/chat/completions")
    assert controls(body) == ({"reasoning_effort": reasoning} if via == "straight" else AISDK[reasoning, server])
    if reasoning == "none":  # both servers read ``reasoning_effort: "none"`` on chat
        assert (shown["text"], shown["reasoningText"]) == (PLAIN.answer, None)
    elif via == "straight":
        assert (shown["text"], shown["reasoningText"]) == (PLAIN.written(MODEL), None)
    else:
        assert (shown["text"], trimmed(shown["reasoningText"])) == (PLAIN.answer, PLAIN.reasoning)


# -- the ollama client on /api/chat ------------------------------------------------------------------


@pytest.mark.parametrize("think", [False, None], ids=["think-false", "default"])
@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("via", VIA)
def test_ollama_think(think: bool | None, stream: bool, via: str, upstream: Upstreams) -> None:
    scripted, base = upstream("ollama", via)
    client = ollama.Client(host=base)
    messages = [{"role": "user", "content": "What is 2+2?"}]
    if stream:
        parts = list(client.chat(model="qwen3:8b", messages=messages, think=think, stream=True))
        thinking = "".join(p.message.thinking or "" for p in parts) or None
        content = "".join(p.message.content or "" for p in parts)
        assert parts[-1].done is True
    else:
        message = client.chat(model="qwen3:8b", messages=messages, think=think).message
        thinking, content = message.thinking, message.content
    (body,) = scripted.posts("/api/chat")
    assert controls(body) == ({} if think is None else {"think": False})
    assert (thinking, content) == (PLAIN.reasoning if think is None else None, PLAIN.answer)


# (think, model, via): what the upstream receives, or the status it answers the client
OLLAMA_ON: dict[tuple[bool | str, str, str], dict[str, Any] | int] = {
    (True, "qwen3:8b", "straight"): {"think": True},
    (True, "qwen3:8b", "gateway"): {"think": True},
    ("high", "qwen3:8b", "gateway"): {"think": "high"},
    # Ollama answers 400 to a model that cannot think; the gateway asks /api/show and leaves ``think`` out.
    (True, "llama3.2:3b", "straight"): 400,
    (True, "llama3.2:3b", "gateway"): {},
    ("high", "llama3.2:3b", "gateway"): {},
}


@pytest.mark.parametrize(("think", "model", "via"), list(OLLAMA_ON))
def test_ollama_think_on(think: bool | str, model: str, via: str, upstream: Upstreams) -> None:
    scripted, base = upstream("ollama", via)
    client = ollama.Client(host=base)
    messages = [{"role": "user", "content": "What is 2+2?"}]
    received = OLLAMA_ON[think, model, via]
    if isinstance(received, int):
        with pytest.raises(ollama.ResponseError) as refused:
            client.chat(model=model, messages=messages, think=think)
        assert (refused.value.status_code, refused.value.error) == (received, f'"{model}" does not support thinking')
        return
    message = client.chat(model=model, messages=messages, think=think).message
    (body,) = scripted.posts("/api/chat")
    assert controls(body) == received
    reasoning = PLAIN.reasoning if model == "qwen3:8b" else None
    assert (message.thinking, message.content) == (reasoning, PLAIN.answer)


# -- LangChain's ChatOpenAI --------------------------------------------------------------------------

LANGCHAIN = {"none": {"reasoning_effort": "none", **OFF}, "low": {"reasoning_effort": "low", **ON}}


@pytest.mark.parametrize("effort", list(LANGCHAIN))
@pytest.mark.parametrize("via", VIA)
def test_langchain_reasoning_effort(effort: str, via: str, upstream: Upstreams) -> None:
    scripted, base = upstream("vllm", via)
    message = make("ChatOpenAI", base, MODEL, reasoning_effort=effort).invoke("What is 2+2?")
    (body,) = scripted.posts("/chat/completions")
    assert controls(body) == ({"reasoning_effort": effort} if via == "straight" else LANGCHAIN[effort])
    # ChatOpenAI keeps no reasoning field on chat completions: the answer is all it shows.
    thinks_inline = via == "straight" and effort != "none"
    assert (message.text, reasoning_of(message)) == (PLAIN.written(MODEL) if thinks_inline else PLAIN.answer, [])


# -- the real llama-server: what its chat template renders -------------------------------------------
#
# The tiny model of ``llama.py`` with ``SWITCH_TEMPLATE``, a template that reads ``enable_thinking`` as a
# Qwen3 hybrid's does, and thinking on by default (``--reasoning on``, as a Qwen3 model thinks unless told
# otherwise). Its one slot tells the generation prompt the template rendered for the last request: thinking
# off closes an empty reasoning block there. Every request passes through a recorder, straight or from the
# gateway, so the test reads what llama-server received. The server-wide grammar still makes the model
# write ``<think>…</think>…``: what is checked of the answer is its shape.

PROMPT_ON = "<|assistant|>"
PROMPT_OFF = "<|assistant|><think>\n\n</think>\n\n"
WORD = "(?:" + "|".join(WORDS) + ")"
PHRASE = f"{WORD}(?: {WORD}){{0,3}}"


def phrase(text: object) -> bool:
    return isinstance(text, str) and re.fullmatch(PHRASE, text) is not None


def inline(text: object) -> bool:
    return isinstance(text, str) and re.fullmatch(f"<think>{PHRASE}</think>{PHRASE}", text) is not None


@pytest.fixture(scope="module")
def switch_llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    workdir = tmp_path_factory.mktemp("llama-switch")
    template = workdir / "switch.jinja"
    template.write_text(SWITCH_TEMPLATE)
    flags = ("--chat-template-file", str(template), "--reasoning", "on")
    server = LlamaServer(llama_server_binary(), workdir, free_port(), offline_env(), *flags)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def switch_recorder(switch_llama: LlamaServer) -> Iterator[Recorder]:
    recorder = Recorder(switch_llama.base)
    recorder.start()
    yield recorder
    recorder.stop()


@pytest.fixture(scope="module")
def switch_proxy(switch_recorder: Recorder) -> Iterator[Proxy]:
    proxy = Proxy(switch_recorder.base, "--set", "upstream_server=llamacpp")
    yield proxy
    proxy.stop()


@pytest.fixture
def llama_base(switch_recorder: Recorder, switch_proxy: Proxy) -> Callable[[str], str]:
    switch_recorder.requests.clear()
    return lambda via: switch_recorder.base if via == "straight" else switch_proxy.base


@pytest.mark.parametrize(
    ("effort", "via", "received", "prompt"),
    [
        # This build hands ``reasoning_effort`` to the template as a variable only (``none`` unsets it): the
        # switch is ``enable_thinking``, which it leaves on.
        ("none", "straight", {"reasoning_effort": "none"}, PROMPT_ON),
        ("none", "gateway", {"reasoning_effort": "none", **OFF}, PROMPT_OFF),
        ("high", "gateway", {"reasoning_effort": "high", **ON}, PROMPT_ON),
        (None, "gateway", {}, PROMPT_ON),
    ],
    ids=["none-straight", "none-gateway", "high-gateway", "default-gateway"],
)
def test_llama_server_chat_thinking_off(
    effort: str | None,
    via: str,
    received: dict[str, Any],
    prompt: str,
    switch_llama: LlamaServer,
    switch_recorder: Recorder,
    llama_base: Callable[[str], str],
) -> None:
    client = openai.OpenAI(base_url=f"{llama_base(via)}/v1", api_key="unused", max_retries=0)
    options: Any = {} if effort is None else {"reasoning_effort": effort}
    message = (
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], **options)
        .choices[0]
        .message
    )
    (body,) = switch_recorder.posts("/chat/completions")
    assert (controls(body), switch_llama.generation_prompt()) == (received, prompt)
    if via == "straight":
        assert inline(message.content), message
    else:
        assert phrase((message.model_extra or {}).get("reasoning_content")) and phrase(message.content), message


@pytest.mark.parametrize(
    ("via", "received", "prompt"),
    [
        # llama.cpp's messages endpoint maps ``disabled`` to nothing: the template renders thinking on.
        ("straight", {"thinking": {"type": "disabled"}}, PROMPT_ON),
        ("gateway", {"thinking": {"type": "disabled"}, **OFF}, PROMPT_OFF),
    ],
    ids=VIA,
)
def test_llama_server_messages_thinking_disabled(
    via: str,
    received: dict[str, Any],
    prompt: str,
    switch_llama: LlamaServer,
    switch_recorder: Recorder,
    llama_base: Callable[[str], str],
) -> None:
    client = anthropic.Anthropic(base_url=llama_base(via), api_key="unused", max_retries=0)
    message = client.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}], thinking={"type": "disabled"}
    )
    (body,) = switch_recorder.posts("/messages")
    assert (controls(body), switch_llama.generation_prompt()) == (received, prompt)
    texts = [b.text for b in message.content if b.type == "text"]
    if via == "straight":
        assert [b.type for b in message.content] == ["text"] and inline(texts[0]), message
    else:
        thinking = [b.thinking for b in message.content if b.type == "thinking"]
        assert [b.type for b in message.content] == ["thinking", "text"], message
        assert phrase(thinking[0]) and phrase(texts[0]), message


@pytest.mark.parametrize(
    ("via", "received", "prompt"),
    [
        # Its Responses endpoint copies ``reasoning.effort`` to ``reasoning_effort``: no switch in this build.
        ("straight", {"reasoning": {"effort": "none"}}, PROMPT_ON),
        ("gateway", {"reasoning": {"effort": "none"}, **OFF}, PROMPT_OFF),
    ],
    ids=VIA,
)
def test_llama_server_responses_effort_none(
    via: str,
    received: dict[str, Any],
    prompt: str,
    switch_llama: LlamaServer,
    switch_recorder: Recorder,
    llama_base: Callable[[str], str],
) -> None:
    client = openai.OpenAI(base_url=f"{llama_base(via)}/v1", api_key="unused", max_retries=0)
    response = client.responses.create(model=MODEL, input="hi", reasoning={"effort": "none"})
    (body,) = switch_recorder.posts("/responses")
    assert (controls(body), switch_llama.generation_prompt()) == (received, prompt)
    if via == "straight":
        assert [i.type for i in response.output] == ["message"] and inline(response.output_text), response
    else:
        assert [i.type for i in response.output] == ["reasoning", "message"], response
        assert phrase(response.output_text), response


# Real clients with their own thinking off, through the gateway to llama-server.


def test_llama_server_claude_code_thinking_off(
    claude: Path, tmp_path: Path, switch_llama: LlamaServer, switch_recorder: Recorder, llama_base: Callable[[str], str]
) -> None:
    cc = ClaudeCode(claude, llama_base("gateway"), tmp_path, MODEL, CLAUDE_THINKING_OFF)
    thinking, signatures, texts, result = shown(cc.run("hi"))
    (body,) = switch_recorder.posts("/messages")
    received = {"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}, **OFF}
    assert (controls(body), switch_llama.generation_prompt()) == (received, PROMPT_OFF)
    assert len(thinking) == 1 and phrase(thinking[0]) and signatures[0].startswith("gw1:"), thinking
    assert len(texts) == 1 and phrase(texts[0]) and result == texts[0], texts


def test_llama_server_codex_effort_none(
    codex: Path, tmp_path: Path, switch_llama: LlamaServer, switch_recorder: Recorder, llama_base: Callable[[str], str]
) -> None:
    events = Codex(codex, llama_base("gateway"), tmp_path, MODEL, 'model_reasoning_effort = "none"').run("hi")
    (body,) = switch_recorder.posts("/responses")
    received = {"reasoning": {"effort": "none", "summary": "auto"}, **OFF}
    assert (controls(body), switch_llama.generation_prompt()) == (received, PROMPT_OFF)
    (message,) = [i["text"] for i in items(events, "agent_message")]
    (reasoning,) = [i["text"] for i in items(events, "reasoning")]
    assert phrase(message) and phrase(reasoning), events
