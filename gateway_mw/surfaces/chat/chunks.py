"""What the chat translator reads of a chunk (a few fields, decoded by msgspec; the rest skipped), and
the small value helpers its writer and its fast path share."""

from __future__ import annotations

from typing import Any, Protocol, cast

import msgspec
from msgspec import UNSET, UnsetType

from ...rawjson import as_int

__all__ = [
    "DONE",
    "EMPTY_RAW",
    "ENVELOPE",
    "NAMES",
    "NULL",
    "Chunk",
    "ChunkChoice",
    "Delta",
    "Obj",
    "ReadChoice",
    "ReadDelta",
    "decode_any",
    "decode_call_ids",
    "decode_chunk",
    "decode_list",
    "decode_obj",
    "delta_of",
    "encode",
    "has_native_reasoning",
    "indexes",
    "is_null",
    "mirror_of",
    "says_nothing",
    "with_mirror",
    "with_text",
]

DONE = b"[DONE]"
# Top-level keys every split or synthesized chunk repeats; the other keys travel once, on the last.
ENVELOPE = ("id", "object", "created", "model", "system_fingerprint", "service_tier", "obfuscation")
Obj = dict[str, Any]  # a JSON object whose values are msgspec.Raw except where the translator wrote
EMPTY_RAW = (b"", b"null", b"false", b"[]", b"{}", b'""')
_NOTHING_RAW = (b"", b"null", b"[]", b"{}", b'""')  # values that say nothing in a delta or a choice
NULL = msgspec.Raw(b"null")
# The keys a run's text is written under: the answer's, and the reasoning's per chat_reasoning_field.
NAMES = {
    "content": ("content",),
    "both": ("reasoning_content", "reasoning"),
    "reasoning_content": ("reasoning_content",),
    "reasoning": ("reasoning",),
}


class Delta(msgspec.Struct, gc=False):
    content: str | None = None
    role: msgspec.Raw = msgspec.Raw()  # only whether it says something: empty when absent
    # UNSET when absent: a steady rename also renames an explicit null (SGLang writes them all).
    reasoning_content: str | UnsetType | None = UNSET
    reasoning: str | UnsetType | None = UNSET
    reasoning_details: msgspec.Raw = msgspec.Raw()  # any JSON; empty when absent
    tool_calls: msgspec.Raw = msgspec.Raw()  # read only for the reasoning record: empty when absent


class ReadDelta(Protocol):
    """A delta as a reader decoded it (:class:`Delta`, or a fast path's narrower struct)."""

    @property
    def content(self) -> str | None: ...
    @property
    def reasoning_content(self) -> str | UnsetType | None: ...
    @property
    def reasoning(self) -> str | UnsetType | None: ...


class ReadChoice(Protocol):
    """A choice as a reader decoded it."""

    @property
    def index(self) -> int: ...
    @property
    def delta(self) -> ReadDelta | None: ...


class ChunkChoice(msgspec.Struct, gc=False):
    given: int | float | str = msgspec.field(default=0, name="index")  # as written: 0, 0.0 or "0"
    delta: Delta | None = None
    finish_reason: str | None = None

    def __post_init__(self) -> None:
        if type(self.given) is not int:  # read as the SDKs read it, or not at all
            index = as_int(msgspec.Raw(msgspec.json.encode(self.given)))
            if index is None:
                raise ValueError("a choice index is a whole number")
            self.given = index

    @property
    def index(self) -> int:
        return cast(int, self.given)


class Chunk(msgspec.Struct, gc=False):
    """The fields of a chunk the translator reads; everything else is skipped by the decoder."""

    model: str | None = None
    choices: list[ChunkChoice] | None = None
    error: msgspec.Raw = msgspec.Raw()


class _CallId(msgspec.Struct, gc=False):
    id: Any = None


class _ChoiceAt(msgspec.Struct, gc=False):
    index: msgspec.Raw = msgspec.Raw(b"0")


