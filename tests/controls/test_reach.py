"""Does a client's reasoning intent reach the model's chat template? Each client form x each server x
each family x each surface the form belongs on, sent (a) straight to the emulated server and (b)
through the gateway (the middleware on a forwarding app in front of the same emulator).

For every row: through the gateway the template sees the intent or its documented nearest (so never
a 400: a value the server would refuse is the gateway's to rewrite), and a request that says nothing
reaches the server byte for byte. ``EXPECTED`` is the one table of what each row should come to;
``python -m tests.controls.test_reach --write`` regenerates the table of ``docs/controls.md`` from it
and from a run (a test holds the doc to it)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig
from gateway_mw.controls import ModelInfo
from gateway_mw.middleware import THINKEXTRACT_MODEL_INFO, setup

from .servers import PATHS, SURFACES, Emulator, Family, Model, Refused, Server, TemplateView

Outcome = Literal["possible", "nearest", "impossible"]
BUDGET = 1024

# -- the client forms (spec §1) -----------------------------------------------------------------------
# name -> (the surfaces it belongs on, the top-level fields it adds, the intent it says)
FORMS: dict[str, tuple[tuple[str, ...], dict[str, Any], str]] = {
    "reasoning_effort none": (("chat",), {"reasoning_effort": "none"}, "off"),
    "reasoning_effort low": (("chat",), {"reasoning_effort": "low"}, "effort:low"),
    "reasoning_effort high": (("chat",), {"reasoning_effort": "high"}, "effort:high"),
    "reasoning_effort xhigh": (("chat",), {"reasoning_effort": "xhigh"}, "effort:xhigh"),
    "reasoning {enabled:false}": (("chat",), {"reasoning": {"enabled": False}}, "off"),
    "reasoning {effort:high}": (("chat",), {"reasoning": {"effort": "high"}}, "effort:high"),
    "reasoning {max_tokens}": (("chat",), {"reasoning": {"max_tokens": BUDGET}}, "budget"),
    "reasoning.effort none": (("responses",), {"reasoning": {"effort": "none"}}, "off"),
    "reasoning.effort high": (("responses",), {"reasoning": {"effort": "high"}}, "effort:high"),
    "thinking disabled": (("messages",), {"thinking": {"type": "disabled"}}, "off"),
    "thinking enabled+budget": (("messages",), {"thinking": {"type": "enabled", "budget_tokens": BUDGET}}, "budget"),
    "adaptive+effort high": (
        ("messages",),
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}},
        "effort:high",
    ),
    "think false": (("api_chat", "api_generate"), {"think": False}, "off"),
    "think true": (("api_chat", "api_generate"), {"think": True}, "on"),
    'think "high"': (("api_chat", "api_generate"), {"think": "high"}, "effort:high"),
    "nothing said": (("chat", "messages", "responses", "api_chat", "api_generate"), {}, "default"),
}

HI = [{"role": "user", "content": "Hi"}]
BASE: dict[str, dict[str, Any]] = {
    "chat": {"messages": HI},
    "messages": {"max_tokens": 8192, "messages": HI},
    "responses": {"input": "Hi"},
    "api_chat": {"messages": HI, "stream": False},
    "api_generate": {"prompt": "Hi", "stream": False},
}

# -- the servers and the models ------------------------------------------------------------------------
SERVERS: dict[str, Emulator] = {  # a name -> the server (without models), its version where it matters
    "vllm": Emulator("vllm", ()),
    "sglang": Emulator("sglang", ()),
    "llamacpp": Emulator("llamacpp", ()),
    "llamacpp (old build)": Emulator("llamacpp", (), legacy=True),  # reads only chat_template_kwargs
    "ollama": Emulator("ollama", ()),
    "ollama 0.32.10": Emulator("ollama", (), (0, 32, 10)),  # /v1 before minimal and xhigh
    "ollama 0.17.0": Emulator("ollama", (), (0, 17, 0)),  # before levels on non-harmony models, `max`, xhigh
}
FAMILIES: tuple[Family, ...] = ("qwen3", "deepseek-v3.1", "glm-4.6", "gpt-oss", "deepseek-r1", "none")
NAMES: dict[Family, tuple[str, str]] = {  # (as vLLM/SGLang/llama.cpp serve it, as Ollama does)
    "qwen3": ("Qwen/Qwen3-8B", "qwen3:8b"),
    "deepseek-v3.1": ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3.1:671b"),
    "glm-4.6": ("zai-org/GLM-4.6", "glm-4.6:355b"),
    "gpt-oss": ("openai/gpt-oss-20b", "gpt-oss:20b"),
    "deepseek-r1": ("deepseek-ai/DeepSeek-R1", "deepseek-r1:8b"),
    "none": ("Qwen/Qwen3-4B-Instruct-2507", "qwen3:4b-instruct-2507"),
}


def model(server: Server, family: Family) -> Model:
    return Model(NAMES[family][server == "ollama"], family)


# -- what each row should come to -----------------------------------------------------------------------
OFF = TemplateView(False)
ON = TemplateView(True)

# (intent, family, where) -> (what the template sees, outcome). ``where`` is ``*``, a server, or
# server/surface; the most specific row wins. ``possible``: the intent itself; ``nearest``: the closest
# the server and the family allow (gpt-oss cannot be off: low; an effort on a family whose template
# has no effort: thinking on; a budget where no server enforces one: thinking on; a budget on gpt-oss:
# its effort bucket, N < 2048 low); ``impossible``: nothing the gateway can write changes what the
# template sees, and it sees what it would anyway.
EXPECTED: dict[tuple[str, str, str], tuple[TemplateView, Outcome]] = {
    # Qwen3 hybrid and GLM-4.6 read enable_thinking
    ("off", "qwen3", "*"): (OFF, "possible"),
    ("off", "qwen3", "vllm/responses"): (ON, "impossible"),  # no chat_template_kwargs on that request
    ("on", "qwen3", "*"): (ON, "possible"),
    ("effort", "qwen3", "*"): (ON, "nearest"),
    ("budget", "qwen3", "*"): (ON, "nearest"),
    ("budget", "qwen3", "vllm/chat"): (TemplateView(True, None, BUDGET), "possible"),
    ("budget", "qwen3", "llamacpp"): (TemplateView(True, None, BUDGET), "possible"),
    ("default", "qwen3", "*"): (ON, "possible"),
    ("off", "glm-4.6", "*"): (OFF, "possible"),
    ("off", "glm-4.6", "vllm/responses"): (ON, "impossible"),
    ("on", "glm-4.6", "*"): (ON, "possible"),
    ("effort", "glm-4.6", "*"): (ON, "nearest"),
    ("budget", "glm-4.6", "*"): (ON, "nearest"),
    ("budget", "glm-4.6", "vllm/chat"): (TemplateView(True, None, BUDGET), "possible"),
    ("budget", "glm-4.6", "llamacpp"): (TemplateView(True, None, BUDGET), "possible"),
    ("default", "glm-4.6", "*"): (ON, "possible"),
    # a llama.cpp build that reads only chat_template_kwargs, and whose /v1/messages drops them
    ("off", "qwen3", "llamacpp (old build)/messages"): (ON, "impossible"),
    ("off", "glm-4.6", "llamacpp (old build)/messages"): (ON, "impossible"),
    ("off", "deepseek-v3.1", "llamacpp (old build)/messages"): (ON, "impossible"),
    ("off", "gpt-oss", "llamacpp (old build)/messages"): (TemplateView(True, "medium"), "impossible"),
    ("effort", "gpt-oss", "llamacpp (old build)/messages"): (TemplateView(True, "medium"), "impossible"),
    # Ollama's /v1/messages before 0.23.4 reads no output_config: gpt-oss keeps its own level there
    ("off", "gpt-oss", "ollama 0.17.0/messages"): (TemplateView(True, "medium"), "impossible"),
    ("effort", "gpt-oss", "ollama 0.17.0/messages"): (TemplateView(True, "medium"), "impossible"),
    ("budget", "gpt-oss", "ollama 0.17.0/messages"): (TemplateView(True, "medium"), "impossible"),
    # DeepSeek V3.1 reads `thinking` (off by default in its own template)
    ("off", "deepseek-v3.1", "*"): (OFF, "possible"),
    ("on", "deepseek-v3.1", "*"): (ON, "possible"),
    ("effort", "deepseek-v3.1", "*"): (ON, "nearest"),
    ("effort", "deepseek-v3.1", "vllm/responses"): (OFF, "impossible"),  # only reasoning_effort reaches it
    ("budget", "deepseek-v3.1", "*"): (ON, "nearest"),
    ("budget", "deepseek-v3.1", "vllm/chat"): (TemplateView(True, None, BUDGET), "possible"),
    ("budget", "deepseek-v3.1", "llamacpp"): (TemplateView(True, None, BUDGET), "possible"),
    ("default", "deepseek-v3.1", "*"): (OFF, "possible"),
    ("default", "deepseek-v3.1", "llamacpp"): (ON, "possible"),  # its copy falls back to enable_thinking
    ("default", "deepseek-v3.1", "ollama"): (ON, "possible"),  # a capable model thinks by default
    # gpt-oss: harmony `Reasoning: low|medium|high`, cannot be off
    ("off", "gpt-oss", "*"): (TemplateView(True, "low"), "nearest"),
    ("on", "gpt-oss", "*"): (TemplateView(True, "medium"), "possible"),
    ("effort:low", "gpt-oss", "*"): (TemplateView(True, "low"), "possible"),
    ("effort:high", "gpt-oss", "*"): (TemplateView(True, "high"), "possible"),
    ("effort:xhigh", "gpt-oss", "*"): (TemplateView(True, "high"), "nearest"),
    ("budget", "gpt-oss", "*"): (TemplateView(True, "low"), "nearest"),
    # llama.cpp enforces the budget; the effort is the budget's bucket, as where none is enforced
    ("budget", "gpt-oss", "llamacpp"): (TemplateView(True, "low", BUDGET), "possible"),
    ("budget", "gpt-oss", "llamacpp (old build)/messages"): (TemplateView(True, "medium", BUDGET), "possible"),
    ("default", "gpt-oss", "*"): (TemplateView(True, "medium"), "possible"),
    # DeepSeek-R1 always thinks: off is a server budget of 0 where there is one
    ("off", "deepseek-r1", "*"): (ON, "impossible"),
    ("off", "deepseek-r1", "vllm/chat"): (TemplateView(True, None, 0), "nearest"),
    ("off", "deepseek-r1", "llamacpp"): (TemplateView(True, None, 0), "nearest"),
    ("on", "deepseek-r1", "*"): (ON, "possible"),
    ("effort", "deepseek-r1", "*"): (ON, "nearest"),
    ("budget", "deepseek-r1", "*"): (ON, "nearest"),
    ("budget", "deepseek-r1", "vllm/chat"): (TemplateView(True, None, BUDGET), "possible"),
    ("budget", "deepseek-r1", "llamacpp"): (TemplateView(True, None, BUDGET), "possible"),
    ("default", "deepseek-r1", "*"): (ON, "possible"),
    # a model that cannot think (Qwen3-*-Instruct-2507): off is what it does; nothing turns it on
    ("off", "none", "*"): (OFF, "possible"),
    ("on", "none", "*"): (OFF, "impossible"),
    ("effort", "none", "*"): (OFF, "impossible"),
    ("budget", "none", "*"): (OFF, "impossible"),
    ("default", "none", "*"): (OFF, "possible"),
}


def expectation(intent: str, family: Family, name: str, surface: str) -> tuple[str, Family, str]:
    """The key of ``EXPECTED`` that holds for a row: the most specific place, then the exact intent."""
    server = SERVERS[name].server
    for where in dict.fromkeys((f"{name}/{surface}", name, f"{server}/{surface}", server, "*")):
        for key in (intent, intent.split(":")[0]):
            if (key, family, where) in EXPECTED:
                return key, family, where
    raise KeyError((intent, family, name, surface))


@dataclass(frozen=True)
class Row:
    server: str  # a key of SERVERS
    surface: str
    form: str
    family: Family

    @property
    def intent(self) -> str:
        return FORMS[self.form][2]

    def expected(self) -> tuple[TemplateView, Outcome]:
        return EXPECTED[expectation(self.intent, self.family, self.server, self.surface)]

    def body(self) -> bytes:
        fields = FORMS[self.form][1]
        name = model(SERVERS[self.server].server, self.family).name
        return json.dumps({"model": name, **BASE[self.surface], **fields}).encode()

    def __str__(self) -> str:
        return f"{self.server}/{self.surface}/{self.form}/{self.family}"


ROWS = [
    Row(name, surface, form, family)
    for name, emulator in SERVERS.items()
    for surface in SURFACES[emulator.server]
    for form, (surfaces, _, _) in FORMS.items()
    if surface in surfaces
    for family in FAMILIES
]

Seen = TemplateView | int  # what the template saw, or the status of a refusal


@dataclass(frozen=True)
class Result:
    straight: Seen
    gateway: Seen
    sent: bytes
    """What the gateway forwarded."""


# -- running a row ------------------------------------------------------------------------------------------


CLIENT = web.AppKey("CLIENT", aiohttp.ClientSession)


def forwarding_app(upstream: str, server: Server) -> web.Application:
    """The middleware on an app that forwards each request to ``upstream``, as a gateway does."""
    app = web.Application()
    setup(app, ThinkExtractConfig(upstream_server=server, messages_policy="unsigned"))  # every surface
    if server == "ollama":
        app[THINKEXTRACT_MODEL_INFO] = model_info(upstream)

    async def session(app: web.Application) -> AsyncIterator[None]:
        async with aiohttp.ClientSession() as client:
            app[CLIENT] = client
            yield

    async def forward(request: web.Request) -> web.Response:
        body = await request.read()
        headers = {"Content-Type": "application/json"}
        async with request.app[CLIENT].post(upstream + request.path, data=body, headers=headers) as resp:
            return web.Response(body=await resp.read(), status=resp.status, content_type=resp.content_type)

    app.cleanup_ctx.append(session)
    for path in PATHS.values():
        app.router.add_post(path, forward)
    return app


def model_info(upstream: str) -> Any:
    """What Ollama says of a model: ``/api/show``'s capabilities and ``/api/version``."""

    async def info(name: str) -> ModelInfo:
        async with aiohttp.ClientSession() as client:
            async with client.post(upstream + "/api/show", json={"model": name}) as resp:
                capabilities = (await resp.json())["capabilities"]
            async with client.get(upstream + "/api/version") as resp:
                version = tuple(int(part) for part in (await resp.json())["version"].split("."))
        return ModelInfo(thinking="thinking" in capabilities, version=version)

    return info


