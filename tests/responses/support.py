"""What the Responses fast-path tests share: made-up ids, the full path, the layouts of real servers,
a pipeline fed whole events, and the events of one message item."""

from __future__ import annotations

import itertools
from typing import Any

from gateway_mw import ThinkExtractConfig
from gateway_mw.marks import NewId
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.responses.reference import ResponsesReference


def new_ids() -> NewId:
    """Made-up ids, the same for both pipelines of a comparison."""
    counter = itertools.count()
    return lambda prefix: f"{prefix}{next(counter):032x}"


def full_path(config: ThinkExtractConfig) -> ResponsesReference:
    """The reference translator, alone: every event read and answered one by one."""
    return ResponsesReference(config, new_id=new_ids())


def layout_body(layout: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (in OpenAI's key order) with the members and order ``layout``'s server writes."""
    if layout == "llamacpp":  # nlohmann::json: keys sorted; no indexes, numbers or delta logprobs
        body = {k: v for k, v in body.items() if k not in ("output_index", "content_index", "sequence_number")}
        if body["type"] == "response.output_text.delta":
            body.pop("logprobs", None)
        return dict(sorted(body.items()))
    if layout == "vllm":  # pydantic's model_dump_json: the SDK's (alphabetical) field order
        return dict(sorted(body.items()))
    if layout == "openai" and body["type"] == "response.output_text.delta":
        return {"type": body["type"], "sequence_number": body["sequence_number"], **body, "obfuscation": "Zq3x"}
    return body


def run_events(
    events: list[bytes], group: int, config: ThinkExtractConfig, full: bool
) -> tuple[bytes, tuple[int, ...]]:
    """``events`` through a pipeline ``group`` whole events per feed (1: one per feed), or (``group``
    0) as one stream cut in 4 KiB pieces."""
    pipeline = StreamPipeline("responses", config, new_ids())
    if full:
        pipeline._translator = full_path(config)
    if group:
        feeds = [b"".join(events[i : i + group]) for i in range(0, len(events), group)]
    else:
        stream = b"".join(events)
        feeds = [stream[i : i + 4096] for i in range(0, len(stream), 4096)]
    out = b"".join(pipeline.feed(f) for f in feeds) + pipeline.finish()
    assert pipeline.error is None
    c = pipeline.counts
    return out, (c.reasoning_blocks, c.reasoning_chars, c.unclosed, c.overflows, c.unreadable_events)


def text_events(layout: str, deltas: list[str]) -> list[dict[str, Any]]:
    """The events of one message item whose text is ``deltas``, as ``layout``'s server writes them."""
    msg = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "object": "response", "model": "m", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": msg},
        {"type": "response.content_part.added", **at, "part": {"type": "output_text", "text": ""}},
        *({"type": "response.output_text.delta", **at, "delta": d, "logprobs": []} for d in deltas),
        {"type": "response.output_text.done", **at, "text": "".join(deltas), "logprobs": []},
    ]
    return [layout_body(layout, {**e, "sequence_number": i}) for i, e in enumerate(events)]
