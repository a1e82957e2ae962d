"""What a surface gives the gateway to enforce a reasoning budget on its answers: one
:class:`BudgetSide`, read from its :class:`~.definition.SurfaceDefinition` (``budget``; ``None``:
the gateway enforces none on that surface).

The aiohttp side (``exchange``, ``middleware``, ``continuing``) holds the order of things: the first
answer's translated stream goes through the side's :class:`BudgetCounter` until it cuts; the
continuation's request is the side's (:meth:`BudgetSide.continued`); the continuation's upstream
bytes go through the side's echo filter, the translator, then the counter's :class:`Joiner`; a
client that asked for no stream gets the body the side's :class:`Collector` makes. Everything here
is sans-I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from ..channels import Said

__all__ = [
    "BudgetCounter",
    "BudgetSide",
    "Collector",
    "Edits",
    "Joiner",
    "StreamFilter",
    "appended",
    "joined_said",
    "limited",
    "prefill",
    "prefilled",
    "summed",
]

Edits = dict[str, "bytes | None"]
"""Top-level members of a request to write, each as its JSON bytes (``None``: removed)."""

_encode = msgspec.json.Encoder().encode
_decode_any = msgspec.json.Decoder().decode
_SPACE = b" \t\r\n"


class StreamFilter(Protocol):
    """Bytes of a stream in, the bytes to pass on out, in order."""

    def feed(self, raw: bytes) -> bytes: ...

    def finish(self) -> bytes:
        """At the stream's end: whatever is still held."""
        ...


class Joiner(StreamFilter, Protocol):
    """The continuation's translated events made the rest of the first answer (its ids, its
    numbering after the first answer's, one start and one end of the answer, usage summed)."""

    done: bool
    """The answer's terminal event (``[DONE]``, ``message_stop``, …) went to the client."""

    def closing(self, reason: str = "length") -> bytes:
        """The end of the answer when no continuation follows (or it ended early): what closes
        the first answer well-formed, stopped for ``reason`` (``"length"``: the limit; each
        surface says it in its own words, messages' ``stop_reason: "max_tokens"``)."""
        ...


class BudgetCounter(StreamFilter, Protocol):
    """Counts the reasoning events of the first answer's translated stream on their way to the
    client, and cuts before the event that would go over the budget: :meth:`feed` gives what goes
    to the client."""

    cut: bool
    """The budget was spent: the events after :attr:`counted` were not passed."""
    counted: int
    """The reasoning events that went to the client."""

    @property
    def reasoning(self) -> str:
        """The reasoning text the client got, in order (what the continuation is prefilled with)."""
        ...

    @property
    def model(self) -> str | None:
        """The model the first answer named (the continuation's settings are the model's)."""
        ...

    def joiner(self, max_event_bytes: int) -> Joiner:
        """What makes the continuation the rest of this answer (it knows the ids, the numbering so
        far and what is still open)."""
        ...


class Collector(Protocol):
    """The one body of a client that asked for no stream: fed the client-bound translated events."""

    def feed(self, out: bytes) -> None: ...

    def body(self) -> bytes: ...


class BudgetSide(Protocol):
    """A surface's pieces for a reasoning budget the gateway enforces."""

    def counter(self, budget: int, max_event_bytes: int) -> BudgetCounter:
        """A counter for one answer's translated stream, cutting after ``budget`` reasoning events."""
        ...

    def echo(self, prefill: str, max_event_bytes: int) -> StreamFilter:
        """Takes out of the continuation's upstream bytes (before the translator) the ``prefill``
        a server echoes at the start of its answer; what echoes nothing passes as it came."""
        ...

    def collector(self, max_event_bytes: int) -> Collector:
        """The body a client that asked for no stream gets, from the stream the gateway asked for."""
        ...

    def as_stream(self, body: bytes) -> bytes | None:
        """A continuation answered with one body though a stream was asked for, as the stream of
        the same answer (upstream bytes, before the translator); ``None``: no such body."""
        ...

    def continued(self, top: Mapping[str, msgspec.Raw], prefill: str, spent: int) -> Edits | None:
        """The edits that make ``top`` (a request's top-level members) the continuation: ``prefill``
        as a final assistant turn, the answer's limits reduced by the ``spent`` tokens; ``None``:
        the request cannot be continued (nowhere to put the turn, or a limit used up)."""
        ...


def prefill(open_tag: str, reasoning: str, message: str, close_tag: str) -> str:
    """The final assistant turn the continuation asks the server to go on from."""
    return open_tag + reasoning + message + close_tag


def joined_said(opening: str, reasoning: str, close_tag: str, first: list[Said], then: list[Said]) -> list[Said]:
    """The answer a client got of an answer the budget cut, as the reasoning record keeps an answer
    no budget cut: one answer, written as the model would have written it uncut — ``opening`` (the
    open tag, or nothing where a template injects it), the ``reasoning`` the client got, the
    closing tag, then what the continuation wrote (``then``: its text as the model wrote it, a
    reasoning it reopened included, its tool calls); the ids the client saw of both (``first``:
    the cut answer's items). The early-stop sentence is left out: the client never got it, and a
    client that sends its reasoning back sends none."""
    head = first[0] if first else Said("")
    rest = then[0] if then else Said("")
    ids = (*head.item_ids, *(i for i in rest.item_ids if i not in head.item_ids))
    text = opening + reasoning + close_tag + rest.original
    return [Said(text, head.call_ids + rest.call_ids, ids, head.calls + rest.calls)]


def appended(raw: msgspec.Raw | None, item: object) -> bytes | None:
    """The JSON array ``raw`` with ``item`` added at its end, the rest as its bytes; ``None`` when
    ``raw`` is no array."""
    if raw is None:
        return None
    array = bytes(raw).rstrip(_SPACE)
    if not array.startswith(b"[") or not array.endswith(b"]"):
        return None
    inner = array[1:-1].strip(_SPACE)
    return array[:-1] + (b"," if inner else b"") + _encode(item) + b"]"


def prefilled(top: Mapping[str, msgspec.Raw], prefill: str, limits: Edits | None) -> Edits | None:
    """``messages`` with ``prefill`` as a final assistant message's ``content``, and the ``limits``
    edits; ``None`` when the request has no messages array or no limits (one used up)."""
    messages = appended(top.get("messages"), {"role": "assistant", "content": prefill})
    if messages is None or limits is None:
        return None
    return {"messages": messages} | limits


def limited(top: Mapping[str, msgspec.Raw], names: tuple[str, ...], spent: int) -> Edits | None:
    """The limits on the answer's tokens among ``names`` reduced by ``spent`` (the two requests
    together keep the client's limit); ``None`` when one of them is used up. A member that is no
    non-negative integer is left as it came."""
    edits: Edits = {}
    for name in names:
        limit = _limit(top.get(name))
        if limit is not None:
            if limit <= spent:
                return None
            edits[name] = _encode(limit - spent)
    return edits


def _limit(raw: msgspec.Raw | None) -> int | None:
    if raw is None:
        return None
    try:
        value = _decode_any(raw)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def summed(first: Mapping[str, Any], then: Mapping[str, Any]) -> dict[str, Any]:
    """Two usages added up, number by number (a nested object's too); the rest is the later one's."""
    out = dict(then)
    for key, value in first.items():
        other = then.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and isinstance(other, int):
            out[key] = value + other
        elif isinstance(value, dict) and isinstance(other, dict):
            out[key] = summed(value, other)
        elif key not in then:
            out[key] = value
    return out
