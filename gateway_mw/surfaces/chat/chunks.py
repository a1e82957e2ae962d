"""Chat chunks, read and written: what the chat translator reads of a chunk (a few fields, decoded by
msgspec; the rest skipped), the small value helpers its writer and its fast path share, and the
writer: a chunk rebuilt with its choices' text replaced by runs, and the chunks made for held text or
to announce a choice. Only the objects on the way to a delta's text are decoded; every other value
is re-emitted as its original bytes, in order."""

from __future__ import annotations

from typing import Any, Protocol, cast

import msgspec
from msgspec import UNSET, UnsetType

from ...rawjson import as_int
from ...scanner import CONTENT, Segment, merge_segments

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
    "announcement",
    "decode_any",
    "decode_call_ids",
    "decode_chunk",
    "decode_list",
    "decode_obj",
    "delta_of",
    "encode",
    "envelope_of",
    "has_native_reasoning",
    "held_chunks",
    "indexes",
    "is_null",
    "mirror_of",
    "mirrored",
    "rewritten",
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
    @property
    def role(self) -> msgspec.Raw: ...


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
    usage: msgspec.Raw = msgspec.Raw()  # only whether it says something: empty when absent


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


# -- writing --------------------------------------------------------------------------------------


def rewritten(data: bytes, runs: dict[int, list[Segment]], field: str) -> tuple[list[bytes], Obj | None]:
    """The chunks for ``data`` whose choices at the positions in ``runs`` come out as those runs,
    and the chunk's envelope when it was split (else ``None``).

    Chunk k carries run k of every choice that has one; a choice's other fields go with its first
    run and its ``finish_reason`` with its last, so that each choice reads in order. A choice whose
    text was all held is kept only when it has something else to say."""
    chunk: Obj = decode_obj(data)
    choices: list[Obj] = decode_list(chunk["choices"])
    chunk["choices"] = choices
    if len(choices) == 1 and len(runs[0]) == 1:  # the common case: the delta edited in place
        seg = runs[0][0]
        choice = choices[0]
        choice["delta"] = with_text(delta_of(choice), "content" if seg.kind == CONTENT else field, seg.text)
        return [encode(chunk)], None
    per_choice = [_split_choice(c, runs[pos], field) if pos in runs else [c] for pos, c in enumerate(choices)]
    width = max(1, *(len(parts) for parts in per_choice))  # one chunk even if all was absorbed
    out: list[bytes] = []
    for k in range(width):
        row = [parts[k] for parts in per_choice if k < len(parts)]
        body = _chunk_body(chunk, row, last=k == width - 1)
        if body is not None:
            out.append(encode(body))
    return out, envelope_of(chunk)


def envelope_of(chunk: Obj) -> Obj:
    """The keys every chunk the translator makes repeats."""
    return {k: chunk[k] for k in ENVELOPE if k in chunk}


def held_chunks(envelope: Obj, index: int, segments: list[Segment], field: str) -> list[bytes]:
    """One chunk per run of a choice's held text, in the stream's envelope."""
    out: list[bytes] = []
    for seg in merge_segments(segments):
        names = NAMES["content" if seg.kind == CONTENT else field]
        choice = {"index": index, "delta": dict.fromkeys(names, seg.text), "logprobs": None, "finish_reason": None}
        body = {**envelope, "choices": [choice]}
        body.setdefault("object", "chat.completion.chunk")
        out.append(encode(body))
    return out


def announcement(data: bytes, index: int) -> bytes:
    """A chunk with an empty delta for choice ``index``, in the envelope of ``data``."""
    envelope = envelope_of(decode_obj(data))
    choice = {"index": index, "delta": {}, "logprobs": None, "finish_reason": None}
    body = {**envelope, "choices": [choice]}
    body.setdefault("object", "chat.completion.chunk")
    return encode(body)


def mirrored(data: bytes, mirrors: list[tuple[int, str, str]]) -> bytes:
    """``data`` with the reasoning of the choice at each position of ``mirrors`` under its target
    name too, right after its source name (an empty target replaced)."""
    chunk: Obj = decode_obj(data)
    choices: list[Obj] = decode_list(chunk["choices"])
    for pos, source, target in mirrors:
        choices[pos]["delta"] = with_mirror(delta_of(choices[pos]), source, target)
    chunk["choices"] = choices
    return encode(chunk)


def _split_choice(choice: Obj, runs: list[Segment], field: str) -> list[Obj]:
    delta = delta_of(choice)
    finish = choice.get("finish_reason", NULL)
    parts: list[Obj] = []
    for i, seg in enumerate(runs):
        key = field if seg.kind != CONTENT else "content"
        part = dict(choice) if i == 0 else {"index": choice.get("index", 0)}
        part["delta"] = with_text(delta, key, seg.text) if i == 0 else dict.fromkeys(NAMES[key], seg.text)
        if i == 0 and len(runs) > 1 and "finish_reason" in part:
            part["finish_reason"] = None
        if i > 0:
            part["logprobs"] = None
            part["finish_reason"] = finish if i == len(runs) - 1 else None
        parts.append(part)
    if not parts:  # everything was held: keep the choice only if it has something else to say
        others = {k: v for k, v in delta.items() if k != "content"}
        # Explicit nulls and empty strings say nothing (SGLang spells every absent field so).
        if all(says_nothing(v) for v in others.values()) and all(
            says_nothing(v) for k, v in choice.items() if k not in ("index", "delta")
        ):
            return []
        part = dict(choice)
        part["delta"] = others
        parts.append(part)
    return parts


def _chunk_body(chunk: Obj, row: list[Obj], last: bool) -> Obj | None:
    """The chunk carrying ``row``; the keys outside the envelope travel on the ``last`` one only.
    ``None`` when it would say nothing."""
    body: Obj = {}
    payload = bool(row)
    for key, value in chunk.items():
        if key == "choices":
            body[key] = row
        elif key in ENVELOPE:
            body[key] = value
        elif last:
            body[key] = value
            payload = payload or not is_null(value)
    return body if payload else None
