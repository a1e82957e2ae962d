"""OpenAI chat completions: inline reasoning → ``reasoning_content`` (or ``reasoning``).

Stream: one Scanner per choice. A chunk whose content the scanner passes through unchanged is
forwarded as it came, without being decoded past the few fields read here; a changed chunk is
rebuilt from the upstream JSON, keeping every field the translator does not own, in order.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import msgspec

from ..config import ThinkExtractConfig
from ..scanner import CONTENT, Scanner, Segment, merge_segments
from ..sse import SSEEvent, encode_event
from .base import Counts, extract_counted

__all__ = ["ChatStream", "transform_body", "translate_stream"]

_DONE = b"[DONE]"
# Top-level keys every split or synthesized chunk repeats; the other keys travel once, on the last.
_ENVELOPE = ("id", "object", "created", "model", "system_fingerprint", "service_tier", "obfuscation")


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


_decode_chunk = msgspec.json.Decoder(_Chunk).decode
_decode_any = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
_EMPTY_RAW = (b"", b"null", b"false", b"[]", b"{}", b'""')


def _has_native_reasoning(delta: _Delta) -> bool:
    if delta.reasoning_content or delta.reasoning:
        return True
    details = delta.reasoning_details
    return bool(details) and bytes(details) not in _EMPTY_RAW


class ChatStream:
    """Translate a chat completions event stream, one event at a time (sans-I/O)."""

    def __init__(self, config: ThinkExtractConfig) -> None:
        self._base = config
        self._config: ThinkExtractConfig | None = None  # resolved for the model on the first chunk
        self._field = config.chat_reasoning_field
        self._scanners: dict[int, Scanner] = {}
        self._native: set[int] = set()  # choices that carry upstream reasoning: left alone
        self._envelope: dict[str, Any] = {}  # from the last rewritten chunk, for synthesized ones
        self._last_raw: bytes | None = None  # the last data chunk not yet decoded for its envelope
        self.counts = Counts()

    # -- events ---------------------------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        data = event.data
        if data is None:
            return [event]
        if data == _DONE:
            return [*self._flush(), event]
        try:
            chunk = _decode_chunk(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return [event]  # not a chunk we understand: pass it on untouched
        if self._config is None:
            self._config = self._base.for_model(chunk.model)
        if not self._config.enabled:
            return [event]
        choices = chunk.choices
        if not choices:
            if choices is not None or bytes(chunk.error) not in _EMPTY_RAW:
                # The usage chunk or an error: every held character goes out before it.
                return [*self._flush(), event]
            return [event]
        self._last_raw = data
        before: list[SSEEvent] = []  # flushes of choices that turned native, sent ahead of this chunk
        runs: dict[int, list[Segment]] | None = None  # by position in the chunk: the choices that change
        for pos, choice in enumerate(choices):
            if choice.index in self._native:
                continue
            if choice.delta is not None and _has_native_reasoning(choice.delta):
                # Upstream reasoning wins: this choice is left as is from here on.
                self._native.add(choice.index)
                before += self._flush(only=choice.index)
                continue
            new = self._scan(choice)
            if new is not None:
                if runs is None:
                    runs = {}
                runs[pos] = new
        out = [event] if runs is None else self._rewrite(event, runs)
        return before + out if before else out

    def finish(self) -> list[SSEEvent]:
        """End of stream without ``[DONE]`` (EOF or a dropped upstream): flush every choice."""
        return self._flush()

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

    # -- output ---------------------------------------------------------------------------------

    def _rewrite(self, event: SSEEvent, runs: dict[int, list[Segment]]) -> list[SSEEvent]:
        assert event.data is not None
        chunk = _decode_any(event.data)
        choices: list[Any] = chunk["choices"]
        if len(choices) == 1 and len(runs[0]) == 1 and isinstance(choices[0].get("delta"), dict):
            # The common case, one choice and one run: edit the delta in place.
            seg = runs[0][0]
            delta = choices[0]["delta"]
            if seg.kind == CONTENT:
                delta["content"] = seg.text
            else:
                delta.pop("content", None)
                delta[self._field] = seg.text
            return [encode_event(_encode(chunk), fields=event.fields)]
        self._remember_envelope(chunk)
        # Chunk k carries run k of every choice that has one; a choice's other fields go with its
        # first run and its finish_reason with its last, so each choice reads in order.
        per_choice: list[list[dict[str, Any]]] = []
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

    def _split_choice(self, choice: dict[str, Any], runs: list[Segment]) -> list[dict[str, Any]]:
        delta: dict[str, Any] = choice.get("delta") or {}
        others = {k: v for k, v in delta.items() if k != "content"}
        finish = choice.get("finish_reason")
        parts: list[dict[str, Any]] = []
        for i, seg in enumerate(runs):
            new_delta = dict(others) if i == 0 else {}
            new_delta[self._field if seg.kind != CONTENT else "content"] = seg.text
            part = dict(choice) if i == 0 else {"index": choice.get("index", 0)}
            part["delta"] = new_delta
            if i == 0 and len(runs) > 1 and "finish_reason" in part:
                part["finish_reason"] = None
            if i > 0:
                part["logprobs"] = None
                part["finish_reason"] = finish if i == len(runs) - 1 else None
            parts.append(part)
        if not parts:  # everything was held: keep the choice only if it has something else to say
            if not others and all(v is None for k, v in choice.items() if k not in ("index", "delta")):
                return []
            part = dict(choice)
            part["delta"] = others
            parts.append(part)
        return parts

    def _chunk_body(self, chunk: dict[str, Any], row: list[dict[str, Any]], last: bool) -> dict[str, Any] | None:
        body: dict[str, Any] = {}
        payload = bool(row)
        for key, value in chunk.items():
            if key == "choices":
                body[key] = row
            elif key in _ENVELOPE:
                body[key] = value
            elif last:
                body[key] = value
                payload = payload or value is not None
        return body if payload else None

    def _remember_envelope(self, chunk: dict[str, Any]) -> None:
        self._envelope = {k: chunk[k] for k in _ENVELOPE if k in chunk}
        self._last_raw = None

    def _flush(self, only: int | None = None) -> list[SSEEvent]:
        """Chunks carrying what the scanners still hold: all choices, or choice ``only``."""
        indexes = sorted(self._scanners) if only is None else [only] if only in self._scanners else []
        if not indexes:
            return []
        if self._last_raw is not None:
            self._remember_envelope(_decode_any(self._last_raw))
        out: list[SSEEvent] = []
        for index in indexes:
            for seg in merge_segments(self._finish_choice(index, self._scanners[index])):
                field = "content" if seg.kind == CONTENT else self._field
                choice = {"index": index, "delta": {field: seg.text}, "logprobs": None, "finish_reason": None}
                body = {**self._envelope, "choices": [choice]}
                body.setdefault("object", "chat.completion.chunk")
                out.append(encode_event(_encode(body)))
        return out


def transform_body(body: bytes, config: ThinkExtractConfig) -> tuple[bytes | None, Counts]:
    """A non-stream ``chat.completion`` body with reasoning moved out of ``message.content``.

    Returns ``None`` for the body when nothing changed (the caller then sends the original bytes).
    """
    counts = Counts()
    try:
        doc = _decode_any(body)
    except msgspec.DecodeError:
        return None, counts
    if not isinstance(doc, dict) or not isinstance(doc.get("choices"), list):
        return None, counts
    cfg = config.for_model(doc["model"] if isinstance(doc.get("model"), str) else None)
    if not cfg.enabled:
        return None, counts
    changed = False
    for choice in doc["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            continue
        if message.get("reasoning_content") or message.get("reasoning") or message.get("reasoning_details"):
            continue
        original: str = message["content"]
        segments = extract_counted(original, cfg, counts)
        content = "".join(s.text for s in segments if s.kind == CONTENT)
        reasoning = "".join(s.text for s in segments if s.kind != CONTENT)
        if content == original and not reasoning:
            continue
        message["content"] = content
        if reasoning:
            message[cfg.chat_reasoning_field] = reasoning
        changed = True
    return (_encode(doc) if changed else None), counts


async def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    stream = ChatStream(config)
    async for event in events:
        for out in stream.event(event):
            yield out
    for out in stream.finish():
        yield out
