"""Anthropic messages requests: each earlier assistant message's reasoning, from its ``thinking``
blocks, the gateway's own ``redacted_thinking`` (decoded) or the model's tags in its text, given to
the upstream in the form of the plan.

``field`` is one ``thinking`` block in front of the content (several are joined: Ollama keeps only
the last), signed as the gateway signs. Before Anthropic itself the blocks the gateway made are
dropped (a signature it did not make is refused there) and the upstream's own pass untouched; before
any other server a ``redacted_thinking`` the gateway did not make is dropped (it can read none, and
SGLang refuses the block).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gateway_mw.history.plan import Plan
from gateway_mw.history.recall import Recall, Recalled, Thread, canonical, canonical_json, recalled, turn_keys
from gateway_mw.history.text import inline, split_inline, split_written
from gateway_mw.marks import SIGNATURE_PREFIX, decode_redacted, gateway_signature
from gateway_mw.rawjson import UNREADABLE, Obj, encode

__all__ = ["keys", "prefix", "transform"]

_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_any = msgspec.json.Decoder().decode


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    content: Any = None


class _Request(msgspec.Struct, gc=False):
    model: Any = None
    system: msgspec.Raw = msgspec.Raw()
    messages: list[msgspec.Raw] | None = None


_decode_request = msgspec.json.Decoder(_Request).decode
_decode_message = msgspec.json.Decoder(_Message).decode


def _read(body: bytes) -> tuple[list[msgspec.Raw], list[_Message], Thread] | None:
    """The messages (raw and read), and the conversation's thread (the system prompt its head)."""
    try:
        request = _decode_request(body)
        if not request.messages:
            return None
        messages = [_decode_message(m) for m in request.messages]
    except UNREADABLE:
        return None
    model = request.model if isinstance(request.model, str) else None
    head = canonical({"system": request.system}) if bytes(request.system) else b""
    thread = Thread(model, head, request.messages, lambda raw: canonical_json(raw))
    return request.messages, messages, thread


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_ids(message: _Message) -> list[str]:
    return [b["id"] for b in _blocks(message.content) if b.get("type") == "tool_use" and isinstance(b.get("id"), str)]


def _is_query(message: _Message) -> bool:
    """A user message that asks something (not only tool results)."""
    if message.role != "user":
        return False
    blocks = _blocks(message.content)
    return not blocks or any(b.get("type") != "tool_result" for b in blocks)


def _text(message: _Message) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(b.get("text", "") for b in _blocks(message.content) if b.get("type") == "text")


def prefix(body: bytes) -> bytes | None:
    """The digest of the request's whole conversation: what its answer follows."""
    read = _read(body)
    if read is None:
        return None
    raws, _, thread = read
    return thread.upto(len(raws))


def keys(body: bytes, turns: int) -> list[str]:
    """The record keys of the latest ``turns`` assistant messages."""
    read = _read(body)
    if read is None:
        return []
    _, messages, thread = read
    out: list[str] = []
    for i in [i for i, m in enumerate(messages) if m.role == "assistant"][-turns:]:
        ids = _tool_ids(messages[i])
        out += turn_keys(thread.upto(i), ids, "" if ids else _text(messages[i]))
    return out


def transform(body: bytes, plan: Plan, recall: Recall) -> bytes | None:
    if plan.form == "pass":
        return None
    read = _read(body)
    if read is None:
        return None
    raws, messages, thread = read
    last_query = max((i for i, m in enumerate(messages) if _is_query(m)), default=-1)
    changed = False
    new_raws = list(raws)
    for i, m in enumerate(messages):
        if m.role != "assistant":
            continue
        ids = _tool_ids(m)
        if plan.scope == "current_turn":
            in_scope = i > last_query
        elif plan.scope == "tool_turns":
            in_scope = bool(ids)
        else:
            in_scope = True
        found = recalled(recall, thread.upto(i), ids, "" if ids else _text(m), plan.config) if recall else None
        new = _message(raws[i], m, plan, in_scope, found)
        if new is not None:
            new_raws[i] = msgspec.Raw(new)
            changed = True
    if not changed:
        return None
    doc: Obj = _decode_obj(body)
    doc["messages"] = new_raws
    out: bytes = encode(doc)
    return out


