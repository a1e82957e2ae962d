"""Edits on a chunk's bytes that provably give what the rebuild (:func:`.chunks.rewritten`) would: a
delta's text replaced, its ``content`` key renamed to the reasoning field, its text taken out. Every
other byte is kept (the spacing, the key order, the escapes of the other values), and an edit that
cannot be proven is declined."""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from ...rawjson import as_str, escaped, string_at
from .chunks import ReadDelta, encode

__all__ = ["FIELD_KEYS", "edited", "renamed_all", "without_text"]

CONTENT_KEY = b'"content"'
FIELD_KEYS = {field: b'"' + field.encode() + b'"' for field in ("reasoning_content", "reasoning")}
# Both names: the first with its value, then the second's key (its value follows as it came).
_FIRST = b'"reasoning_content":'
_SECOND = b',"reasoning"'
_SPACE = b" \t\r\n"
_COMMA, _BRACE = ord(","), ord("{")


class _CheckedChoice(msgspec.Struct, gc=False):
    delta: dict[str, msgspec.Raw] = {}


class _Checked(msgspec.Struct, gc=False):
    """An edited chunk read back, to prove which ``content`` key the edit hit."""

    choices: tuple[_CheckedChoice]


_decode_checked = msgspec.json.Decoder(_Checked).decode


def edited(data: bytes, delta: ReadDelta, field: str, reasoning: bool, text: str) -> bytes | None:
    """``data`` (a chunk whose one choice's text comes out as one run) with that delta's text
    replaced by ``text`` and, for ``reasoning``, its ``content`` key renamed to ``field`` (an
    explicit empty ``field`` of the delta renamed ``content``; for ``both``, see
    :func:`_edited_both`): what the rebuild gives, every other byte kept. ``None`` when unproven.
    ``data`` may be a whole ``data: …`` event.

    With no ``\\u`` escape in the chunk every key is spelled as itself, so a ``"content"`` that
    occurs once is the delta's key (the decoder saw that key), and so is a reasoning field's name
    that occurs once when the decoder saw the delta carry it. With escapes the edited chunk is read
    back: the delta must carry ``text`` where it belongs (and no ``content`` beside it).
    """
    original = delta.content
    if not original:
        return None
    if field == "both":
        if reasoning:
            return _edited_both(data, delta, text)
        field = "reasoning_content"  # the answer's text alone: no name of reasoning is written
    has_escape = escaped(data)
    key = FIELD_KEYS[field]
    present = getattr(delta, field) is not UNSET  # an explicit empty field: the keys trade names
    if reasoning and text == original:
        out = _renamed(data, key, present, has_escape)
    else:
        out = _replaced(data, key, present, has_escape, reasoning, text, original)
    if out is None or not has_escape:
        return out
    try:
        read = _decode_checked(out[6:-2] if out.startswith(b"data: ") else out).choices[0].delta
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if reasoning and ("content" in read or as_str(read.get(field)) != text):
        return None
    if not reasoning and as_str(read.get("content")) != text:
        return None
    return out


def without_text(data: bytes) -> bytes | None:
    """``data`` (a chunk whose one choice's text was all held, a tag, while its delta says something
    else: Ollama writes ``role`` in every delta) with the delta's ``content`` member taken out: what
    the rebuild gives, the choice kept for what else it says, every other byte kept. ``None`` when
    unproven: only without ``\\u`` escapes is a ``"content"`` that occurs once the delta's key."""
    if escaped(data):
        return None
    at = data.find(CONTENT_KEY)
    if at < 0 or data.find(CONTENT_KEY, at + 9) >= 0:
        return None
    value = string_at(data, at + 9)
    if value is None:
        return None
    start, end = at, value[1]
    while data[start - 1] in _SPACE:
        start -= 1
    if data[start - 1] == _COMMA:  # a member before it: its comma goes with it
        return data[: start - 1] + data[end:]
    if data[start - 1] != _BRACE:
        return None
    while data[end] in _SPACE:  # the first member: the comma after it goes with it
        end += 1
    if data[end] != _COMMA:
        return None
    end += 1
    while data[end] in _SPACE:
        end += 1
    return data[:at] + data[end:]


