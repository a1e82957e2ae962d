"""The reasoning tokens of an answer, written into a ``usage`` object that lacks them.

Chat completions say how many of the completion's tokens were reasoning in
``usage.completion_tokens_details.reasoning_tokens``, Responses in
``usage.output_tokens_details.reasoning_tokens``, messages in
``usage.output_tokens_details.thinking_tokens``: each surface's definition says where (its
``usage``, a :class:`BodyUsage`; ``None``: its usage has no such count). Servers that split
reasoning themselves may write it; a model whose tags the gateway splits leaves the server nothing
to count, so the gateway writes its own count. A count the server wrote is never changed: only an
absent or ``null`` one is filled. Every other value keeps its bytes.

Two counts, one per kind of answer:

* a stream: the upstream events that carried reasoning (:attr:`~gateway_mw.channels.Counts.reasoning_events`),
  since servers stream one token per event;
* a body: one piece of text, so its reasoning text is tokenized by the server's tokenizer, where the
  application installed a :data:`~gateway_mw.tokencount.TokenCounter` (:func:`to_count` says what to
  ask, :func:`with_counted` writes the answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import msgspec

from ..rawjson import UNREADABLE, Obj, as_int, as_str, encode, is_null, obj

__all__ = ["BodyUsage", "ToCount", "UsageField", "to_count", "with_counted", "with_reasoning_tokens"]


class UsageField(NamedTuple):
    """Where a surface's usage says how many tokens were reasoning: ``usage[details][name]``."""

    details: str
    name: str


class BodyUsage(NamedTuple):
    """A surface's usage with a reasoning count (Ollama's native API has none: its ``eval_count`` is
    all the answer's tokens): where the count is, and how a body's reasoning is read."""

    field: UsageField
    answer: str
    """The body's member that holds the answer (``choices``, ``output``, ``content``)."""
    texts: Callable[[msgspec.Raw], list[str]]
    """Each reasoning text of that member, as a client reads it (raises what :data:`~gateway_mw.rawjson.UNREADABLE`
    names when it is not the list a client reads)."""


def with_reasoning_tokens(usage: msgspec.Raw | bytes, field: UsageField, count: int) -> Obj | None:
    """``usage`` (a JSON object) with ``field`` (``details.name``) set to ``count``, or ``None`` when
    it needs nothing: it is not an object, the server wrote its own count there, or there is nothing
    to count (no reasoning seen so far: an answer without any goes on byte for byte).

    SGLang writes its own count at the top (``usage.reasoning_tokens``), outside the API's field: a
    positive one is the server's count and goes where clients read it; its ``0`` is written whether
    or not it counted (no reasoning parser, no count), so the gateway's count stands."""
    fields = obj(usage)
    if fields is None:
        return None
    inner = _details(fields, field)
    if inner is None:
        return None
    own = as_int(fields.get("reasoning_tokens"))
    tokens = own if own is not None and own > 0 else count
    if not tokens:
        return None
    inner[field.name] = tokens
    fields[field.details] = inner
    return fields


def _details(fields: Obj, field: UsageField) -> Obj | None:
    """The usage's details object when its count is missing (``{}`` for no details); ``None`` when
    the server wrote its own count, or details that are not an object (left as they are)."""
    raw = fields.get(field.details)
    inner = {} if raw is None or is_null(raw) else obj(raw)
    if inner is None or not is_null(inner.get(field.name)):
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


def to_count(where: BodyUsage | None, body: bytes | bytearray) -> ToCount | None:
    """What to count in a translated ``body`` (of the surface whose usage ``where`` is) whose usage
    lacks its reasoning count; ``None`` when there is nothing to do: a surface without one, no usage
    object, the server's own count there, or no reasoning in the answer (nothing counted, nothing
    written)."""
    fields = obj(bytes(body)) if where is not None else None
    if where is None or fields is None:
        return None
    usage = obj(fields.get("usage"))
    if usage is None or _details(usage, where.field) is None:
        return None
    answer = fields.get(where.answer)
    try:
        texts = where.texts(answer) if answer is not None else []
    except UNREADABLE:  # not the list a client reads: nothing to count
        return None
    text = "".join(texts)
    if not text:
        return None
    own = as_int(usage.get("reasoning_tokens"))
    return ToCount(as_str(fields.get("model")), text, own if own is not None and own > 0 else None)


def with_counted(where: BodyUsage | None, body: bytes | bytearray, tokens: int) -> bytes | None:
    """``body`` (of the surface whose usage ``where`` is) with ``tokens`` written as its usage's
    reasoning count (unless the server wrote one): only the usage is written anew, every other value
    keeps its bytes; ``None``: nothing written."""
    fields = obj(bytes(body)) if where is not None else None
    if where is None or fields is None or tokens <= 0:
        return None
    usage = fields.get("usage")
    filled = with_reasoning_tokens(usage, where.field, tokens) if usage is not None else None
    if filled is None:
        return None
    fields["usage"] = filled
    return encode(fields)
