"""An emulated Ollama ``/api/chat`` and ``/api/generate`` that think for as long as they are let, for
the reasoning budget's tests, and continue a final assistant message as Ollama's sources do.

Read from ollama/ollama's server/routes.go (``ChatHandler``, ``GenerateHandler``,
``writeChatResponse``), server/prompt.go and template/template.go, model/parsers:

* ``/api/chat`` renders the messages with the model's template. A final assistant message is left
  open where the template says so (``{{ if not $last }}<|im_end|>``, as Ollama's own qwen3 template
  in thinking/template_test.go does; a legacy template is cut after ``.Response``; the Go renderers
  write no end for a ``prefill``): the model goes on from its ``content``. ``closes_turn``: a
  template that ends every assistant turn and opens a new one (template/gemma3-instruct.gotmpl): the
  model starts again, and thinks again.
* ``native``: Ollama's own parser splits the reasoning into ``thinking`` lines (0.12.4 on, ``think``
  on). A builtin parser given a final assistant message with ``content`` starts in its content state
  (model/parsers ``Init``: ``prefill && lastMessage.Content != ""``); with an empty ``content`` it
  expects reasoning, and what the model writes goes into ``thinking`` until a closing tag.
* ``/api/generate`` has no messages: its prompt is one user message (``"no tools or last message for
  generate endpoint"``); nothing it takes puts text after the template's assistant opening but
  ``raw``, which it does not render at all.
* ``stream: false``: one body, the done line with every line's texts joined (``writeChatResponse``).
* ``options.num_predict``: at most that many tokens, then ``done_reason: "length"``.

``openai_app`` serves Ollama's ``/v1/chat/completions`` over the same handler, as its middleware does
(middleware/openai.go ``ChatMiddleware``, ``ChatWriter``; openai/openai.go ``FromChatRequest``,
``ToStreamChunks``, ``FinishChunk``, ``ToChatCompletion``): the request is made an ``/api/chat`` one,
message for message (a final assistant message stays the last, and is continued), and each line of
the answer is made chunks, the ``thinking`` in ``delta.reasoning``; the usage chunk only with
``stream_options.include_usage``; ``stream`` is off unless ``true``.

Go's encoder writes ``<``, ``>`` and ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026``; so does this one.
What it thinks is said by the last user message (the prompt): ``think N`` or ``think`` (until stopped).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from gateway_mw.controls import ModelInfo
from gateway_mw.incoming import THINKEXTRACT_MODEL_INFO

from .thinker import ANSWER, FOREVER, Served, Serving, token

CREATED = "2026-12-01T10:00:00.000000Z"
CREATED_UNIX = 1796119200
"""``CREATED`` in seconds, as ``/v1`` writes it (``CreatedAt.Unix()``)."""


def go_json(value: Any) -> bytes:
    """``value`` as Go's ``encoding/json`` spells it (HTML characters escaped, no spaces)."""
    out = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


