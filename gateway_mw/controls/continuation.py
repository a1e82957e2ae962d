"""A budget the gateway enforces itself: where it can, and the request that asks the model to go on
from the reasoning it stopped (the same request, with the answer so far as a final assistant message
the server continues).

Each server continues a final assistant message in its own way: vLLM and SGLang when asked
(``continue_final_message`` with ``add_generation_prompt: false``), llama.cpp by itself (its
assistant prefill, on unless it was started with ``--no-prefill-assistant``). Ollama's ``/v1`` and
the servers the gateway does not know are not in :data:`CONTINUES`: no budget of the gateway's there.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .. import surrogates
from ..config import ThinkExtractConfig
from .edit import apply_edits
from .fields import ControlFields

__all__ = ["CONTINUES", "STREAMED", "can_continue", "continuation", "enforcers"]

Surface = Literal["chat", "messages", "responses", "ollama"]

CONTINUES: dict[tuple[str, Surface], dict[str, bytes]] = {
    ("vllm", "chat"): {"continue_final_message": b"true", "add_generation_prompt": b"false"},
    ("sglang", "chat"): {"continue_final_message": b"true", "add_generation_prompt": b"false"},
    ("llamacpp", "chat"): {},
}
"""The servers and surfaces the gateway continues an answer on: the top-level members that ask it to."""

STREAMED = {"stream": b"true", "stream_options": b'{"include_usage":true}'}
"""What a request that does not stream is sent with when the gateway enforces its budget."""

_decode_top = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_encode = msgspec.json.Encoder().encode
_decode_any = msgspec.json.Decoder().decode
_SPACE = b" \t\r\n"


def can_continue(surface: Surface, server: str) -> bool:
    """Whether the gateway can end the thinking at a budget on this surface of this server: one it
    knows how to continue on. (A request that does not stream is asked to: the gateway counts the
    reasoning as it goes by, and gives the client the body the stream makes.)"""
    return (server, surface) in CONTINUES


def enforcers(
    config: ThinkExtractConfig, fields: ControlFields, surface: Surface, server: str, exclude: bool
) -> tuple[bool, bool]:
    """Who may enforce a budget on this request, by ``reasoning_budget_enforcement``: the server, in
    its own field; the gateway, on one answer whose reasoning the client gets (the gateway counts it
    on its way out), of a model whose reasoning is in tags, to a server it knows how to
    continue on (``gateway`` elsewhere is the server's)."""
    enforcement = config.reasoning_budget_enforcement
    if enforcement == "off":
        return False, False
    one = bytes(fields.n).strip() in (b"", b"1", b"null")
    shown = not (exclude or config.reasoning_exclude)
    can = one and shown and config.protocol == "tags" and can_continue(surface, server)
    if enforcement == "server":
        return True, False
    if enforcement == "gateway":
        return not can, can
    return True, can


def continuation(body: bytes, prefill: str, surface: Surface, server: str, spent: int = 0) -> bytes | None:
    """``body`` (a chat request) with ``prefill`` as a final assistant message, asked to be continued
    as ``server`` continues one; ``None`` when the body has no list of messages to add it to, or the
    ``spent`` tokens (the reasoning events the first answer sent) used up the client's limit on the
    answer's tokens (which holds for the two requests together: the continuation is asked for what
    is left of it)."""
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
    messages = top.get("messages")
    if messages is None:
        return None
    raw = bytes(messages).rstrip(_SPACE)
    if not raw.startswith(b"[") or not raw.endswith(b"]"):
        return None
    inner = raw[1:-1].strip(_SPACE)
    added = _encode({"role": "assistant", "content": prefill})
    if masked is not None and surrogates.unmask(added) != added:
        return None  # the model wrote what a mask is spelled as: the unmasking would change it
    edits: dict[str, bytes | None] = {"messages": raw[:-1] + (b"," if inner else b"") + added + b"]"}
    edits.update(CONTINUES.get((server, surface), {}))
    for name in _LIMITS:
        limit = _limit(top.get(name))
        if limit is not None:
            if limit <= spent:
                return None
            edits[name] = _encode(limit - spent)
    if masked is None:
        return apply_edits(body, edits)
    out = apply_edits(masked, edits)
    return None if out is None else surrogates.unmask(out)


_LIMITS = ("max_tokens", "max_completion_tokens", "n_predict")
"""The members that bound the answer's tokens (OpenAI's two, llama.cpp's own)."""


def _limit(raw: msgspec.Raw | None) -> int | None:
    """A limit as the servers take one: a non-negative integer (``None``: absent, ``null`` or another
    value, left as it came)."""
    if raw is None:
        return None
    try:
        value = _decode_any(raw)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
