"""An emulated Responses server (``/v1/responses``) that thinks for as long as it is let, for the
reasoning budget's tests on that surface.

It streams one token per ``response.output_text.delta``, its reasoning inline (``<think>`` in the
message's text, as a server without a reasoning parser sends it), and continues a final assistant
message item the way each server's Responses handler does (read from their sources):

* vLLM (vllm/entrypoints/openai/responses/utils.py ``should_continue_final_message``): a last
  ``message`` (or ``reasoning``) item whose ``status`` is ``in_progress`` or ``incomplete`` is
  continued; any other is a finished turn, and the model answers anew. Its events carry
  ``sequence_number`` and ``output_index``.
* SGLang (python/sglang/srt/entrypoints/openai/serving_responses.py ``_make_request``): the input
  becomes a ``ChatCompletionRequest`` without ``continue_final_message``; the template closes the
  last message and adds a generation prompt: never continued.
* llama.cpp (tools/server/server-chat.cpp ``server_chat_convert_responses_to_chatcmpl``): a final
  assistant message is prefilled, and its answer's first delta starts with the prefill itself (as
  build 0c1e570 streams it); an assistant item without ``type`` is refused ("Cannot determine type
  of 'item'", as that build answers). Its events name themselves (``event:`` lines) and carry
  neither ``sequence_number`` nor ``output_index``.

A continued message whose reasoning is closed is answered; anything else thinks again from the
start. What it thinks is said by the last user message: ``think N`` or ``think`` (until stopped).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .thinker import ANSWER, FOREVER, Served, Serving, token

ROUTE = "/v1/responses"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


@dataclass
class ResponsesThinker(Serving):
    server: str  # vllm, sglang, llamacpp
    reopen: bool = False
    """The continuation thinks again (``<think>`` … ``</think>``) before it answers."""
    fail: int | None = None
    """The status the continuation is refused with."""
    drop: bool = False
    """The continuation's connection is closed after its first answer token."""
    whole: bool = False
    """The continuation is answered with one JSON body, though a stream was asked for."""
    unfinished: bool = False
    """The continuation's stream ends after its answer's text, without its done events."""
    native: bool = False
    """vLLM with a reasoning parser: the reasoning comes as a reasoning item of its own (its
    ``response.reasoning_text.delta`` events), the answer in a message item after it."""
    wait: Callable[[], bool] | None = None
    """Before the first request's reasoning token ``wait_at``, wait until this says so (the client has gone)."""
    wait_at: int = 0
    served: list[Served] = field(default_factory=list)

    async def responses(self, request: web.Request) -> web.StreamResponse:
        return await self._serving(request, lambda served: self._answer(request, served))

    def _continued(self, items: list[Any]) -> str | None:
        """The prefill this server continues, if it continues the input's last item."""
        last = items[-1] if items and isinstance(items[-1], dict) else {}
        if last.get("role") != "assistant":
            return None
        if self.server == "vllm":
            open_ = last.get("type", "message") in ("message", "reasoning")
            return _text(last["content"]) if open_ and last.get("status") in ("in_progress", "incomplete") else None
        if self.server == "llamacpp":
            return _text(last["content"])
        return None  # SGLang: the template closes it and prompts for a new turn

    async def _answer(self, request: web.Request, served: Served) -> web.StreamResponse:
        body = served.body
        n = len(self.served)
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        if self.server == "llamacpp" and any(i.get("role") == "assistant" and "type" not in i for i in items):
            return web.json_response({"error": {"code": 400, "message": "Cannot determine type of 'item'"}}, status=400)
        prefill = self._continued(items)
        continuing = prefill is not None
        if continuing and self.fail is not None:
            return web.json_response({"error": {"message": "refused"}}, status=self.fail)
        prefill = prefill or ""
        closed = "</think>" in prefill[prefill.rfind("<think>") :] if "<think>" in prefill else False
        user = next(_text(i["content"]) for i in reversed(items) if i.get("role") == "user")
        words = user.split()
        thinking = FOREVER if words[-1] == "think" else int(words[-1])
        response = {"id": f"resp_{n}", "object": "response", "created_at": 1000 + n, "status": "in_progress"}
        response["model"] = body["model"]
        message_id = f"msg_{n}"
        text: list[str] = []

        if continuing and self.whole:  # one body: the whole answer after the prefill
            pieces = ["<think>", "more ", "</think>"] if self.reopen and closed else []
            served.generated = len(pieces) + len(ANSWER)
            echoed = prefill if self.server == "llamacpp" else ""
            output = [_message(message_id, echoed + "".join(pieces) + "".join(ANSWER))]
            usage = {"input_tokens": 1, "output_tokens": served.generated, "total_tokens": 1 + served.generated}
            return web.json_response({**response, "status": "completed", "output": output, "usage": usage})

        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        seq = 0
        echo = [prefill] if continuing and self.server == "llamacpp" and prefill else []

        async def send(event: dict[str, Any]) -> None:
            nonlocal seq
            if self.server == "llamacpp":  # no numbers; named events
                event = {k: v for k, v in event.items() if k != "output_index"}
                raw = b"event: " + event["type"].encode() + b"\ndata: " + json.dumps(event).encode() + b"\n\n"
            else:
                event = event | {"sequence_number": seq}
                raw = b"data: " + json.dumps(event).encode() + b"\n\n"
            seq += 1
            await resp.write(raw)

        msg_index = 1 if self.native and not closed else 0

        async def delta(piece: str) -> None:
            if echo:
                piece = echo.pop() + piece
            text.append(piece)
            where = {"item_id": message_id, "output_index": msg_index, "content_index": 0}
            await send({"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []})

        async def reasoning(piece: str) -> None:
            thought.append(piece)
            where = {"item_id": f"rs_{n}", "output_index": 0, "content_index": 0}
            await send({"type": "response.reasoning_text.delta", **where, "delta": piece})

        def gone() -> bool:
            transport = request.transport
            return transport is None or transport.is_closing()

        async def open_message() -> None:
            item = {"id": message_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
            await send({"type": "response.output_item.added", "output_index": msg_index, "item": item})
            where = {"item_id": message_id, "output_index": msg_index, "content_index": 0}
            await send({"type": "response.content_part.added", **where, "part": part})

        thought: list[str] = []
        part = {"type": "output_text", "text": "", "annotations": []}
        await send({"type": "response.created", "response": response | {"output": []}})
        await send({"type": "response.in_progress", "response": response | {"output": []}})
        if closed:
            await open_message()
            for piece in ["<think>", "more ", "</think>"] if self.reopen else []:
                await delta(piece)
                served.generated += 1
        else:
            rs = {"id": f"rs_{n}", "type": "reasoning", "summary": [], "status": "in_progress"}
            at = {"item_id": f"rs_{n}", "output_index": 0, "content_index": 0}
            if self.native:
                await send({"type": "response.output_item.added", "output_index": 0, "item": rs})
                empty = {"type": "reasoning_text", "text": ""}
                await send({"type": "response.content_part.added", **at, "part": empty})
            else:
                await open_message()
                await delta("<think>")
            for i in range(thinking):
                if self.wait is not None and i == self.wait_at and n == 1:
                    while not self.wait():
                        await asyncio.sleep(0)
                await asyncio.sleep(0)  # a token at a time: the close of the connection can be seen
                if gone():
                    served.stopped = True
                    return resp
                try:
                    await (reasoning if self.native else delta)(token(i))
                except ConnectionResetError:
                    served.stopped = True
                    return resp
                served.generated += 1
            if self.native:
                done_part = {"type": "reasoning_text", "text": "".join(thought)}
                await send({"type": "response.reasoning_text.done", **at, "text": done_part["text"]})
                await send({"type": "response.content_part.done", **at, "part": done_part})
                rs_done = rs | {"status": "completed", "content": [done_part]}
                await send({"type": "response.output_item.done", "output_index": 0, "item": rs_done})
                await open_message()
            else:
                await delta("</think>")
                served.generated += 2
        for i, word in enumerate(ANSWER):
            if self.drop and continuing and i == 1:
                assert request.transport is not None
                request.transport.close()
                served.stopped = True
                return resp
            await delta(word)
            served.generated += 1
        if self.unfinished and continuing:
            await resp.write_eof()
            return resp
        whole = "".join(text)
        where = {"item_id": message_id, "output_index": msg_index, "content_index": 0}
        await send({"type": "response.output_text.done", **where, "text": whole, "logprobs": []})
        await send({"type": "response.content_part.done", **where, "part": part | {"text": whole}})
        message = _message(message_id, whole)
        await send({"type": "response.output_item.done", "output_index": msg_index, "item": message})
        prompt = sum(len(_text(i.get("content", "")).split()) for i in items)
        usage = {"input_tokens": prompt, "output_tokens": served.generated, "total_tokens": prompt + served.generated}
        output = [rs_done, message] if self.native and not closed else [message]
        done = {**response, "status": "completed", "output": output, "usage": usage}
        await send({"type": "response.completed", "response": done})
        await resp.write_eof()
        return resp


def _message(message_id: str, text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {"id": message_id, "type": "message", "role": "assistant", "status": "completed", "content": [part]}