@dataclass
class OllamaThinker(Serving):
    native: bool = False
    closes_turn: bool = False
    reopen: bool = False
    """A continued answer thinks again (``<think>`` … ``</think>``) before it answers."""
    fail: int | None = None
    """The status a continuation is refused with."""
    drop: bool = False
    """A continuation's connection is closed after its first token."""
    wait: Callable[[], bool] | None = None
    """Before the first request's reasoning token ``wait_at``, wait until this says so (the client has gone)."""
    wait_at: int = 0
    whole: bool = False
    burst: int = 0
    """The first request's first ``burst`` lines go in one write (one read may hold them all)."""
    """A continuation is answered with one body, as ``stream: false`` is (a handler that reads it whole)."""
    served: list[Served] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/chat", self.chat)
        app.router.add_post("/api/generate", self.generate)
        return app

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, chat=True)

    async def generate(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, chat=False)

    async def _serve(self, request: web.Request, chat: bool) -> web.StreamResponse:
        return await self._serving(request, lambda served: self._answer(request, served, chat))

    async def _answer(self, request: web.Request, served: Served, chat: bool) -> web.StreamResponse:
        body = served.body
        messages = body["messages"] if chat else [{"role": "user", "content": body["prompt"]}]
        last = messages[-1]
        continuing = chat and last["role"] == "assistant" and not self.closes_turn
        if continuing and self.fail is not None:
            return web.json_response({"error": "refused"}, status=self.fail)
        prefill = last.get("content", "") if continuing else ""
        closed = continuing and "</think>" in prefill[prefill.rfind("<think>") :] and "<think>" in prefill
        user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        words = user.split()
        thinking = FOREVER if words[-1] == "think" else int(words[-1])
        limit = (body.get("options") or {}).get("num_predict", -1)
        stream = body.get("stream", True) is not False and not (self.whole and continuing)
        # The builtin parser expects reasoning unless a prefill has content (model/parsers Init).
        parser_thinking = self.native and not (continuing and prefill)
        lines: list[dict[str, Any]] = []
        held: list[bytes] = []  # lines of a burst not yet written
        resp: web.StreamResponse | None = None
        if stream:
            resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
            await resp.prepare(request)

        def gone() -> bool:
            transport = request.transport
            return transport is None or transport.is_closing()

        async def send(text: str, done: bool = False, **extra: Any) -> None:
            nonlocal parser_thinking
            reasoning = ""
            if self.native and not done:  # Ollama's parser: the tags never reach the client
                if text == "<think>":
                    parser_thinking, text = True, ""
                elif text == "</think>":
                    parser_thinking, text = False, ""
                elif parser_thinking:
                    reasoning, text = text, ""
                if not (text or reasoning):
                    return
            line: dict[str, Any] = {"model": body["model"], "created_at": CREATED}
            if chat:
                line["message"] = {"role": "assistant", "content": text} | (
                    {"thinking": reasoning} if reasoning else {}
                )
            else:
                line["response"] = text
                if reasoning:
                    line["thinking"] = reasoning
            line["done"] = done
            line |= extra
            if resp is None:
                lines.append(line)
                return
            held.append(go_json(line) + b"\n")
            if len(self.served) > 1 or served.generated + 1 >= self.burst:
                await resp.write(b"".join(held))
                held.clear()

        async def emit(text: str) -> bool:
            """One token; ``False`` when the stream was stopped under it or the limit reached."""
            if 0 <= limit <= served.generated:
                return False
            await asyncio.sleep(0)  # a token at a time: the close of the connection can be seen
            if gone():
                served.stopped = True
                return False
            try:
                await send(text)
            except ConnectionResetError:
                served.stopped = True
                return False
            served.generated += 1
            return True

        async def run() -> str:
            """The model's tokens; the ``done_reason``, or ``""`` when it was stopped."""
            if closed:
                if self.reopen:
                    for text in ("<think>", "more ", "</think>"):
                        if not await emit(text):
                            return _why(served)
            else:
                if not await emit("<think>"):
                    return _why(served)
                for i in range(thinking):
                    if self.wait is not None and i == self.wait_at and len(self.served) == 1:
                        while not self.wait():
                            await asyncio.sleep(0)
                    if not await emit(token(i)):
                        return _why(served)
                if not await emit("</think>"):
                    return _why(served)
            for i, word in enumerate(ANSWER):
                if self.drop and continuing and i == 1:
                    assert request.transport is not None
                    request.transport.close()
                    served.stopped = True
                    return ""
                if not await emit(word):
                    return _why(served)
            return "stop"

        reason = await run()
        if not reason:
            return resp if resp is not None else web.Response(status=499)
        prompt = sum(len(str(m["content"]).split()) for m in messages)
        metrics = {"total_duration": 1000, "prompt_eval_count": prompt, "eval_count": served.generated}
        await send("", True, done_reason=reason, **metrics)
        if resp is None:
            return web.Response(body=go_json(_body(lines, chat)), content_type="application/json")
        await resp.write_eof()
        return resp


def _why(served: Served) -> str:
    return "" if served.stopped else "length"


def _body(lines: list[dict[str, Any]], chat: bool) -> dict[str, Any]:
    """The non-stream answer: the done line with the texts of every line joined (writeChatResponse)."""
    out = dict(lines[-1])
    holders = [line["message"] if chat else line for line in lines]
    key = "content" if chat else "response"
    text = "".join(h[key] for h in holders)
    reasoning = "".join(h.get("thinking", "") for h in holders)
    holder = dict(out["message"]) if chat else out
    holder[key] = text
    holder.pop("thinking", None)
    if reasoning:
        holder["thinking"] = reasoning
    if chat:
        out["message"] = holder
    return out


