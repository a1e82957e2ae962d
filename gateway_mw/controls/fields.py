"""The top-level fields of a request body in which a client may say what it wants of the model's
thinking, read in one lean decode: each value left as its raw bytes, every other field skipped."""

from __future__ import annotations

from typing import Any

import msgspec

from .. import surrogates

__all__ = ["ABSENT", "ControlFields", "read_fields"]

ABSENT = msgspec.Raw()
"""A field the body does not have (an empty raw value: no JSON value is empty)."""


class ControlFields(msgspec.Struct, gc=False):
    """The control fields of one body, each as it came (:data:`ABSENT` when missing), and its model.

    A reader of the same body that needs more of it (the history side) may decode a subclass with
    its own fields added, so that the body is decoded once for both."""

    model: Any = None
    reasoning_effort: msgspec.Raw = ABSENT
    reasoning: msgspec.Raw = ABSENT
    thinking: msgspec.Raw = ABSENT
    output_config: msgspec.Raw = ABSENT
    think: msgspec.Raw = ABSENT
    chat_template_kwargs: msgspec.Raw = ABSENT


_decode_fields = msgspec.json.Decoder(ControlFields).decode
_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError)


def read_fields(body: bytes) -> ControlFields | None:
    """The control fields of ``body``; ``None`` when it is no JSON object. A lone surrogate escape
    anywhere in it (which no decoder takes) is masked for the read: the values read are then those
    of the masked body, whose control fields are the client's as long as none holds such an escape."""
    try:
        return _decode_fields(body)
    except _UNREADABLE:
        masked = surrogates.mask(body)
        if masked is None:
            return None
    try:
        return _decode_fields(masked)
    except _UNREADABLE:
        return None
