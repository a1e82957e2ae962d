"""JSON as the surfaces rewrite it: decoded only on the way to what changes, every other value kept
as its raw bytes, so that it goes out exactly as it came (number spellings, escapes, key order).

Two tools, for the two sizes of event:

* :func:`obj` / :func:`edit`: a whole event (or body) decoded into ``{key: msgspec.Raw}`` one level
  at a time. As every JSON parser the SDKs use, a duplicate key keeps its last value.
* :class:`TopLevelKeys`: an event too large to hold, rewritten as its bytes go by: the values of a
  few top-level keys (an index, a sequence number) are replaced, every other byte passes through.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from .channels import join_surrogates

__all__ = [
    "UNREADABLE",
    "Obj",
    "TopLevelKeys",
    "all_objects",
    "as_int",
    "as_str",
    "edit",
    "encode",
    "escaped",
    "is_null",
    "join_surrogates",
    "obj",
    "raw_list",
    "string_at",
    "value_at",
]

Obj = dict[str, Any]
"""A JSON object whose values are ``msgspec.Raw`` except where a translator wrote its own."""

UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError)

_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_raw_list = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_str = msgspec.json.Decoder(str).decode
_decode_number = msgspec.json.Decoder(int | float).decode
encode = msgspec.json.Encoder().encode
_NULLS = (b"", b"null")


def obj(raw: msgspec.Raw | bytes | None) -> Obj | None:
    """``raw`` as an object of raw values; ``None`` if it is not a JSON object."""
    if raw is None:
        return None
    try:
        return _decode_obj(raw)
    except UNREADABLE:
        return None


def raw_list(raw: msgspec.Raw | bytes | None) -> list[msgspec.Raw] | None:
    """``raw`` as a list of raw values; ``None`` if it is not a JSON array."""
    if raw is None:
        return None
    try:
        return _decode_raw_list(raw)
    except UNREADABLE:
        return None


def as_str(value: Any) -> str | None:
    """A raw (or already decoded) JSON string value as ``str``; ``None`` for anything else."""
    if isinstance(value, str):
        return value
    if not isinstance(value, msgspec.Raw):
        return None
    try:
        return _decode_str(value)
    except UNREADABLE:
        return None


def as_int(value: Any) -> int | None:
    """A raw JSON whole number as the SDKs read one (``4``, ``4.0`` or ``"4"``) as ``int``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, msgspec.Raw):
        return None
    try:
        number = _decode_number(value)
    except UNREADABLE:
        text = as_str(value)
        text = text.strip() if text is not None else ""
        return int(text) if text.isdecimal() and text.isascii() else None
    if isinstance(number, float):
        return int(number) if number.is_integer() else None
    return number


_OBJECT_OPENS = {ord("{")}  # the first byte of a JSON object


def all_objects(raws: list[msgspec.Raw]) -> bool:
    """Whether every raw JSON value of ``raws`` (decoded ones: never empty) is an object (its first
    byte says: a raw value has no whitespace around it)."""
    return {memoryview(raw)[0] for raw in raws} == _OBJECT_OPENS


def is_null(value: Any) -> bool:
    return value is None or (isinstance(value, msgspec.Raw) and bytes(value) in _NULLS)


def escaped(data: bytes) -> bool:
    """Whether ``data`` holds a ``\\u`` escape: without one, every key and every ASCII value is
    spelled as itself (no other escape stands for a letter or an underscore). ``find``, not ``in``:
    a bytes needle given to ``in`` is first tried as an integer, which costs more than the search."""
    return data.find(b"\\") >= 0 and data.find(b"\\u") >= 0


def value_at(data: bytes, pos: int) -> int | None:
    """Where the value of the key whose closing quote ends at ``pos`` starts (past the colon and
    any whitespace); ``None`` if no colon follows."""
    n = len(data)
    while pos < n and data[pos] in b" \t\r\n":
        pos += 1
    if pos >= n or data[pos] != 58:  # ":"
        return None
    pos += 1
    while pos < n and data[pos] in b" \t\r\n":
        pos += 1
    return pos if pos < n else None


def string_at(data: bytes, pos: int) -> tuple[int, int] | None:
    """Where the JSON string that is the value of the key ending at ``pos`` starts and ends."""
    if data.startswith(b':"', pos):  # compact JSON: no whitespace to step over
        start = pos + 1
    else:
        found = value_at(data, pos)
        if found is None or data[found] != 34:  # '"'
            return None
        start = found
    end = data.find(b'"', start + 1)
    while end >= 0:
        if data[end - 1] != 92:  # no backslash before it: the closing quote
            return start, end + 1
        back = end - 2
        while data[back] == 92:  # a run of backslashes: an odd one escapes the quote
            back -= 1
        if (end - 1 - back) % 2 == 0:
            return start, end + 1
        end = data.find(b'"', end + 1)
    return None


def edit(raw: msgspec.Raw | bytes, changes: dict[str, Any], after: Iterable[str] = ()) -> bytes | None:
    """``raw`` (a JSON object) with the values of ``changes`` put in place of its own, new keys
    appended, and the keys in ``after`` removed. Every other value keeps its bytes. ``None`` if
    ``raw`` is not an object."""
    doc = obj(raw)
    if doc is None:
        return None
    for key in after:
        doc.pop(key, None)
    doc.update(changes)
    return encode(doc)


# -- an event too large to hold -------------------------------------------------------------------

_STRUCTURE = re.compile(rb'["{}\[\]:,]')
_VALUE_END = re.compile(rb"[,}\]\s]")
_MAX_KEY = 64  # a longer top-level key is never one of ours: it is not held


