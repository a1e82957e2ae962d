"""A non-stream body's plain ``output``, written directly: the items the replay (``rebuild``) reads
back from the events a stream of it would be, made without writing those events.

Plain is what an upstream answers without a stream: message items of one ``output_text`` part
each. Each message's text goes through the same
channel core, in the same slices and with the same flush and end, as in the replay; its runs become
the same items (a reasoning item for each reasoning run, a message for the answer text around them),
with the ids made up in the same order. The replay is this module's reference: anything else (more
parts, a part of another kind, held text that comes out only at the text's end, an item whose events
the stream's head decoder would not read) it declines, before making up an id, and the body is replayed.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...channels import Channels, Counts
from ...config import ThinkExtractConfig
from ...marks import encode_blob
from ...rawjson import Obj, as_str, encode, obj, raw_list
from ...scanner import CONTENT, Segment, merge_segments
from ..base import NewId
from .heads import decode_head
from .items import formats

__all__ = ["SLICE", "plain_output"]

SLICE = 64 * 1024
"""Characters of a message's text replayed per delta (each counts once if any of it is reasoning)."""

_READ = frozenset(("id", "call_id"))
"""A message item's members the stream's head decoder decodes (any JSON): one msgspec cannot decode
(a number out of its range) leaves the events that carry them unread, or read by the standard
library, whole, which a member it skipped may fail."""

_Scanned = tuple[Obj, Obj, list[Segment]] | None
"""A message item, its one part and its runs; ``None``: an item that goes on as it came."""


def plain_output(
    items: list[msgspec.Raw], config: ThinkExtractConfig, new_id: NewId
) -> tuple[list[Any], Counts] | None:
    """The client's ``output`` for a plain one (unchanged items stay raw), and what the scanners
    did; ``None``: not plain (replay it)."""
    core = Channels(config)
    core.resolve(None)
    scanned: list[_Scanned] = []
    native = False  # an upstream reasoning item: the messages after it go on as they came
    for ordinal, raw in enumerate(items):
        item = obj(raw)
        kind = as_str(item.get("type")) if item is not None else None
        if kind == "reasoning" and decode_head(b'{"item":' + raw + b"}") is None:
            return None  # its event unread in the replay: it does not win there
        if item is None or kind != "message" or native:
            native = native or kind == "reasoning"
            scanned.append(None)
            continue
        head = decode_head(encode({"item": {k: v for k, v in item.items() if k in _READ}}))
        if head is None or not head[1]:  # its events unread in the replay, or read there otherwise
            return None
        read = _scan(core, ordinal, item)
        if read is None:
            return None
        scanned.append(read)
    writer = _Items(config, new_id)
    out: list[Any] = []
    for raw, read in zip(items, scanned, strict=True):
        made = None if read is None else writer.items(*read)
        out += [raw] if made is None or _same(made, raw) else made
    return out, core.counts


def _scan(core: Channels, ordinal: int, item: Obj) -> _Scanned | None:
    """The runs of a message item's one text part, as the replay scans them; ``None``: not plain."""
    parts = raw_list(item.get("content"))
    part = obj(parts[0]) if parts is not None and len(parts) == 1 else None
    text = as_str(part.get("text")) if part is not None and as_str(part.get("type")) == "output_text" else None
    if part is None or text is None:
        return None
    if len(text) <= SLICE and (known := core.at_once(ordinal, text)) is not None:  # one delta
        if any(run.kind != CONTENT for run in known):
            core.counts.reasoning_events += 1
        return item, part, known
    segments: list[Segment] = []
    for start in range(0, len(text), SLICE):  # its deltas
        runs = core.text(ordinal, text[start : start + SLICE])
        if any(run.kind != CONTENT for run in runs):
            core.counts.reasoning_events += 1
        segments += runs
    scanner = core.scanner(ordinal)
    if scanner is not None:  # its text is done: what the scanner held goes out
        segments += scanner.flush()
    if core.end(ordinal):  # text that comes out only at the item's end opens another part there
        return None
    return item, part, merge_segments(segments)


class _Items:
    """The client items of message items' runs, as the stream's writer closes them."""

    def __init__(self, config: ThinkExtractConfig, new_id: NewId) -> None:
        kept = formats(config)
        self._content, self._summary, self._blob = ("content" in kept, "summary" in kept, "encrypted_content" in kept)
        self._new_id = new_id

    def items(self, item: Obj, part: Obj, runs: list[Segment]) -> list[Any]:
        up_id = as_str(item.get("id")) or self._new_id("msg_")
        if not runs:  # an empty answer stays an (empty) message
            return [{**item, "id": up_id, "content": [_part(part, "")]}]
        out: list[Any] = []
        messages = 0
        for at, run in enumerate(runs):
            if run.kind != CONTENT:
                out.append(self._reasoning(run.text))
                continue
            message_id = up_id if messages == 0 else f"{up_id}_{messages}"
            messages += 1
            message = {**item, "id": message_id}
            if at + 1 < len(runs):  # closed by the reasoning after it
                message["status"] = "completed"
            message["content"] = [_part(part, run.text)]
            out.append(message)
        return out

    def _reasoning(self, text: str) -> Obj:
        item: Obj = {"id": self._new_id("rs_"), "type": "reasoning", "summary": []}
        if self._content:
            item["content"] = [{"type": "reasoning_text", "text": text}]
        if self._summary:
            item["summary"] = [{"type": "summary_text", "text": text}]
        if self._blob:
            item["encrypted_content"] = encode_blob(text)
        item["status"] = "completed"
        return item


def _part(part: Obj, text: str) -> Obj:
    new = {**part, "text": text}
    if "annotations" not in new:  # required of an output_text part by a strict client
        new["annotations"] = []
    return new


_decode = msgspec.json.Decoder().decode


def _same(produced: list[Any], raw: msgspec.Raw) -> bool:
    """Whether the items are the item unchanged (then its original bytes are kept)."""
    if len(produced) != 1:
        return False
    return bool(_decode(msgspec.json.encode(produced[0])) == _decode(raw))
