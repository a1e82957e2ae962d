"""A scripted model server that writes its reasoning inline on all three API surfaces and calls tools.

Every answer is ``<think>{reasoning}</think>{answer}`` in the surface's own wire format, streamed in small
pieces (tags cut in the middle) or as one body; on Ollama's ``/api/chat`` the reasoning is the message's
``thinking``, as Ollama sends it. A request that offers a tool the script knows gets that
tool called (after inline reasoning); a request that carries the tool's result gets the final answer.
Every request body is recorded, so a test can read exactly what a client sent back on its second turn.

The requested model name picks a style: ``qwen3*`` writes ``<think>\n…\n</think>\n\nanswer``;
on chat completions ``native-reasoning`` and ``native-reasoning_content`` send the reasoning in that
field instead of inline (as vLLM ≥ 0.16, Ollama or SGLang with a reasoning parser do), and ``sglang*``
spells every absent delta field as an explicit ``null``, as SGLang does.

An upstream that stands for a server (``owned_by``) reads the thinking switch of a Qwen3 hybrid model
where that server reads it (:func:`thinking_off`): a request that turns thinking off there gets the
answer alone, as the model writes it when its template closes the reasoning before it starts.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Turn:
    reasoning: str
    answer: str

    @property
    def text(self) -> str:
        return f"<think>{self.reasoning}</think>{self.answer}"

    def written(self, model: str) -> str:
        """What a model called ``model`` writes: Qwen3-style models put newlines around the tags."""
        if not self.reasoning:
            return self.answer
        if model.startswith("qwen3"):
            return f"<think>\n{self.reasoning}\n</think>\n\n{self.answer}"
        return self.text


def ctk(body: Mapping[str, Any]) -> Mapping[str, Any]:
    kwargs = body.get("chat_template_kwargs")
    return kwargs if isinstance(kwargs, dict) else {}


def effort(body: Mapping[str, Any]) -> Any:
    reasoning = body.get("reasoning")
    return reasoning.get("effort") if isinstance(reasoning, dict) else None


def can_think(model: str) -> bool:
    """What Ollama's ``/api/show`` says of a model: a Llama 3 cannot think; every other one it serves can."""
    return not model.startswith("llama3")


def thinking_off(server: str | None, path: str, body: Mapping[str, Any]) -> bool:
    """Whether ``server`` renders a Qwen3 hybrid's prompt with thinking off for ``body`` on ``path``: vLLM
    reads the template's ``enable_thinking`` (derived from ``reasoning_effort`` on chat when absent;
    its ``/v1/messages`` and ``/v1/responses`` have no other switch a Qwen3 template reads), llama.cpp
    reads it or ``reasoning_effort: "none"`` (its Responses endpoint copies ``reasoning.effort`` there),
    as its README says of current builds (in the build test_controls.py runs, ``none`` turns nothing off), Ollama
    reads ``think`` on ``/api/chat`` (a model that cannot think never does; ``think: true`` or a level to
    it is a 400) and the effort on ``/v1``."""
    kwargs = ctk(body)
    if server == "vllm":
        if "enable_thinking" in kwargs or not path.endswith("/chat/completions"):
            return kwargs.get("enable_thinking") is False
        return body.get("reasoning_effort") == "none"
    if server == "llamacpp":
        if "enable_thinking" in kwargs:
            return kwargs["enable_thinking"] is False
        return body.get("reasoning_effort") == "none" or (path.endswith("/responses") and effort(body) == "none")
    if server == "library":  # Ollama
        if path.startswith("/api/"):
            return body.get("think") is False or not can_think(str(body.get("model")))
        return body.get("reasoning_effort") == "none" or effort(body) == "none"
    return False


PLAIN = Turn("The user greets me, so I greet back in one short line.", "Hello from the scripted model!")
TOOL = Turn("I need the weather first, so I call the tool.", "Let me look that up.")
FINAL = Turn("The tool said sunny, so I report sunny weather.", "It is sunny in Paris.")


def pieces(text: str, size: int = 3) -> list[str]:
    """``text`` in pieces of ``size`` characters: every tag is cut somewhere."""
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]


def _tool_names(tools: Any) -> list[str]:
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if isinstance(name, str):
            names.append(name)
    return names


