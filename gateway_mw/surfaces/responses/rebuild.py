"""Whole ``output`` lists translated by the stream's own step logic: the non-stream body, and the
``output`` that ``response.completed`` repeats.

Each message item is played through a fresh :class:`~.reference.ResponsesReference` as the events a
stream of it would be (added, its parts' text, done), and the items the client would have been
sent are read back from the ``output_item.done`` events it writes. So stream and non-stream agree
by construction. For the terminal event of a stream, the replay is given the ids the stream made up,
in order, and flushes its held text where the stream did (an unreadable event cut a tag there):
its items are the streamed ones, without the stream having kept their text.

A non-stream body's plain output (message items of one text part each, as servers answer) is
written directly (``body``), without the events; this replay is its reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import msgspec

from ...config import ThinkExtractConfig
from ...rawjson import Obj, as_str, encode, obj, raw_list
from ...sse import SSEEvent, encode_event
from ..base import Counts, NewId, random_id
from .body import SLICE, plain_output
from .items import Record


class Replayer(Protocol):
    """The stream translator, as a replay drives it (``reference.py``'s, handed in: this module is below it)."""

    counts: Counts

    @property
    def native(self) -> bool: ...

    def replaying(self, config: ThinkExtractConfig) -> None: ...

    def event(self, event: SSEEvent) -> list[SSEEvent]: ...

    def flush(self) -> list[SSEEvent]: ...


NewReplayer = Callable[[ThinkExtractConfig, NewId], Replayer]
""":class:`Replayer`'s constructor: the settings, and the source of the ids it makes up."""

__all__ = ["output", "output_text", "transform_body"]

_decode = msgspec.json.Decoder().decode


def output(
    items: list[msgspec.Raw],
    config: ThinkExtractConfig,
    records: list[Record],
    given_ids: list[str],
    native: bool,
    new_id: NewId,
    index_of: Callable[[int], int | None],
    replayer: NewReplayer,
) -> list[Any]:
    """The client's ``output`` for an upstream one (raw items; unchanged ones stay raw), in the
    order the client was given the items (a message is held until its first run is known, so an
    item the upstream added later may have gone out before it). ``native``: the stream met upstream
    reasoning, so a message it did not translate is left as it is; ``index_of``: the client index
    of an upstream item passed on as it is."""
    placed, _ = _replay(items, config, records, given_ids, native, new_id, index_of, replayer)
    keyed: list[tuple[float, Any]] = []
    last = -1.0
    for index, item in placed:  # an item the client was not streamed stays after the one before it
        last = float(index) if index is not None else last
        keyed.append((last, item))
    keyed.sort(key=lambda pair: pair[0])
    return [item for _, item in keyed]


def transform_body(
    body: bytes | bytearray,
    config: ThinkExtractConfig,
    replayer: NewReplayer,
    *,
    new_id: NewId = random_id,
    direct: bool = True,
) -> tuple[bytes | None, Counts]:
    """A non-stream ``response`` body with reasoning moved into ``reasoning`` output items: a plain
    output written directly (``body``), any other replayed (``direct=False``: every one, the
    reference the direct writing is held to).

    Returns ``None`` for the body when nothing changed (the caller then sends the original bytes).
    Every value the translator does not own keeps its bytes.
    """
    doc = obj(bytes(body)) if _utf8(body) else None  # (msgspec does not check the values it leaves raw)
    items = raw_list(doc.get("output")) if doc is not None else None
    if doc is None or items is None:
        return None, Counts()
    cfg = config.for_model(as_str(doc.get("model")))
    if not cfg.enabled:
        return None, Counts()
    written = plain_output(items, cfg, new_id) if direct else None
    if written is None:
        placed, counts = _replay(items, cfg, [], [], False, new_id, lambda _: None, replayer)
        written = [item for _, item in placed], counts
    new, counts = written
    if len(new) == len(items) and all(a is b for a, b in zip(new, items, strict=True)):
        return None, counts
    doc["output"] = new
    if "output_text" in doc:
        doc["output_text"] = output_text(new)
    return encode(doc), counts


def _utf8(body: bytes | bytearray) -> bool:
    """Whether ``body`` is UTF-8, as JSON is: a body that is not goes on as it came."""
    if body.isascii():
        return True
    try:
        body.decode()
    except UnicodeDecodeError:
        return False
    return True


def output_text(items: list[Any]) -> str:
    """What the SDK's ``response.output_text`` reads: every message's output_text parts, joined."""
    texts: list[str] = []
    for raw in items:
        item = raw if isinstance(raw, dict) else obj(raw)
        if item is None or as_str(item.get("type")) != "message":
            continue
        for part in raw_list(encode(item.get("content"))) or []:
            fields = obj(part)
            if fields is not None and as_str(fields.get("type")) == "output_text":
                text = as_str(fields.get("text"))
                if text is not None:
                    texts.append(text)
    return "".join(texts)


# -- the replay -------------------------------------------------------------------------------------


class _Ids:
    """The ids a stream made up, handed out again in the same order (fresh ones past them)."""

    def __init__(self, given: list[str], new_id: NewId) -> None:
        self._given: Iterator[str] = iter(given)
        self._next: str | None = next(self._given, None)
        self._new_id = new_id

    def __call__(self, prefix: str) -> str:
        given = self._next
        if given is not None and given.startswith(prefix):
            self._next = next(self._given, None)
            return given
        return self._new_id(prefix)


def _replay(
    items: list[msgspec.Raw],
    config: ThinkExtractConfig,
    records: list[Record],
    given_ids: list[str],
    native: bool,
    new_id: NewId,
    index_of: Callable[[int], int | None],
    replayer: NewReplayer,
) -> tuple[list[tuple[int | None, Any]], Counts]:
    stream = replayer(config, _Ids(given_ids, new_id))
    stream.replaying(config)
    by_id = {record.up_id: record for record in records}
    named = {as_str(i.get("id")) for i in map(obj, items) if i is not None}
    unnamed = iter([record for record in records if record.up_id not in named])  # ids made up
    new: list[tuple[int | None, Any]] = []
    for ordinal, raw in enumerate(items):
        item = obj(raw)
        kind = as_str(item.get("type")) if item is not None else None
        if item is None or kind != "message":
            if kind == "reasoning":
                stream.event(_event({"type": "response.output_item.added", "output_index": ordinal, "item": raw}))
            new.append((index_of(ordinal), raw))
            continue
        up_id = as_str(item.get("id"))
        record = by_id.get(up_id) if up_id is not None else next(unnamed, None)
        if (native and record is None) or stream.native:  # upstream reasoning wins
            new.append((index_of(ordinal), raw))
            continue
        # Item by item as they are written: only the done items are kept, never the events.
        replaced = [
            done
            for ev in _message_events(item, ordinal, record)
            for out in _run(stream, ev)
            if (done := _done_item(out)) is not None
        ]
        indexes = record.indexes if record is not None else []
        if not replaced or _same(replaced, raw):
            new.append((indexes[0] if indexes else index_of(ordinal), raw))
        else:
            new += [(indexes[k] if k < len(indexes) else None, done) for k, done in enumerate(replaced)]
    return new, stream.counts


def _run(stream: Replayer, ev: SSEEvent | None) -> list[SSEEvent]:
    """One synthetic event through the replay (``None``: a flush where the stream flushed)."""
    return stream.flush() if ev is None else stream.event(ev)


def _event(body: Obj) -> SSEEvent:
    return encode_event(encode(body))


def _message_events(item: Obj, ordinal: int, record: Record | None) -> Iterator[SSEEvent | None]:
    """The events a stream of ``item`` would be, with ``None`` where the stream flushed."""
    if record is not None and as_str(item.get("id")) is None:
        item = {**item, "id": record.up_id}  # the id the stream made up (or read) for it
    where: Obj = {"output_index": ordinal}
    if "id" in item:
        where["item_id"] = item["id"]
    content = raw_list(item.get("content")) or []
    yield _event({"type": "response.output_item.added", **where, "item": {**item, "content": []}})
    flushes = list(record.flushes) if record is not None else []
    fed = 0
    for index, raw_part in enumerate(content):
        part = obj(raw_part)
        text = as_str(part.get("text")) if part is not None and as_str(part.get("type")) == "output_text" else None
        at: Obj = {**where, "content_index": index}
        if part is None or text is None:
            yield _event({"type": "response.content_part.added", **at, "part": raw_part})
            yield _event({"type": "response.content_part.done", **at, "part": raw_part})
            continue
        yield _event({"type": "response.content_part.added", **at, "part": {**part, "text": ""}})
        cuts = []
        while flushes and flushes[0] <= fed + len(text):
            cuts.append(flushes.pop(0) - fed)
        start = 0
        for cut in [*cuts, len(text)]:
            # In slices: the runs written for a slice are no larger than it (chunking changes nothing).
            for piece in range(start, cut, SLICE):
                delta = text[piece : min(piece + SLICE, cut)]
                yield _event({"type": "response.output_text.delta", **at, "delta": delta, "logprobs": []})
            start = max(start, cut)
            if cut < len(text) or cut in cuts:
                yield None
        fed += len(text)
        text = ""  # the replay's items hold it now: do not hold it twice while they are written
        # The done events carry the part's and the item's other fields: the text is the stream's own.
        yield _event({"type": "response.output_text.done", **at, "text": "", "logprobs": []})
        yield _event({"type": "response.content_part.done", **at, "part": {**part, "text": ""}})
    yield _event({"type": "response.output_item.done", **where, "item": {**item, "content": []}})


def _done_item(event: SSEEvent) -> msgspec.Raw | None:
    if event.data is None:
        return None
    body = obj(event.data)
    if body is None or as_str(body.get("type")) != "response.output_item.done":
        return None
    item = body.get("item")
    return item if isinstance(item, msgspec.Raw) else None


def _same(produced: list[Any], raw: msgspec.Raw) -> bool:
    """Whether the replay gave back the item unchanged (then its original bytes are kept)."""
    return len(produced) == 1 and _decode(produced[0]) == _decode(raw)
