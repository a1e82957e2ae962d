"""Ollama's native wire format as its server writes it, for the Ollama surface's tests."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

CREATED = "2026-12-01T10:00:00.000000Z"
METRICS = {
    "total_duration": 1234567,
    "load_duration": 1000,
    "prompt_eval_count": 12,
    "prompt_eval_duration": 2000,
    "eval_count": 30,
    "eval_duration": 3000,
}


def chat_line(model: str, content: str, done: bool = False, **message: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "model": model,
        "created_at": CREATED,
        "message": {"role": "assistant", "content": content, **message},
        "done": done,
    }
    if done:
        line |= {"done_reason": "stop", **METRICS}
    return line


def generate_line(model: str, response: str, done: bool = False, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"model": model, "created_at": CREATED, "response": response, "done": done, **extra}
    if done:
        line |= {"done_reason": "stop", "context": [1, 2, 3], **METRICS}
    return line


def ndjson(lines: list[dict[str, Any]]) -> bytes:
    """Go's encoding/json, one object per line (compact, HTML characters escaped as it does)."""
    out = []
    for line in lines:
        text = json.dumps(line, separators=(",", ":"), ensure_ascii=False)
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        out.append(text.encode() + b"\n")
    return b"".join(out)


def stream(kind: str, model: str, pieces: list[str], **extra: Any) -> bytes:
    """What Ollama streams for an answer written in ``pieces``: one line per piece, then the done line."""
    if kind == "chat":
        return ndjson([*(chat_line(model, p, **extra) for p in pieces), chat_line(model, "", done=True)])
    return ndjson([*(generate_line(model, p, **extra) for p in pieces), generate_line(model, "", done=True)])


def body(kind: str, model: str, text: str, **extra: Any) -> dict[str, Any]:
    """The non-stream answer."""
    if kind == "chat":
        return chat_line(model, text, done=True, **extra)
    return generate_line(model, text, done=True, **extra)


def native_chat_line(
    model: str, content: str, thinking: str = "", done: bool = False, older: bool = False
) -> dict[str, Any]:
    """A line of ``/api/chat`` as Ollama ≥ 0.12.4 writes it when it parsed the reasoning itself: Go's
    struct order (``done`` before ``done_reason``; ``older``: ``done_reason`` first, as earlier
    releases declared it), ``thinking`` left out when empty."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking
    line: dict[str, Any] = {"model": model, "created_at": CREATED, "message": message}
    if done and older:
        line["done_reason"] = "stop"
    line["done"] = done
    if done and not older:
        line["done_reason"] = "stop"
    return line | (METRICS if done else {})


def native_generate_line(
    model: str, response: str, thinking: str = "", done: bool = False, older: bool = False
) -> dict[str, Any]:
    """A line of ``/api/generate`` as Ollama writes it when it parsed the reasoning itself."""
    line: dict[str, Any] = {"model": model, "created_at": CREATED, "response": response}
    if thinking:
        line["thinking"] = thinking
    if done and older:
        line["done_reason"] = "stop"
    line["done"] = done
    return line | ({"done_reason": "stop", "context": [1, 2, 3], **METRICS} if done else {})


def native_stream(
    kind: str, model: str, thinking: list[str], answer: list[str], joined: bool = False, older: bool = False
) -> bytes:
    """What Ollama streams when its own parser ran: a line per piece of reasoning, then a line per piece
    of the answer, then the done line. ``joined``: the line that ends the reasoning also opens the
    answer (it carries both)."""
    line = native_chat_line if kind == "chat" else native_generate_line
    lines = [line(model, "", piece) for piece in thinking]
    rest = list(answer)
    if joined and lines and rest:
        lines[-1] = line(model, rest.pop(0), thinking[-1])
    lines += [line(model, piece) for piece in rest]
    return ndjson([*lines, line(model, "", done=True, older=older)])


def native_body(kind: str, model: str, thinking: str, answer: str) -> dict[str, Any]:
    """The non-stream answer when Ollama's own parser ran."""
    if kind == "chat":
        return native_chat_line(model, answer, thinking, done=True)
    return native_generate_line(model, answer, thinking, done=True)


async def respond_lines(request: web.Request, data: bytes) -> web.StreamResponse:
    """An upstream's answer: ``data``'s lines as NDJSON, one write each, as Ollama streams them."""
    resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await resp.prepare(request)
    for line in data.splitlines(keepends=True):
        await resp.write(line)
    await resp.write_eof()
    return resp
