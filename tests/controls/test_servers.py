"""The emulated servers keep their sources' rules, over HTTP on loopback: each value a server refuses
is a 400, each field it ignores changes nothing the template sees, and its defaults hold."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from .servers import PATHS, Emulator, Model, Refused, Server, TemplateView

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

QWEN3 = Model("Qwen3-8B", "qwen3")
V31 = Model("DeepSeek-V3.1", "deepseek-v3.1")
GLM = Model("GLM-4.6", "glm-4.6")
OSS = Model("gpt-oss-20b", "gpt-oss")
R1 = Model("DeepSeek-R1", "deepseek-r1")
INSTRUCT = Model("Qwen3-4B-Instruct-2507", "none")
MODELS = (QWEN3, V31, GLM, OSS, R1, INSTRUCT)
HI = [{"role": "user", "content": "Hi"}]
BASE: dict[str, dict[str, Any]] = {
    "chat": {"messages": HI},
    "messages": {"max_tokens": 8192, "messages": HI},
    "responses": {"input": "Hi"},
    "api_chat": {"messages": HI, "stream": False},
    "api_generate": {"prompt": "Hi", "stream": False},
}


async def send(
    aiohttp_server: ServerFactory, server: Server, surface: str, model: Model, fields: dict[str, Any],
    version: tuple[int, ...] = (0, 33, 0),
) -> TemplateView | int:  # fmt: skip
    """What ``model``'s template saw of the request, or the status of a refusal."""
    emulator = Emulator(server, MODELS, version)
    served = await aiohttp_server(emulator.app())
    body = {"model": model.name, **BASE[surface], **fields}
    async with aiohttp.ClientSession() as session, session.post(served.make_url(PATHS[surface]), json=body) as resp:
        await resp.read()
        (seen,) = emulator.seen
        if isinstance(seen, Refused):
            assert resp.status == 400
            return resp.status
        assert resp.status == 200
        return seen


REFUSED = [
    # vLLM: Literal efforts (chat_completion/protocol.py, responses' openai Reasoning, anthropic output_config)
    ("vllm", "chat", QWEN3, {"reasoning_effort": "ultra"}),
    ("vllm", "chat", QWEN3, {"reasoning_effort": True}),
    ("vllm", "chat", QWEN3, {"thinking_token_budget": "100"}),
    ("vllm", "chat", QWEN3, {"chat_template_kwargs": "enable_thinking=false"}),
    ("vllm", "responses", QWEN3, {"reasoning": {"effort": "max"}}),
    ("vllm", "messages", QWEN3, {"output_config": {"effort": "minimal"}}),
    # vLLM gpt-oss: the harmony map has low/medium/high only
    ("vllm", "chat", OSS, {"reasoning_effort": "none"}),
    ("vllm", "chat", OSS, {"reasoning_effort": "xhigh"}),
    ("vllm", "responses", OSS, {"reasoning": {"effort": "minimal"}}),
    # SGLang: a boolean effort, a word outside the Literal, a float out of range
    ("sglang", "chat", QWEN3, {"reasoning_effort": False}),
    ("sglang", "chat", QWEN3, {"reasoning_effort": "ultra"}),
    ("sglang", "chat", QWEN3, {"reasoning_effort": 1.5}),
    ("sglang", "chat", QWEN3, {"reasoning": {"effort": "extreme"}}),
    ("sglang", "messages", QWEN3, {"thinking": {"type": "on"}}),
    ("sglang", "chat", OSS, {"chat_template_kwargs": {"reasoning_effort": "none"}}),  # harmony has no none
    # llama.cpp: a string enable_thinking
    ("llamacpp", "chat", QWEN3, {"chat_template_kwargs": {"enable_thinking": "false"}}),
    ("llamacpp", "messages", QWEN3, {"chat_template_kwargs": {"enable_thinking": "false"}}),
    # Ollama: think true or a level to a model that cannot think; an unknown think word
    ("ollama", "api_chat", INSTRUCT, {"think": True}),
    ("ollama", "api_generate", INSTRUCT, {"think": "high"}),
    ("ollama", "chat", INSTRUCT, {"reasoning_effort": "high"}),
    ("ollama", "api_chat", QWEN3, {"think": "ultra"}),
    ("ollama", "api_chat", QWEN3, {"think": 1}),
    ("ollama", "chat", QWEN3, {"reasoning_effort": "extreme"}),
    ("ollama", "chat", QWEN3, {"reasoning_effort": False}),
]


