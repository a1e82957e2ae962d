"""Responses' pieces for a reasoning budget the gateway enforces (:data:`SIDE`), and the request
that continues an answer: the same request with the reasoning so far as a final assistant message
item of ``input``, in progress.

vLLM continues such an item itself: ``should_continue_final_message`` (vllm/entrypoints/openai/
responses/utils.py, since PR #32100) renders a last ``message`` or ``reasoning`` item whose
``status`` is ``in_progress`` or ``incomplete`` with ``continue_final_message`` and no generation
prompt. llama.cpp converts the request to a chat one, whose final assistant message it prefills
(tools/server/server-chat.cpp ``server_chat_convert_responses_to_chatcmpl``). The item is written in
the one form both read as an assistant message: ``type``, ``id`` and ``status`` given (llama.cpp
refuses an assistant item without ``type``; vLLM reads the status of an output message only), its
text one ``output_text`` part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..budgeting import BudgetCounter, BudgetSide, Collector, Edits, StreamFilter, appended, limited
from ..echo import Echo
from .budget import BudgetCount
from .budgetbody import ResponsesBody, as_stream
from .echo import delta_text, with_delta

__all__ = ["SIDE", "continued_item"]

_LIMITS = ("max_output_tokens", "n_predict")
"""The members that bound the answer's tokens: the API's, and llama.cpp's own (its Responses
endpoint passes the request's other members on to its chat handler)."""
_encode = msgspec.json.Encoder().encode


def continued_item(prefill: str) -> dict[str, Any]:
    """The final assistant message the continuation asks the server to go on from."""
    part = {"type": "output_text", "text": prefill, "annotations": []}
    return {"type": "message", "id": "msg_prefill", "role": "assistant", "status": "in_progress", "content": [part]}


class _ResponsesBudget:
    def counter(self, budget: int, max_event_bytes: int) -> BudgetCounter:
        return BudgetCount(budget, max_event_bytes)

    def echo(self, prefill: str, max_event_bytes: int) -> StreamFilter:
        return Echo(prefill, max_event_bytes, delta_text, with_delta)

    def collector(self, max_event_bytes: int) -> Collector:
        return ResponsesBody(max_event_bytes)

    def as_stream(self, body: bytes) -> bytes | None:
        return as_stream(body)

    def continued(self, top: Mapping[str, msgspec.Raw], prefill: str, spent: int) -> Edits | None:
        """``input`` with the prefill appended (a string ``input`` is the user message it stands
        for, then the prefill), and the limits on the answer's tokens reduced by ``spent``."""
        raw = top.get("input")
        item = continued_item(prefill)
        if raw is not None and bytes(raw)[:1] == b'"':
            user = b'{"type":"message","role":"user","content":' + bytes(raw) + b"}"
            items: bytes | None = b"[" + user + b"," + _encode(item) + b"]"
        else:
            items = appended(raw, item)
        edits = limited(top, _LIMITS, spent)
        if items is None or edits is None:
            return None
        return {"input": items} | edits


SIDE: BudgetSide = _ResponsesBudget()