def openai_app(thinker: OllamaThinker) -> web.Application:
    """``thinker``'s ``/api/chat``, and its ``/v1/chat/completions`` made of it as Ollama's middleware
    makes it: the converted request goes to the ``/api/chat`` handler (over loopback here), and its
    lines come back as chunks; a client that goes away closes the handler's request."""
    app = thinker.app()
    ids = itertools.count(1)

    async def chat_completions(request: web.Request) -> web.StreamResponse:
        asked = json.loads(await request.read())
        stream = asked.get("stream") is True
        usage = stream and (asked.get("stream_options") or {}).get("include_usage") is True
        id_ = f"chatcmpl-{next(ids)}"  # Ollama's: chatcmpl-<random>, one per request
        url = request.url.with_path("/api/chat").with_query(None)
        native = go_json(from_chat_request(asked))
        async with aiohttp.ClientSession() as session, session.post(url, data=native) as inner:
            if inner.status != 200:
                message = (await inner.json()).get("error", "")
                error = {"message": message, "type": "api_error", "param": None, "code": None}
                body = go_json({"error": error})
                return web.Response(status=inner.status, body=body, content_type="application/json")
            if not stream:
                body = to_chat_completion(id_, json.loads(await inner.read()))
                return web.Response(body=go_json(body) + b"\n", content_type="application/json")
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            first = True
            try:
                async for raw in inner.content:
                    line = json.loads(raw)
                    message = line["message"]
                    trailer = line["done"] and not first and not message["content"] and not message.get("thinking")
                    out = [] if trailer else to_stream_chunks(id_, line, first)
                    first = False
                    if line["done"]:
                        finish = _chunk(id_, line, {})
                        finish["choices"][0]["finish_reason"] = line.get("done_reason") or "stop"
                        out.append(finish)
                        if usage:
                            out.append(finish | {"choices": [], "usage": _usage(line)})
                    for chunk in out:
                        await resp.write(b"data: " + go_json(chunk) + b"\n\n")
                    if line["done"]:
                        await resp.write(b"data: [DONE]\n\n")
            except ConnectionResetError:
                inner.close()  # the handler's request ends: the model stops
                return resp
        await resp.write_eof()
        return resp

    app.router.add_post("/v1/chat/completions", chat_completions)
    return app


def from_chat_request(asked: dict[str, Any]) -> dict[str, Any]:
    """``FromChatRequest``: a message for each message (string contents), ``max_tokens`` as
    ``num_predict``, the effort as ``think``."""
    messages = [
        {"role": m["role"], "content": m["content"]} | ({"thinking": m["reasoning"]} if m.get("reasoning") else {})
        for m in asked["messages"]
    ]
    options: dict[str, Any] = {"temperature": 1.0, "top_p": 1.0}
    if asked.get("max_tokens") is not None:
        options["num_predict"] = asked["max_tokens"]
    native = {"model": asked["model"], "messages": messages, "options": options, "stream": asked.get("stream") is True}
    effort = (asked.get("reasoning") or {}).get("effort") or asked.get("reasoning_effort")
    if effort:
        native["think"] = False if effort == "none" else effort
    return native


def _chunk(id_: str, line: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": None}
    return {
        "id": id_,
        "object": "chat.completion.chunk",
        "created": CREATED_UNIX,
        "model": line["model"],
        "system_fingerprint": "fp_ollama",
        "choices": [choice],
    }


def to_stream_chunks(id_: str, line: dict[str, Any], first: bool) -> list[dict[str, Any]]:
    """``ToStreamChunks``: one chunk (``content`` always written, ``reasoning`` when there is some),
    or a reasoning chunk and a content chunk when a line has both; the role in the first only."""
    message = line["message"]
    role = {"role": "assistant"} if first else {}
    thinking = message.get("thinking", "")
    if thinking and message["content"]:
        return [
            _chunk(id_, line, role | {"reasoning": thinking}),
            _chunk(id_, line, {"content": message["content"]}),
        ]
    return [_chunk(id_, line, role | {"content": message["content"]} | ({"reasoning": thinking} if thinking else {}))]


def _usage(line: dict[str, Any]) -> dict[str, int]:
    prompt, generated = line.get("prompt_eval_count", 0), line.get("eval_count", 0)
    return {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated}


def to_chat_completion(id_: str, line: dict[str, Any]) -> dict[str, Any]:
    """``ToChatCompletion``: the body of an answer that does not stream."""
    message = line["message"]
    out = {"role": "assistant", "content": message["content"]}
    if message.get("thinking"):
        out["reasoning"] = message["thinking"]
    choice = {"index": 0, "message": out, "finish_reason": line.get("done_reason") or None}
    return {
        "id": id_,
        "object": "chat.completion",
        "created": CREATED_UNIX,
        "model": line["model"],
        "system_fingerprint": "fp_ollama",
        "choices": [choice],
        "usage": _usage(line),
    }


def thinking_model(app: web.Application) -> None:
    """The gateway ``app`` told the model thinks, on an Ollama that reads ``think`` (as ``/api/show``
    and ``/api/version`` say), without asking the emulated upstream."""

    async def model_info(model: str) -> ModelInfo:
        return ModelInfo(thinking=True, version=(0, 33, 0))

    app[THINKEXTRACT_MODEL_INFO] = model_info
