"""The way back in: the reasoning of the earlier turns a client sends back, given to the upstream in
the place its server reads it (sans-I/O; the middleware hands the handler the rewritten body).

One request transform per surface, chosen from a table, each ``(body, plan, recall) -> bytes | None``
(``None``: forward the body as it came). :func:`transform_request` picks the plan for the request's
model; :func:`record_keys` names what the reasoning record is asked for first.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ..channels import Said
from ..config import Surface, ThinkExtractConfig
from . import chat, messages, ollama, responses, surrogates
from .plan import UNKNOWN_FAMILY, Form, Plan, Scope, Server, plan_for
from .recall import MAX_RECALL_KEYS, NOTHING, Recall, Recalled, after_key, answer_key, call_key, item_key
from .text import split_written

__all__ = [
    "MAX_RECALL_KEYS",
    "NOTHING",
    "Plan",
    "Recall",
    "Recalled",
    "asks_for_blobs",
    "plan_for",
    "record_entries",
    "record_keys",
    "request_model",
    "server_of",
    "transform_request",
]

RequestTransform = Callable[[bytes, Plan, Recall], "bytes | None"]

TRANSFORMS: dict[Surface, RequestTransform] = {
    "chat": chat.transform,
    "messages": messages.transform,
    "responses": responses.transform,
    "ollama": ollama.transform,
}
KEYS: dict[Surface, Callable[[bytes, int], list[str]]] = {
    "chat": chat.keys,
    "messages": messages.keys,
    "responses": responses.keys,
    "ollama": ollama.keys,
}
PREFIXES: dict[Surface, Callable[[bytes], bytes | None]] = {
    "chat": chat.prefix,
    "messages": messages.prefix,
    "responses": responses.prefix,
    "ollama": ollama.prefix,
}
UNKNOWN: dict[Surface, tuple[Form, Scope]] = {
    "ollama": ("field", "all"),  # Ollama reads `thinking` whatever the model: where the client's went
}
"""``auto`` for a model of no known family, where a surface's server reads reasoning whatever the model."""
asks_for_blobs = responses.asks_for_blobs


class _Model(msgspec.Struct, gc=False):
    model: object = None


_decode_model = msgspec.json.Decoder(_Model).decode


def request_model(body: bytes) -> str | None:
    """The ``model`` a request names (``None``: none, or not JSON)."""
    try:
        model = _decode_model(body).model
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return model if isinstance(model, str) else None


def server_of(config: ThinkExtractConfig) -> Server:
    """The server to write for: ``auto`` (nothing asked the upstream) writes for any (``generic``)."""
    server = config.upstream_server
    return "generic" if server == "auto" else server


def record_keys(surface: Surface, body: bytes) -> list[str]:
    """The keys the reasoning record is asked for before :func:`transform_request` runs: those of
    the latest turns, at most :data:`MAX_RECALL_KEYS`."""
    return KEYS[surface](body, MAX_RECALL_KEYS)[-MAX_RECALL_KEYS:]


def record_entries(
    surface: Surface, request: bytes, said: list[Said], config: ThinkExtractConfig
) -> dict[str, Recalled]:
    """What the reasoning record keeps of a response to ``request``: for each answer that moved
    reasoning, its reasoning and the model's text, under every key a later request may name it by,
    each in the conversation it follows (its tool calls' ids, the ids of its items, what it said —
    its text and its calls' names and arguments; and, for a response of one answer, the
    conversation itself)."""
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
        if not answer.call_ids or answer.calls:  # what it said: found by a client that keeps no ids
            keys.append(answer_key(prefix, content, answer.calls))
        if len(said) == 1:
            keys.append(after_key(prefix))
        for key in keys:
            out[key] = entry
    return out


def transform_request(
    surface: Surface, body: bytes, config: ThinkExtractConfig, recall: Recall = NOTHING
) -> bytes | None:
    """``body`` with the reasoning of its earlier turns where the upstream reads it; ``None`` when
    nothing changes."""
    new = TRANSFORMS[surface](body, _plan(surface, body, config), recall)
    if new is not None:
        return new
    # Nothing changed, or a lone surrogate escape kept a string from being read (no decoder takes
    # one): looked for only now, since the scan costs about a third of what the transform does.
    masked = surrogates.mask(body)
    if masked is None:
        return None
    new = TRANSFORMS[surface](masked, _plan(surface, masked, config), recall)
    return None if new is None else surrogates.unmask(new)


def _plan(surface: Surface, body: bytes, config: ThinkExtractConfig) -> Plan:
    return plan_for(config, request_model(body), server_of(config), UNKNOWN.get(surface, UNKNOWN_FAMILY))
