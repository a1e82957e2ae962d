"""The request side as it was before a request was read once: each step decoded the body again,
every message was encoded before it was compared, and a Responses input was encoded whole. Kept as
the oracle of the lean reads (``tests/history/test_read_once.py``): the same bodies, the same bytes."""

from __future__ import annotations

from collections.abc import Callable

from gateway_mw.channels import Said
from gateway_mw.config import Surface, ThinkExtractConfig
from gateway_mw.history import request_model, server_of, surrogates
from gateway_mw.history.plan import UNKNOWN_FAMILY, Form, Plan, Scope, plan_for
from gateway_mw.history.recall import (
    MAX_RECALL_KEYS,
    NOTHING,
    Recall,
    Recalled,
    after_key,
    answer_key,
    call_key,
    item_key,
)
from gateway_mw.history.text import split_written

from . import chat, messages, responses

__all__ = ["record_entries", "record_keys", "transform_request"]


def _ollama(body: bytes, plan: Plan, recall: Recall) -> bytes | None:
    return chat.transform_messages(body, plan, recall, ("thinking",), ("thinking",))


TRANSFORMS: dict[Surface, Callable[[bytes, Plan, Recall], bytes | None]] = {
    "chat": chat.transform,
    "messages": messages.transform,
    "responses": responses.transform,
    "ollama": _ollama,
}
KEYS: dict[Surface, Callable[[bytes, int], list[str]]] = {
    "chat": chat.keys,
    "messages": messages.keys,
    "responses": responses.keys,
    "ollama": chat.keys,
}
PREFIXES: dict[Surface, Callable[[bytes], bytes | None]] = {
    "chat": chat.prefix,
    "messages": messages.prefix,
    "responses": responses.prefix,
    "ollama": chat.prefix,
}
UNKNOWN: dict[Surface, tuple[Form, Scope]] = {"ollama": ("field", "all")}


def record_keys(surface: Surface, body: bytes) -> list[str]:
    return KEYS[surface](body, MAX_RECALL_KEYS)[-MAX_RECALL_KEYS:]


def record_entries(
    surface: Surface, request: bytes, said: list[Said], config: ThinkExtractConfig
) -> dict[str, Recalled]:
    prefix = PREFIXES[surface](request)
    if prefix is None:
        return {}
    cfg = config.for_model(request_model(request))
    out: dict[str, Recalled] = {}
    for answer in said:
        reasoning, content = split_written(answer.original, cfg) if answer.original else ("", "")
        if not reasoning:
            continue
        entry = Recalled(reasoning=reasoning, original=answer.original, calls=answer.call_ids)
        keys = [call_key(prefix, c) for c in answer.call_ids] + [item_key(i, prefix) for i in answer.item_ids]
        if not answer.call_ids or answer.calls:
            keys.append(answer_key(prefix, content, answer.calls))
        if len(said) == 1:
            keys.append(after_key(prefix))
        for key in keys:
            out[key] = entry
    return out


def transform_request(
    surface: Surface, body: bytes, config: ThinkExtractConfig, recall: Recall = NOTHING
) -> bytes | None:
    new = TRANSFORMS[surface](body, _plan(surface, body, config), recall)
    if new is not None:
        return new
    masked = surrogates.mask(body)
    if masked is None:
        return None
    new = TRANSFORMS[surface](masked, _plan(surface, masked, config), recall)
    return None if new is None else surrogates.unmask(new)


def _plan(surface: Surface, body: bytes, config: ThinkExtractConfig) -> Plan:
    return plan_for(config, request_model(body), server_of(config), UNKNOWN.get(surface, UNKNOWN_FAMILY))
