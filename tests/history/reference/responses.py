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

An ``item_reference`` to a reasoning id the gateway made (``rs_…``) that the record cannot resolve is
dropped: no server issued that id. A reference to a message goes on as it came when the record lacks it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gateway_mw.history.plan import Plan
from gateway_mw.history.recall import Recall, Thread, canonical, item_key, recalled, turn_keys
from gateway_mw.history.serverblobs import decode_server_blob
from gateway_mw.history.text import inline, split_inline, split_written
from gateway_mw.marks import decode_blob, is_gateway_id
from gateway_mw.rawjson import UNREADABLE, Obj, encode

__all__ = ["asks_for_blobs", "keys", "prefix", "transform"]

_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_any = msgspec.json.Decoder().decode
_ASSISTANT_SIDE = frozenset({"reasoning", "function_call", "custom_tool_call", "item_reference"})


class _Request(msgspec.Struct, gc=False):
    model: Any = None
    instructions: msgspec.Raw = msgspec.Raw()
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


def _read(body: bytes) -> tuple[list[Any], _Prefixes, bool] | None:
    """The input's items, the digests of the conversation before each, and whether the input was a
    string (one user message)."""
    try:
        request = _decode_request(body)
        raw = bytes(request.input)
        value = _decode_any(raw) if raw else None
    except UNREADABLE:
        return None
    items = [{"role": "user", "content": value}] if isinstance(value, str) else value
    if not isinstance(items, list):
        return None
    return items, _Prefixes(request, items), isinstance(value, str)


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


def _in_thread(item: Any) -> bool:
    """Whether an item is part of the conversation's digest: reasoning, which a client may or may
    not send back, is not."""
    kind = _kind(item)
    return kind != "reasoning" and not (kind == "item_reference" and str(item.get("id")).startswith("rs_"))


def _sorted_json(value: Any) -> msgspec.Raw:
    try:
        return msgspec.Raw(msgspec.json.encode(value, order="sorted"))
    except (msgspec.EncodeError, UnicodeEncodeError, TypeError, ValueError):  # a lone surrogate, say
        return msgspec.Raw(msgspec.json.encode(repr(value)))


def _spelled(item: Any) -> bytes:
    """An item as :func:`canonical` spells a message (a role message is the same with or without
    its implied ``"type": "message"``)."""
    if not isinstance(item, dict):
        return bytes(_sorted_json(item))
    return canonical({k: _sorted_json(v) for k, v in item.items() if not (k == "type" and v == "message")})


class _Prefixes:
    """The digest of the conversation before each item: the model, the instructions, the items."""

    def __init__(self, request: _Request, items: list[Any]) -> None:
        counted: list[Any] = []
        self._before: list[int] = []
        for item in items:
            self._before.append(len(counted))
            if _in_thread(item):
                counted.append(item)
        self._before.append(len(counted))
        model = request.model if isinstance(request.model, str) else None
        instructions = bytes(request.instructions)
        head = canonical({"system": request.instructions}) if instructions not in (b"", b"null") else b""
        self._thread = Thread(model, head, counted, _spelled)

    def before(self, at: int) -> bytes:
        """The digest of the items before ``items[at]`` (``at == len(items)``: all of them)."""
        return self._thread.upto(self._before[at])


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


def prefix(body: bytes) -> bytes | None:
    """The digest of the request's whole conversation: what its answer follows."""
    read = _read(body)
    if read is None:
        return None
    items, prefixes, _ = read
    return prefixes.before(len(items))


def _turn_text(turn: list[Any]) -> str:
    return "".join(_text(it.get("content")) for it in turn if _kind(it) == "message")