class _ChoicesAt(msgspec.Struct, gc=False):
    choices: list[_ChoiceAt] | None = None


decode_chunk = msgspec.json.Decoder(Chunk).decode
decode_call_ids = msgspec.json.Decoder(list[_CallId]).decode
_decode_choices_at = msgspec.json.Decoder(_ChoicesAt).decode
decode_any = msgspec.json.Decoder().decode
# Rewrites decode only the objects on the way to the text; every other value stays raw bytes, so
# it is re-emitted exactly (numbers msgspec would reject, deep nesting, escapes) and cheaply.
decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
decode_list = msgspec.json.Decoder(list[dict[str, msgspec.Raw]]).decode
encode = msgspec.json.Encoder().encode


def has_native_reasoning(delta: Delta) -> bool:
    if delta.reasoning_content or delta.reasoning:
        return True
    details = delta.reasoning_details
    return bool(details) and bytes(details) not in EMPTY_RAW


def mirror_of(field: str, has_content: bool, has_reasoning: bool) -> tuple[str, str] | None:
    """For reasoning an upstream wrote (``has_content``: under ``reasoning_content``, ``has_reasoning``:
    under ``reasoning``), the name it came under and the name of ``field`` it lacks, to be written
    under too; ``None`` when it has every name ``field`` asks for, or none."""
    if has_content == has_reasoning:
        return None
    source, target = ("reasoning_content", "reasoning") if has_content else ("reasoning", "reasoning_content")
    return (source, target) if target in NAMES[field] else None


def is_null(value: Any) -> bool:
    return value is None or (isinstance(value, msgspec.Raw) and bytes(value) in (b"", b"null"))


def says_nothing(value: Any) -> bool:
    """Whether a delta's or a choice's value is absent in all but spelling: null, ``""``, ``[]``, ``{}``."""
    if value is None or value == "":
        return True
    if not isinstance(value, msgspec.Raw):
        return False
    raw = bytes(value)
    return raw in _NOTHING_RAW or (raw[:1] in (b"[", b"{") and not raw[1:-1].strip())


def delta_of(choice: Obj) -> Obj:
    raw = choice.get("delta")
    return decode_obj(raw) if isinstance(raw, msgspec.Raw) and not is_null(raw) else {}


def with_text(obj: Obj, key: str, text: str) -> Obj:
    """``obj`` with its ``content`` replaced by ``text`` under the names of ``key`` (``content``, or a
    ``chat_reasoning_field``: ``both`` is ``reasoning_content`` then ``reasoning``) in the same
    place (else appended).

    An explicit empty reasoning name (``null`` or ``""``, as SGLang writes every absent field)
    trades places with ``content``: ``{"content":"r","reasoning_content":null}`` becomes
    ``{"reasoning_content":"r","content":null}``, as the server writes reasoning it splits itself
    (with two such names, the first trades; the other goes).
    """
    names = NAMES[key]
    out: Obj = {}
    placed = False
    swap = key != "content" and "content" in obj and any(n in obj and says_nothing(obj[n]) for n in names)
    for k, v in obj.items():
        if k == "content":
            for name in names:
                out[name] = text
            placed = True
        elif k not in names:
            out[k] = v
        elif swap and "content" not in out:
            out["content"] = v
    if not placed:
        for name in names:
            out[name] = text
    return out


def with_mirror(delta: Obj, source: str, target: str) -> Obj:
    """``delta`` with ``target`` set to ``source``'s value, right after it (an empty ``target`` replaced)."""
    out: Obj = {}
    for k, v in delta.items():
        if k == target:
            continue
        out[k] = v
        if k == source:
            out[target] = v
    return out


def indexes(data: bytes) -> list[int]:
    """The choice indexes a chunk carries, as the SDKs read them ([] for anything else)."""
    try:
        choices = _decode_choices_at(data).choices or []
    except (msgspec.DecodeError, msgspec.ValidationError):
        return []
    return [i for i in (as_int(c.index) for c in choices) if i is not None]
