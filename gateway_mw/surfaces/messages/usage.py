"""Where a message's usage counts its thinking tokens, and the thinking texts of a translated body,
as a client reads them (for the count a body's usage lacks: :mod:`..usage`)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..usage import BodyUsage, UsageField

__all__ = ["USAGE"]


class _Block(msgspec.Struct):
    type: Any = None
    thinking: Any = None


_blocks = msgspec.json.Decoder(list[_Block]).decode


def _texts(content: msgspec.Raw) -> list[str]:
    """Each thinking block's text (a redacted_thinking block's data is not text to count)."""
    return [b.thinking for b in _blocks(content) if b.type == "thinking" and isinstance(b.thinking, str)]


USAGE = BodyUsage(UsageField("output_tokens_details", "thinking_tokens"), "content", _texts)