@pytest.mark.parametrize(("server", "surface", "model", "fields"), REFUSED)
async def test_the_server_refuses_what_its_source_refuses(
    aiohttp_server: ServerFactory, server: Server, surface: str, model: Model, fields: dict[str, Any]
) -> None:
    assert await send(aiohttp_server, server, surface, model, fields) == 400


BY_VERSION = [
    # before 0.32.11 Ollama's /v1 knows high/medium/low/max/none only; `max` from 0.22.0
    ((0, 32, 10), "chat", QWEN3, {"reasoning_effort": "minimal"}, 400),
    ((0, 32, 11), "chat", QWEN3, {"reasoning_effort": "minimal"}, TemplateView(True)),
    ((0, 32, 10), "chat", QWEN3, {"reasoning_effort": "xhigh"}, 400),
    ((0, 32, 11), "chat", OSS, {"reasoning_effort": "xhigh"}, TemplateView(True, "high")),
    ((0, 21, 0), "api_chat", QWEN3, {"think": "max"}, 400),
    ((0, 22, 0), "api_chat", QWEN3, {"think": "max"}, TemplateView(True)),
    # a level to a model that is not harmony was a 400 before 0.17.7
    ((0, 17, 0), "api_chat", QWEN3, {"think": "medium"}, 400),
    ((0, 17, 0), "chat", QWEN3, {"reasoning_effort": "medium"}, 400),
    ((0, 17, 0), "api_chat", OSS, {"think": "low"}, TemplateView(True, "low")),
    ((0, 17, 7), "api_chat", QWEN3, {"think": "medium"}, TemplateView(True)),
    # /v1/messages reads output_config from 0.23.4
    ((0, 23, 3), "messages", OSS, {"output_config": {"effort": "low"}}, TemplateView(True, "medium")),
    ((0, 23, 4), "messages", OSS, {"output_config": {"effort": "low"}}, TemplateView(True, "low")),
    ((0, 17, 0), "messages", QWEN3, {"output_config": {"effort": "high"}}, TemplateView(True)),
]


@pytest.mark.parametrize(("version", "surface", "model", "fields", "seen"), BY_VERSION)
async def test_ollama_accepts_what_its_version_accepts(
    aiohttp_server: ServerFactory,
    version: tuple[int, ...],
    surface: str,
    model: Model,
    fields: dict[str, Any],
    seen: TemplateView | int,
) -> None:
    assert await send(aiohttp_server, "ollama", surface, model, fields, version) == seen


