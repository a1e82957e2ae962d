"""What a non-stream response body said, for the reasoning record: the readers every surface's
``said_of_body`` shares (a stream's translators keep what was said as it goes by instead)."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["document", "ids_of", "items_of", "text_of"]

_decode = msgspec.json.Decoder().decode


def document(body: bytes) -> dict[str, Any] | None:
    """``body`` as a JSON object (``None``: not JSON, or not an object)."""
    try:
        doc = _decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return doc if isinstance(doc, dict) else None


def items_of(doc: dict[str, Any] | None, key: str) -> list[Any]:
    """The list ``doc`` holds under ``key`` (empty when it holds anything else)."""
    values = doc.get(key) if doc is not None else None
    return values if isinstance(values, list) else []


def text_of(content: Any, kind: str) -> str:
    """The text of ``content``: a string, or the ``text`` of its parts of type ``kind``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == kind and isinstance(p.get("text"), str)
        )
    return ""


def ids_of(values: Any, key: str) -> tuple[str, ...]:
    """The string ``key`` of each object in the list ``values``."""
    return (
        tuple(v[key] for v in values if isinstance(v, dict) and isinstance(v.get(key), str))
        if isinstance(values, list)
        else ()
    )