@asynccontextmanager
async def served(name: str) -> AsyncIterator[tuple[Emulator, str, str]]:
    """The emulated server ``name`` and a gateway in front of it: (emulator, its URL, the gateway's URL)."""
    server = SERVERS[name].server
    emulator = replace(SERVERS[name], models=tuple(model(server, family) for family in FAMILIES), seen=[], bodies=[])
    upstream = TestServer(emulator.app())
    await upstream.start_server()
    gateway = TestServer(forwarding_app(str(upstream.make_url("")).rstrip("/"), server))
    await gateway.start_server()
    try:
        yield emulator, str(upstream.make_url("")).rstrip("/"), str(gateway.make_url("")).rstrip("/")
    finally:
        await gateway.close()
        await upstream.close()


async def post(client: aiohttp.ClientSession, emulator: Emulator, url: str, body: bytes) -> tuple[Seen, bytes]:
    """(what the template saw, the body the server got) of one request."""
    count = len(emulator.seen)
    async with client.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
        await resp.read()
        assert len(emulator.seen) == count + 1, f"the server got no request ({resp.status})"
        seen = emulator.seen[-1]
        if isinstance(seen, Refused):
            assert resp.status == 400
            return 400, emulator.bodies[-1]
        assert resp.status == 200, resp.status
        return seen, emulator.bodies[-1]


