"""Where llama.cpp echoes a prefill on its Responses endpoint, read and rewritten for the echo filter.

llama.cpp converts a Responses request to a chat one and continues its final assistant message (its
assistant prefill); its answer's first ``response.output_text.delta`` then starts with the prefill
itself (build 0c1e570: ``"delta":"<think>…</think>beta"``), as its chat answer's first content
does. The done events and ``response.completed`` repeat it too, but the translator writes those from
the deltas it was given, so the deltas are all that is stripped.
"""

from __future__ import annotations

import json

from .openitems import peek

__all__ = ["delta_text", "with_delta"]

_DELTA = "response.output_text.delta"


def delta_text(data: bytes) -> str | None:
    """A ``response.output_text.delta``'s text: where llama.cpp echoes the prefill."""
    head = peek(data)
    return head.delta if head is not None and head.type == _DELTA else None


def with_delta(data: bytes, text: str) -> bytes:
    """``data`` (a text delta, as :func:`delta_text` read it) with its text replaced."""
    body = json.loads(data)
    body["delta"] = text
    return json.dumps(body, separators=(",", ":")).encode()  # ASCII escapes: a lone half too