def _message(raw: msgspec.Raw, message: _Message, plan: Plan, in_scope: bool, found: Recalled | None) -> bytes | None:
    content = message.content
    anthropic = plan.server == "anthropic"
    texts: list[str] = []
    carried = False  # a thinking or redacted_thinking block this request side answers for
    signature = ""
    tagged = ""
    rest: list[Any] = []  # the content without the reasoning it carries, in order
    if isinstance(content, str):
        tagged, answer = split_inline(content, plan.config)
        rest = [answer] if answer or not tagged else []
    elif isinstance(content, list):
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "thinking":
                sig = block.get("signature")
                if anthropic and not (isinstance(sig, str) and sig.startswith(SIGNATURE_PREFIX)):
                    rest.append(block)  # Anthropic's own: it checks it, nothing to do here
                    continue
                carried = True
                if isinstance(block.get("thinking"), str) and block["thinking"]:
                    texts.append(block["thinking"])
                    signature = signature or (sig if isinstance(sig, str) else "")
            elif kind == "redacted_thinking":
                if anthropic:
                    rest.append(block)  # Anthropic's own ciphertext
                    continue
                carried = True
                data = block.get("data")
                text = decode_redacted(data) if isinstance(data, str) else None
                if text:
                    texts.append(text)
            elif kind == "text" and isinstance(block.get("text"), str):
                found_here, answer = split_inline(block["text"], plan.config)
                tagged = tagged or found_here
                rest.append({**block, "text": answer} if found_here else block)
            else:
                rest.append(block)
    else:
        return None
    reasoning = "\n".join(texts) or tagged
    original = None
    if not reasoning and found is not None:
        reasoning, original = found.reasoning, found.original
    form = plan.form if reasoning and in_scope else "strip"
    if form == "field" and anthropic:
        form = "strip"  # a thinking block it did not sign would be refused
    if form == "inline" and reasoning == tagged and not carried:
        return None  # written inline already, as the model wrote it
    if form == "field":
        if not (signature.startswith(SIGNATURE_PREFIX) and signature == gateway_signature(reasoning)):
            signature = gateway_signature(reasoning)
        new_content: Any = [{"type": "thinking", "thinking": reasoning, "signature": signature}, *_as_blocks(rest)]
    elif form == "inline":
        new_content = _inline(rest, reasoning, plan, original)
    else:
        new_content = rest if isinstance(content, list) else ("".join(r for r in rest if isinstance(r, str)))
    if new_content == content:
        return None
    try:
        msg: Obj = _decode_obj(raw)
    except UNREADABLE:
        return None
    msg["content"] = new_content if new_content != [] else ""
    out: bytes = encode(msg)
    return out


def _as_blocks(rest: list[Any]) -> list[Any]:
    return [{"type": "text", "text": r} if isinstance(r, str) else r for r in rest if r != ""]


def _inline(rest: list[Any], reasoning: str, plan: Plan, original: str | None) -> Any:
    if len(rest) <= 1 and all(isinstance(r, str) for r in rest):
        answer = rest[0] if rest else ""
        if original is not None and split_written(original, plan.config)[1] == answer:
            return original
        return inline(reasoning, answer, plan.config)
    blocks = _as_blocks(rest)
    for at, block in enumerate(blocks):
        if isinstance(block, dict) and block.get("type") == "text":
            blocks[at] = {**block, "text": inline(reasoning, block.get("text", ""), plan.config)}
            return blocks
    return [{"type": "text", "text": inline(reasoning, "", plan.config)}, *blocks]
