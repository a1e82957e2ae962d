"""An emulated chat server that thinks for as long as it is let, for the reasoning budget's tests.

It streams one token per event, its reasoning inline (``<think>`` in ``content``, as a server without a
reasoning parser sends it) or in ``reasoning_content`` (``native``), and continues a final assistant
message the way each server does: vLLM and SGLang only when asked (``continue_final_message`` with
``add_generation_prompt: false``; both true is refused, as vLLM refuses it), llama.cpp by itself (its
assistant prefill). A continued message whose reasoning is closed is answered; anything else thinks
again from the start. llama.cpp's answer to a prefill starts with the prefill itself, as its
builds do. It records each request's body and whether its stream was stopped before its end
(the connection closed under it).

What it thinks is said by the user message: ``think N`` (N tokens, then the answer) or ``think``
(until it is stopped).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

ANSWER = ("The", " answer", " is", " 4.")
FOREVER = 100_000  # a bound on "until it is stopped": reached, the test that relies on the stop fails


def token(i: int) -> str:
    return f"r{i} "


@dataclass
class Served:
    body: dict[str, Any]
    generated: int = 0
    stopped: bool = False
    """The connection closed under the stream before its end."""
    over: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the server is done with the request."""


class Serving:
    """What every emulated server keeps of the requests it serves (:class:`Served`): each recorded,
    noted as stopped when the server cancels its handler (its connection closed), over when done."""

    served: list[Served]

    async def over(self) -> list[Served]:
        """What was served, once every request is done with."""
        for served in self.served:
            await served.over.wait()
        return self.served

    async def _serving(
        self, request: web.Request, answer: Callable[[Served], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        served = Served(json.loads(await request.read()))
        self.served.append(served)
        try:
            return await answer(served)
        except asyncio.CancelledError:  # the server cancels a handler whose connection closed
            served.stopped = True
            raise
        finally:
            served.over.set()


@dataclass
class Thinker(Serving):
    server: str  # vllm, sglang, llamacpp
    native: bool = False
    reopen: bool = False
    """The continuation thinks again (``<think>`` … ``</think>``) before it answers."""
    fail: int | None = None
    """The status the continuation is refused with."""
    drop: bool = False
    """The continuation's connection is closed after its first token."""
    wait: Callable[[], bool] | None = None
    """Before the reasoning token past ``wait_at``, wait until this says so (the client has gone)."""
    wait_at: int = 0
    served: list[Served] = field(default_factory=list)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._serving(request, lambda served: self._answer(request, served))

    async def _answer(self, request: web.Request, served: Served) -> web.StreamResponse:
        body = served.body
        n = len(self.served)
        messages = body["messages"]
        last = messages[-1]
        continuing = last["role"] == "assistant"
        if continuing and self.server in ("vllm", "sglang"):
            flags = (body.get("continue_final_message", False), body.get("add_generation_prompt", True))
            if flags == (True, True):
                return web.json_response({"error": "continue_final_message and add_generation_prompt"}, status=400)
            continuing = flags == (True, False)
        if continuing and self.fail is not None:
            return web.json_response({"error": {"message": "refused"}}, status=self.fail)
        prefill = last["content"] if continuing else ""
        closed = "</think>" in prefill[prefill.rfind("<think>") :] if "<think>" in prefill else False
        user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        words = user.split()
        thinking = FOREVER if words[-1] == "think" else int(words[-1])
        chunk_id, created = f"chatcmpl-{n}", 1000 + n
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        # llama.cpp streams a prefill back as the start of the answer's first content (as build 0c1e570 does)
        echo = [prefill] if continuing and self.server == "llamacpp" and prefill else []

        async def send(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            if echo and delta.get("content") and "role" not in delta:
                delta = delta | {"content": echo.pop() + delta["content"]}
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            chunk = {"id": chunk_id, "object": "chat.completion.chunk", "created": created, "model": body["model"]}
            chunk |= {"choices": [choice]} | extra
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

        def gone() -> bool:
            transport = request.transport
            return transport is None or transport.is_closing()

        async def think(count: int, start: int) -> bool:
            """``count`` reasoning tokens; ``False`` when the stream was stopped under it."""
            for i in range(start, start + count):
                if self.wait is not None and i == self.wait_at and n == 1:
                    while not self.wait():
                        await asyncio.sleep(0)
                await asyncio.sleep(0)  # a token at a time: the close of the connection can be seen
                if gone():
                    served.stopped = True
                    return False
                try:
                    await send({"reasoning_content": token(i)} if self.native else {"content": token(i)})
                except ConnectionResetError:
                    served.stopped = True
                    return False
                served.generated += 1
            return True

        await send({"role": "assistant", "content": ""})
        if closed:
            if self.reopen:
                await send({"content": "<think>"})
                await send({"content": "more "})
                await send({"content": "</think>"})
                served.generated += 3
        else:
            if not self.native:
                await send({"content": "<think>"})
            if not await think(thinking, 0):
                return resp
            if not self.native:
                await send({"content": "</think>"})
            served.generated += 0 if self.native else 2
        for i, word in enumerate(ANSWER):
            if self.drop and continuing and i == 1:
                assert request.transport is not None
                request.transport.close()
                served.stopped = True
                return resp
            await send({"content": word})
            served.generated += 1
        await send({}, "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            prompt = sum(len(str(m["content"]).split()) for m in messages)
            usage = {"prompt_tokens": prompt, "completion_tokens": served.generated}
            usage["total_tokens"] = prompt + served.generated
            chunk = {"id": chunk_id, "object": "chat.completion.chunk", "created": created, "model": body["model"]}
            chunk |= {"choices": [], "usage": usage}
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp
