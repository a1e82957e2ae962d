"""OpenAI Responses requests: the reasoning items of earlier turns (and the model's tags in their
messages' text), given to the upstream in the form of the plan and the shape its server reads.

A reasoning item's text is read from its ``content``, else its ``summary``, else an
``encrypted_content`` the gateway made, else the reasoning record (an ``item_reference`` to an id the
gateway made, or an item that lost its text). In the ``field`` form each server gets the shape it reads:

* vLLM and llama.cpp: ``summary`` (an array) and ``content: [{"type":"reasoning_text","text":…}]``,
  no ``encrypted_content`` (vLLM refuses any; llama.cpp refuses an item without content text);
* Ollama: the text in ``encrypted_content`` as well, the only place it reads;
* OpenAI: the items the gateway made are dropped (it refuses ids and blobs it did not issue);
* any other: ``summary`` and ``content``.

An ``item_reference`` to an id the gateway made that the record cannot resolve is dropped: no server
issued that id.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..marks import decode_blob, is_gateway_id
from ..rawjson import UNREADABLE, Obj, encode
from .plan import Plan
from .recall import Recall, TurnKeys, call_key, conversation_lines, item_key, turn_key
from .text import inline, split_inline, split_written

__all__ = ["answer_key", "asks_for_blobs", "keys", "transform"]

_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_any = msgspec.json.Decoder().decode
_ASSISTANT_SIDE = frozenset({"reasoning", "function_call", "custom_tool_call", "item_reference"})


class _Request(msgspec.Struct, gc=False):
    model: Any = None
    input: msgspec.Raw = msgspec.Raw()
    include: Any = None


_decode_request = msgspec.json.Decoder(_Request).decode


def asks_for_blobs(body: bytes) -> bool:
    """Whether the request's ``include`` asks for ``reasoning.encrypted_content`` (Codex does, and the
    AI SDK with ``store: false``): the gateway's reasoning items then carry one it can read back."""
    try:
        include = _decode_request(body).include
    except UNREADABLE:
        return False
    return isinstance(include, list) and "reasoning.encrypted_content" in include


def _items(body: bytes) -> list[Any] | None:
    try:
        raw = bytes(_decode_request(body).input)
        if not raw.startswith(b"["):
            return None
        items = _decode_any(raw)
    except UNREADABLE:
        return None
    return items if isinstance(items, list) else None


def _kind(item: Any) -> str:
    if not isinstance(item, dict):
        return ""
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"
    return kind if isinstance(kind, str) else ""


def _assistant_side(item: Any) -> bool:
    kind = _kind(item)
    return kind in _ASSISTANT_SIDE or (kind == "message" and item.get("role") == "assistant")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _lines(items: list[Any]) -> list[str]:
    """The conversation's lines (see :func:`conversation_lines`): what a client replays exactly,
    whether it sends items or plain role messages (no reasoning: that is what the record gives back)."""
    return _numbered_lines(items)[0]


class _Turns:
    """The turn key of each prefix of ``items`` (``items[:end]``), each line digested once."""

    def __init__(self, items: list[Any]) -> None:
        lines, self._before = _numbered_lines(items)
        self._keys = TurnKeys(lines)

    def upto(self, end: int) -> str:
        return self._keys.upto(self._before[end])


def _numbered_lines(items: list[Any]) -> tuple[list[str], list[int]]:
    """The lines of ``items``, and how many of them come before each item (one more at the end)."""
    rows: list[tuple[str, str, list[str], str]] = []
    before = []
    for item in items:
        before.append(len(rows))
        kind = _kind(item)
        if kind == "message":
            role = item.get("role")
            rows.append((role if isinstance(role, str) else "", _text(item.get("content")), [], ""))
        elif kind in ("function_call", "custom_tool_call"):
            call = item.get("call_id")
            rows.append(("assistant", "", [call] if isinstance(call, str) else [], ""))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call = item.get("call_id")
            rows.append(("tool", "", [], call if isinstance(call, str) else ""))
    before.append(len(rows))
    return conversation_lines(rows), before


def _turns(items: list[Any]) -> list[tuple[int, int]]:
    """The runs of assistant-side items: [start, end) of each turn."""
    out = []
    i = 0
    while i < len(items):
        if not _assistant_side(items[i]):
            i += 1
            continue
        end = i
        while end < len(items) and _assistant_side(items[end]):
            end += 1
        out.append((i, end))
        i = end
    return out


def _calls(items: list[Any]) -> list[str]:
    return [
        it["call_id"]
        for it in items
        if _kind(it) in ("function_call", "custom_tool_call") and isinstance(it.get("call_id"), str)
    ]


