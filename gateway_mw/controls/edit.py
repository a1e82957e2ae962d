"""Top-level edits applied to a body: the top level decoded once into raw values, the edited members
put in place (a new one appended, a removed one dropped), and encoded again; every other member keeps
its bytes and its place.

Edits that only add members the body does not have (what a control written for a client that did
not use the server's own form is, nearly always) are written after the body's last member, with no
decode at all: the body's bytes are copied once."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from .. import surrogates

__all__ = ["Edits", "apply_edits"]

Edits = Mapping[str, "bytes | None"]
"""Top-level members to write, each as its JSON bytes (``None``: the member is removed)."""

_decode_top = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_encode = msgspec.json.Encoder().encode
_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError)


_SPACE = b" \t\r\n"


def apply_edits(body: bytes, edits: Edits, appends: bool = False) -> bytes | None:
    """``body`` with ``edits`` made; ``None`` when it is no JSON object (it goes as it came). A body
    with a lone surrogate escape is edited masked, and the escapes given back as they came.

    ``appends``: every edit adds a member ``body`` (a JSON object) is known not to have."""
    if appends:
        added = _appended(body, edits)
        if added is not None:
            return added
    masked = None
    try:
        top = _decode_top(body)
    except _UNREADABLE:
        masked = surrogates.mask(body)
        if masked is None:
            return None
        try:
            top = _decode_top(masked)
        except _UNREADABLE:
            return None
    for name, value in edits.items():
        if value is None:
            top.pop(name, None)
        else:
            top[name] = msgspec.Raw(value)
    out: bytes = _encode(top)
    return out if masked is None else surrogates.unmask(out)


def _appended(body: bytes, edits: Edits) -> bytes | None:
    """``body`` with the members of ``edits`` written after its last one (``None``: it does not end
    as an object does)."""
    end = len(body)
    while end and body[end - 1] in _SPACE:
        end -= 1
    if not end or body[end - 1] != 0x7D:  # "}"
        return None
    last = end - 1
    while last and body[last - 1] in _SPACE:
        last -= 1
    members = b",".join(_encode(name) + b":" + value for name, value in edits.items() if value is not None)
    comma = b"" if last and body[last - 1] == 0x7B else b","  # "{": an empty object
    view = memoryview(body)
    return b"".join((view[: end - 1], comma, members, view[end - 1 :]))
