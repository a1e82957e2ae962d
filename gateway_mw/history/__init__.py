"""The way back in: the reasoning of the earlier turns a client sends back, given to the upstream in
the place its server reads it (sans-I/O; the middleware hands the handler the rewritten body).

One request transform per surface, each ``(body, plan, recall) -> bytes | None`` (``None``: forward
the body as it came), given by the surface's :class:`RequestSide` (its definition, which the caller
looks up: this package knows no surface by name). :func:`transform_request` picks the plan for the
request's model; :func:`record_keys` names what the reasoning record is asked for first.
"""

from __future__ import annotations

import msgspec

from ..channels import Said
from ..config import ThinkExtractConfig
from . import surrogates
from .plan import Plan, Server, plan_for
from .recall import MAX_RECALL_KEYS, NOTHING, Recall, Recalled, after_key, answer_key, call_key, item_key
from .side import RequestSide
from .text import split_written

__all__ = [
    "MAX_RECALL_KEYS",
    "NOTHING",
    "Plan",
    "Recall",
    "Recalled",
    "RequestSide",
    "plan_for",
    "record_entries",
    "record_keys",
    "request_model",
    "server_of",
    "transform_request",
]


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


def record_keys(surface: RequestSide, body: bytes) -> list[str]:
    """The keys the reasoning record is asked for before :func:`transform_request` runs: those of
    the latest turns, at most :data:`MAX_RECALL_KEYS`."""
    return surface.history_keys(body, MAX_RECALL_KEYS)[-MAX_RECALL_KEYS:]


def record_entries(
    surface: RequestSide, request: bytes, said: list[Said], config: ThinkExtractConfig
) -> dict[str, Recalled]:
    """What the reasoning record keeps of a response to ``request``: for each answer that moved
    reasoning, its reasoning and the model's text, under every key a later request may name it by,
    each in the conversation it follows (its tool calls' ids, the ids of its items, what it said —
    its text and its calls' names and arguments; and, for a response of one answer, the
    conversation itself)."""
    prefix = surface.answer_prefix(request)
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
    surface: RequestSide, body: bytes, config: ThinkExtractConfig, recall: Recall = NOTHING
) -> bytes | None:
    """``body`` with the reasoning of its earlier turns where the upstream reads it; ``None`` when
    nothing changes."""
    new = surface.transform_history(body, _plan(surface, body, config), recall)
    if new is not None:
        return new
    # Nothing changed, or a lone surrogate escape kept a string from being read (no decoder takes
    # one): looked for only now, since the scan costs about a third of what the transform does.
    masked = surrogates.mask(body)
    if masked is None:
        return None
    new = surface.transform_history(masked, _plan(surface, masked, config), recall)
    return None if new is None else surrogates.unmask(new)


def _plan(surface: RequestSide, body: bytes, config: ThinkExtractConfig) -> Plan:
    return plan_for(config, request_model(body), server_of(config), surface.unknown_family)
