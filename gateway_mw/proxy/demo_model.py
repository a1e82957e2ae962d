"""A stand-in model server that writes its reasoning inline, on all three API surfaces.

It answers ``POST /v1/chat/completions``, ``/v1/messages`` and ``/v1/responses``, streamed or not, in
each API's real wire format, with ``<think>…</think>answer`` text cut into token-sized pieces at a
set pace, the way vLLM, SGLang, llama.cpp or Ollama do when no reasoning parser is configured.

Models:

* ``demo`` writes ``<think>reasoning</think>answer``;
* ``demo-r1`` (any name starting with ``demo-r1``) writes ``reasoning</think>answer``, like
  DeepSeek-R1 whose chat template already put ``<think>`` in the prompt. Only a model profile with
  ``start_with_reasoning`` tells the gateway that its output starts inside a reasoning block.

Used by the gateway (``gateway-mw``, ``examples/proxy.py``) when no upstream is given;
``build_app(pace)`` serves it anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from .connections import GatewayRunner

__all__ = ["MODELS", "QUESTION", "build_app", "model_text", "responses_input_text", "serve", "tokens"]

MODELS = ("demo", "demo-r1")
QUESTION = "What is 2+2?"

_TOKEN = re.compile(r"</?think>| ?[^\s<]{1,4}|\s|<")


def model_text(model: str, question: str) -> str:
    """Everything the model writes for ``question``, tags included."""
    reasoning = f"The user asks: {question.strip() or '(nothing)'} I am a demo model, so I plan a short answer."
    answer = "Hello from the demo model! Two plus two is 4."
    if model.lower().startswith("demo-r1"):
        return f"{reasoning}</think>{answer}"  # its template opened the block in the prompt
    return f"<think>{reasoning}</think>{answer}"


def tokens(text: str) -> list[str]:
    """``text`` cut the way a tokenizer would: tags whole, words in pieces of up to four letters."""
    return _TOKEN.findall(text)


# -- request parsing ---------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """The text of a message's ``content``: a string, or a list of text parts/blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part)
    return ""


def _last_user_text(messages: Any) -> str:
    """The text of the last user message of a chat or Anthropic ``messages`` list."""
    if isinstance(messages, list):
        for item in reversed(messages):
            if isinstance(item, dict) and item.get("role", "user") == "user":
                return _text_of(item.get("content"))
    return ""


