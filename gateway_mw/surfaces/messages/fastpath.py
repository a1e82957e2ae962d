"""The messages fast path's proofs: steady ``text_delta`` events edited on their bytes.

While the one open text block is steady, each event is decoded alone (into :class:`wire.Event`,
or the narrower struct of a run's events) and, when it only continues that block's text, goes
out as it came, renumbered, or renamed into a ``thinking_delta``. The edits here are what the full
path gives, proven either by spelling (a key found once, with no ``\\u`` escape in the event: every
key is then spelled as itself) or by reading the edited event back. Anything unproven is declined.
"""

from __future__ import annotations

import msgspec

from ...rawjson import UNREADABLE, escaped, value_at
from .wire import Event

__all__ = [
    "DATA",
    "EVENT_LINE",
    "NAMED",
    "TEXT_KEY",
    "TEXT_TYPE",
    "THINKING_KEY",
    "THINKING_TYPE",
    "as_thinking",
    "named_events",
    "renumber",
    "run_bodies",
    "run_renumbered",
    "steady_text",
    "with_event_lines",
]

EVENT_LINE = b"event: content_block_delta\n"
NAMED = EVENT_LINE + b"data: "  # how an event of the usual framing starts, up to its data
DATA = b"data: "
_INDEX_KEY = b'"index"'
TEXT_KEY = b'"text"'
TEXT_TYPE = b'"text_delta"'
THINKING_KEY = b'"thinking"'
THINKING_TYPE = b'"thinking_delta"'


class _IndexRead(msgspec.Struct, gc=False):
    """An edited event read back (when it holds ``\\u`` escapes): its index."""

    index: int | None = None


class _ThinkingDeltaRead(msgspec.Struct, gc=False):
    type: str = ""
    thinking: str | None = None
    text: msgspec.Raw = msgspec.Raw()  # empty when absent


class _ThinkingRead(msgspec.Struct, gc=False):
    """A renamed event read back (when it holds ``\\u`` escapes): what the rename must have made."""

    index: int | None = None
    delta: _ThinkingDeltaRead | None = None


_decode_index_read = msgspec.json.Decoder(_IndexRead).decode
_decode_thinking_read = msgspec.json.Decoder(_ThinkingRead).decode


def steady_text(ev: Event, upstream: int, triggers: frozenset[str]) -> str | None:
    """The text of ``ev`` when all it does is continue text block ``upstream`` with text free of
    ``triggers``: a ``text_delta`` with a non-empty text. ``None`` otherwise."""
    delta = ev.delta
    if ev.type != "content_block_delta" or ev.index != upstream or delta is None or delta.type != "text_delta":
        return None
    text = delta.text
    if not text or not triggers.isdisjoint(text):
        return None
    return text


def _number_at(data: bytes, pos: int) -> tuple[int, int] | None:
    """Where the integer that is the value of the key ending at ``pos`` starts and ends."""
    start = value_at(data, pos)
    if start is None:
        return None
    end, n = start, len(data)
    while end < n and data[end] in b"-0123456789":
        end += 1
    return (start, end) if end > start else None


_INDEX_SPELLED = {space: tuple(b'"index":%s%d' % (space, i) for i in range(64)) for space in (b"", b" ")}


def _index_spelled(index: int, space: bytes = b"") -> bytes:
    """``"index":N`` (or ``"index": N``), made once for the first indexes."""
    return _INDEX_SPELLED[space][index] if index < 64 else b'"index":%s%d' % (space, index)


def _index_replaced(data: bytes, old: int, new: int) -> bytes | None:
    """``data`` with the value ``old`` of its one ``"index"`` key made ``new``; ``None`` when the key
    is not there once, or its value is not spelled ``old``."""
    if data.count(_INDEX_KEY) != 1:
        return None
    # Compact or spaced as json.dumps spaces it: the one key, then that number (nothing longer:
    # the decoder read the value as old).
    parts = data.split(_index_spelled(old))
    if len(parts) == 2:
        return _index_spelled(new).join(parts)
    parts = data.split(_index_spelled(old, b" "))
    if len(parts) == 2:
        return _index_spelled(new, b" ").join(parts)
    at = data.find(_INDEX_KEY) + 7
    value = _number_at(data, at)
    if value is None or data[value[0] : value[1]] != b"%d" % old:
        return None
    return b"".join((data[: value[0]], b"%d" % new, data[value[1] :]))


def _body(framed: bytes, head: int) -> bytes:
    """The data of an event: ``framed`` itself (``head`` 0), or its bytes from ``head`` to its blank line."""
    return framed[head:-2] if head else framed


