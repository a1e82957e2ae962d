"""Writing chat chunks: a chunk rebuilt with its choices' text replaced by runs, and the chunks made
for held text or to announce a choice. Only the objects on the way to a delta's text are decoded;
every other value is re-emitted as its original bytes, in order."""

from __future__ import annotations

from ...scanner import CONTENT, Segment, merge_segments
from .chunks import (
    ENVELOPE,
    NAMES,
    NULL,
    Obj,
    decode_list,
    decode_obj,
    delta_of,
    encode,
    is_null,
    says_nothing,
    with_mirror,
    with_text,
)

__all__ = ["announcement", "envelope_of", "held_chunks", "mirrored", "rewritten"]


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
