"""The top-level fields of a request body in which a client may say what it wants of the model's
thinking, read in one lean decode: each value left as its raw bytes, every other field skipped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from .. import surrogates

__all__ = ["ABSENT", "ControlFields", "decode_masked", "read_fields"]

ABSENT = msgspec.Raw()
"""A field the body does not have (an empty raw value: no JSON value is empty)."""

_T = TypeVar("_T")


class ControlFields(msgspec.Struct, gc=False):
    """The control fields of one body, each as it came (:data:`ABSENT` when missing), and its model.

    A reader of the same body that needs more of it (the history side) decodes a subclass with its
    own fields added, so that the body is decoded once for both."""

    model: Any = None
    reasoning_effort: msgspec.Raw = ABSENT
    reasoning: msgspec.Raw = ABSENT
    thinking: msgspec.Raw = ABSENT
    output_config: msgspec.Raw = ABSENT
    think: msgspec.Raw = ABSENT
    chat_template_kwargs: msgspec.Raw = ABSENT
    thinking_token_budget: msgspec.Raw = ABSENT
    thinking_budget_tokens: msgspec.Raw = ABSENT
    """The servers' own budget fields (vLLM's, llama.cpp's): read to know whether a body has them."""
    stream: msgspec.Raw = ABSENT
    n: msgspec.Raw = ABSENT
    """Whether the answer streams, and how many: the gateway enforces a budget on one streamed answer."""

    @property
    def speaks(self) -> bool:
        """Whether a field in which a client says something of thinking is there: without one every
        form says nothing, and none need be asked (most bodies)."""
        return bool(
            self.reasoning_effort
            or self.reasoning
            or self.thinking
            or self.output_config
            or self.think
            or self.chat_template_kwargs
        )


_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError)


def decode_masked(decode: Callable[[bytes], _T], body: bytes) -> _T | None:
    """``decode(body)``; ``None`` when it is not what the decoder reads. A lone surrogate escape
    anywhere in the body (which no decoder takes) is masked for the read: the values read are then
    those of the masked body, which are the client's wherever no such escape is."""
    try:
        return decode(body)
    except _UNREADABLE:
        masked = surrogates.mask(body)
        if masked is None:
            return None
    try:
        return decode(masked)
    except _UNREADABLE:
        return None


_decode_fields = msgspec.json.Decoder(ControlFields).decode


def read_fields(body: bytes) -> ControlFields | None:
    """The control fields of ``body``; ``None`` when it is no JSON object."""
    return decode_masked(_decode_fields, body)