class AppThread:
    """An aiohttp application served on 127.0.0.1 by an event loop of its own, in a thread: what a
    client run as a subprocess, or a blocking SDK, can reach while the test waits for it."""

    def __init__(self, app: web.Application, name: str) -> None:
        self._app = app
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Serve it; its port."""
        ready = threading.Event()
        port = 0

        def run() -> None:
            nonlocal port
            loop = self._loop = asyncio.new_event_loop()
            runner = web.AppRunner(self._app, access_log=None)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            port = runner.addresses[0][1]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread.start()
        ready.wait(10)
        return port

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


@dataclass
class ScriptedUpstream:
    """Serves on 127.0.0.1 in a thread of its own; ``tools`` maps a tool name to the arguments to call it with."""

    tools: dict[str, dict[str, Any]] = field(default_factory=lambda: {"get_weather": {"city": "Paris"}})
    owned_by: str | None = None
    """What its ``GET /v1/models`` says of its models (``vllm``, ``sglang``, ``llamacpp``, ``library``
    for Ollama): the server it stands for, as the gateway tells servers apart."""
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    _server: AppThread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def posts(self, suffix: str) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith(suffix)]

    # -- what to answer ---------------------------------------------------------------------------------

    def _tool(self, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
        for name in _tool_names(body.get("tools")):
            if name in self.tools:
                return name, self.tools[name]
        return None

    def plan(self, path: str, body: Mapping[str, Any]) -> tuple[Turn, tuple[str, dict[str, Any]] | None]:
        turn, tool = self._plan(path, body)
        if thinking_off(self.owned_by, path, body):
            turn = Turn("", turn.answer)
        return turn, tool

    def _plan(self, path: str, body: Mapping[str, Any]) -> tuple[Turn, tuple[str, dict[str, Any]] | None]:
        if path.endswith(("/chat/completions", "/api/chat")):
            answered = any(isinstance(m, dict) and m.get("role") == "tool" for m in body.get("messages") or [])
        elif path.endswith("/messages"):
            answered = any(
                isinstance(m, dict)
                and isinstance(m.get("content"), list)
                and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"])
                for m in body.get("messages") or []
            )
        else:
            items = body.get("input")
            answered = isinstance(items, list) and any(
                isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")
                for i in items
            )
        if answered:
            return FINAL, None
        tool = self._tool(body)
        return (TOOL, tool) if tool else (PLAIN, None)

    # -- the three surfaces -----------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(Recorded(request.path, body))
        turn, tool = self.plan(request.path, body)
        model = str(body.get("model", "scripted"))
        if request.path == "/api/chat":
            if body.get("think") not in (None, False) and not can_think(model):
                return web.json_response({"error": f'"{model}" does not support thinking'}, status=400)
            return await self._ollama(request, model, turn, tool, body.get("stream", True) is not False)
        stream = bool(body.get("stream"))
        if request.path.endswith("/chat/completions"):
            events = _chat(model, turn, tool, stream)
        elif request.path.endswith("/messages"):
            events = _messages(model, turn, tool, stream)
        else:
            events = _responses(model, turn, tool, stream)
        if not stream:
            return web.json_response(next(iter(events))[1])
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            payload = data if isinstance(data, str) else json.dumps(data)
            await response.write(f"{head}data: {payload}\n\n".encode())
        await response.write_eof()
        return response

    async def _ollama(
        self, request: web.Request, model: str, turn: Turn, tool: tuple[str, dict[str, Any]] | None, stream: bool
    ) -> web.StreamResponse:
        lines = list(_ollama_chat(model, turn, tool, stream))
        if not stream:
            return web.json_response(lines[0])
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        for line in lines:
            await response.write(json.dumps(line).encode() + b"\n")
        await response.write_eof()
        return response

    async def ollama_version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": OLLAMA_VERSION})

    async def ollama_show(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(Recorded(request.path, body))
        capabilities = ["completion", "tools", *(["thinking"] if can_think(str(body.get("model"))) else [])]
        return web.json_response({"capabilities": capabilities})

    async def models(self, request: web.Request) -> web.Response:
        model: dict[str, Any] = {"id": "scripted", "object": "model"}
        if self.owned_by is not None:
            model["owned_by"] = self.owned_by
        return web.json_response({"object": "list", "data": [model]})

    # -- running ----------------------------------------------------------------------------------------

    def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/api/version", self.ollama_version)
        app.router.add_post("/api/show", self.ollama_show)
        app.router.add_post("/{tail:.*}", self.handle)
        self._server = AppThread(app, "scripted-upstream")
        self.port = self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()


Event = tuple[str | None, Any]
OLLAMA_VERSION = "0.33.0"


def _ollama_chat(
    model: str, turn: Turn, tool: tuple[str, dict[str, Any]] | None, stream: bool
) -> Iterator[dict[str, Any]]:
    """Ollama's ``/api/chat`` answer: one body, or one JSON line per piece and a closing ``done`` line."""
    head = {"model": model, "created_at": "2026-01-01T00:00:00Z"}
    done = {
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "load_duration": 10,
        "prompt_eval_count": 10,
        "prompt_eval_duration": 100,
        "eval_count": 20,
        "eval_duration": 500,
    }
    calls = [{"function": {"name": tool[0], "arguments": tool[1]}}] if tool else []
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": turn.answer}
        if turn.reasoning:
            message["thinking"] = turn.reasoning
        if calls:
            message["tool_calls"] = calls
        yield {**head, "message": message, **done}
        return
    for piece in pieces(turn.reasoning):
        yield {**head, "message": {"role": "assistant", "content": "", "thinking": piece}, "done": False}
    for piece in pieces(turn.answer):
        yield {**head, "message": {"role": "assistant", "content": piece}, "done": False}
    if calls:
        yield {**head, "message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": False}
    yield {**head, "message": {"role": "assistant", "content": ""}, **done}