def _edited_both(data: bytes, delta: ReadDelta, text: str) -> bytes | None:
    """:func:`edited` for ``both``, as ``with_text`` writes the two names: in ``content``'s place
    ``"reasoning_content":…,"reasoning":…`` (the same string), and an explicit empty name of the
    delta renamed ``content`` in its own place. The first name is put in front of the key, which is
    renamed ``reasoning``: its value is only scanned when the text changed. Without ``\\u`` escapes
    only: every key is then spelled as itself, so a ``"content"`` that occurs once is the delta's key."""
    if escaped(data):
        return None
    has_content, has_reasoning = delta.reasoning_content is not UNSET, delta.reasoning is not UNSET
    if has_content and has_reasoning:
        return None  # both spelled: the rebuild drops one
    at = data.find(CONTENT_KEY)
    if at < 0 or data.find(CONTENT_KEY, at + 9) >= 0:
        return None
    value = encode(text)
    rest = at + 9  # where the bytes after the new names resume
    names: tuple[bytes, ...] = (_FIRST, value, _SECOND)
    if text != delta.content:
        span = string_at(data, rest)
        if span is None:
            return None
        names += (data[rest : span[0]], value)
        rest = span[1]
    if not (has_content or has_reasoning):
        return b"".join((data[:at], *names, data[rest:]))
    key = FIELD_KEYS["reasoning_content" if has_content else "reasoning"]
    k = data.find(key)
    if k < 0 or data.find(key, k + len(key)) >= 0:
        return None  # the name must be the delta's key alone
    if k >= rest:
        return b"".join((data[:at], *names, data[rest:k], CONTENT_KEY, data[k + len(key) :]))
    if k + len(key) <= at:
        return b"".join((data[:k], CONTENT_KEY, data[k + len(key) : at], *names, data[rest:]))
    return None


def _renamed(data: bytes, key: bytes, present: bool, has_escape: bool) -> bytes | None:
    """The steady case: the ``content`` key renamed (or traded with an explicit empty ``key``)."""
    parts = data.split(CONTENT_KEY)
    if len(parts) != 2:
        return None
    if not present:
        return key.join(parts)
    if has_escape or data.count(key) != 1:
        return None  # the reasoning field's name must be the delta's key alone
    head, tail = parts
    size = len(key)
    i = tail.find(key)  # SGLang writes it after the text
    if i >= 0:
        return b"".join((head, key, tail[:i], CONTENT_KEY, tail[i + size :]))
    i = head.find(key)
    if i < 0:
        return None
    return b"".join((head[:i], CONTENT_KEY, head[i + size :], key, tail))


def _replaced(
    data: bytes, key: bytes, present: bool, has_escape: bool, reasoning: bool, text: str, original: str
) -> bytes | None:
    """The text replaced and, for ``reasoning``, the key renamed (or traded)."""
    at = data.find(CONTENT_KEY)
    if at < 0 or data.find(CONTENT_KEY, at + 9) >= 0:
        return None
    value = string_at(data, at + 9) if text != original else None
    if value is None and text != original:
        return None
    if not reasoning:  # the text alone
        if value is None:
            return data  # the same text (a held character given back at the finish, say)
        return b"".join((data[: value[0]], encode(text), data[value[1] :]))
    if not present:  # the key and, when it changed, the text
        if value is None:
            return b"".join((data[:at], key, data[at + 9 :]))
        return b"".join((data[:at], key, data[at + 9 : value[0]], encode(text), data[value[1] :]))
    start = data.find(key)
    if has_escape or start < 0 or data.find(key, start + len(key)) >= 0:
        return None
    size = len(key)
    if value is None:
        middle: tuple[bytes, ...] = (key,)
        lo, hi = at, at + 9
    else:
        middle = (key, data[at + 9 : value[0]], encode(text))
        lo, hi = at, value[1]
    if start < lo:
        return b"".join((data[:start], CONTENT_KEY, data[start + size : lo], *middle, data[hi:]))
    if start >= hi:
        return b"".join((data[:lo], *middle, data[hi:start], CONTENT_KEY, data[start + size :]))
    return None


def renamed_all(span: bytes, bodies: list[bytes], deltas: list[ReadDelta], field: str) -> bytes | None:
    """Steady reasoning: ``span`` (the ``data:`` lines ``bodies`` of chunks whose one delta each is
    ``deltas``) with each event's ``content`` key renamed to ``field`` (for ``both``, as
    :func:`_edited_both` writes it)."""
    # With no escapes every event holds its delta's key spelled as itself: then one each.
    if not escaped(span) and span.count(CONTENT_KEY) == len(deltas):
        if field != "both" and all(getattr(d, field) is UNSET for d in deltas):
            return span.replace(CONTENT_KEY, FIELD_KEYS[field])
        if field == "both" and all(d.reasoning_content is UNSET and d.reasoning is UNSET for d in deltas):
            parts = span.split(CONTENT_KEY)
            joined = [parts[0]]
            for delta, part in zip(deltas, parts[1:], strict=True):
                joined += (_FIRST, encode(delta.content), _SECOND, part)
            return b"".join(joined)
    out: list[bytes] = []
    for body, delta in zip(bodies, deltas, strict=True):
        assert delta.content is not None
        renamed = edited(body, delta, field, True, delta.content)
        if renamed is None:
            return None
        out.append(renamed)
    return b"data: " + b"\n\ndata: ".join(out) + b"\n\n"
