"""Comparing two translated streams event by event: each event's other fields and its JSON, key order
included. Shared by the fast-path property tests of every surface."""

from __future__ import annotations

import json
from typing import Any

from gateway_mw.sse import SSEDecoder


def pairs(value: Any) -> Any:
    """JSON with every object as its list of (key, value) pairs: key order counts."""
    if isinstance(value, dict):
        return [(k, pairs(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [pairs(v) for v in value]
    return value


def events_of(body: bytes) -> list[tuple[bytes, Any]]:
    """Each event as (its non-data lines, its data as key-ordered JSON or raw), then the raw tail."""
    decoder = SSEDecoder()
    events = decoder.feed(body)
    last, tail = decoder.finish()
    out: list[tuple[bytes, Any]] = []
    for event in events + last:
        if event.data is None:
            out.append((event.raw, None))
            continue
        try:
            data: Any = pairs(json.loads(event.data))
        except ValueError:
            data = event.data
        out.append((event.fields, data))
    out.append((tail, None))
    return out