def _chat(model: str, turn: Turn, tool: tuple[str, dict[str, Any]] | None, stream: bool) -> Iterator[Event]:
    created = int(time.time())
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": created, "model": model}
    calls = (
        [{"id": "call_1", "type": "function", "function": {"name": tool[0], "arguments": json.dumps(tool[1])}}]
        if tool
        else []
    )
    finish = "tool_calls" if tool else "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": turn.written(model)}
        if model.startswith("native-"):
            message = {"role": "assistant", "content": turn.answer, model.removeprefix("native-"): turn.reasoning}
        if calls:
            message["tool_calls"] = calls
        yield (
            None,
            {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            },
        )
        return
    yield (
        None,
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
    )
    native = model.removeprefix("native-") if model.startswith("native-") else None
    deltas: list[dict[str, Any]]
    if native:
        deltas = [{native: p} for p in pieces(turn.reasoning)] + [{"content": p} for p in pieces(turn.answer)]
    else:
        deltas = [{"content": p} for p in pieces(turn.written(model))]
    if model.startswith("sglang"):
        deltas = [{"role": None, "content": None, "reasoning_content": None, "tool_calls": None, **d} for d in deltas]
    for delta in deltas:
        yield None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    if calls:
        delta = {"tool_calls": [{"index": 0, **calls[0]}]}
        yield None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    yield None, {**base, "choices": [], "usage": usage}
    yield None, "[DONE]"


def _messages(model: str, turn: Turn, tool: tuple[str, dict[str, Any]] | None, stream: bool) -> Iterator[Event]:
    usage = {"input_tokens": 10, "output_tokens": 20}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.written(model)}]
    if tool:
        blocks.append({"type": "tool_use", "id": "toolu_1", "name": tool[0], "input": tool[1]})
    stop = "tool_use" if tool else "end_turn"
    message = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not stream:
        yield None, message
        return
    yield "message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    for piece in pieces(turn.written(model)):
        delta = {"type": "text_delta", "text": piece}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    if tool:
        start = {"type": "tool_use", "id": "toolu_1", "name": tool[0], "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": 1, "content_block": start}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(tool[1])}
        yield "content_block_delta", {"type": "content_block_delta", "index": 1, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": 1}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _responses(model: str, turn: Turn, tool: tuple[str, dict[str, Any]] | None, stream: bool) -> Iterator[Event]:
    text = turn.written(model)
    text_part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    message = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [text_part],
    }
    call = (
        {
            "id": "fc_1",
            "type": "function_call",
            "call_id": "call_1",
            "name": tool[0],
            "arguments": json.dumps(tool[1]),
            "status": "completed",
        }
        if tool
        else None
    )
    output = [message, *([call] if call else [])]
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 30,
    }
    response = {
        "id": "resp_scripted",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }
    if not stream:
        yield None, response
        return
    seq = iter(range(10_000))
    pending = {**response, "status": "in_progress", "output": [], "usage": None}

    def ev(kind: str, **fields: Any) -> Event:
        return kind, {"type": kind, **fields, "sequence_number": next(seq)}

    yield ev("response.created", response=pending)
    yield ev("response.in_progress", response=pending)
    yield ev("response.output_item.added", output_index=0, item={**message, "status": "in_progress", "content": []})
    ids = {"item_id": "msg_scripted", "output_index": 0, "content_index": 0}
    yield ev("response.content_part.added", **ids, part={**text_part, "text": ""})
    for piece in pieces(text):
        yield ev("response.output_text.delta", **ids, delta=piece, logprobs=[])
    yield ev("response.output_text.done", **ids, text=text, logprobs=[])
    yield ev("response.content_part.done", **ids, part=text_part)
    yield ev("response.output_item.done", output_index=0, item=message)
    if call:
        yield ev("response.output_item.added", output_index=1, item={**call, "arguments": "", "status": "in_progress"})
        yield ev("response.function_call_arguments.delta", item_id="fc_1", output_index=1, delta=call["arguments"])
        yield ev("response.function_call_arguments.done", item_id="fc_1", output_index=1, arguments=call["arguments"])
        yield ev("response.output_item.done", output_index=1, item=call)
    yield ev("response.completed", response=response)
