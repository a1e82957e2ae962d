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

Go's encoder writes ``<``, ``>`` and ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026``; so does this one.
What it thinks is said by the last user message (the prompt): ``think N`` or ``think`` (until stopped).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .thinker import ANSWER, FOREVER, Served, token

CREATED = "2026-12-01T10:00:00.000000Z"


def go_json(value: Any) -> bytes:
    """``value`` as Go's ``encoding/json`` spells it (HTML characters escaped, no spaces)."""
    out = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


@dataclass
class OllamaThinker:
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

    async def over(self) -> list[Served]:
        for served in self.served:
            await served.over.wait()
        return self.served

    async def _serve(self, request: web.Request, chat: bool) -> web.StreamResponse:
        served = Served(json.loads(await request.read()))
        self.served.append(served)
        try:
            return await self._answer(request, served, chat)
        except asyncio.CancelledError:
            served.stopped = True
            raise
        finally:
            served.over.set()

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
