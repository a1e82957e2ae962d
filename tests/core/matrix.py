"""The property matrix every surface is held to, and what each surface plugs into it.

A :class:`Case` says, for one surface, how an upstream writes a model's text (a stream in each of its
real layouts, and a non-stream body), how the surface's official client reads a translated answer back
into (reasoning, answer), and which plain reference translator its fast paths are proven against.
``tests/core/test_matrix.py`` runs the same properties over every case.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import Surface
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.base import NewId
from gateway_mw.surfaces.chat import ChatReference
from gateway_mw.surfaces.chat.chunks import NAMES
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
    native_layouts: tuple[str, ...]
    """The layouts of servers that parsed the reasoning themselves (each served on its ``routes``)."""
    native_stream: Callable[[str, str, list[str], list[str]], bytes]
    """Such a server's stream, for a model, of the model's reasoning then its answer, each in pieces."""
    native_body: Callable[[str, str, str, str], bytes]
    """Such a server's non-stream answer, for a model, of (reasoning, answer)."""
    native_read: Callable[[str, str, str], Read]
    """What the surface's client reads of a layout's (reasoning, answer) written that way."""
    native_view: Callable[[ThinkExtractConfig, bytes, bytes], tuple[Any, Any]]
    """(upstream, client) as the native property compares them: the same bytes, or (chat) the same
    events once the reasoning fields are read as the field policy of ``config`` allows them."""
    final: re.Pattern[bytes]
    """What marks the stream's final event, in any layout: every character of the answer arrives before it."""


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


# The layouts of chat servers that parsed the reasoning themselves: the field each writes it in.
_CHAT_NATIVE = {
    "vllm": "reasoning",  # vLLM >= 0.16 with --reasoning-parser
    "vllm-legacy": "reasoning_content",  # older vLLM
    "sglang": "reasoning_content",  # nulls everywhere
    "llamacpp-deepseek": "reasoning_content",  # --reasoning-format deepseek
    "llamacpp-deepseek-legacy": "reasoning_content",  # …deepseek-legacy: the tags kept in content too
    "ollama": "reasoning",  # Ollama's OpenAI-compatible route: role and content in every delta
    "vllm-joined": "reasoning",  # the chunk that ends the reasoning also opens the answer
    "sglang-joined": "reasoning_content",
}
_REASONING_FIELDS = ("reasoning", "reasoning_content")


def _chat_server(layout: str) -> str:
    """The layout of ``chatlayouts`` the server's envelope is written in."""
    return layout.split("-")[0]


def _chat_chunk(
    layout: str, model: str, delta: dict[str, Any], finish: str | None = None, first: bool = False
) -> bytes:
    server = _chat_server(layout)
    doc = chatlayouts.body(server, None, finish, first) | {"model": model}
    written = doc["choices"][0]["delta"]
    written.update(delta)  # SGLang's other fields stay, null
    return b"data: " + chatlayouts.dumps(doc, server).encode() + b"\n\n"


def _chat_native_stream(layout: str, model: str, reasoning: list[str], answer: list[str]) -> bytes:
    field = _CHAT_NATIVE[layout]
    legacy = layout == "llamacpp-deepseek-legacy"
    events = [_chat_chunk(layout, model, {"content": ""}, first=True)]
    for i, piece in enumerate(reasoning):
        delta = {"content": "", field: piece} if layout == "ollama" else {field: piece}
        if legacy:  # llama.cpp's deepseek-legacy: the reasoning also in content, tags and all
            delta = {"content": ("<think>" if i == 0 else "") + piece, field: piece}
        events.append(_chat_chunk(layout, model, delta))
    rest = list(answer)
    if layout.endswith("-joined"):  # content before the reasoning field, in the servers' field order
        events[-1] = _chat_chunk(layout, model, {"content": rest.pop(0), field: reasoning[-1]})
    for i, piece in enumerate(rest):
        events.append(_chat_chunk(layout, model, {"content": ("</think>" if legacy and i == 0 else "") + piece}))
    events += [_chat_chunk(layout, model, {}, "stop"), b"data: [DONE]\n\n"]
    return b"".join(events)


def _chat_native_body(layout: str, model: str, reasoning: str, answer: str) -> bytes:
    field = _CHAT_NATIVE[layout]
    message: dict[str, Any] = {"role": "assistant", "content": _chat_native_read(layout, reasoning, answer)[1]}
    if _chat_server(layout) == "vllm":  # pydantic's every field, nulls included
        message |= {"refusal": None, "annotations": None, "audio": None, "function_call": None, "tool_calls": []}
    if _chat_server(layout) == "sglang":
        message |= {"tool_calls": None}
    message[field] = reasoning
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    envelope = {"id": "c", "object": "chat.completion", "created": 1, "model": model}
    return json.dumps({**envelope, "choices": [choice]}, separators=(",", ":"), ensure_ascii=False).encode()


