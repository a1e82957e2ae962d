"""A message's canonical spelling as it was before a list of content parts was read in one decoder
pass (each part decoded on its own): the oracle of ``recall.canonical_json``, whose bytes the record's
keys are digests of (a key made before the change is found after it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from gateway_mw.rawjson import UNREADABLE

__all__ = ["canonical_decoded", "canonical_json"]

_decode_fields = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_parts = msgspec.json.Decoder(list[msgspec.Raw]).decode
_encode_sorted = msgspec.json.Encoder(order="sorted").encode
_VOLATILE = frozenset({"cache_control"})
_REASONING_PARTS = frozenset({b'"thinking"', b'"redacted_thinking"'})


def canonical(fields: Mapping[str, msgspec.Raw], skip: frozenset[str] = frozenset()) -> bytes:
    kept = {key: value for key, value in fields.items() if key not in skip and key not in _VOLATILE}
    for key in ("content", "system"):
        value = kept.get(key)
        if value is not None and bytes(memoryview(value)[:1]) == b"[":
            kept[key] = _parts(value)
    return _encode_sorted(kept)


def canonical_json(raw: msgspec.Raw | bytes, skip: frozenset[str] = frozenset()) -> bytes:
    try:
        fields = _decode_fields(raw)
    except UNREADABLE:
        return bytes(raw)
    return canonical(fields, skip)


def _parts(value: msgspec.Raw) -> msgspec.Raw:
    try:
        parts = _decode_parts(value)
    except UNREADABLE:
        return value
    kept: list[msgspec.Raw] = []
    for raw in parts:
        try:
            fields = _decode_fields(raw)
        except UNREADABLE:
            kept.append(raw)
            continue
        kind = fields.get("type")
        if kind is None or bytes(kind) not in _REASONING_PARTS:
            kept.append(msgspec.Raw(canonical(fields)))
    return msgspec.Raw(msgspec.json.encode(kept))


def canonical_decoded(fields: Mapping[str, Any]) -> bytes:
    """Decoded fields as a Responses item was spelled: each value encoded on its own, keys sorted."""
    return canonical({key: _sorted_json(value) for key, value in fields.items()})


def _sorted_json(value: Any) -> msgspec.Raw:
    try:
        return msgspec.Raw(msgspec.json.encode(value, order="sorted"))
    except (msgspec.EncodeError, UnicodeEncodeError, TypeError, ValueError):
        return msgspec.Raw(msgspec.json.encode(repr(value)))
