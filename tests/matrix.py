"""The property matrix every surface is held to, and what each surface plugs into it.

A :class:`Case` says, for one surface, how an upstream writes a model's text (a stream in each of its
real layouts, and a non-stream body), how the surface's official client reads a translated answer back
into (reasoning, answer), and which plain reference translator its fast paths are proven against.
``tests/core/test_matrix.py`` runs the same properties over every case.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import Surface
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.chat import ChatReference

from . import chatlayouts
from .ollama import wire as ollama_wire

Read = tuple[str, str]  # (reasoning, answer) as the client puts them together


class Case(NamedTuple):
    surface: Surface
    routes: dict[str, str]
    """The route each layout is served on."""
    content_type: str
    config: ThinkExtractConfig
    layouts: tuple[str, ...]
    stream: Callable[[str, list[str]], bytes]
    """The upstream's stream in a layout, one event (or line) per text piece, framing included."""
    body: Callable[[str, str], bytes]
    """The upstream's non-stream answer for the whole text, in a layout."""
    read_stream: Callable[[bytes], Read]
    read_body: Callable[[bytes], Read]
    reference: Callable[[ThinkExtractConfig], Any] | None
    """The plain reference translator (``None``: the surface has no fast path, the reference is it)."""


# -- chat completions -------------------------------------------------------------------------------


def _chat_stream(layout: str, pieces: list[str]) -> bytes:
    events = [chatlayouts.event(layout, "", first=True)]
    events += [chatlayouts.event(layout, piece) for piece in pieces]
    events += [chatlayouts.event(layout, None, "stop"), b"data: [DONE]\n\n"]
    return b"".join(events)


def _chat_body(layout: str, text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    envelope = {"id": "c", "object": "chat.completion", "created": 1, "model": "m"}
    return json.dumps({**envelope, "choices": [choice]}).encode()


def _read_chat_stream(body: bytes) -> Read:
    decoder = SSEDecoder()
    reasoning, answer = [], []
    for event in decoder.feed(body) + decoder.finish()[0]:
        if event.data is None or event.data == b"[DONE]":
            continue
        chunk = ChatCompletionChunk.model_validate_json(event.data, strict=True)
        for choice in chunk.choices:
            extra = choice.delta.model_extra or {}
            reasoning.append(extra.get("reasoning_content") or "")
            answer.append(choice.delta.content or "")
    return "".join(reasoning), "".join(answer)


def _read_chat_body(body: bytes) -> Read:
    message = ChatCompletion.model_validate_json(body, strict=True).choices[0].message
    return (message.model_extra or {}).get("reasoning_content") or "", message.content or ""


CHAT = Case(
    surface="chat",
    routes=dict.fromkeys(chatlayouts.LAYOUTS, "/v1/chat/completions"),
    content_type="text/event-stream",
    config=ThinkExtractConfig(),
    layouts=chatlayouts.LAYOUTS,
    stream=_chat_stream,
    body=_chat_body,
    read_stream=_read_chat_stream,
    read_body=_read_chat_body,
    reference=ChatReference,
)


# -- Ollama's native API ----------------------------------------------------------------------------


def _ollama_stream(layout: str, pieces: list[str]) -> bytes:
    return ollama_wire.stream(layout, "m", pieces)


def _read_ollama_lines(lines: list[bytes]) -> Read:
    import ollama

    reasoning, answer = [], []
    for line in lines:
        doc = json.loads(line)
        if "message" in doc:
            message = ollama.ChatResponse.model_validate(doc).message
            reasoning.append(message.thinking or "")
            answer.append(message.content or "")
        else:
            generated = ollama.GenerateResponse.model_validate(doc)
            reasoning.append(generated.thinking or "")
            answer.append(generated.response or "")
    return "".join(reasoning), "".join(answer)


OLLAMA = Case(
    surface="ollama",
    routes={"chat": "/api/chat", "generate": "/api/generate"},
    content_type="application/x-ndjson",
    config=ThinkExtractConfig(),
    layouts=("chat", "generate"),
    stream=_ollama_stream,
    body=lambda layout, text: json.dumps(ollama_wire.body(layout, "m", text)).encode(),
    read_stream=lambda body: _read_ollama_lines([line for line in body.split(b"\n") if line.strip()]),
    read_body=lambda body: _read_ollama_lines([body]),
    reference=None,
)

CASES = {case.surface: case for case in (CHAT, OLLAMA)}
