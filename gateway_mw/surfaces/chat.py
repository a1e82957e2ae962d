"""OpenAI chat completions: inline reasoning → ``reasoning_content`` (or ``reasoning``).

Stream: one Scanner per choice. Three ways through, cheapest first:

* **fast forward** (``fast_forward``, whole runs of events): while the only choice's scanner is in
  steady content and the raw bytes hold nothing that could start a tag, change the code state or
  carry native reasoning, the events go out as they came, undecoded;
* **unchanged** (``event``): the few fields read here are decoded into a small struct; a chunk
  whose text the scanner passes through unchanged goes out as the same bytes;
* **rewritten**: a chunk whose one delta is wholly reasoning differs from the upstream's only in
  one key's name, and gets exactly that edit on its bytes when that edit provably is the whole
  change; otherwise the chunk is rebuilt from the upstream JSON with every value the translator
  does not own kept as its raw bytes, in order.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Annotated, Any

import msgspec

from ..config import ThinkExtractConfig
from ..scanner import CONTENT, REASONING, Kind, Scanner, Segment, merge_segments
from ..sse import SSEEvent, encode_event
from .base import Counts, extract_counted
from .rawjson import as_str, obj, raw_list

__all__ = ["ChatStream", "transform_body", "translate_stream"]

_DONE = b"[DONE]"
# Top-level keys every split or synthesized chunk repeats; the other keys travel once, on the last.
_ENVELOPE = ("id", "object", "created", "model", "system_fingerprint", "service_tier", "obfuscation")
_Obj = dict[str, Any]  # a JSON object whose values are msgspec.Raw except where the translator wrote


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_details: msgspec.Raw = msgspec.Raw()  # any JSON; empty when absent


class _Choice(msgspec.Struct, gc=False):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct, gc=False):
    """The fields of a chunk the translator reads; everything else is skipped by the decoder."""

    model: str | None = None
    choices: list[_Choice] | None = None
    error: msgspec.Raw = msgspec.Raw()


class _SteadyDelta(msgspec.Struct, gc=False):
    content: Annotated[str, msgspec.Meta(min_length=1)]
    reasoning_content: None = None
    reasoning: None = None
    reasoning_details: None = None


class _SteadyChoice(msgspec.Struct, gc=False):
    delta: _SteadyDelta
    index: Annotated[int, msgspec.Meta(ge=0, le=0)] = 0
    finish_reason: None = None


class _SteadyChunk(msgspec.Struct, gc=False):
    """A chunk that only continues choice 0's text: the decoder itself refuses anything else."""

    choices: tuple[_SteadyChoice]


_decode_chunk = msgspec.json.Decoder(_Chunk).decode
_decode_steady = msgspec.json.Decoder(list[_SteadyChunk]).decode
# Rewrites decode only the objects on the way to the text; every other value stays raw bytes, so
# it is re-emitted exactly (numbers msgspec would reject, deep nesting, escapes) and cheaply.
_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_list = msgspec.json.Decoder(list[dict[str, msgspec.Raw]]).decode
_encode = msgspec.json.Encoder().encode
_EMPTY_RAW = (b"", b"null", b"false", b"[]", b"{}", b'""')
_NULL = msgspec.Raw(b"null")
_NATIVE_MESSAGE_KEYS = ("reasoning_content", "reasoning", "reasoning_details")
_JSON_ESCAPES = {'"': b'\\"', "\\": b"\\\\", "/": b"\\/", "\b": b"\\b", "\f": b"\\f", "\n": b"\\n", "\r": b"\\r"}
_JSON_ESCAPES["\t"] = b"\\t"
_STRUCTURAL = frozenset('{}]:,"')


def _has_native_reasoning(delta: _Delta) -> bool:
    if delta.reasoning_content or delta.reasoning:
        return True
    details = delta.reasoning_details
    return bool(details) and bytes(details) not in _EMPTY_RAW


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, msgspec.Raw) and bytes(value) in (b"", b"null"))


def _delta_of(choice: _Obj) -> _Obj:
    raw = choice.get("delta")
    return _decode_obj(raw) if isinstance(raw, msgspec.Raw) and not _is_null(raw) else {}


def _with_text(obj: _Obj, key: str, text: str) -> _Obj:
    """``obj`` with its ``content`` replaced by ``key: text`` in the same place (else appended)."""
    out: _Obj = {}
    placed = False
    for k, v in obj.items():
        if k == "content":
            out[key] = text
            placed = True
        elif k != key:
            out[k] = v
    if not placed:
        out[key] = text
    return out