def _bare(items: list[Any]) -> bool:
    """A turn that carries no reasoning of its own (the record may have it)."""
    return not any(_kind(it) in ("reasoning", "item_reference") for it in items)


def answer_key(body: bytes, answer: str) -> str | None:
    """The turn key of a plain answer (no tool call) to this request."""
    try:
        raw = bytes(_decode_request(body).input)
        value = _decode_any(raw) if raw else None
    except UNREADABLE:
        return None
    items = [{"role": "user", "content": value}] if isinstance(value, str) else value
    if not isinstance(items, list):
        return None
    rows = _lines(items) + conversation_lines([("assistant", answer, [], "")])
    return turn_key(rows)


def keys(body: bytes) -> list[str]:
    items = _items(body)
    if items is None:
        return []
    out = []
    for item in items:
        kind = _kind(item)
        item_id = item.get("id")
        if isinstance(item_id, str) and (kind == "item_reference" or (kind == "reasoning" and is_gateway_id(item_id))):
            out.append(item_key(item_id))
    turns: _Turns | None = None
    for start, end in _turns(items):
        calls = _calls(items[start:end])
        if calls:
            out += [call_key(c) for c in calls]
        elif _bare(items[start:end]):
            turns = turns or _Turns(items)
            out.append(turns.upto(end))
    return out


def _recalled(items: list[Any], recall: Recall, plan: Plan) -> dict[int, str]:
    """Turns that carry no reasoning, by their first item: the reasoning the record holds for them."""
    out = {}
    turns: _Turns | None = None
    for start, end in _turns(items):
        turn = items[start:end]
        if not _bare(turn) or any(
            _kind(it) == "message" and split_inline(_text(it.get("content")), plan.config)[0] for it in turn
        ):
            continue
        calls = _calls(turn)
        found = None
        for call in calls:
            found = found or recall.get(call_key(call))
        if found is None and not calls and recall:
            turns = turns or _Turns(items)
            found = recall.get(turns.upto(end))
        if found is not None and found.reasoning:
            out[start] = found.reasoning
    return out


def _reasoning_text(item: dict[str, Any]) -> str:
    for key in ("content", "summary"):
        parts = item.get(key)
        if isinstance(parts, list):
            texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
            if any(texts):
                return "\n".join(t for t in texts if t)
    blob = item.get("encrypted_content")
    text = decode_blob(blob) if isinstance(blob, str) else None
    return text or ""


def _shaped(item: dict[str, Any], reasoning: str, plan: Plan) -> dict[str, Any]:
    """A reasoning item holding ``reasoning`` in the shape the plan's server reads."""
    out: dict[str, Any] = {"type": "reasoning"}
    out.update((k, v) for k, v in item.items() if k not in ("type", "summary", "content", "encrypted_content"))
    summary = item.get("summary")
    if plan.server in ("vllm", "llamacpp"):
        out["summary"] = summary if isinstance(summary, list) and _summary_ok(summary, reasoning) else []
    else:
        out["summary"] = [{"type": "summary_text", "text": reasoning}]
    out["content"] = [{"type": "reasoning_text", "text": reasoning}]
    if plan.server == "ollama":
        out["encrypted_content"] = reasoning  # Ollama reads the thinking text from here only
    return out


def _summary_ok(summary: list[Any], reasoning: str) -> bool:
    texts = [p.get("text") for p in summary if isinstance(p, dict)]
    strings = [t for t in texts if isinstance(t, str)]
    return len(strings) == len(texts) and (not strings or "\n".join(strings) == reasoning)


def _scopes(items: list[Any], plan: Plan) -> list[bool]:
    """Whether each item is in a turn that keeps its reasoning."""
    last_query = max(
        (i for i, it in enumerate(items) if _kind(it) == "message" and it.get("role") == "user"), default=-1
    )
    out = [True] * len(items)
    i = 0
    while i < len(items):
        if not _assistant_side(items[i]):
            i += 1
            continue
        end = i
        while end < len(items) and _assistant_side(items[end]):
            end += 1
        tool_turn = any(_kind(it) in ("function_call", "custom_tool_call") for it in items[i:end])
        for at in range(i, end):
            if plan.scope == "current_turn":
                out[at] = at > last_query
            elif plan.scope == "tool_turns":
                out[at] = tool_turn
        i = end
    return out


