"""Top-level edits applied to a body: the top level decoded once into raw values, the edited members
put in place (a new one appended, a removed one dropped), and encoded again; every other member keeps
its bytes and its place."""

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


def apply_edits(body: bytes, edits: Edits) -> bytes | None:
    """``body`` with ``edits`` made; ``None`` when it is no JSON object (it goes as it came). A body
    with a lone surrogate escape is edited masked, and the escapes given back as they came."""
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