class _RawTriggers:
    """Which raw bytes may hide a character the scanner must see, for one set of trigger characters.

    A character can reach a JSON string as itself (UTF-8; never a control character), as a short
    escape, or as ``\\uXXXX``: any ``\\u`` counts. ``[`` also opens the ``choices`` array, so it is
    counted instead.
    """

    def __init__(self, triggers: frozenset[str]) -> None:
        self.possible = not (triggers & _STRUCTURAL)
        self.bracket = "[" in triggers
        needles = {b"\\u"}
        for ch in triggers - {"["}:
            if ch >= " ":  # a control character never stands raw in a JSON string
                needles.add(ch.encode())
            if ch in _JSON_ESCAPES:
                needles.add(_JSON_ESCAPES[ch])
        # By first byte: a one-byte search runs at memchr speed, a longer one far slower, so the
        # longer needles are looked for only where their first byte occurs at all.
        by_first: dict[bytes, list[bytes]] = {}
        for needle in sorted(needles):
            by_first.setdefault(needle[:1], []).append(needle)
        self.needles = tuple((first, tuple(group)) for first, group in by_first.items())

    def absent(self, raw: bytes) -> bool:
        for first, group in self.needles:
            if first in raw:
                for needle in group:
                    if needle in raw:
                        return False
        return not self.bracket or raw.count(b"[") == raw.count(b'"choices":[')


