"""An emulated Anthropic messages endpoint (``/v1/messages``) that thinks for as long as it is let, for
the reasoning budget's tests on messages.

It streams one token per event, its reasoning inline (``<think>`` in a ``text_delta``, as a server
without a reasoning parser sends it) or in a ``thinking`` block of its own (``native``), and treats a
final assistant message as each server's messages endpoint does: llama.cpp makes the request a chat
request where its assistant prefill applies (``server_chat_convert_anthropic_to_oai``, then
``oaicompat_chat_params_parse``), and streams the prefill back as the start of its first
``text_delta`` (as build 0c1e570 does); vLLM's and SGLang's build a chat request of their own with no
``continue_final_message``, so the final assistant turn is rendered closed and the model starts a new
one (it thinks again from the start). A continued message whose reasoning is closed is answered.

What it thinks is said by the user message: ``think N`` (N tokens, then the answer) or ``think``
(until it is stopped). A request that does not stream is answered with one message body.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .thinker import ANSWER, FOREVER, Served, Serving, token

__all__ = ["MessagesThinker", "assert_one_message"]


@dataclass
class MessagesThinker(Serving):
    server: str  # vllm, sglang, llamacpp
    native: bool = False
    reopen: bool = False
    """The continuation thinks again (``<think>`` … ``</think>``) before it answers."""
    fail: int | None = None
    """The status the continuation is refused with."""
    drop: bool = False
    """The continuation's connection is closed after its first answer token."""
    batch: int = 1
    """Events written at once (a read of the gateway's may then hold several)."""
    whole: bool = False
    """The continuation is answered with one message body, though a stream was asked for."""
    wait: Callable[[], bool] | None = None
    """Before the first request's reasoning token ``wait_at``, wait until this says so."""
    wait_at: int = 0
    served: list[Served] = field(default_factory=list)

    async def messages(self, request: web.Request) -> web.StreamResponse:
        return await self._serving(request, lambda served: self._answer(request, served))

    def _continues(self, messages: list[dict[str, Any]]) -> str:
        """The prefill this server continues, or ``""``."""
        last = messages[-1]
        if self.server != "llamacpp" or last["role"] != "assistant" or not isinstance(last["content"], str):
            return ""
        return str(last["content"])

    async def _answer(self, request: web.Request, served: Served) -> web.StreamResponse:
        body = served.body
        n = len(self.served)
        messages = body["messages"]
        prefill = self._continues(messages)
        if prefill and self.fail is not None:
            return web.json_response({"type": "error", "error": {"message": "refused"}}, status=self.fail)
        closed = "</think>" in prefill[prefill.rfind("<think>") :] if "<think>" in prefill else False
        user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        words = user.split()
        thinking = FOREVER if words[-1] == "think" else int(words[-1])
        usage = {"input_tokens": sum(len(str(m["content"]).split()) for m in messages), "output_tokens": 0}
        start = {"id": f"msg_{n}", "type": "message", "role": "assistant", "content": [], "model": body["model"]}
        start |= {"stop_reason": None, "stop_sequence": None, "usage": usage}
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
        echo = [prefill] if prefill else []
        index = 0

        def block(kind: str) -> None:
            empty = {"type": "text", "text": ""} if kind == "text" else {"type": kind, "thinking": "", "signature": ""}
            opened = {"type": "content_block_start", "index": index, "content_block": empty}
            events.append(("content_block_start", opened))

        def delta(value: dict[str, Any]) -> None:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": value}))

        def text(piece: str) -> None:
            if echo:
                piece = echo.pop() + piece
            delta({"type": "text_delta", "text": piece})

        def stop() -> None:
            nonlocal index
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1

        stream = body.get("stream") is True and not (self.whole and prefill)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"}) if stream else None
        if resp is not None:
            await resp.prepare(request)

        async def flush(force: bool = False) -> bool:
            """Write the events so far, ``batch`` at a time; ``False``: the stream was stopped."""
            if resp is None or (len(events) < self.batch and not force):
                return True
            await asyncio.sleep(0)  # a token at a time: the close of the connection can be seen
            transport = request.transport
            if transport is None or transport.is_closing():
                served.stopped = True
                return False
            out = b"".join(f"event: {k}\ndata: {json.dumps(d)}\n\n".encode() for k, d in events)
            events.clear()
            try:
                await resp.write(out)
            except ConnectionResetError:
                served.stopped = True
                return False
            return True

        if not closed:
            if self.native:
                block("thinking")
            else:
                block("text")
                text("<think>")
            for i in range(thinking):
                if self.wait is not None and i == self.wait_at and n == 1:
                    while not self.wait():
                        await asyncio.sleep(0)
                if self.native:
                    delta({"type": "thinking_delta", "thinking": token(i)})
                else:
                    text(token(i))
                served.generated += 1
                if not await flush():
                    return resp if resp is not None else web.Response()
            if self.native:
                delta({"type": "signature_delta", "signature": ""})
                stop()
                block("text")
            else:
                text("</think>")
                served.generated += 2
        else:
            block("text")
            if self.reopen:
                for piece in ("<think>", "more ", "</think>"):
                    text(piece)
                served.generated += 3
        for i, word in enumerate(ANSWER):
            if self.drop and prefill and i == 1:
                await flush(force=True)
                assert request.transport is not None
                request.transport.close()
                served.stopped = True
                return resp if resp is not None else web.Response()
            text(word)
            served.generated += 1
            if not await flush():
                return resp if resp is not None else web.Response()
        stop()
        usage_end = {"output_tokens": served.generated}
        end = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": usage_end}
        events += [("message_delta", end), ("message_stop", {"type": "message_stop"})]
        if resp is None:
            return web.json_response(_body(events))
        await flush(force=True)
        await resp.write_eof()
        return resp