def renumber(data: bytes, old: int, new: int, head: int = 0) -> bytes | None:
    """``data`` (an event the decoder read with top-level ``"index": old``; its data from ``head``,
    see :func:`_body`) with that value made ``new``, every other byte kept: what
    :func:`reindexed` gives. ``None`` when unproven.

    The key found once is the top-level one: with no ``\\u`` escape the decoder's key is spelled
    as itself, so it is that one occurrence; with escapes the edited event is read back and must
    carry ``new``, which an edit anywhere else (a nested key, a string) cannot give it.
    """
    out = _index_replaced(data, old, new)
    if out is not None and escaped(data):
        try:
            if _decode_index_read(_body(out, head)).index != new:
                return None
        except UNREADABLE:
            return None
    return out


def as_thinking(data: bytes, old: int, new: int, text: str, head: int = 0) -> bytes | None:
    """``data`` (a ``text_delta`` event of block ``old`` whose whole text ``text`` is reasoning; its
    data from ``head``, see :func:`_body`) as the ``thinking_delta`` of block ``new`` the full
    rewrite gives: the delta's type and its text key renamed, the index replaced, every other byte
    kept. ``None`` when unproven.

    With no ``\\u`` escape the decoder's keys and the type's value are spelled as themselves, so a
    ``"text"`` and a ``"text_delta"`` found once each are the delta's. With escapes the renamed event
    is read back: the delta must carry ``text`` as its thinking, be a ``thinking_delta``, have no
    ``text`` key left, and the index must be ``new``. A ``"thinking"`` already in the event (a
    member of the text delta, or in its text) is declined: the rewrite drops such a member.
    """
    # A "thinking" member of the text delta would stand beside the renamed key, and a parser keeps
    # the last of two: the rewrite drops it (the text is the thinking), so no rename here.
    if data.find(THINKING_KEY) >= 0:
        return None
    # Each rename adds 4 bytes, and the decoder saw at least one of each: 8 bytes, one of each.
    out = data.replace(TEXT_TYPE, THINKING_TYPE).replace(TEXT_KEY, THINKING_KEY)
    if len(out) != len(data) + 8:
        return None
    if new != old:
        renumbered = _index_replaced(out, old, new)
        if renumbered is None:
            return None
        out = renumbered
    if escaped(data):
        try:
            read = _decode_thinking_read(_body(out, head))
        except UNREADABLE:
            return None
        delta = read.delta
        if read.index != new or delta is None or delta.type != "thinking_delta" or delta.thinking != text or delta.text:
            return None
    return out


_NAMED_BOUNDARY = b"\n\n" + NAMED
_DATA_BOUNDARY = b"\n\ndata: "


def run_bodies(span: bytes) -> tuple[list[bytes], int] | None:
    """The data of each event of ``span``, when each is one ``data:`` line after an ``event:
    content_block_delta`` line or none, and how many have that line; ``None`` for anything else
    (a comment, ``id:``, another ``event:`` line, a blank line, data of several lines)."""
    if not span.endswith(b"\n\n"):
        return None
    lines = span.count(b"\n")
    # The usual framings, all events alike: each boundary is followed by the next event's head,
    # and no event holds a line more than its head's (the count tells).
    if span.startswith(NAMED):
        bodies = span[33:-2].split(_NAMED_BOUNDARY)
        if lines == 3 * len(bodies):
            return bodies, len(bodies)
    elif span.startswith(DATA):
        bodies = span[6:-2].split(_DATA_BOUNDARY)
        if lines == 2 * len(bodies):
            return bodies, 0
    # Framings mixed: event by event.
    pieces = span[:-2].split(b"\n\n")
    bodies = []
    named = 0
    for piece in pieces:
        if piece.startswith(NAMED):
            bodies.append(piece[33:])
            named += 1
        elif piece.startswith(DATA):
            bodies.append(piece[6:])
        else:
            return None
    return (bodies, named) if lines == 2 * len(pieces) + named else None


def run_renumbered(span: bytes, old: int, new: int, count: int) -> bytes | None:
    """``span`` (``count`` events the decoder read with ``"index": old``, no ``\\u`` escape in any)
    with each index made ``new``: every event holds its one key spelled as itself, so ``count``
    keys in all are one each (see :func:`_index_replaced`). ``None`` when unproven."""
    if span.count(_INDEX_KEY) != count:
        return None
    for space in (b"", b" "):
        parts = span.split(_index_spelled(old, space))
        if len(parts) == count + 1:
            return _index_spelled(new, space).join(parts)
    return None


def named_events(bodies: list[bytes]) -> bytes:
    """Events of ``bodies``, each with its ``event:`` line."""
    return b"".join([b"".join((NAMED, body, b"\n\n")) for body in bodies])


def with_event_lines(span: bytes, count: int, named: int) -> bytes:
    """``span`` (``count`` events of one data line each, ``named`` of them with an ``event:`` line)
    with every event given its ``event:`` line, as :meth:`MessagesStream.event` writes them."""
    if named == count:
        return span
    if not named:  # every "\n\n" ends an event: the one before the next data line gets its name
        return EVENT_LINE + span.replace(_DATA_BOUNDARY, _NAMED_BOUNDARY)
    return named_events([p[33:] if p.startswith(NAMED) else p[6:] for p in span[:-2].split(b"\n\n")])