def keys(body: bytes, turns: int) -> list[str]:
    """The record keys of the latest ``turns`` assistant turns."""
    read = _read(body)
    if read is None or read[2]:
        return []
    items, prefixes, _ = read
    out = []
    for start, end in _turns(items)[-turns:]:
        before = prefixes.before(start)
        for item in items[start:end]:
            kind = _kind(item)
            item_id = item.get("id")
            if isinstance(item_id, str) and (
                kind == "item_reference" or (kind == "reasoning" and is_gateway_id(item_id))
            ):
                out.append(item_key(item_id, before))
        if _bare(items[start:end]):
            calls = _calls(items[start:end])
            out += turn_keys(before, calls, "" if calls else _turn_text(items[start:end]))
    return out


def _recalled(items: list[Any], prefixes: _Prefixes, recall: Recall, plan: Plan) -> dict[int, str]:
    """Turns that carry no reasoning, by their first item: the reasoning the record holds for them."""
    out = {}
    for start, end in _turns(items):
        turn = items[start:end]
        if not _bare(turn) or any(
            _kind(it) == "message" and split_inline(_text(it.get("content")), plan.config)[0] for it in turn
        ):
            continue
        calls = _calls(turn)
        found = recalled(recall, prefixes.before(start), calls, "" if calls else _turn_text(turn), plan.config)
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
    if not isinstance(blob, str):
        return ""
    return decode_blob(blob) or decode_server_blob(blob) or ""  # the gateway's, else SGLang's own


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
    read = _read(body)
    if read is None or read[2]:
        return None
    items, prefixes, _ = read
    scopes = _scopes(items, plan)
    found = _recalled(items, prefixes, recall, plan) if recall else {}
    starts = _starts(items)

    def before(at: int) -> bytes:
        """The digest of the conversation before the turn of ``items[at]``: only the record reads it."""
        return prefixes.before(starts[at]) if recall else b""

    new: list[Any] = []
    pending = ""  # reasoning to write inline into the next assistant message of the turn
    for at, item in enumerate(items):
        kind = _kind(item)
        if pending and not _assistant_side(item):
            new.append(_assistant_message(pending, plan))  # the turn ended with no message of its own
            pending = ""
        if at in found and scopes[at] and plan.form in ("field", "inline") and plan.server != "openai":
            if plan.form == "field":
                new.append(_shaped({}, found[at], plan))  # what the client did not send back
            else:
                pending = found[at]
        if kind == "item_reference" and not str(item.get("id")).startswith("rs_"):
            # A message the upstream may not have kept, as the record holds it.
            item = _resolved_message(item, recall, before(at), plan)
            kind = _kind(item)
            if kind == "item_reference":  # the record lacks it: it goes on as it came
                new.append(item)
                continue
        if kind in ("reasoning", "item_reference"):
            reasoning, made_here = _read_reasoning(item, recall, before(at))
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


def _starts(items: list[Any]) -> list[int]:
    """The first item of the turn each item is in (an item that is in none: itself)."""
    out = list(range(len(items)))
    for start, end in _turns(items):
        out[start:end] = [start] * (end - start)
    return out


def _resolved_message(item: dict[str, Any], recall: Recall, before: bytes, plan: Plan) -> dict[str, Any]:
    """A reference to an answer's message item, as the message itself when the record holds that
    answer (its text as the client was given it); else the reference, as it came."""
    item_id = item.get("id")
    found = recall.get(item_key(item_id, before)) if isinstance(item_id, str) else None
    if found is None or found.original is None:
        return item
    answer = split_written(found.original, plan.config)[1]
    part = {"type": "output_text", "text": answer, "annotations": []}
    return {"type": "message", "role": "assistant", "id": item_id, "content": [part]}


def _read_reasoning(item: dict[str, Any], recall: Recall, before: bytes) -> tuple[str | None, bool]:
    """The text of a reasoning item or reference, and whether the gateway made it."""
    item_id = item.get("id")
    made_here = isinstance(item_id, str) and is_gateway_id(item_id)
    blob = item.get("encrypted_content")
    if isinstance(blob, str) and decode_blob(blob) is not None:
        made_here = True
    text = _reasoning_text(item) if _kind(item) == "reasoning" else ""
    if not text and made_here:
        found = recall.get(item_key(item_id, before)) if isinstance(item_id, str) else None
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