def _body(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The message the events make (a request that does not stream)."""
    message: dict[str, Any] = {}
    blocks: list[dict[str, Any]] = []
    for kind, data in events:
        if kind == "message_start":
            message = dict(data["message"])
        elif kind == "content_block_start":
            blocks.append(dict(data["content_block"]))
        elif kind == "content_block_delta":
            value = data["delta"]
            key = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}[value["type"]]
            blocks[-1][key] += value[key]
        elif kind == "message_delta":
            message |= data["delta"]
            message["usage"] = message["usage"] | data["usage"]
    return message | {"content": blocks}


def assert_one_message(stream: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One well-formed message, read as strictly as the protocol allows: one ``message_start`` first
    and one ``message_stop`` last, blocks numbered 0, 1, 2… as they start, every delta and stop to an
    open block, every thinking block signed before it stops, nothing open at the message's end.
    Returns the message the events make."""
    names = [name for name, _ in stream]
    assert all(name == data["type"] for name, data in stream)
    assert names[0] == "message_start" and names.count("message_start") == 1
    assert names[-1] == "message_stop" and names.count("message_stop") == 1
    assert names[-2] == "message_delta" and names.count("message_delta") == 1
    message = dict(stream[0][1]["message"])
    blocks: list[dict[str, Any]] = []
    open_: set[int] = set()
    signed: set[int] = set()
    partial: dict[int, str] = {}
    for name, data in stream[1:-2]:
        index = data.get("index")
        if name == "content_block_start":
            assert index == len(blocks) and not open_
            blocks.append(dict(data["content_block"]))
            open_.add(index)
        elif name == "content_block_delta":
            assert index in open_
            delta = data["delta"]
            assert index not in signed
            if delta["type"] == "input_json_delta":
                partial[index] = partial.get(index, "") + delta["partial_json"]
                continue
            key = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}[delta["type"]]
            blocks[index][key] += delta[key]
            if key == "signature":
                signed.add(index)
        elif name == "content_block_stop":
            assert index in open_
            if blocks[index]["type"] == "thinking":
                assert index in signed
            if index in partial:
                blocks[index]["input"] = json.loads(partial[index])
            open_.discard(index)
        else:
            assert name == "ping", name
    assert not open_
    end = stream[-2][1]
    return message | end["delta"] | {"content": blocks, "usage": message["usage"] | end["usage"]}
