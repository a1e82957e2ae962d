"""What the tests of writing share: a body through the whole of reading and writing."""

from __future__ import annotations

import json
from typing import Any

from gateway_mw.config import Surface, ThinkExtractConfig
from gateway_mw.controls import Controlled, ModelInfo, apply_edits, read_fields, read_intent, write_controls
from gateway_mw.surfaces.registry import SURFACES

MODELS = {
    "A": "qwen3-8b",  # enable_thinking
    "B": "deepseek-v3.1",  # thinking
    "both": "mystery-model",  # no known family: both keys
    "C": "gpt-oss-20b",  # effort only, cannot be off
    "D": "seed-oss-36b",  # thinking_budget
    "E": "nvidia-nemotron-nano-9b-v2",  # /think, /no_think in the text
    "F": "deepseek-r1-distill-qwen-32b",  # always thinks
    "G": "qwen3-30b-a3b-instruct-2507",  # never thinks
}


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def control(
    body: dict[str, Any] | bytes,
    surface: Surface,
    server: str,
    family: str = "A",
    info: ModelInfo | None = None,
    config: ThinkExtractConfig | None = None,
) -> tuple[Controlled, bytes]:
    """``body`` (its model the family's) read and written as the middleware does; the result and
    the body that would be forwarded."""
    if isinstance(body, dict):
        body = compact({"model": MODELS[family], **body})
    fields = read_fields(body)
    assert fields is not None
    resolved = (config or ThinkExtractConfig()).for_model(fields.model)
    side = SURFACES[surface]
    done = write_controls(read_intent(body, side, fields), fields, side, server, resolved, info)
    if not done.edits:
        return done, body
    new = apply_edits(body, done.edits, done.appends)
    assert new is not None
    assert new == apply_edits(body, done.edits)  # appended, or decoded and encoded: the same bytes
    return done, new
