"""Where a chat completion's usage counts its reasoning tokens, and the reasoning texts of a
translated body, as a client reads them (for the count a body's usage lacks: :mod:`..usage`)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..usage import BodyUsage, UsageField

__all__ = ["USAGE"]


class _Message(msgspec.Struct):
    reasoning_content: Any = None
    reasoning: Any = None


class _Choice(msgspec.Struct):
    message: _Message | None = None


_choices = msgspec.json.Decoder(list[_Choice]).decode


def _texts(choices: msgspec.Raw) -> list[str]:
    """Each choice's reasoning, under whichever name the body gives it."""
    out: list[str] = []
    for choice in _choices(choices):
        message = choice.message
        if message is not None:
            text = message.reasoning_content if isinstance(message.reasoning_content, str) else message.reasoning
            if isinstance(text, str):
                out.append(text)
    return out


USAGE = BodyUsage(UsageField("completion_tokens_details", "reasoning_tokens"), "choices", _texts)
