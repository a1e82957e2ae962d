"""The reasoning tokens of an answer, written into a ``usage`` object that lacks them.

Chat completions say how many of the completion's tokens were reasoning in
``usage.completion_tokens_details.reasoning_tokens``, Responses in
``usage.output_tokens_details.reasoning_tokens``. Servers that split reasoning themselves may write
it; a model whose tags the gateway splits leaves the server nothing to count, so the gateway writes
its own count (:attr:`~gateway_mw.channels.Counts.reasoning_events`). A count the server wrote is
never changed: only an absent or ``null`` one is filled. Every other value keeps its bytes.
"""

from __future__ import annotations

import msgspec

from ..rawjson import Obj, as_int, is_null, obj

__all__ = ["with_reasoning_tokens"]


def with_reasoning_tokens(usage: msgspec.Raw | bytes, details: str, count: int) -> Obj | None:
    """``usage`` (a JSON object) with ``details.reasoning_tokens`` set to ``count``, or ``None`` when
    it needs nothing: it is not an object, the server wrote its own count there, or there is
    nothing to count (no reasoning seen so far: an answer without any goes on byte for byte).

    SGLang writes its own count at the top (``usage.reasoning_tokens``), outside the API's field: a
    positive one is the server's count and goes where clients read it; its ``0`` is written whether
    or not it counted (no reasoning parser, no count), so the gateway's count stands."""
    fields = obj(usage)
    if fields is None:
        return None
    raw = fields.get(details)
    inner = {} if raw is None or is_null(raw) else obj(raw)
    if inner is None or not is_null(inner.get("reasoning_tokens")):
        return None  # not an object (left as it is), or the server's own count
    own = as_int(fields.get("reasoning_tokens"))
    tokens = own if own is not None and own > 0 else count
    if not tokens:
        return None
    inner["reasoning_tokens"] = tokens
    fields[details] = inner
    return fields