def transform(body: bytes, plan: Plan, recall: Recall) -> bytes | None:
    if plan.form == "pass":
        return None
    items = _items(body)
    if items is None:
        return None
    scopes = _scopes(items, plan)
    recalled = _recalled(items, recall, plan) if recall else {}
    new: list[Any] = []
    pending = ""  # reasoning to write inline into the next assistant message of the turn
    for at, item in enumerate(items):
        kind = _kind(item)
        if pending and not _assistant_side(item):
            new.append(_assistant_message(pending, plan))  # the turn ended with no message of its own
            pending = ""
        if at in recalled and scopes[at] and plan.form in ("field", "inline") and plan.server != "openai":
            if plan.form == "field":
                new.append(_shaped({}, recalled[at], plan))  # what the client did not send back
            else:
                pending = recalled[at]
        if kind == "item_reference" and not str(item.get("id")).startswith("rs_"):
            item = _resolved_message(item, recall, plan)  # a message the upstream may not have kept
            kind = _kind(item)
        if kind in ("reasoning", "item_reference"):
            reasoning, made_here = _read_reasoning(item, recall)
            if kind == "item_reference" and reasoning is None and not made_here:
                new.append(item)  # the upstream's own reference
                continue
            if kind == "reasoning" and plan.server == "openai" and not made_here:
                new.append(item)  # OpenAI's own item: it reads it itself
                continue
            if not reasoning or not scopes[at] or plan.form == "strip" or plan.server == "openai":
                continue
            if plan.form == "field":
                new.append(_shaped(item if kind == "reasoning" else {}, reasoning, plan))
            else:
                pending = pending + "\n" + reasoning if pending else reasoning
            continue
        if kind == "message" and item.get("role") == "assistant":
            item, tagged = _message(item, plan, pending if plan.form == "inline" else "")
            pending = ""
            if tagged and scopes[at] and plan.form == "field" and plan.server != "openai":
                new.append(_shaped({}, tagged, plan))
        elif pending and kind in ("function_call", "custom_tool_call"):
            new.append(_assistant_message(pending, plan))
            pending = ""
        new.append(item)
    if pending:
        new.append(_assistant_message(pending, plan))
    if new == items:
        return None
    doc: Obj = _decode_obj(body)
    doc["input"] = new
    out: bytes = encode(doc)
    return out


def _resolved_message(item: dict[str, Any], recall: Recall, plan: Plan) -> dict[str, Any]:
    """A reference to an answer's message item, as the message itself when the record holds that
    answer (its text as the client was given it); else the reference, as it came."""
    item_id = item.get("id")
    found = recall.get(item_key(item_id)) if isinstance(item_id, str) else None
    if found is None or found.original is None:
        return item
    answer = split_written(found.original, plan.config)[1]
    part = {"type": "output_text", "text": answer, "annotations": []}
    return {"type": "message", "role": "assistant", "id": item_id, "content": [part]}


def _read_reasoning(item: dict[str, Any], recall: Recall) -> tuple[str | None, bool]:
    """The text of a reasoning item or reference, and whether the gateway made it."""
    item_id = item.get("id")
    made_here = isinstance(item_id, str) and is_gateway_id(item_id)
    blob = item.get("encrypted_content")
    if isinstance(blob, str) and decode_blob(blob) is not None:
        made_here = True
    text = _reasoning_text(item) if _kind(item) == "reasoning" else ""
    if not text and made_here:
        found = recall.get(item_key(item_id)) if isinstance(item_id, str) else None
        text = found.reasoning if found is not None else ""
    if _kind(item) == "item_reference":
        return (text or None), made_here
    return text, made_here


def _message(item: dict[str, Any], plan: Plan, pending: str) -> tuple[dict[str, Any], str]:
    """An assistant message item: its output_text with the model's tags taken out (the reasoning they
    held is returned) or, for ``pending``, the reasoning written in front of its first text."""
    content = item.get("content")
    if isinstance(content, str):
        if pending:
            return {**item, "content": inline(pending, content, plan.config)}, ""
        found, answer = split_inline(content, plan.config) if plan.form != "inline" else ("", content)
        return ({**item, "content": answer} if found else item), found
    if not isinstance(content, list):
        return item, ""
    parts = list(content)
    tagged = ""
    for at, part in enumerate(parts):
        if not (isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str)):
            continue
        if pending:
            parts[at] = {**part, "text": inline(pending, part["text"], plan.config)}
            return {**item, "content": parts}, ""
        if plan.form != "inline":
            found, answer = split_inline(part["text"], plan.config)
            if found:
                tagged = tagged + "\n" + found if tagged else found
                parts[at] = {**part, "text": answer}
    if pending:
        parts.insert(0, {"type": "output_text", "text": inline(pending, "", plan.config), "annotations": []})
    return ({**item, "content": parts} if parts != content else item), tagged


def _assistant_message(reasoning: str, plan: Plan) -> dict[str, Any]:
    text = inline(reasoning, "", plan.config)
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