async def run(rows: Iterable[Row]) -> dict[Row, Result]:
    """Each row sent straight and through the gateway, one emulator and one gateway per server."""
    results: dict[Row, Result] = {}
    by_server: dict[str, list[Row]] = {}
    for row in rows:
        by_server.setdefault(row.server, []).append(row)
    async with aiohttp.ClientSession() as client:
        for name, server_rows in by_server.items():
            async with served(name) as (emulator, upstream, gateway):
                for row in server_rows:
                    path = PATHS[row.surface]
                    straight, _ = await post(client, emulator, upstream + path, row.body())
                    through, sent = await post(client, emulator, gateway + path, row.body())
                    results[row] = Result(straight, through, sent)
    return results


@pytest.mark.parametrize("row", ROWS, ids=str)
async def test_the_intent_reaches_the_template_through_the_gateway(row: Row) -> None:
    (result,) = (await run([row])).values()
    view, _ = row.expected()
    if row.intent == "default":
        assert result.sent == row.body()  # nothing said: the body reaches the server byte for byte
    if result.gateway == 400:
        assert result.straight == 400, f"the gateway caused a 400; it sent {result.sent.decode()}"
    assert result.gateway == view, f"it sent {result.sent.decode()}"


def test_every_expectation_is_some_row_s() -> None:
    used = {expectation(row.intent, row.family, row.server, row.surface) for row in ROWS}
    assert set(EXPECTED) - used == set()


