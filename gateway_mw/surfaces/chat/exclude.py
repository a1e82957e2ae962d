"""Chat completions without reasoning (``reasoning_exclude``): every delta's and message's
``reasoning_content``, ``reasoning`` and ``reasoning_details`` taken out.

A choice whose delta is left saying nothing, and that says nothing else (no ``finish_reason``, no
``logprobs``), leaves its chunk once the client has seen that choice: a choice's first appearance
stays, even empty, because the SDKs' accumulators file choices by the order they first appear. A
chunk left with no choice and nothing else to say (no ``usage``) is dropped: a client that asked for
no reasoning gets no empty chunk per reasoning token either (their count would tell how long the
model reasoned). Every other chunk goes on as it came.
"""

from __future__ import annotations

import msgspec

from ...rawjson import UNREADABLE, Obj, as_int, escaped, obj
from ...sse import SSEEvent, encode_event
from .chunks import DONE, ENVELOPE, decode_list, decode_obj, encode, indexes, says_nothing

__all__ = ["ChatWithoutReasoning", "body_without_reasoning"]

REASONING_KEYS = ("reasoning_content", "reasoning", "reasoning_details")
_ZERO = msgspec.Raw(b"0")


def _may_reason(data: bytes) -> bool:
    """Whether a chunk may carry a reasoning key: one spelled as itself, or any ``\\u`` escape."""
    return data.find(b'"reasoning') >= 0 or escaped(data)


def _without(holder: Obj) -> bool:
    """``holder`` (a delta or a message) without its reasoning keys; whether it had one."""
    found = False
    for key in REASONING_KEYS:
        if key in holder:
            del holder[key]
            found = True
    return found


def _index(choice: Obj) -> int | None:
    """A choice's index as the SDKs read it (0 when it has none, as the chunk reader takes it)."""
    return as_int(choice.get("index", _ZERO))


class ChatWithoutReasoning:
    """A chat stream's chunks without reasoning (a :class:`~..exclude.ReasoningFilter`)."""

    def __init__(self) -> None:
        self._shown: set[int] = set()  # the choices the client has seen

    def events(self, events: list[SSEEvent]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for event in events:
            data = event.data
            if data is None or data == DONE:
                out.append(event)
            elif not _may_reason(data):
                self._shown.update(indexes(data))
                out.append(event)
            else:
                kept = self._chunk(event, data)
                if kept is not None:
                    out.append(kept)
        return out

    def _chunk(self, event: SSEEvent, data: bytes) -> SSEEvent | None:
        """``event`` without reasoning; ``None`` when nothing is left to say."""
        try:
            chunk: Obj = decode_obj(data)
            choices: list[Obj] = (
                decode_list(chunk["choices"]) if "choices" in chunk and not says_nothing(chunk["choices"]) else []
            )
        except UNREADABLE:
            return event  # not a chunk with choices: nothing of ours to take out
        changed = False
        kept: list[Obj] = []
        for choice in choices:
            delta = obj(choice.get("delta"))
            if delta is None or not _without(delta):
                kept.append(choice)
                continue
            changed = True
            choice["delta"] = delta
            quiet = all(says_nothing(v) for v in delta.values()) and all(
                says_nothing(v) for k, v in choice.items() if k not in ("index", "delta")
            )
            if quiet and _index(choice) in self._shown:
                continue  # the client has seen this choice: an empty delta tells it nothing
            kept.append(choice)
        self._shown.update(i for i in map(_index, kept) if i is not None)
        if not changed:
            return event
        if not kept and all(says_nothing(v) for k, v in chunk.items() if k not in ENVELOPE and k != "choices"):
            return None
        chunk["choices"] = kept
        return encode_event(encode(chunk), fields=event.fields)


def body_without_reasoning(body: bytes | bytearray) -> bytes | None:
    """A ``chat.completion`` body without its messages' reasoning; ``None`` when it had none."""
    if not _may_reason(bytes(body)):
        return None
    doc: Obj | None = obj(bytes(body))
    try:
        choices: list[Obj] | None = decode_list(doc["choices"]) if doc is not None and "choices" in doc else None
    except UNREADABLE:
        return None
    if doc is None or not choices:
        return None
    changed = False
    for choice in choices:
        message = obj(choice.get("message"))
        if message is not None and _without(message):
            choice["message"] = message
            changed = True
    if not changed:
        return None
    doc["choices"] = choices
    return encode(doc)
