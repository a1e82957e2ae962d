"""The round trip with the real clients: each one's two-turn tool loop through the gateway, with default
settings, in front of a scripted upstream that says it is vLLM, SGLang, llama.cpp or Ollama. What that
upstream receives on the second turn is read as the server reads it (``tests/history/servers.py``): its
model sees the reasoning of the first turn again, and nothing in the request makes it refuse it.

``qwen3-8b`` (a family whose chat template reads the reasoning field) runs on vLLM and llama.cpp, a model
of no known family (the reasoning inline, as without a gateway) on SGLang and Ollama.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..history import servers
from .conftest import HERE, Proxy
from .drive_agents import run_js
from .drive_aisdk import run as aisdk
from .drive_claude_code import ClaudeCode, shown
from .drive_codex import Codex, items
from .drive_langchain import ask, make, weather
from .drive_litellm import WEATHER, complete
from .expect import FINAL, TOOL
from .scripted import ScriptedUpstream

FLAVOURS = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp", "ollama": "library"}
MODEL = {"vllm": "qwen3-8b", "llamacpp": "qwen3-8b", "sglang": "scripted", "ollama": "scripted"}


class Flavour:
    """A scripted upstream that says it is ``server``, and the gateway in front of it (default settings
    but the Anthropic policy), once it has asked the upstream what it is."""

    def __init__(self, server: str, policy: str) -> None:
        self.server = server
        self.model = MODEL[server]
        self.upstream = ScriptedUpstream(owned_by=FLAVOURS[server])
        self.upstream.start()
        self.proxy = Proxy(self.upstream.base, "--messages-policy", policy)
        deadline = time.monotonic() + 60  # a bound for a hang: a busy machine starts a process slowly
        while not any(f"is {server}:" in line for line in self.proxy.output):
            assert time.monotonic() < deadline, "".join(self.proxy.output)
            time.sleep(0.05)

    def second(self, suffix: str) -> dict[str, Any]:
        """The request that carries the tool's result."""
        bodies = self.upstream.posts(suffix)
        assert len(bodies) == 2, [list(b) for b in bodies]
        return bodies[1]

    def stop(self) -> None:
        self.proxy.stop()
        self.upstream.stop()


@pytest.fixture(scope="module", params=list(FLAVOURS))
def flavour(request: pytest.FixtureRequest) -> Iterator[Flavour]:
    f = Flavour(request.param, "unsigned")
    yield f
    f.stop()


@pytest.fixture
def fresh(flavour: Flavour) -> Flavour:
    flavour.upstream.requests.clear()
    flavour.upstream.tools = {"get_weather": {"city": "Paris"}}
    return flavour


def sees(surface: str, f: Flavour, body: dict[str, Any]) -> None:
    reader = {"chat": servers.chat, "messages": servers.messages, "responses": servers.responses}[surface]
    seen = reader(f.server, body)  # raises Refused for a request the server refuses
    assert any(TOOL.reasoning in s for s in seen), (seen, body)


def test_claude_code(claude: Path, tmp_path: Path, fresh: Flavour) -> None:
    fresh.upstream.tools["Read"] = {"file_path": str(HERE / "scripted.py"), "limit": 3}
    events = ClaudeCode(claude, fresh.proxy.base, tmp_path, model=fresh.model).run("Show me scripted.py")
    thinking, _, texts, _ = shown(events)  # (a Qwen3 model's reasoning ends with the newline it writes)
    assert ([t.strip() for t in thinking], texts) == ([TOOL.reasoning, FINAL.reasoning], [TOOL.answer, FINAL.answer])
    second = next(b for b in fresh.upstream.posts("/messages") if "tool_result" in json.dumps(b["messages"]))
    sees("messages", fresh, second)


def test_codex(codex: Path, tmp_path: Path, fresh: Flavour) -> None:
    fresh.upstream.tools["exec_command"] = {"cmd": "echo gateway"}
    events = Codex(codex, fresh.proxy.base, tmp_path, model=fresh.model).run("Run echo gateway")
    assert [i["text"] for i in items(events, "agent_message")] == [TOOL.answer, FINAL.answer]
    sees("responses", fresh, fresh.second("/responses"))


@pytest.mark.parametrize("provider", ["chat", "anthropic"])
@pytest.mark.parametrize("mode", ["generate", "stream"])
def test_ai_sdk(provider: str, mode: str, node_modules: Path, fresh: Flavour) -> None:
    shown_steps = aisdk(node_modules, provider, fresh.proxy.base, mode, tools=True, model=fresh.model)
    assert [s["reasoningText"].strip() for s in shown_steps["steps"]] == [TOOL.reasoning, FINAL.reasoning]
    surface, suffix = ("chat", "/chat/completions") if provider == "chat" else ("messages", "/messages")
    sees(surface, fresh, fresh.second(suffix))


