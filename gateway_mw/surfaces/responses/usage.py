"""Where a response's usage counts its reasoning tokens, and the reasoning texts of a translated
body, as a client reads them (for the count a body's usage lacks: :mod:`..usage`)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..usage import BodyUsage, UsageField

__all__ = ["USAGE"]


class _Part(msgspec.Struct):
    text: Any = None


class _Item(msgspec.Struct):
    type: Any = None
    content: list[_Part] | None = None
    summary: list[_Part] | None = None


_items = msgspec.json.Decoder(list[_Item]).decode


def _texts(output: msgspec.Raw) -> list[str]:
    """Each reasoning item's text: its content, else its summary (the same text, where both are written)."""
    out: list[str] = []
    for item in _items(output):
        if item.type == "reasoning":
            out += [p.text for p in item.content or item.summary or [] if isinstance(p.text, str)]
    return out


USAGE = BodyUsage(UsageField("output_tokens_details", "reasoning_tokens"), "output", _texts)
