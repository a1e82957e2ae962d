"""What the reasoning record gives back for a replayed turn, and the keys it is found by.

The request side is sans-I/O: it first names the keys it would look up (:func:`keys` per surface),
the adapter fetches what the record holds for them, and the transform then reads that mapping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

import msgspec

__all__ = [
    "NOTHING",
    "Recall",
    "Recalled",
    "TurnKeys",
    "assistant_turn_keys",
    "call_key",
    "conversation_lines",
    "item_key",
    "turn_key",
]


class Recalled(msgspec.Struct, frozen=True, kw_only=True):
    """One assistant turn the gateway translated: the reasoning it moved out of the text, and the
    text exactly as the model wrote it (tags included), when known."""

    reasoning: str
    original: str | None = None


Recall = Mapping[str, Recalled]
NOTHING: Recall = {}


def call_key(call_id: str) -> str:
    """A tool call's id (chat ``tool_calls[].id``, Responses ``call_id``, messages ``tool_use.id``)."""
    return "call:" + call_id


def item_key(item_id: str) -> str:
    """An item id the gateway made (``rs_…``, ``msg_…``)."""
    return "item:" + item_id


def conversation_lines(messages: Iterable[tuple[str, str, list[str], str]]) -> list[str]:
    """One line per message, (role, text, tool call ids, tool call ids answered), as the turn key
    digests them: what a client reproduces exactly when it replays the conversation."""
    return ["\x1f".join((role, text, ",".join(calls), answered)) for role, text, calls, answered in messages]


def turn_key(lines: Iterable[str]) -> str:
    """A plain turn (no tool call, no id): the digest of the conversation up to and including it,
    one line per message as :func:`conversation_lines` writes them."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(_line_digest(line))
    return "turn:" + digest.hexdigest()


def _line_digest(line: str) -> bytes:
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).digest()


class TurnKeys:
    """:func:`turn_key` of each prefix of one conversation's lines, each line digested once and only
    as far as asked: a long agent history costs linear time, not the square of its length."""

    __slots__ = ("_digest", "_keys", "_lines")

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = lines
        self._digest = hashlib.sha256()
        self._keys = ["turn:" + self._digest.hexdigest()]

    def upto(self, n: int) -> str:
        """The key of the conversation's first ``n`` lines."""
        keys = self._keys
        while len(keys) <= n:
            self._digest.update(_line_digest(self._lines[len(keys) - 1]))
            keys.append("turn:" + self._digest.hexdigest())
        return keys[n]


class _Turn(Protocol):
    @property
    def role(self) -> str: ...


T = TypeVar("T", bound=_Turn)


def assistant_turn_keys(
    messages: Sequence[T], call_ids: Callable[[T], list[str]], lines: Callable[[], Sequence[str]]
) -> list[str]:
    """The keys the record may hold each assistant turn under: its tool calls' ids, or, for a turn
    without any, the digest of the conversation up to and including it (``lines()``: the
    conversation's lines, asked for only when a turn needs them)."""
    out: list[str] = []
    turns: TurnKeys | None = None
    for i, message in enumerate(messages):
        if message.role == "assistant":
            ids = call_ids(message)
            if ids:
                out += [call_key(c) for c in ids]
            else:
                turns = turns or TurnKeys(lines())
                out.append(turns.upto(i + 1))
    return out