@pytest.mark.parametrize(
    ("client", "mode"),
    [
        ("ChatAnthropic", "invoke"),
        ("ChatAnthropic", "stream"),
        ("ChatOpenAI(responses)", "invoke"),
        ("ChatOpenAI(responses)", "stream"),
    ],
)
def test_langchain(client: str, mode: str, fresh: Flavour) -> None:
    responses = client == "ChatOpenAI(responses)"
    model = make(client, fresh.proxy.base, fresh.model).bind_tools([weather()])
    from langchain_core.messages import HumanMessage, ToolMessage  # installed with the client, checked by make()

    question = [HumanMessage("What is the weather in Paris?")]
    first = ask(model, mode, question)
    ask(model, mode, [*question, first, ToolMessage("sunny", tool_call_id=first.tool_calls[0]["id"])])
    surface, suffix = ("responses", "/responses") if responses else ("messages", "/messages")
    sees(surface, fresh, fresh.second(suffix))


@pytest.mark.parametrize("route", ["openai/", "hosted_vllm/", "anthropic/"])
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_litellm(route: str, stream: bool, fresh: Flavour) -> None:
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    first, _ = complete(route, fresh.proxy.base, question, stream, model=fresh.model, tools=[WEATHER])
    call_id = first.tool_calls[0].id
    turn = [*question, first.model_dump(), {"role": "tool", "tool_call_id": call_id, "content": "sunny"}]
    complete(route, fresh.proxy.base, turn, stream, model=fresh.model, tools=[WEATHER])
    surface, suffix = ("messages", "/messages") if route == "anthropic/" else ("chat", "/chat/completions")
    sees(surface, fresh, fresh.second(suffix))


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_agents_js(stream: bool, node_modules: Path, fresh: Flavour) -> None:
    """The JavaScript Agents SDK sends the reasoning back as the assistant message's ``reasoning``."""
    shown = run_js(node_modules, fresh.proxy.base, fresh.model, stream, tools=True)
    reasoning = [r.strip() for r in shown["reasoning"]]  # (a Qwen3 model's reasoning ends with its newline)
    assert (shown["output"], reasoning) == (FINAL.answer, [TOOL.reasoning, FINAL.reasoning])
    sees("chat", fresh, fresh.second("/chat/completions"))


@pytest.fixture(scope="module")
def redacted() -> Iterator[Flavour]:
    f = Flavour("sglang", "redacted")  # SGLang refuses a redacted_thinking block in history with a 400
    yield f
    f.stop()


def test_claude_code_with_redacted_thinking_before_sglang(claude: Path, tmp_path: Path, redacted: Flavour) -> None:
    redacted.upstream.requests.clear()
    redacted.upstream.tools = {"Read": {"file_path": str(HERE / "scripted.py"), "limit": 3}}
    ClaudeCode(claude, redacted.proxy.base, tmp_path, model=redacted.model).run("Show me scripted.py")
    second = next(b for b in redacted.upstream.posts("/messages") if "tool_result" in json.dumps(b["messages"]))
    sees("messages", redacted, second)


# -- clients that send no reasoning back: the reasoning record gives it back --------------------------


@pytest.mark.parametrize("client", ["ChatOpenAI", "ChatDeepSeek"])
@pytest.mark.parametrize("mode", ["invoke", "stream"])
def test_langchain_chat_clients_that_drop_the_reasoning(client: str, mode: str, fresh: Flavour) -> None:
    model = make(client, fresh.proxy.base, fresh.model).bind_tools([weather()])
    from langchain_core.messages import HumanMessage, ToolMessage  # installed with the client, checked by make()

    question = [HumanMessage("What is the weather in Paris?")]
    first = ask(model, mode, question)
    ask(model, mode, [*question, first, ToolMessage("sunny", tool_call_id=first.tool_calls[0]["id"])])
    second = fresh.second("/chat/completions")
    sees("chat", fresh, second)  # LangChain sent content and tool calls only: the record gave the rest


@pytest.mark.parametrize("store", [None, False], ids=["store", "no-store"])
@pytest.mark.parametrize("mode", ["generate", "stream"])
def test_ai_sdk_responses(store: bool | None, mode: str, node_modules: Path, fresh: Flavour) -> None:
    """With its default ``store`` the AI SDK sends only a reference to the gateway's reasoning item;
    with ``store: false``, nothing of it."""
    shown_steps = aisdk(node_modules, "responses", fresh.proxy.base, mode, tools=True, model=fresh.model, store=store)
    assert [s["reasoningText"].strip() for s in shown_steps["steps"]] == [TOOL.reasoning, FINAL.reasoning]
    second = fresh.second("/responses")
    assert not [i for i in second["input"] if i.get("type") == "item_reference" and i["id"].startswith("rs_")]
    sees("responses", fresh, second)