OFF = TemplateView(False)
ON = TemplateView(True)
READ = [
    # defaults: what the template sees of a request that says nothing
    ("vllm", "chat", QWEN3, {}, ON),
    ("vllm", "chat", V31, {}, OFF),  # DeepSeek V3.1's template: thinking off unless `thinking`
    ("vllm", "chat", OSS, {}, TemplateView(True, "medium")),
    ("sglang", "chat", GLM, {}, ON),
    ("llamacpp", "chat", V31, {}, ON),  # llama.cpp's copy falls back to the server's enable_thinking
    ("ollama", "api_chat", QWEN3, {}, ON),  # a thinking-capable model thinks by default
    ("ollama", "api_chat", V31, {}, ON),
    ("ollama", "api_generate", INSTRUCT, {}, OFF),
    ("ollama", "api_chat", R1, {"think": False}, ON),  # always thinks
    # vLLM derives enable_thinking from reasoning_effort -- and only that key
    ("vllm", "chat", QWEN3, {"reasoning_effort": "none"}, OFF),
    ("vllm", "chat", V31, {"reasoning_effort": "high"}, OFF),
    ("vllm", "chat", V31, {"chat_template_kwargs": {"thinking": True}}, ON),
    ("vllm", "chat", QWEN3, {"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": True}}, ON),
    ("vllm", "chat", R1, {"thinking_token_budget": 0}, TemplateView(True, None, 0)),
    ("vllm", "chat", OSS, {"reasoning_effort": "high"}, TemplateView(True, "high")),
    # ignored fields: vLLM /v1/messages has no `thinking`; /v1/responses no chat_template_kwargs nor budget
    ("vllm", "messages", QWEN3, {"thinking": {"type": "disabled"}}, ON),
    ("vllm", "messages", QWEN3, {"chat_template_kwargs": {"enable_thinking": False}}, OFF),
    ("vllm", "messages", QWEN3, {"output_config": {"effort": "low"}}, ON),
    ("vllm", "messages", OSS, {"output_config": {"effort": "low"}}, TemplateView(True, "low")),
    ("vllm", "responses", QWEN3, {"reasoning": {"effort": "none"}}, ON),
    ("vllm", "responses", QWEN3, {"chat_template_kwargs": {"enable_thinking": False}}, ON),
    ("vllm", "chat", QWEN3, {"reasoning": {"enabled": False}}, ON),  # not a vLLM field
    # SGLang: an effort sets both switches; messages' budget_tokens is not enforced
    ("sglang", "chat", V31, {"reasoning_effort": "none"}, OFF),
    ("sglang", "chat", V31, {"reasoning_effort": "high"}, ON),
    ("sglang", "chat", V31, {"reasoning_effort": 0.5}, ON),
    ("sglang", "chat", QWEN3, {"reasoning": {"effort": "none"}}, OFF),
    ("sglang", "chat", V31, {"reasoning": {"enabled": True}}, ON),
    ("sglang", "chat", QWEN3, {"reasoning": {"enabled": False}}, ON),  # says nothing
    ("sglang", "messages", QWEN3, {"thinking": {"type": "disabled"}}, OFF),
    ("sglang", "messages", V31, {"thinking": {"type": "enabled", "budget_tokens": 2048}}, ON),
    ("sglang", "messages", V31, {"thinking": {"type": "adaptive"}}, ON),
    ("sglang", "messages", QWEN3, {"chat_template_kwargs": {"enable_thinking": False}}, ON),
    ("sglang", "messages", OSS, {"output_config": {"effort": "xhigh"}}, TemplateView(True, "max")),
    ("sglang", "chat", OSS, {"reasoning_effort": "low"}, TemplateView(True, "low")),  # its Jinja template reads it
    ("sglang", "chat", OSS, {"reasoning_effort": "none"}, TemplateView(True, "none")),  # rendered as it is
    ("sglang", "chat", OSS, {"reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "low"}},
     TemplateView(True, "low")),  # the kwargs' own wins
    # llama.cpp: reasoning_effort none turns thinking off; /v1/messages' `disabled` maps to nothing
    ("llamacpp", "chat", QWEN3, {"reasoning_effort": "none"}, OFF),
    ("llamacpp", "chat", QWEN3, {"reasoning_effort": 3}, ON),  # not a string: read as absent
    ("llamacpp", "chat", OSS, {"reasoning_effort": "low"}, TemplateView(True, "low")),
    ("llamacpp", "chat", OSS, {"reasoning_effort": "none"}, TemplateView(True, "medium")),
    ("llamacpp", "chat", R1, {"thinking_budget_tokens": 0}, TemplateView(True, None, 0)),
    ("llamacpp", "messages", QWEN3, {"thinking": {"type": "disabled"}}, ON),
    ("llamacpp", "messages", QWEN3, {"thinking": {"type": "enabled", "budget_tokens": 512}},
     TemplateView(True, None, 512)),
    ("llamacpp", "messages", QWEN3, {"thinking": {"type": "enabled"}}, TemplateView(True, None, 10000)),
    ("llamacpp", "messages", QWEN3, {"reasoning_effort": "none"}, ON),  # dropped by the conversion
    ("llamacpp", "messages", QWEN3, {"chat_template_kwargs": {"enable_thinking": False}}, OFF),
    ("llamacpp", "responses", QWEN3, {"reasoning": {"effort": "none"}}, OFF),
    ("llamacpp", "responses", QWEN3, {"thinking_budget_tokens": 64}, TemplateView(True, None, 64)),
    # Ollama: only `think` on /api, only reasoning_effort on /v1; no budget; gpt-oss ignores the bool
    ("ollama", "api_chat", QWEN3, {"think": False}, OFF),
    ("ollama", "api_chat", QWEN3, {"reasoning_effort": "none"}, ON),
    ("ollama", "chat", QWEN3, {"think": False}, ON),
    ("ollama", "chat", QWEN3, {"reasoning_effort": "none"}, OFF),
    ("ollama", "chat", QWEN3, {"reasoning": {"enabled": False}}, ON),
    ("ollama", "chat", QWEN3, {"reasoning": {"effort": "none"}, "reasoning_effort": "high"}, OFF),
    ("ollama", "responses", QWEN3, {"reasoning": {"effort": "none"}}, OFF),
    ("ollama", "api_chat", OSS, {"think": False}, TemplateView(True, "medium")),
    ("ollama", "api_chat", OSS, {"think": "max"}, TemplateView(True, "high")),
    ("ollama", "messages", QWEN3, {"thinking": {"type": "disabled"}}, OFF),
    ("ollama", "messages", QWEN3, {"thinking": {"type": "enabled", "budget_tokens": 1024}}, ON),
    ("ollama", "messages", INSTRUCT, {"thinking": {"type": "enabled", "budget_tokens": 1024}}, OFF),  # relaxed
    ("ollama", "messages", OSS, {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"}},
     TemplateView(True, "high")),
]  # fmt: skip


@pytest.mark.parametrize(("server", "surface", "model", "fields", "seen"), READ)
async def test_the_template_sees_what_the_server_hands_it(
    aiohttp_server: ServerFactory,
    server: Server,
    surface: str,
    model: Model,
    fields: dict[str, Any],
    seen: TemplateView,
) -> None:
    assert await send(aiohttp_server, server, surface, model, fields) == seen


LEGACY = [
    # a llama.cpp build before it read reasoning_effort (server-common.cpp @006639c3)
    ("chat", QWEN3, {"reasoning_effort": "none"}, ON),
    ("chat", QWEN3, {"chat_template_kwargs": {"enable_thinking": False}}, OFF),
    ("chat", OSS, {"reasoning_effort": "low"}, TemplateView(True, "medium")),
    ("chat", OSS, {"chat_template_kwargs": {"reasoning_effort": "low"}}, TemplateView(True, "low")),
    ("messages", QWEN3, {"chat_template_kwargs": {"enable_thinking": False}}, ON),  # dropped by the conversion
    ("messages", QWEN3, {"thinking": {"type": "enabled", "budget_tokens": 512}}, TemplateView(True, None, 512)),
    ("responses", QWEN3, {"reasoning": {"effort": "none"}}, ON),  # `reasoning` unread
    ("responses", QWEN3, {"chat_template_kwargs": {"enable_thinking": False}}, OFF),  # the body is copied
]


@pytest.mark.parametrize(("surface", "model", "fields", "seen"), LEGACY)
async def test_an_old_llama_cpp_build_reads_only_the_template_kwargs(
    aiohttp_server: ServerFactory, surface: str, model: Model, fields: dict[str, Any], seen: TemplateView
) -> None:
    emulator = Emulator("llamacpp", MODELS, legacy=True)
    served = await aiohttp_server(emulator.app())
    body = {"model": model.name, **BASE[surface], **fields}
    async with aiohttp.ClientSession() as session, session.post(served.make_url(PATHS[surface]), json=body) as resp:
        assert resp.status == 200
    assert emulator.seen == [seen]


async def test_ollama_says_what_it_can_and_which_version(aiohttp_server: ServerFactory) -> None:
    served = await aiohttp_server(Emulator("ollama", MODELS, (0, 17, 0)).app())
    async with aiohttp.ClientSession() as session:
        shown = {}
        for model in (QWEN3, INSTRUCT):
            async with session.post(served.make_url("/api/show"), json={"model": model.name}) as resp:
                shown[model.name] = "thinking" in (await resp.json())["capabilities"]
        async with session.get(served.make_url("/api/version")) as resp:
            version = await resp.json()
    assert (shown, version) == ({QWEN3.name: True, INSTRUCT.name: False}, {"version": "0.17.0"})


async def test_a_surface_the_server_lacks_is_not_found(aiohttp_server: ServerFactory) -> None:
    served = await aiohttp_server(Emulator("sglang", MODELS).app())
    async with (
        aiohttp.ClientSession() as session,
        session.post(served.make_url("/api/chat"), json={"model": QWEN3.name, **BASE["api_chat"]}) as resp,
    ):
        assert resp.status == 404
