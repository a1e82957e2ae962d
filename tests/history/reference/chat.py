"""Chat completions requests: each earlier assistant message's reasoning, from whatever carrier the
client used, given to the upstream in the form of the plan.

Carriers read, in this order (the first that holds text wins; the others are dropped): the
``reasoning_content`` and ``reasoning`` fields, ``reasoning_details`` (its text or summary entries;
an encrypted entry is a blob no self-hosted server can use), ``{"type":"thinking"}`` content parts,
the model's own tags in the content, and the reasoning record.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gateway_mw.calls import call_spellings
from gateway_mw.history.plan import CHAT_FIELDS, Plan
from gateway_mw.history.recall import Recall, Recalled, Thread, canonical_json, recalled, turn_keys
from gateway_mw.history.text import inline, split_inline, split_written
from gateway_mw.rawjson import UNREADABLE, Obj, as_str, encode

__all__ = ["keys", "prefix", "transform", "transform_messages"]

_CARRIERS = ("reasoning_content", "reasoning", "reasoning_details")
_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_list = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_any = msgspec.json.Decoder().decode


class _Message(msgspec.Struct, gc=False):
    """What is read of every message to place the assistant ones."""

    role: Any = None
    content: msgspec.Raw = msgspec.Raw()
    tool_calls: msgspec.Raw = msgspec.Raw()
    tool_call_id: Any = None


class _Request(msgspec.Struct, gc=False):
    model: Any = None
    messages: list[msgspec.Raw] | None = None


_decode_request = msgspec.json.Decoder(_Request).decode
_decode_message = msgspec.json.Decoder(_Message).decode


class _Call(msgspec.Struct, gc=False):
    id: Any = None


_decode_calls = msgspec.json.Decoder(list[_Call]).decode


def _read(body: bytes) -> tuple[str | None, list[msgspec.Raw], list[_Message]] | None:
    try:
        request = _decode_request(body)
        if not request.messages:
            return None
        messages = [_decode_message(m) for m in request.messages]
    except UNREADABLE:
        return None
    model = request.model if isinstance(request.model, str) else None
    return model, request.messages, messages


def _call_ids(message: _Message) -> list[str]:
    raw = bytes(message.tool_calls)
    if not raw or raw == b"null":
        return []
    try:
        return [c.id for c in _decode_calls(raw) if isinstance(c.id, str)]
    except UNREADABLE:
        return []


def _spellings(message: _Message) -> tuple[str, ...]:
    """The names and arguments of the message's tool calls (a turn whose calls keep no ids is
    found by them)."""
    if not _calls(message):
        return ()
    try:
        return call_spellings(_decode_any(bytes(message.tool_calls)))
    except UNREADABLE:
        return ()


def _calls(message: _Message) -> bool:
    """Whether the message calls tools, whatever its calls' ids (Ollama's clients keep none)."""
    raw = bytes(message.tool_calls).strip()
    return bool(raw) and raw not in (b"null", b"[]")


def _text_of(raw: msgspec.Raw) -> str:
    """A message's text: its string content, or its text parts joined."""
    value = bytes(raw)
    if not value or value == b"null":
        return ""
    try:
        content = _decode_any(value)
    except UNREADABLE:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


_UNSAID = frozenset({*_CARRIERS, "thinking"})  # reasoning a client may or may not send back (Ollama: thinking)


def _thread(model: str | None, raws: list[msgspec.Raw]) -> Thread:
    return Thread(model, b"", raws, lambda raw: canonical_json(raw, _UNSAID))


def prefix(body: bytes) -> bytes | None:
    """The digest of the request's whole conversation: what its answer follows."""
    read = _read(body)
    if read is None:
        return None
    model, raws, _ = read
    return _thread(model, raws).upto(len(raws))


def keys(body: bytes, turns: int) -> list[str]:
    """The record keys of the latest ``turns`` assistant messages: its first tool call's, else its
    answer's and the conversation's before it."""
    read = _read(body)
    if read is None:
        return []
    model, raws, messages = read
    thread = _thread(model, raws)
    out: list[str] = []
    for i in [i for i, m in enumerate(messages) if m.role == "assistant"][-turns:]:
        calls = _call_ids(messages[i])
        said = () if calls else _spellings(messages[i])
        out += turn_keys(thread.upto(i), calls, "" if calls else _text_of(messages[i].content), said)
    return out


def _in_scope(plan: Plan, messages: list[_Message]) -> list[bool]:
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    out = []
    for i, m in enumerate(messages):
        if plan.scope == "current_turn":
            out.append(i > last_user)
        elif plan.scope == "tool_turns":
            out.append(_calls(m))
        else:
            out.append(True)
    return out


def transform(body: bytes, plan: Plan, recall: Recall) -> bytes | None:
    """The request with every assistant message's reasoning in the plan's form; ``None`` when
    nothing changes (the caller forwards the original bytes)."""
    return transform_messages(body, plan, recall, _CARRIERS, CHAT_FIELDS[plan.server])