class ChatStream:
    """Translate a chat completions event stream, one event at a time (sans-I/O)."""

    large_events: frozenset[bytes] = frozenset()

    def __init__(self, config: ThinkExtractConfig) -> None:
        self._base = config
        self._config: ThinkExtractConfig | None = None  # resolved for the model on the first chunk
        self._field = config.chat_reasoning_field
        self._rename_from = b'"content":"'
        self._rename_to = b'"' + self._field.encode() + b'":"'
        self._field_key = b'"' + self._field.encode() + b'"'
        self._scanners: dict[int, Scanner] = {}
        self._native: set[int] = set()  # choices that carry upstream reasoning: left alone
        self._envelope: _Obj = {}  # from the last rewritten chunk, for synthesized ones
        self._last_raw: bytes | None = None  # the last data chunk not yet decoded for its envelope
        self._steady: tuple[Kind, _RawTriggers] | None = None  # see _refresh_steady
        self._triggers: dict[frozenset[str], _RawTriggers] = {}
        self.counts = Counts()

    # -- events ---------------------------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        data = event.data
        if data is None:
            return [event]
        if data == _DONE:
            return [*self._finish_all(), event]
        steady = self._steady
        if steady is not None and steady[0] == CONTENT and self._plain(data, steady[1]):
            return [event]
        try:
            chunk = _decode_chunk(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            # Not a chunk we can read: whatever was held goes out first, so that text keeps its order.
            self.counts.unreadable_events += 1
            return [*self.flush(), event]
        if self._config is None:
            self._config = self._base.for_model(chunk.model)
        if not self._config.enabled:
            return [event]
        choices = chunk.choices
        if not choices:
            if choices is not None or bytes(chunk.error) not in _EMPTY_RAW:
                # The usage chunk or an error: the choices are over; every held character goes first.
                return [*self._finish_all(), event]
            return [*self.flush(), event]  # some other object: it passes, after what was held
        self._last_raw = data
        before: list[SSEEvent] = []  # flushes of choices that turned native, sent ahead of this chunk
        runs: dict[int, list[Segment]] | None = None  # by position in the chunk: the choices that change
        for pos, choice in enumerate(choices):
            if choice.index in self._native:
                continue
            if choice.delta is not None and _has_native_reasoning(choice.delta):
                # Upstream reasoning wins: this choice is left as is from here on.
                self._native.add(choice.index)
                before += self._finish_all(only=choice.index)
                continue
            new = self._scan(choice)
            if new is not None:
                if runs is None:
                    runs = {}
                runs[pos] = new
        if runs is None:
            out = [event]
        elif len(choices) == 1 and self._renamable(choices[0], runs[0], data):
            out = [encode_event(data.replace(self._rename_from, self._rename_to, 1), fields=event.fields)]
        else:
            out = self._rewrite(event, runs)
        self._refresh_steady()
        return before + out if before else out

    def flush(self) -> list[SSEEvent]:
        """Chunks carrying what every choice's scanner holds; the scanners go on."""
        out = self._held_chunks([(i, self._scanners[i].flush()) for i in sorted(self._scanners)])
        self._refresh_steady()
        return out

    def finish(self) -> list[SSEEvent]:
        """End of stream without ``[DONE]`` (EOF or a dropped upstream): flush every choice."""
        return self._finish_all()

    def oversized(self, piece: bytes, more: bool) -> bytes:
        """Chat numbers nothing (a choice keeps its index): an oversized chunk goes out as it came."""
        return piece

    def fast_forward(self, span: bytes) -> bytes | None:
        """The bytes for a run of whole events, when provably exact without decoding them one by one:
        ``span`` itself in steady content, every ``"content"`` key renamed in steady reasoning."""
        config = self._config
        if config is not None and not config.enabled:
            return span  # this stream's model is not translated
        steady = self._steady
        if steady is None:
            return None
        kind, triggers = steady
        if kind == CONTENT:
            return span if self._plain(span, triggers) else None
        return self._rename_all(span, triggers)

    # -- the fast paths -------------------------------------------------------------------------

    def _refresh_steady(self) -> None:
        """Note when choice 0 alone is under way with nothing held, so that a text free of its
        scanner's triggers would go through it unchanged (content) or wholly as reasoning."""
        self._steady = None
        scanners = self._scanners
        if len(scanners) != 1 or self._native:
            return
        scanner = scanners.get(0)
        if scanner is None:
            return
        kind = scanner.steady
        if kind is None:
            return
        triggers = scanner.triggers
        raw = self._triggers.get(triggers)
        if raw is None:
            raw = self._triggers[triggers] = _RawTriggers(triggers)
        if raw.possible:
            self._steady = (kind, raw)

    @staticmethod
    def _plain(raw: bytes, triggers: _RawTriggers) -> bool:
        """Whether ``raw`` (data of events) provably only continues choice 0's steady content.

        Every condition is about bytes that JSON cannot hide inside a string without a backslash:
        ``"index":`` is always a key, ``"finish_reason"`` a key or a value, ``"reasoning…"``.
        """
        if not triggers.absent(raw):
            return False
        if raw.count(b'"index":') != raw.count(b'"index":0,'):
            return False  # another choice (or an index written another way)
        if raw.count(b'"finish_reason"') != raw.count(b'"finish_reason":null'):
            return False  # a choice ends: its scanner finishes
        if b'"error"' in raw or b'"choices":[]' in raw:
            return False  # the end of the choices
        native = raw.count(b'"reasoning')
        return not native or native == raw.count(b'"reasoning_content":null') + raw.count(b'"reasoning":null')

    def _rename_all(self, span: bytes, triggers: _RawTriggers) -> bytes | None:
        """Steady reasoning: ``span`` with each event's delta ``"content"`` renamed, or ``None``.

        The events must be one ``data: `` line each, so that they decode as one JSON array in one
        call, into a type that admits only what :meth:`event` would turn into this rename: one
        choice 0, not finishing, whose delta carries non-empty text, free of triggers, and no
        reasoning of its own. With no ``\\u`` anywhere a key cannot be
        spelled another way, so ``k`` events holding ``k`` ``"content"`` keys hold one each.
        """
        if not triggers.absent(span) or self._field_key in span:
            return None
        events = span.count(b"\n\n")
        if span.count(b'"content"') != events:
            return None
        try:  # any line but "data: " (a comment, event:, id:) makes this invalid JSON
            chunks = _decode_steady(b"[" + span[6:-2].replace(b"\n\ndata: ", b",") + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if len(chunks) != events:
            return None  # two JSON values on one line, or blank lines between events
        self._scanners[0].pass_steady(sum(len(chunk.choices[0].delta.content) for chunk in chunks))
        last = span.rfind(b"\n\ndata: ") + 8  # the envelope of synthesized chunks: the last event's
        self._last_raw = span[last if last >= 8 else 6 : -2]
        return span.replace(b'"content"', self._field_key)

    def _renamable(self, choice: _Choice, runs: list[Segment], data: bytes) -> bool:
        """Whether the rewrite of this one-choice chunk is only ``"content"`` renamed.

        True when the delta's whole text became one reasoning run and the one ``"content"`` key
        in the bytes is the delta's (no ``\\u`` escapes that could spell a key another way).
        """
        if len(runs) != 1 or runs[0].kind != REASONING or choice.finish_reason is not None:
            return False
        delta = choice.delta
        if delta is None or runs[0].text != delta.content:
            return False
        return (
            data.count(b'"content"') == 1
            and data.count(self._rename_from) == 1
            and self._field_key not in data
            and b"\\u" not in data
        )

    # -- per choice -----------------------------------------------------------------------------

    def _scan(self, choice: _Choice) -> list[Segment] | None:
        """The runs to send for this choice, or ``None`` when it goes out unchanged."""
        index, delta = choice.index, choice.delta
        text = delta.content if delta is not None else None
        scanner = self._scanners.get(index)
        if scanner is None:
            if not text:
                return None
            assert self._config is not None
            scanner = self._scanners[index] = Scanner(self._config)
        out = scanner.feed(text) if text else []
        if choice.finish_reason is not None:
            out += self._finish_choice(index, scanner)
        if not out:
            return None if not text else []
        if len(out) == 1 and out[0].kind == CONTENT and out[0].text == text:
            return None
        return merge_segments(out)

    def _finish_choice(self, index: int, scanner: Scanner) -> list[Segment]:
        del self._scanners[index]
        out = scanner.finish()
        self.counts.add(scanner)
        return out

    def _finish_all(self, only: int | None = None) -> list[SSEEvent]:
        """Chunks carrying what the scanners hold, which finish: all choices, or choice ``only``."""
        indexes = sorted(self._scanners) if only is None else [only] if only in self._scanners else []
        out = self._held_chunks([(i, self._finish_choice(i, self._scanners[i])) for i in indexes])
        self._refresh_steady()
        return out

    # -- output ---------------------------------------------------------------------------------

    def _rewrite(self, event: SSEEvent, runs: dict[int, list[Segment]]) -> list[SSEEvent]:
        assert event.data is not None
        chunk: _Obj = _decode_obj(event.data)
        choices: list[_Obj] = _decode_list(chunk["choices"])
        chunk["choices"] = choices
        if len(choices) == 1 and len(runs[0]) == 1:
            # The common case, one choice and one run: edit the delta in place.
            seg = runs[0][0]
            choice = choices[0]
            key = "content" if seg.kind == CONTENT else self._field
            choice["delta"] = _with_text(_delta_of(choice), key, seg.text)
            return [encode_event(_encode(chunk), fields=event.fields)]
        self._remember_envelope(chunk)
        # Chunk k carries run k of every choice that has one; a choice's other fields go with its
        # first run and its finish_reason with its last, so each choice reads in order.
        per_choice: list[list[_Obj]] = []
        for pos, choice in enumerate(choices):
            if pos in runs:
                per_choice.append(self._split_choice(choice, runs[pos]))
            else:
                per_choice.append([choice])
        width = max(1, *(len(parts) for parts in per_choice))  # one chunk even if all was absorbed
        out: list[SSEEvent] = []
        for k in range(width):
            row = [parts[k] for parts in per_choice if k < len(parts)]
            body = self._chunk_body(chunk, row, last=k == width - 1)
            if body is not None:
                out.append(encode_event(_encode(body), fields=event.fields))
        return out

    def _split_choice(self, choice: _Obj, runs: list[Segment]) -> list[_Obj]:
        delta = _delta_of(choice)
        finish = choice.get("finish_reason", _NULL)
        parts: list[_Obj] = []
        for i, seg in enumerate(runs):
            key = self._field if seg.kind != CONTENT else "content"
            part = dict(choice) if i == 0 else {"index": choice.get("index", 0)}
            part["delta"] = _with_text(delta, key, seg.text) if i == 0 else {key: seg.text}
            if i == 0 and len(runs) > 1 and "finish_reason" in part:
                part["finish_reason"] = None
            if i > 0:
                part["logprobs"] = None
                part["finish_reason"] = finish if i == len(runs) - 1 else None
            parts.append(part)
        if not parts:  # everything was held: keep the choice only if it has something else to say
            others = {k: v for k, v in delta.items() if k != "content"}
            if not others and all(_is_null(v) for k, v in choice.items() if k not in ("index", "delta")):
                return []
            part = dict(choice)
            part["delta"] = others
            parts.append(part)
        return parts

    def _chunk_body(self, chunk: _Obj, row: list[_Obj], last: bool) -> _Obj | None:
        body: _Obj = {}
        payload = bool(row)
        for key, value in chunk.items():
            if key == "choices":
                body[key] = row
            elif key in _ENVELOPE:
                body[key] = value
            elif last:
                body[key] = value
                payload = payload or not _is_null(value)
        return body if payload else None

    def _remember_envelope(self, chunk: _Obj) -> None:
        self._envelope = {k: chunk[k] for k in _ENVELOPE if k in chunk}
        self._last_raw = None

    def _held_chunks(self, held: list[tuple[int, list[Segment]]]) -> list[SSEEvent]:
        """One chunk per run of held text, choice by choice, with the stream's envelope."""
        out: list[SSEEvent] = []
        for index, segments in held:
            if not segments:
                continue
            if self._last_raw is not None:
                self._remember_envelope(_decode_obj(self._last_raw))
            for seg in merge_segments(segments):
                field = "content" if seg.kind == CONTENT else self._field
                choice = {"index": index, "delta": {field: seg.text}, "logprobs": None, "finish_reason": None}
                body = {**self._envelope, "choices": [choice]}
                body.setdefault("object", "chat.completion.chunk")
                out.append(encode_event(_encode(body)))
        return out


def transform_body(body: bytes | bytearray, config: ThinkExtractConfig) -> tuple[bytes | None, Counts]:
    """A non-stream ``chat.completion`` body with reasoning moved out of ``message.content``.

    Returns ``None`` for the body when nothing changed (the caller then sends the original bytes).
    Only the objects on the way to each message's text are decoded; every other value is re-emitted
    as its original bytes.
    """
    counts = Counts()
    try:
        doc: _Obj = _decode_obj(body)
        choices: list[_Obj] | None = _decode_list(doc["choices"]) if "choices" in doc else None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None, counts
    if not choices:
        return None, counts
    try:
        model = msgspec.json.decode(doc["model"], type=str) if "model" in doc else None
    except (msgspec.DecodeError, msgspec.ValidationError):
        model = None
    cfg = config.for_model(model)
    if not cfg.enabled:
        return None, counts
    changed = False
    for choice in choices:
        changed = _split_message(choice, cfg, counts) or changed
    if not changed:
        return None, counts
    doc["choices"] = choices
    return _encode(doc), counts


def _split_message(choice: _Obj, cfg: ThinkExtractConfig, counts: Counts) -> bool:
    """Move the reasoning out of ``choice``'s message text, in place; whether anything changed.

    A function of its own so that the decoded text and its segments are freed on return, before
    the body is encoded again: a large body is then held about twice, not four times.
    """
    message = obj(choice.get("message"))
    if message is None or "content" not in message:
        return False
    if any(k in message and bytes(message[k]) not in _EMPTY_RAW for k in _NATIVE_MESSAGE_KEYS):
        return False
    original = as_str(message["content"])
    if original is None:
        parts = _split_parts(message["content"], cfg, counts)  # a list of parts, or not text at all
        if parts is None:
            return False
        message["content"], reasoning = parts
        if reasoning:
            message[cfg.chat_reasoning_field] = reasoning
        choice["message"] = message
        return True
    segments = extract_counted(original, cfg, counts)
    content = "".join(s.text for s in segments if s.kind == CONTENT)
    reasoning = "".join(s.text for s in segments if s.kind != CONTENT)
    if content == original and not reasoning:
        return False
    del segments, original
    message["content"] = content
    if reasoning:
        message[cfg.chat_reasoning_field] = reasoning
    choice["message"] = message
    return True


def _split_parts(raw: Any, cfg: ThinkExtractConfig, counts: Counts) -> tuple[list[Any], str] | None:
    """A content list's text parts through one scanner (a block may span them, a tag may not), the
    other parts kept in place: the new list and the reasoning; ``None`` when nothing changes."""
    parts = raw_list(raw)
    if not parts:
        return None
    scanner = Scanner(cfg)
    reasoning: list[str] = []
    texts: list[list[str]] = []  # per text part, its content
    places: list[tuple[int, _Obj]] = []  # the text parts: position, fields
    for at, part in enumerate(parts):
        fields = obj(part)
        text = as_str(fields.get("text")) if fields is not None and as_str(fields.get("type")) == "text" else None
        if fields is None or text is None:
            continue
        segments = scanner.feed(text) + scanner.flush()
        places.append((at, fields))
        texts.append([])
        for seg in segments:
            (texts[-1] if seg.kind == CONTENT else reasoning).append(seg.text)
    if not places:
        return None
    for seg in scanner.finish():
        (texts[-1] if seg.kind == CONTENT else reasoning).append(seg.text)
    counts.add(scanner)
    if not reasoning and all("".join(t) == as_str(f["text"]) for (_, f), t in zip(places, texts, strict=True)):
        return None
    new: list[Any] = list(parts)
    for (at, fields), pieces in zip(places, texts, strict=True):
        new[at] = {**fields, "text": "".join(pieces)}
    return new, "".join(reasoning)


async def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    stream = ChatStream(config)
    async for event in events:
        for out in stream.event(event):
            yield out
    for out in stream.finish():
        yield out