def responses_input_text(value: Any) -> str:
    """The question in a Responses request's ``input``: all of the Responses input handling.

    ``input`` is either a string or a list of input items; the text of the last user message counts.
    Items without a role (a replayed reasoning item, a ``function_call_output``) are not the user's.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        for item in reversed(value):
            if isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message":
                return _text_of(item.get("content"))
    return ""


def _messages_question(body: dict[str, Any]) -> str:
    return _last_user_text(body.get("messages"))


def _responses_question(body: dict[str, Any]) -> str:
    return responses_input_text(body.get("input"))


class _BadRequest(Exception):
    pass


async def _read(
    request: web.Request, question_of: Callable[[dict[str, Any]], str]
) -> tuple[str, bool, str, dict[str, Any]]:
    """(model, stream, question, body) of a request; ``question_of`` finds the question in the body."""
    try:
        body = await request.json()
    except ValueError:
        raise _BadRequest("the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise _BadRequest("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _BadRequest("'model' is required")
    return model, bool(body.get("stream")), question_of(body), body


class _Pacer:
    """Sleeps between tokens so that ``pace`` tokens go out per second (no sleep when 0)."""

    def __init__(self, pace: float) -> None:
        self._delay = 1.0 / pace if pace > 0 else 0.0
        self._next = time.monotonic()

    async def wait(self) -> None:
        if self._delay:
            self._next += self._delay
            delay = self._next - time.monotonic()
            await asyncio.sleep(max(delay, 0.0))


async def _paced(pieces: list[str], pace: float) -> AsyncIterator[str]:
    pacer = _Pacer(pace)
    for piece in pieces:
        await pacer.wait()
        yield piece


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


# Where a handler leaves its prepared stream (a typed key where aiohttp has them).
_STREAM = web.RequestKey("demo_model.stream", web.StreamResponse)


async def _stream(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    request[_STREAM] = resp
    return resp


@web.middleware
async def _client_gone(request: web.Request, handler: Any) -> web.StreamResponse:
    """A client that stops reading mid-stream (curl interrupted) ends the stream quietly, as a model
    server does, instead of a traceback in the log."""
    try:
        response: web.StreamResponse = await handler(request)
    except ConnectionResetError:
        if _STREAM not in request:
            raise
        stream: web.StreamResponse = request[_STREAM]
        return stream
    return response


# -- OpenAI chat completions ---------------------------------------------------------------------------


async def chat_completions(request: web.Request) -> web.StreamResponse:
    pace: float = request.app[PACE]
    try:
        model, stream, question, body = await _read(request, _messages_question)
    except _BadRequest as exc:
        return _openai_error(400, str(exc))
    text = model_text(model, question)
    pieces = tokens(text)
    created = int(time.time())
    cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    usage = {"prompt_tokens": len(tokens(question)), "completion_tokens": len(pieces)}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if not stream:
        return web.json_response(
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
        )

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        envelope = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        return b"data: " + _dumps({**envelope, "choices": choices, **extra}) + b"\n\n"

    resp = await _stream(request)
    await resp.write(chunk({"role": "assistant", "content": ""}))
    async for piece in _paced(pieces, pace):
        await resp.write(chunk({"content": piece}))
    await resp.write(chunk({}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        envelope = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        await resp.write(b"data: " + _dumps({**envelope, "choices": [], "usage": usage}) + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


# -- Anthropic messages -------------------------------------------------------------------------------


async def messages(request: web.Request) -> web.StreamResponse:
    pace: float = request.app[PACE]
    try:
        model, stream, question, _ = await _read(request, _messages_question)
    except _BadRequest as exc:
        return _anthropic_error(400, "invalid_request_error", str(exc))
    text = model_text(model, question)
    pieces = tokens(text)
    mid = f"msg_{uuid.uuid4().hex[:24]}"
    input_tokens = len(tokens(question))
    message: dict[str, Any] = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": len(pieces)},
    }
    if not stream:
        return web.json_response(message)

    async def send(event: str, data: dict[str, Any]) -> None:
        await resp.write(b"event: " + event.encode() + b"\ndata: " + _dumps({"type": event, **data}) + b"\n\n")

    resp = await _stream(request)
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    await send("message_start", {"message": start})
    await send("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
    await send("ping", {})
    async for piece in _paced(pieces, pace):
        await send("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}})
    await send("content_block_stop", {"index": 0})
    await send(
        "message_delta",
        {"delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": len(pieces)}},
    )
    await send("message_stop", {})
    await resp.write_eof()
    return resp


# -- OpenAI Responses ---------------------------------------------------------------------------------


def _response_object(rid: str, model: str, created: int, status: str, output: list[Any], usage: Any) -> Any:
    """A ``Response`` with the full field set the real API sends."""
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


async def responses(request: web.Request) -> web.StreamResponse:
    pace: float = request.app[PACE]
    try:
        model, stream, question, _ = await _read(request, _responses_question)
    except _BadRequest as exc:
        return _openai_error(400, str(exc))
    text = model_text(model, question)
    pieces = tokens(text)
    created = int(time.time())
    rid, mid = f"resp_{uuid.uuid4().hex[:24]}", f"msg_{uuid.uuid4().hex[:24]}"
    input_tokens = len(tokens(question))
    usage = {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": len(pieces),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + len(pieces),
    }
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    item = {"id": mid, "type": "message", "role": "assistant", "status": "completed", "content": [part]}
    if not stream:
        return web.json_response(_response_object(rid, model, created, "completed", [item], usage))

    seq = 0

    async def send(event: str, data: dict[str, Any]) -> None:
        nonlocal seq
        payload = {"type": event, "sequence_number": seq, **data}
        seq += 1
        await resp.write(b"event: " + event.encode() + b"\ndata: " + _dumps(payload) + b"\n\n")

    resp = await _stream(request)
    initial = _response_object(rid, model, created, "in_progress", [], None)
    await send("response.created", {"response": initial})
    await send("response.in_progress", {"response": initial})
    added = {**item, "status": "in_progress", "content": []}
    await send("response.output_item.added", {"output_index": 0, "item": added})
    where = {"item_id": mid, "output_index": 0, "content_index": 0}
    await send("response.content_part.added", {**where, "part": {**part, "text": ""}})
    async for piece in _paced(pieces, pace):
        await send("response.output_text.delta", {**where, "delta": piece, "logprobs": []})
    await send("response.output_text.done", {**where, "text": text, "logprobs": []})
    await send("response.content_part.done", {**where, "part": part})
    await send("response.output_item.done", {"output_index": 0, "item": item})
    await send("response.completed", {"response": _response_object(rid, model, created, "completed", [item], usage)})
    await resp.write_eof()
    return resp


# -- the rest -------------------------------------------------------------------------------------------


def _openai_error(status: int, message: str) -> web.Response:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return web.json_response({"error": error}, status=status)


def _anthropic_error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)


async def models(request: web.Request) -> web.Response:
    data = [{"id": name, "object": "model", "created": 1730000000, "owned_by": "demo"} for name in MODELS]
    return web.json_response({"object": "list", "data": data})


PACE = web.AppKey("PACE", float)


def build_app(pace: float = 30.0) -> web.Application:
    """The demo model as an aiohttp application; ``pace`` in tokens per second (0: no delay)."""
    app = web.Application(middlewares=[_client_gone])
    app[PACE] = pace
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/v1/messages", messages)
    app.router.add_post("/v1/responses", responses)
    app.router.add_get("/v1/models", models)
    return app


@contextlib.asynccontextmanager
async def serve(pace: float) -> AsyncIterator[int]:
    """Serve the demo model on a free loopback port, given, for as long as the context lasts."""
    # Once the gateway's own requests are done, nothing the demo model still answers has a client.
    runner = GatewayRunner(build_app(pace), access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()
