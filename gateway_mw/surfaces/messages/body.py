"""The messages non-stream body: each ``text`` block of ``content`` split into the blocks of its runs."""

from __future__ import annotations

from typing import Any

from ...channels import Channels, Counts
from ...config import ThinkExtractConfig
from ...rawjson import Obj, as_str, encode, obj, raw_list
from ...scanner import CONTENT, Segment, merge_segments
from .events import NATIVE, gateway_signature, redacted_data

__all__ = ["transform_body"]


def _blocks(block: Obj, segments: list[Segment], redacted: bool) -> list[Any]:
    """The blocks of one upstream text block's runs, in order."""
    out: list[Any] = []
    template: Obj | None = block
    for seg in segments:
        if seg.kind == CONTENT:
            if template is not None:
                new = dict(template)  # the first text block keeps the upstream block's other fields
                template = None
                new["text"] = seg.text
                out.append(new)
            else:
                out.append({"type": "text", "text": seg.text})
        elif redacted:
            out.append({"type": "redacted_thinking", "data": redacted_data(seg.text)})
        else:
            out.append({"type": "thinking", "thinking": seg.text, "signature": gateway_signature(seg.text)})
    if not segments:
        out.append({**block, "text": ""})
    return out


def transform_body(body: bytes | bytearray, config: ThinkExtractConfig) -> tuple[bytes | None, Counts]:
    """A non-stream ``message`` body with each text block split into the blocks of its runs.

    Returns ``None`` for the body when nothing changed (the caller then sends the original bytes).
    Only the objects on the way to a changed text are decoded: every other value is sent as it came.
    """
    counts = Counts()  # what the scanners did (none ran: nothing)
    doc = obj(bytes(body))
    raw_content = doc.get("content") if doc is not None else None
    if doc is None or raw_content is None or as_str(doc.get("type")) not in (None, "message"):
        return None, counts
    content = raw_list(raw_content)
    if content is None:
        return None, counts  # content is not a list
    channels = Channels(config)  # each text block a channel: the injected open tag opens the first with text
    cfg = channels.resolve(as_str(doc.get("model")))
    if not cfg.enabled or cfg.messages_policy == "off":
        return None, counts
    blocks = [obj(raw) for raw in content]
    if any(b is not None and as_str(b.get("type")) in NATIVE for b in blocks):
        return None, counts  # upstream reasoning wins
    redacted = cfg.messages_policy == "redacted"
    new_content: list[Any] = []
    changed = False
    for position, (raw, block) in enumerate(zip(content, blocks, strict=True)):
        text = as_str(block.get("text")) if block is not None and as_str(block.get("type")) == "text" else None
        if block is None or text is None:
            new_content.append(raw)
            continue
        segments = channels.at_once(position, text)
        if segments is None:
            segments = merge_segments(channels.text(position, text) + channels.end(position))
        if (not segments and not text) or (len(segments) == 1 and segments[0] == Segment(CONTENT, text)):
            new_content.append(raw)
            continue
        new_content += _blocks(block, segments, redacted)
        changed = True
    if not changed:
        return None, channels.counts
    doc["content"] = new_content
    return encode(doc), channels.counts