def _chat_native_read(layout: str, reasoning: str, answer: str) -> Read:
    legacy = layout == "llamacpp-deepseek-legacy"
    return reasoning, f"<think>{reasoning}</think>{answer}" if legacy else answer


def _chat_policy_fields(config: ThinkExtractConfig) -> set[str]:
    """The reasoning fields the chat field policy of ``config`` writes server-parsed reasoning under,
    besides the server's own."""
    return set(NAMES[config.chat_reasoning_field]) if config.chat_mirror_reasoning else set()


def _chat_view(config: ThinkExtractConfig, upstream: bytes, client: bytes) -> tuple[Any, Any]:
    """Each event (or the body) of both, the reasoning fields of every delta (or message) taken out once
    checked: the upstream's reasoning text is under the server's field and the policy's, and under
    no field other than once, as the upstream wrote it."""

    def docs(body: bytes) -> list[Any]:
        if not body.startswith(b"data:"):
            return [json.loads(body, object_pairs_hook=list)]
        return [
            json.loads(e.data, object_pairs_hook=list) if e.data != b"[DONE]" else "[DONE]"
            for e in SSEDecoder().feed(body)
            if e.data is not None
        ]

    def holders(doc: Any) -> list[list[Any]]:
        """The delta or message of each choice (as lists of pairs, changed in place)."""
        out = []
        for key, value in doc if isinstance(doc, list) else []:
            if key == "choices":
                for choice in value:
                    out += [v for k, v in choice if k in ("delta", "message")]
        return out

    def take(holder: list[Any]) -> dict[str, Any]:
        """The reasoning fields of ``holder`` that say something, taken out (a null says nothing)."""
        said = {k: v for k, v in holder if k in _REASONING_FIELDS and v is not None}
        holder[:] = [(k, v) for k, v in holder if k not in _REASONING_FIELDS]
        return said

    ups, outs = docs(upstream), docs(client)
    assert len(ups) == len(outs), (len(ups), len(outs))
    for up, out in zip(ups, outs, strict=True):
        for up_holder, out_holder in zip(holders(up), holders(out), strict=True):
            written, given = take(up_holder), take(out_holder)
            texts = set(written.values())
            assert len(texts) <= 1, written  # a server that writes both names writes the same text
            if texts:
                (text,) = texts
                assert set(given) == set(written) | _chat_policy_fields(config), (given, written)
                assert given == dict.fromkeys(given, text), (given, text)
            else:
                assert given == {}, given
    return ups, outs