def transform_messages(
    body: bytes, plan: Plan, recall: Recall, carriers: tuple[str, ...], fields: tuple[str, ...]
) -> bytes | None:
    """:func:`transform` for any list of role messages: ``carriers`` are the fields reasoning may come
    in (all of them dropped), ``fields`` those the upstream reads it from (Ollama's ``/api/chat``:
    ``thinking`` alone)."""
    if plan.form == "pass":
        return None
    read = _read(body)
    if read is None:
        return None
    model, raws, messages = read
    scope = _in_scope(plan, messages)
    changed = False
    new_raws = list(raws)
    thread = _thread(model, raws) if recall else None
    for i, m in enumerate(messages):
        if m.role != "assistant":
            continue
        calls = _call_ids(m)
        found = None
        if thread is not None:
            text, said = ("", ()) if calls else (_text_of(m.content), _spellings(m))
            found = recalled(recall, thread.upto(i), calls, text, plan.config, said)
        new = _message(raws[i], plan, scope[i], _calls(m), found, carriers, fields)
        if new is not None:
            new_raws[i] = msgspec.Raw(new)
            changed = True
    if not changed:
        return None
    doc: Obj = _decode_obj(body)
    doc["messages"] = new_raws
    out: bytes = encode(doc)
    return out


def _reasoning_of(msg: Obj, carriers: tuple[str, ...]) -> str:
    """The reasoning the message carries in its fields: the first that holds text."""
    for key in carriers:
        text = as_str(msg.get(key)) if key != "reasoning_details" else None
        if text:
            return text
    details = msg.get("reasoning_details") if "reasoning_details" in carriers else None
    if details is not None:
        try:
            entries = _decode_any(bytes(details))
        except UNREADABLE:
            entries = None
        if isinstance(entries, list):
            texts = [e["text"] for e in entries if isinstance(e, dict) and isinstance(e.get("text"), str)]
            if not texts:
                texts = [e["summary"] for e in entries if isinstance(e, dict) and isinstance(e.get("summary"), str)]
            return "\n".join(str(t) for t in texts if t)
    return ""


def _message(
    raw: msgspec.Raw,
    plan: Plan,
    in_scope: bool,
    tool_turn: bool,
    found: Recalled | None,
    carriers: tuple[str, ...],
    targets: tuple[str, ...],
) -> bytes | None:
    """One assistant message in the plan's form (its bytes), or ``None`` when it is so already."""
    try:
        msg: Obj = _decode_obj(raw)
    except UNREADABLE:
        return None
    fields = _reasoning_of(msg, carriers)
    content_raw = msg.get("content")
    content: Any = None
    if content_raw is not None:
        try:
            content = _decode_any(bytes(content_raw))
        except UNREADABLE:
            return None
    # The content without the reasoning it carries: thinking parts and the model's tags.
    thinking, tagged, answer, parted = "", "", content, False
    if isinstance(content, str):
        tagged, answer = split_inline(content, plan.config)
    elif isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "thinking":
                parted = True
                text = part.get("thinking")
                thinking = thinking or (text if isinstance(text, str) else "")
                continue
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                found_here, text = split_inline(part["text"], plan.config)
                tagged = tagged or found_here
                part = {**part, "text": text}
            parts.append(part)
        answer = parts
    reasoning = fields or thinking or tagged
    original = None
    if not reasoning and found is not None:
        reasoning, original = found.reasoning, found.original
    keep = bool(reasoning) and in_scope and plan.form in ("field", "inline")
    if keep and plan.harmony and tool_turn and _has_text(answer):
        keep = False  # gpt-oss's template rejects a tool call with both content and reasoning
    if keep and plan.form == "inline" and reasoning == tagged and not parted:
        answer, reasoning = content, ""  # written inline already, as the model wrote it: kept so
    out: Obj = {}
    for key, value in msg.items():
        if key in carriers:
            continue
        if key == "content":
            out[key] = _content(answer, reasoning if keep and plan.form == "inline" else "", plan, original)
            if keep and plan.form == "field":
                for field in targets:
                    out[field] = reasoning
            continue
        out[key] = value
    if "content" not in out and keep:
        if plan.form == "inline":
            out["content"] = _content("", reasoning, plan, original)
        elif targets:
            if "tool_calls" not in out:
                out["content"] = ""  # llama.cpp refuses an assistant message with neither content nor tool calls
            for field in targets:
                out[field] = reasoning
    if out.get("content") is None and "tool_calls" not in out and any(k in out for k in carriers):
        out["content"] = ""  # llama.cpp refuses an assistant message with neither content nor tool calls
    new = encode(out)
    return None if _same(msg, out) else new


def _has_text(answer: Any) -> bool:
    if isinstance(answer, str):
        return bool(answer.strip())
    if isinstance(answer, list):
        return any(isinstance(p, dict) and str(p.get("text", "")).strip() for p in answer)
    return False


def _content(answer: Any, reasoning: str, plan: Plan, original: str | None) -> Any:
    """The content to send: the answer, with the reasoning written in front of it inline."""
    if not reasoning:
        return answer
    if isinstance(answer, list):
        parts = list(answer)
        for at, part in enumerate(parts):
            if isinstance(part, dict) and part.get("type") == "text":
                parts[at] = {**part, "text": inline(reasoning, part.get("text", ""), plan.config)}
                return parts
        return [{"type": "text", "text": inline(reasoning, "", plan.config)}, *parts]
    text = answer if isinstance(answer, str) else ""
    if original is not None and split_written(original, plan.config)[1] == text:
        return original  # the model's own text, byte for byte: prefix caches keep hitting
    return inline(reasoning, text, plan.config)


def _same(before: Obj, after: Obj) -> bool:
    """Whether ``after`` (values decoded or raw) says exactly what ``before`` (raw) does, key order included."""
    if list(before) != list(after):
        return False
    for key, value in after.items():
        old = before[key]
        if isinstance(value, msgspec.Raw):
            if value is not old:
                return False
            continue
        try:
            if _decode_any(bytes(old)) != value:
                return False
        except UNREADABLE:
            return False
    return True
