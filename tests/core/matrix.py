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
from openai.types.responses import Response

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import Surface
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.base import NewId
from gateway_mw.surfaces.chat import ChatReference
from gateway_mw.surfaces.messages import MessagesReference
from gateway_mw.surfaces.responses import ResponsesReference

from .. import chatlayouts, messageswire, responseswire
from ..ollama import wire as ollama_wire

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
    reference: Callable[[ThinkExtractConfig, NewId], Any] | None
    """The plain reference translator (``None``: the surface has no fast path, the reference is it)."""


def _json(doc: Any, layout: str) -> str:
    """``doc`` as ``layout``'s server writes it."""
    if layout in ("llamacpp", "vllm"):  # nlohmann::json, pydantic's field order: sorted, as the SDK types
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    if layout == "pyjson":
        return json.dumps(doc)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def _sse(docs: list[dict[str, Any]], layout: str, named: bool = True) -> bytes:
    return b"".join(
        (f"event: {doc['type']}\n" if named else "").encode() + f"data: {_json(doc, layout)}\n\n".encode()
        for doc in docs
    )


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
    reference=lambda config, new_id: ChatReference(config),
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

# -- Anthropic messages -----------------------------------------------------------------------------


def _messages_stream(layout: str, pieces: list[str]) -> bytes:
    w = messageswire
    return _sse([w.message_start(), w.start(0), *(w.text(0, p) for p in pieces), w.stop(0), *w.end()], layout)


def _read_messages_stream(body: bytes) -> Read:
    reasoning, answer = [], []
    for item in messageswire.read_sse(body):  # each event validated as the anthropic SDK does
        if item["type"] == "content_block_delta":
            reasoning.append(item["delta"].get("thinking", ""))
            answer.append(item["delta"].get("text", ""))
    return "".join(reasoning), "".join(answer)


def _read_messages_body(body: bytes) -> Read:
    content = messageswire.read_message(body)["content"]
    return "".join(b.get("thinking", "") for b in content), "".join(b.get("text", "") for b in content)


MESSAGES = Case(
    surface="messages",
    routes=dict.fromkeys(("anthropic", "llamacpp", "pyjson"), "/v1/messages"),
    content_type="text/event-stream",
    config=ThinkExtractConfig(messages_policy="unsigned"),  # thinking blocks, which a client reads as text
    layouts=("anthropic", "llamacpp", "pyjson"),
    stream=_messages_stream,
    body=lambda layout, text: _json(messageswire.message(messageswire.tb(text)), layout).encode(),
    read_stream=_read_messages_stream,
    read_body=_read_messages_body,
    reference=lambda config, new_id: MessagesReference(config),
)


# -- OpenAI Responses -------------------------------------------------------------------------------


def _responses_stream(layout: str, pieces: list[str]) -> bytes:
    events = responseswire.upstream(pieces)
    if layout == "openai":  # OpenAI's own deltas carry an obfuscation member
        events = [{**e, "obfuscation": "Zq3x"} if e["type"].endswith("text.delta") else e for e in events]
    return _sse(events, layout, named=layout != "data-only")


def _read_responses_stream(body: bytes) -> Read:
    reasoning, answer = [], []
    for item in responseswire.read_events(body, event_lines=None):  # validated against the SDK's types
        if item["type"] == "response.reasoning_text.delta":
            reasoning.append(item["delta"])
        elif item["type"] == "response.output_text.delta":
            answer.append(item["delta"])
    return "".join(reasoning), "".join(answer)


def _read_responses_body(body: bytes) -> Read:
    output = Response.model_validate_json(body, strict=True).output
    reasoning = [c.text for item in output if item.type == "reasoning" for c in item.content or []]
    return "".join(reasoning), "".join(c.text for item in output if item.type == "message" for c in item.content)


def _responses_body(layout: str, text: str) -> bytes:
    output = [responseswire.message("msg_1", [text])]
    return _json(responseswire.response("completed", output, usage=responseswire.USAGE), layout).encode()


RESPONSES = Case(
    surface="responses",
    routes=dict.fromkeys(("openai", "data-only", "vllm", "pyjson"), "/v1/responses"),
    content_type="text/event-stream",
    config=ThinkExtractConfig(),
    layouts=("openai", "data-only", "vllm", "pyjson"),
    stream=_responses_stream,
    body=_responses_body,
    read_stream=_read_responses_stream,
    read_body=_read_responses_body,
    reference=lambda config, new_id: ResponsesReference(config, new_id=new_id),
)

CASES = {case.surface: case for case in (CHAT, MESSAGES, RESPONSES, OLLAMA)}