# -- the table of docs/controls.md ----------------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "controls.md"
START, END = "<!-- reach:start -->", "<!-- reach:end -->"
SHORT: dict[Outcome, str] = {"possible": "P", "nearest": "N", "impossible": "I"}


def shown(seen: Seen) -> str:
    if isinstance(seen, int):
        return str(seen)
    words = ["on" if seen.thinking else "off"]
    if seen.effort is not None:
        words = [seen.effort]
    if seen.budget is not None:
        words.append(f"budget {seen.budget}")
    return " ".join(words)


def table(results: dict[Row, Result]) -> str:
    """The markdown of the generated part of docs/controls.md."""
    lines = [
        "| Server | Surface | Client form | Intent | " + " | ".join(FAMILIES) + " |",
        "|---" * (4 + len(FAMILIES)) + "|",
    ]
    keys = dict.fromkeys((row.server, row.surface, row.form) for row in ROWS)
    for server, surface, form in keys:
        cells = []
        for family in FAMILIES:
            row = Row(server, surface, form, family)
            view, outcome = row.expected()
            result = results[row]
            cells.append(f"{shown(view)} ({SHORT[outcome]}): {shown(result.straight)} → {shown(result.gateway)}")
        intent = FORMS[form][2].replace("effort:", "effort ")
        lines.append(f"| {server} | {surface} | `{form}` | {intent} | " + " | ".join(cells) + " |")
    possible = [row for row in ROWS if row.expected()[1] == "possible"]
    lines += ["", counts("Rows marked possible: the intent reaches the template", possible, results)]
    lines += ["", counts("Every row: the intent or its nearest reaches the template", ROWS, results), ""]
    lines += ["### Where nothing can be done", ""]
    groups: dict[tuple[Family, str, str], dict[str, None]] = {}
    for row in ROWS:
        view, outcome = row.expected()
        if outcome == "impossible":
            kind = row.intent.split(":")[0]
            groups.setdefault((row.family, kind, shown(view)), {})[f"{row.server} `{row.surface}`"] = None
    lines += [
        f"* {family}, {kind}: {', '.join(places)} (the template sees {view})"
        for (family, kind, view), places in groups.items()
    ]
    return "\n".join(lines)


def counts(title: str, rows: list[Row], results: dict[Row, Result]) -> str:
    straight = sum(results[row].straight == row.expected()[0] for row in rows)
    gateway = sum(results[row].gateway == row.expected()[0] for row in rows)
    return f"{title}: straight {straight}/{len(rows)}, through the gateway {gateway}/{len(rows)}."


def documented() -> str:
    text = DOC.read_text()
    return text[text.index(START) + len(START) : text.index(END)].strip()


def test_the_doc_has_the_generated_table() -> None:
    assert documented() == table(asyncio.run(run(ROWS)))


if __name__ == "__main__":  # python -m tests.controls.test_reach [--write]
    generated = table(asyncio.run(run(ROWS)))
    if "--write" in sys.argv:
        text = DOC.read_text()
        DOC.write_text(text[: text.index(START) + len(START)] + "\n" + generated + "\n" + text[text.index(END) :])
    else:
        print(generated)