CHAT = Case(
    surface="chat",
    routes=dict.fromkeys((*chatlayouts.LAYOUTS, *_CHAT_NATIVE), "/v1/chat/completions"),
    content_type="text/event-stream",
    config=ThinkExtractConfig(),
    layouts=chatlayouts.LAYOUTS,
    stream=_chat_stream,
    body=_chat_body,
    read_stream=_read_chat_stream,
    read_body=_read_chat_body,
    reference=lambda config, new_id: ChatReference(config),
    native_layouts=tuple(_CHAT_NATIVE),
    native_stream=_chat_native_stream,
    native_body=_chat_native_body,
    native_read=_chat_native_read,
    native_view=_chat_view,
    final=re.compile(rb"data: \[DONE\]"),
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


# Ollama >= 0.12.4 parses a thinking model's reasoning itself; "-joined": the line that ends the
# reasoning also opens the answer.
_OLLAMA_NATIVE = ("chat", "chat-joined", "generate", "generate-joined")


def _ollama_native_stream(layout: str, model: str, reasoning: list[str], answer: list[str]) -> bytes:
    kind, _, joined = layout.partition("-")
    return ollama_wire.native_stream(kind, model, reasoning, answer, joined=bool(joined))


def _ollama_native_body(layout: str, model: str, reasoning: str, answer: str) -> bytes:
    return ollama_wire.ndjson([ollama_wire.native_body(layout.partition("-")[0], model, reasoning, answer)])[:-1]


def _same_bytes(config: ThinkExtractConfig, upstream: bytes, client: bytes) -> tuple[Any, Any]:
    return upstream, client


OLLAMA = Case(
    surface="ollama",
    routes={layout: "/api/" + layout.partition("-")[0] for layout in ("chat", "generate", *_OLLAMA_NATIVE)},
    content_type="application/x-ndjson",
    config=ThinkExtractConfig(),
    layouts=("chat", "generate"),
    stream=_ollama_stream,
    body=lambda layout, text: json.dumps(ollama_wire.body(layout, "m", text)).encode(),
    read_stream=lambda body: _read_ollama_lines([line for line in body.split(b"\n") if line.strip()]),
    read_body=lambda body: _read_ollama_lines([body]),
    reference=None,
    native_layouts=_OLLAMA_NATIVE,
    native_stream=_ollama_native_stream,
    native_body=_ollama_native_body,
    native_read=lambda layout, reasoning, answer: (reasoning, answer),
    native_view=_same_bytes,
    final=re.compile(rb'"done": ?true'),
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


def _messages_native_stream(layout: str, model: str, reasoning: list[str], answer: list[str]) -> bytes:
    """A thinking block then a text block, as llama.cpp's and vLLM's /v1/messages write them."""
    w = messageswire
    thinking = {"type": "thinking", "thinking": ""} | ({"signature": ""} if layout == "vllm" else {})
    events = [w.message_start(model), w.start(0, thinking), *(w.thinking(0, p) for p in reasoning)]
    events += [w.delta(0, {"type": "signature_delta", "signature": ""}), w.stop(0)]
    events += [w.start(1), *(w.text(1, p) for p in answer), w.stop(1), *w.end()]
    return _sse(events, layout)


def _messages_native_body(layout: str, model: str, reasoning: str, answer: str) -> bytes:
    thinking = {"type": "thinking", "thinking": reasoning, "signature": ""}
    return _json(messageswire.message(thinking, messageswire.tb(answer), model=model), layout).encode()


def _messages_view(config: ThinkExtractConfig, upstream: bytes, client: bytes) -> tuple[Any, Any]:
    """A server's own reasoning goes on byte for byte, but for the count the gateway writes into the
    ``message_delta`` usage that has none: its thinking deltas, one token each."""
    if upstream.lstrip().startswith(b"{"):
        return upstream, client  # a body: no token counter installed here, so no count

    def events(stream: bytes) -> list[tuple[str | None, bytes | None]]:
        decoder = SSEDecoder()
        return [(e.event, e.data) for e in decoder.feed(stream) + decoder.finish()[0]]

    ups, outs = events(upstream), events(client)
    counted = sum(b'"thinking_delta"' in (data or b"") for _, data in ups)
    expected: list[Any] = []
    for name, data in ups:
        if name == "message_delta" and data is not None and counted:
            doc = json.loads(data)
            doc["usage"] = {**doc["usage"], "output_tokens_details": {"thinking_tokens": counted}}
            expected.append((name, doc))
        else:
            expected.append((name, data))
    given = [(name, json.loads(data)) if name == "message_delta" and counted and data else (name, data)
             for name, data in outs]  # fmt: skip
    return expected, given


MESSAGES = Case(
    surface="messages",
    routes=dict.fromkeys(("anthropic", "llamacpp", "pyjson", "vllm"), "/v1/messages"),
    content_type="text/event-stream",
    config=ThinkExtractConfig(messages_policy="unsigned"),  # thinking blocks, which a client reads as text
    layouts=("anthropic", "llamacpp", "pyjson"),
    stream=_messages_stream,
    body=lambda layout, text: _json(messageswire.message(messageswire.tb(text)), layout).encode(),
    read_stream=_read_messages_stream,
    read_body=_read_messages_body,
    reference=lambda config, new_id: MessagesReference(config),
    native_layouts=("llamacpp", "vllm"),
    native_stream=_messages_native_stream,
    native_body=_messages_native_body,
    native_read=lambda layout, reasoning, answer: (reasoning, answer),
    native_view=_messages_view,
    final=re.compile(rb'"type": ?"message_stop"'),
)


# -- OpenAI Responses -------------------------------------------------------------------------------


def _responses_stream(layout: str, pieces: list[str]) -> bytes:
    events = responseswire.upstream(pieces)
    if layout == "openai":  # OpenAI's own deltas carry an obfuscation member
        events = [{**e, "obfuscation": "Zq3x"} if e["type"].endswith("text.delta") else e for e in events]
    return _sse(events, layout, named=layout != "data-only")


_VLLM_OWN_EVENTS = re.compile(rb"event: response\.reasoning_part\.(added|done)\ndata: [^\n]*\n\n")


def _read_responses_stream(body: bytes) -> Read:
    reasoning, answer = [], []
    # vLLM's own event types (not the API's) the SDK hands on untyped; every other event is validated.
    body = _VLLM_OWN_EVENTS.sub(b"", body)
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


def _vllm_reasoning_item(item_id: str, text: str | None) -> dict[str, Any]:
    """A reasoning item as vLLM's /v1/responses dumps the SDK's type (every field, nulls included)."""
    content = None if text is None else [{"text": text, "type": "reasoning_text"}]
    status = "in_progress" if text is None else "completed"
    return {"id": item_id, "summary": [], "type": "reasoning", "content": content, "encrypted_content": None,
            "status": status}  # fmt: skip


def _vllm_message(item_id: str, text: str | None) -> dict[str, Any]:
    content = [] if text is None else [{"annotations": [], "text": text, "type": "output_text", "logprobs": None}]
    status = "in_progress" if text is None else "completed"
    return {"id": item_id, "content": content, "role": "assistant", "status": status, "type": "message"}


def _responses_native_events(layout: str, model: str, reasoning: list[str], answer: list[str]) -> list[dict[str, Any]]:
    """vLLM's /v1/responses stream with a reasoning parser: a reasoning item, then a message item.
    ``vllm-reasoning-part``: later versions, whose reasoning part opens and closes with events of their
    own (``response.reasoning_part.*``) and whose items' ids are bare uuids."""
    w = responseswire
    part_events = layout == "vllm-reasoning-part"
    r_id, m_id = ("9f1c" * 8, "0d3e" * 8) if part_events else ("msg_a0", "msg_b1")
    r_text, m_text = "".join(reasoning), "".join(answer)
    r_part, m_part = {"type": "reasoning_text", "text": ""}, w.output_text("")
    part = "response.reasoning_part" if part_events else "response.content_part"
    at_r = {"item_id": r_id, "output_index": 0, "content_index": 0}
    events = [w.created(model), w.in_progress(model), w.added(0, _vllm_reasoning_item(r_id, None))]
    events += [w.ev(f"{part}.added", **at_r, part=r_part)]
    events += [w.ev("response.reasoning_text.delta", **at_r, delta=p) for p in reasoning]
    events += [
        w.ev("response.reasoning_text.done", **at_r, text=r_text),
        w.ev(f"{part}.done", **at_r, part={"type": "reasoning_text", "text": r_text}),
        w.item_done(0, _vllm_reasoning_item(r_id, r_text)),
        w.added(1, _vllm_message(m_id, None)),
        w.part_added(m_id, 1, m_part),
        *(w.text_delta(m_id, 1, p) for p in answer),
        w.text_done(m_id, 1, m_text),
        w.part_done(m_id, 1, {"annotations": [], "text": m_text, "type": "output_text", "logprobs": None}),
        w.item_done(1, _vllm_message(m_id, m_text)),
        w.completed([_vllm_reasoning_item(r_id, r_text), _vllm_message(m_id, m_text)], model),
    ]
    return w.numbered(events)


def _responses_native_body(layout: str, model: str, reasoning: str, answer: str) -> bytes:
    output = [_vllm_reasoning_item("msg_a0", reasoning), _vllm_message("msg_b1", answer)]
    doc = responseswire.response("completed", output, usage=responseswire.USAGE, model=model)
    return _json(doc, layout.partition("-")[0]).encode()


RESPONSES = Case(
    surface="responses",
    routes=dict.fromkeys(("openai", "data-only", "vllm", "pyjson", "vllm-reasoning-part"), "/v1/responses"),
    content_type="text/event-stream",
    config=ThinkExtractConfig(),
    layouts=("openai", "data-only", "vllm", "pyjson"),
    stream=_responses_stream,
    body=_responses_body,
    read_stream=_read_responses_stream,
    read_body=_read_responses_body,
    reference=lambda config, new_id: ResponsesReference(config, new_id=new_id),
    native_layouts=("vllm", "vllm-reasoning-part"),
    native_stream=lambda layout, model, reasoning, answer: _sse(
        _responses_native_events(layout, model, reasoning, answer), layout.partition("-")[0]
    ),
    native_body=_responses_native_body,
    native_read=lambda layout, reasoning, answer: (reasoning, answer),
    native_view=_same_bytes,
    final=re.compile(rb'"type": ?"response\.completed"'),
)

CASES: dict[Surface, Case] = {case.surface: case for case in (CHAT, MESSAGES, RESPONSES, OLLAMA)}
"""One case per surface of ``gateway_mw.surfaces.registry.SURFACES`` (the matrix fails for one without)."""
