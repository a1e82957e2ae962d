"""The tool calls a turn made, spelled for the reasoning record's keys: each call's name and
arguments, whatever ids it had (the ``ollama`` client keeps none) and however its arguments were
written (an object, as Ollama writes them, or a JSON string, as chat completions does)."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec

__all__ = ["call_spellings"]

_encode_sorted = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.decode


def call_spellings(tool_calls: Any) -> tuple[str, ...]:
    """``name`` and arguments (JSON, keys sorted) of each call in a chat-shaped ``tool_calls`` list
    (``[{"function": {"name": …, "arguments": …}}]``), in order; calls that name no function are
    left out."""
    if not isinstance(tool_calls, list):
        return ()
    out = []
    for call in tool_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(name := function.get("name"), str):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):  # not JSON: as it is
                arguments = _decode(arguments)
        try:
            spelled = _encode_sorted(arguments).decode("utf-8", "surrogatepass")
        except (TypeError, ValueError):
            spelled = ""
        out.append(f"{name}\x00{spelled}")
    return tuple(out)
