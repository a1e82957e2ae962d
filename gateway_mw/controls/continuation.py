"""A budget the gateway enforces itself: where it can, and the request that asks the model to go on
from the reasoning it stopped (the same request, with the answer so far as a final assistant message
the server continues).

Each server continues a final assistant message in its own way: vLLM and SGLang when asked
(``continue_final_message`` with ``add_generation_prompt: false``), llama.cpp by itself (its
assistant prefill, on unless it was started with ``--no-prefill-assistant``), Ollama's ``/api/chat``
by itself too (its templates and renderers leave a final assistant message open; ``/api/generate``
has no messages, and its side says it cannot). On Responses, vLLM continues a final message item
whose ``status`` is in progress (the item says it), llama.cpp prefills it; SGLang's Responses cannot
continue. Ollama's ``/v1/chat/completions`` is its ``/api/chat`` (its middleware converts the request,
a final assistant message stays the last); its ``/v1/responses`` and ``/v1/messages``, and the servers
the gateway does not know, are not in :data:`CONTINUES`: no budget of the gateway's there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import msgspec

from .. import surrogates
from ..config import Surface, ThinkExtractConfig
from .edit import apply_edits
from .fields import ControlFields
from .side import ControlSide

__all__ = ["CONTINUES", "Continued", "can_continue", "continuation", "enforcers"]


class Continued(Protocol):
    """How a surface's request is made a continuation (every surface's ``BudgetSide`` is one)."""

    def continued(
        self, top: Mapping[str, msgspec.Raw], prefill: str, spent: int
    ) -> Mapping[str, bytes | None] | None: ...


CONTINUES: dict[tuple[str, Surface], dict[str, bytes]] = {
    ("vllm", "chat"): {"continue_final_message": b"true", "add_generation_prompt": b"false"},
    ("sglang", "chat"): {"continue_final_message": b"true", "add_generation_prompt": b"false"},
    ("llamacpp", "chat"): {},
    ("llamacpp", "messages"): {},  # its /v1/messages is made a chat request, where its prefill applies
    ("ollama", "ollama"): {},  # /api/chat, where the model's template leaves the final assistant turn open
    ("ollama", "chat"): {},  # /v1/chat/completions is made an /api/chat request, the final message kept last
    ("vllm", "responses"): {},  # the final item's status asks it (see surfaces/responses/budgetside.py)
    ("llamacpp", "responses"): {},
}
"""The servers and surfaces the gateway continues an answer on: the top-level members that ask it to."""

_decode_top = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_encode = msgspec.json.Encoder().encode


def can_continue(surface: Surface, server: str) -> bool:
    """Whether the gateway can end the thinking at a budget on this surface of this server: one it
    knows how to continue on. (A request that does not stream is asked to: the gateway counts the
    reasoning as it goes by, and gives the client the body the stream makes.)"""
    return (server, surface) in CONTINUES


def enforcers(
    config: ThinkExtractConfig, fields: ControlFields, surface: ControlSide, server: str, exclude: bool
) -> tuple[bool, bool]:
    """Who may enforce a budget on this request, by ``reasoning_budget_enforcement``: the server, in
    its own field; the gateway, on one answer whose reasoning the client gets (the gateway counts it
    on its way out), of a model whose reasoning is in tags, to a server it knows how to
    continue on (``gateway`` elsewhere is the server's)."""
    enforcement = config.reasoning_budget_enforcement
    if enforcement == "off":
        return False, False
    one = bytes(fields.n).strip() in (b"", b"1", b"null")
    # Reasoning that reaches the client whole, when it ends, gives no events to count: the cut would
    # come after the reasoning it was to stop.
    events = surface.controls.reasoning_as_events(config)
    shown = events and not (exclude or config.reasoning_exclude)
    can = one and shown and config.protocol == "tags" and can_continue(surface.name, server)
    if enforcement == "server":
        return True, False
    if enforcement == "gateway":
        return not can, can
    return True, can


def continuation(
    body: bytes, prefill: str, side: Continued, surface: Surface, server: str, spent: int = 0
) -> bytes | None:
    """``body`` (a request on ``surface``) made the continuation by the surface's ``side``:
    ``prefill`` as a final assistant turn, asked to be continued as ``server`` continues one; ``None``
    when the side cannot put it there, or the ``spent`` tokens (the reasoning events the first answer
    sent) used up the client's limit on the answer's tokens (which holds for the two requests
    together: the continuation is asked for what is left of it)."""
    masked = None
    try:
        top = _decode_top(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        # A lone surrogate escape: the continuation is made of the masked body and unmasked whole.
        masked = surrogates.mask(body)
        if masked is None:
            return None
        try:
            top = _decode_top(masked)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
    if masked is not None:
        added = _encode(prefill)
        if surrogates.unmask(added) != added:
            return None  # the model wrote what a mask is spelled as: the unmasking would change it
    continued = side.continued(top, prefill, spent)
    if continued is None:
        return None
    edits = {**continued, **CONTINUES.get((server, surface), {})}
    if masked is None:
        return apply_edits(body, edits)
    out = apply_edits(masked, edits)
    return None if out is None else surrogates.unmask(out)