class TopLevelKeys:
    """Rewrite the values of some top-level keys of one JSON object arriving in pieces.

    Feed the raw pieces of the event (SSE field names and line breaks between them are skipped as
    junk outside the object); every byte comes out in order, except that the scalar value of a key
    in ``keys`` at the top level is replaced by what ``value_for(key, value)`` returns (``None``:
    kept). While such a key or its value is under way its bytes are held back: at most a short key
    and a number. ``seen`` holds the values of those keys met so far (a ``type`` key is always
    noted), so that ``value_for`` can depend on them. Linear in the bytes fed: strings are skipped
    with ``bytes.find``.
    """

    def __init__(self, keys: frozenset[bytes], value_for: Callable[[bytes, bytes], bytes | None]) -> None:
        self._keys = keys | {b"type"}
        self._value_for = value_for
        self.seen: dict[bytes, bytes] = {}
        self._held = b""
        self._depth = 0
        self._in_string = False
        self._backslashes = 0  # inside a string: the run of backslashes that ended the last piece
        self._expect_key = False  # at depth 1, after "{" or ","
        self._key_start = -1  # offset (in the pending bytes) of a tracked key's opening quote
        self._key: bytes | None = None  # a tracked key, complete, waiting for its value
        self._await_value = False  # a tracked key's colon was read, its value not begun
        self._value_start = -1  # offset of the tracked key's value

    def feed(self, piece: bytes) -> bytes:
        pos = len(self._held)  # the held bytes were read already: reading goes on after them
        buf = self._held + piece if self._held else piece
        out: list[bytes] = []
        emitted = 0  # bytes of buf before this offset are written
        n = len(buf)
        while pos < n:
            if self._in_string:
                end = self._string_end(buf, pos)
                if end < 0:
                    break
                self._in_string = False
                pos = end + 1
                if self._value_start >= 0:  # a tracked string value ended
                    emitted = self._value_done(buf, pos, out, emitted)
                elif self._key_start >= 0 and self._key is None:
                    key = buf[self._key_start + 1 : end]
                    if b"\\" in key:  # spelled with escapes: the key a parser reads
                        with contextlib.suppress(*UNREADABLE):
                            key = _decode_str(buf[self._key_start : end + 1]).encode()
                    if key in self._keys:
                        self._key = key
                    else:
                        self._key_start = -1
                continue
            if self._await_value:
                while pos < n and buf[pos] in b" \t\r\n":
                    pos += 1
                if pos == n:
                    break
                self._await_value = False
                if buf[pos] in b"{[":
                    self._forget()  # not a scalar: not ours; the structure is read below
                    continue
                self._value_start = pos
                if buf[pos] == 34:
                    self._in_string = True
                    self._backslashes = 0
                    pos += 1
                continue
            if self._value_start >= 0:  # a number or a literal under way
                m = _VALUE_END.search(buf, pos)
                if m is None:
                    break
                pos = m.start()
                emitted = self._value_done(buf, pos, out, emitted)
                continue
            m = _STRUCTURE.search(buf, pos)
            if m is None:
                break
            at = m.start()
            ch = buf[at]
            pos = at + 1
            if ch == 34:  # '"'
                self._in_string = True
                self._backslashes = 0
                if self._depth == 1 and self._expect_key:
                    self._key_start = at
                self._expect_key = False
            elif ch == 58:  # ':'
                if self._key is not None and self._depth == 1:
                    self._await_value = True
            elif ch == 123 or ch == 91:  # '{' '['
                self._depth += 1
                self._expect_key = self._depth == 1 and ch == 123
                self._forget()
            elif ch == 125 or ch == 93:  # '}' ']'
                self._depth -= 1
                self._forget()
            elif self._depth == 1:  # ','
                self._expect_key = True
                self._forget()
        return self._emit(buf, out, emitted)

    def finish(self) -> bytes:
        """The end of the event: whatever is held, as it came."""
        held, self._held = self._held, b""
        self._forget()
        return held

    # -- internals --------------------------------------------------------------------------------

    def _string_end(self, buf: bytes, pos: int) -> int:
        """The offset of the quote that ends the string under way, or -1 (state kept for the next piece)."""
        start = pos
        while True:
            end = buf.find(b'"', pos)
            if end < 0:
                run = len(buf) - len(buf.rstrip(b"\\"))
                if run == len(buf) - start:
                    self._backslashes += run
                else:
                    self._backslashes = run
                return -1
            run = end - len(buf[start:end].rstrip(b"\\")) - start
            if run == end - start:
                run += self._backslashes
            self._backslashes = 0
            if run % 2 == 0:
                return end
            pos = end + 1
            start = pos

    def _value_done(self, buf: bytes, end: int, out: list[bytes], emitted: int) -> int:
        key, start = self._key, self._value_start
        assert key is not None and start >= 0
        value = buf[start:end]
        self.seen[key] = value
        new = self._value_for(key, value)
        self._forget()
        if new is None or new == value:
            return emitted
        out.append(buf[emitted:start])
        out.append(new)
        return end

    def _forget(self) -> None:
        self._key_start = -1
        self._key = None
        self._await_value = False
        self._value_start = -1

    def _emit(self, buf: bytes, out: list[bytes], emitted: int) -> bytes:
        hold = len(buf)
        if self._key_start >= 0:
            hold = self._key_start
            if self._key is None and len(buf) - hold > _MAX_KEY:
                self._key_start = -1  # too long to be a key we rewrite
                hold = len(buf)
        hold = max(hold, emitted)
        out.append(buf[emitted:hold])
        self._held = buf[hold:]
        # Offsets into the held bytes are relative to their start from now on.
        if self._key_start >= 0:
            self._key_start -= hold
            if self._value_start >= 0:
                self._value_start -= hold
        return b"".join(out)
