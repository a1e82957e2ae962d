"""The reasoning tokens of an answer, written into a ``usage`` object that lacks them.

Chat completions say how many of the completion's tokens were reasoning in
``usage.completion_tokens_details.reasoning_tokens``, Responses in
``usage.output_tokens_details.reasoning_tokens``, messages in
``usage.output_tokens_details.thinking_tokens``. Servers that split reasoning themselves may write
it; a model whose tags the gateway splits leaves the server nothing to count, so the gateway writes
its own count. A count the server wrote is never changed: only an absent or ``null`` one is filled.
Every other value keeps its bytes.

Two counts, one per kind of answer:

* a stream: the upstream events that carried reasoning (:attr:`~gateway_mw.channels.Counts.reasoning_events`),
  since servers stream one token per event;
* a body: one piece of text, so its reasoning text is tokenized by the server's tokenizer, where the
  application installed a :data:`~gateway_mw.tokencount.TokenCounter` (:func:`to_count` says what to
  ask, :func:`with_counted` writes the answer).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from ..config import Surface
from ..rawjson import UNREADABLE, Obj, as_int, as_str, encode, is_null, obj

__all__ = ["BODY_USAGE", "ToCount", "UsageField", "to_count", "with_counted", "with_reasoning_tokens"]


class UsageField(NamedTuple):
    """Where a surface's usage says how many tokens were reasoning: ``usage[details][name]``."""

    details: str
    name: str


BODY_USAGE: dict[Surface, UsageField] = {
    "chat": UsageField("completion_tokens_details", "reasoning_tokens"),
    "responses": UsageField("output_tokens_details", "reasoning_tokens"),
    "messages": UsageField("output_tokens_details", "thinking_tokens"),
}
"""The surfaces whose usage has a reasoning count (Ollama's native API has none: its ``eval_count``
is all the answer's tokens)."""


def with_reasoning_tokens(
    usage: msgspec.Raw | bytes, details: str, count: int, name: str = "reasoning_tokens"
) -> Obj | None:
    """``usage`` (a JSON object) with ``details.name`` set to ``count``, or ``None`` when it needs
    nothing: it is not an object, the server wrote its own count there, or there is nothing to
    count (no reasoning seen so far: an answer without any goes on byte for byte).

    SGLang writes its own count at the top (``usage.reasoning_tokens``), outside the API's field: a
    positive one is the server's count and goes where clients read it; its ``0`` is written whether
    or not it counted (no reasoning parser, no count), so the gateway's count stands."""
    fields = obj(usage)
    if fields is None:
        return None
    inner = _details(fields, details, name)
    if inner is None:
        return None
    own = as_int(fields.get("reasoning_tokens"))
    tokens = own if own is not None and own > 0 else count
    if not tokens:
        return None
    inner[name] = tokens
    fields[details] = inner
    return fields


def _details(fields: Obj, details: str, name: str) -> Obj | None:
    """The usage's details object when its count is missing (``{}`` for no details); ``None`` when
    the server wrote its own count, or details that are not an object (left as they are)."""
    raw = fields.get(details)
    inner = {} if raw is None or is_null(raw) else obj(raw)
    if inner is None or not is_null(inner.get(name)):
        return None
    return inner


# -- non-stream bodies -----------------------------------------------------------------------------


class ToCount(NamedTuple):
    """A body's reasoning whose tokens its usage lacks."""

    model: str | None
    """The answer's ``model``: the tokenizer to ask."""
    text: str
    """All of the answer's reasoning (every choice's, item's or block's), joined: one ask per body."""
    known: int | None = None
    """A count the server wrote outside the API's field (SGLang's ``usage.reasoning_tokens``): no
    tokenizer is asked."""


class _Part(msgspec.Struct):
    type: Any = None
    text: Any = None
    thinking: Any = None


class _Message(msgspec.Struct):
    reasoning_content: Any = None
    reasoning: Any = None


class _Choice(msgspec.Struct):
    message: _Message | None = None


class _Item(msgspec.Struct):
    type: Any = None
    content: list[_Part] | None = None
    summary: list[_Part] | None = None


_choices = msgspec.json.Decoder(list[_Choice]).decode
_items = msgspec.json.Decoder(list[_Item]).decode
_parts = msgspec.json.Decoder(list[_Part]).decode


def _texts(surface: Surface, answer: msgspec.Raw) -> list[str]:
    """Each reasoning text of a translated body's ``choices`` (chat), ``output`` (Responses) or
    ``content`` (messages), as a client reads it."""
    out: list[str] = []
    if surface == "chat":
        for choice in _choices(answer):
            message = choice.message
            if message is not None:
                text = message.reasoning_content if isinstance(message.reasoning_content, str) else message.reasoning
                if isinstance(text, str):
                    out.append(text)
    elif surface == "responses":
        for item in _items(answer):
            if item.type != "reasoning":
                continue
            parts = item.content or item.summary or []  # the same text, where both are written
            out += [p.text for p in parts if isinstance(p.text, str)]
    else:  # a redacted_thinking block's data is not text to count
        out += [p.thinking for p in _parts(answer) if p.type == "thinking" and isinstance(p.thinking, str)]
    return out


_ANSWER = {"chat": "choices", "responses": "output", "messages": "content"}


def to_count(surface: Surface, body: bytes | bytearray) -> ToCount | None:
    """What to count in a translated ``body`` whose usage lacks its reasoning count; ``None`` when
    there is nothing to do: a surface without one, no usage object, the server's own count there, or
    no reasoning in the answer (nothing counted, nothing written)."""
    where = BODY_USAGE.get(surface)
    fields = obj(bytes(body)) if where is not None else None
    if where is None or fields is None:
        return None
    usage = obj(fields.get("usage"))
    if usage is None or _details(usage, where.details, where.name) is None:
        return None
    answer = fields.get(_ANSWER[surface])
    try:
        texts = _texts(surface, answer) if answer is not None else []
    except UNREADABLE:  # not the list a client reads: nothing to count
        return None
    text = "".join(texts)
    if not text:
        return None
    own = as_int(usage.get("reasoning_tokens"))
    return ToCount(as_str(fields.get("model")), text, own if own is not None and own > 0 else None)


def with_counted(surface: Surface, body: bytes | bytearray, tokens: int) -> bytes | None:
    """``body`` with ``tokens`` written as its usage's reasoning count (unless the server wrote one):
    only the usage is written anew, every other value keeps its bytes; ``None``: nothing written."""
    where = BODY_USAGE.get(surface)
    fields = obj(bytes(body)) if where is not None else None
    if where is None or fields is None or tokens <= 0:
        return None
    usage = fields.get("usage")
    filled = with_reasoning_tokens(usage, where.details, tokens, where.name) if usage is not None else None
    if filled is None:
        return None
    fields["usage"] = filled
    return encode(fields)
