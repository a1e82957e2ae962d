"""The chat completions stream translator, plainly: each chunk decoded, its choices' text through the
channels (one per choice), each changed chunk rebuilt. The oracle of every fast path
(:mod:`.fast`), and the path each takes for whatever it does not prove."""

from __future__ import annotations

import json
from collections.abc import Sequence

import msgspec

from ...channels import Channels, Said, Transcripts
from ...config import ThinkExtractConfig
from ...rawjson import obj
from ...scanner import CONTENT, Segment, merge_segments
from ...sse import SSEEvent, encode_event
from ..translator import Translator
from ..usage import with_reasoning_tokens
from .chunks import (
    DONE,
    EMPTY_RAW,
    Chunk,
    Delta,
    Obj,
    ReadChoice,
    announcement,
    decode_call_ids,
    decode_chunk,
    decode_obj,
    encode,
    envelope_of,
    has_native_reasoning,
    held_chunks,
    indexes,
    mirror_of,
    mirrored,
    rewritten,
)
from .usage import USAGE

__all__ = ["ChatReference"]


class ChatReference(Translator):
    """Translate a chat completions event stream, one event at a time (sans-I/O)."""

    def __init__(self, config: ThinkExtractConfig) -> None:
        super().__init__(Channels(config, parallel=True))  # one channel per choice index, side by side
        self.field = config.chat_reasoning_field
        self._mirror = False  # whether reasoning the upstream wrote under one name gets the other too
        self._envelope: Obj = {}  # of the last chunk read, for the chunks made for held text
        self.last_raw: bytes | None = None  # the last chunk read, its envelope not yet decoded
        # The order in which the client first sees each choice: the SDKs' accumulators file choices
        # by first appearance, so a choice whose first chunks were all held (a bare tag) is
        # announced, with an empty delta, before a later choice is first shown (see _keep_order).
        self._shown: set[int] = set()
        self.unshown: dict[int, bytes] = {}  # choice index → its first chunk's data, for the envelope

    # -- events ---------------------------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        data = event.data
        if data is None:
            return [event]
        if data == DONE:
            return [*self.finish(), event]
        joined = False
        try:
            chunk = decode_chunk(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            halves = self.channels.halves()  # put back if the chunk is no chunk after all
            whole = self._whole_characters(data)
            try:
                if whole is None:
                    raise ValueError("not a chunk")
                chunk = decode_chunk(whole)
            except (ValueError, msgspec.ValidationError):
                # It goes out as it came, its halves with it: none of them is held for the next chunk.
                self.channels.restore_halves(halves)
                return self.unreadable(event)  # not a chunk we can read
            event, data, joined = encode_event(whole, fields=event.fields), whole, True
        return self.chunk_event(event, data, chunk, joined)

    def chunk_event(self, event: SSEEvent, data: bytes, chunk: Chunk, joined: bool = False) -> list[SSEEvent]:
        """:meth:`event` for a chunk already decoded (``data``, its bytes; ``joined``: its texts are
        whole characters already, see :meth:`_whole_characters`)."""
        channels = self.channels
        if channels.config is None:
            config = channels.resolve(chunk.model)
            self._mirror = config.chat_mirror_reasoning
        if not channels.enabled:
            return [event]
        choices = chunk.choices
        if not choices:
            if choices is not None or bytes(chunk.error) not in EMPTY_RAW:
                # The usage chunk or an error: the choices are over; every held character goes first.
                return [*self.finish(), self.with_usage(event, data) if bytes(chunk.usage) not in EMPTY_RAW else event]
            return [*self.flush(), event]  # some other object: it passes, after what was held
        self.last_raw = data
        before: list[SSEEvent] = []  # what choices that turned native held, sent ahead of this chunk
        runs: dict[int, list[Segment]] | None = None  # by position in the chunk: the choices that change
        mirrors: list[tuple[int, str, str]] = []  # native choices whose reasoning gets a name more
        for pos, choice in enumerate(choices):
            delta = choice.delta
            if channels.transcripts is not None and delta is not None and delta.tool_calls:
                self._note_calls(channels.transcripts, choice.index, delta.tool_calls)
            if not channels.is_native(choice.index):
                if delta is None or not has_native_reasoning(delta):
                    new = self._scan(choice.index, delta, choice.finish_reason is not None, joined)
                    if new is not None:
                        runs = runs or {}
                        runs[pos] = new
                    continue
                # Upstream reasoning wins: this choice is left as is from here on.
                before += self._held([(choice.index, channels.native(choice.index))])
            if delta is not None and has_native_reasoning(delta):
                self.counts.reasoning_events += 1  # the server's own reasoning, one token per event
            if self._mirror and delta is not None:
                names = mirror_of(self.field, bool(delta.reasoning_content), bool(delta.reasoning))
                if names is not None:
                    mirrors.append((pos, *names))
        if mirrors:
            data = self.last_raw = mirrored(data, mirrors)
            event = encode_event(data, fields=event.fields)
        out = [event] if runs is None else self.output(event, data, choices, runs)
        if before:
            out = before + out
        if self.unshown or len(choices) > 1 or choices[0].index not in self._shown:
            if not self.unshown and len(choices) == 1 and len(out) == 1 and out[0] is event:
                self._shown.add(choices[0].index)  # one choice first shown as it came: nothing to reorder
            else:
                out = self._keep_order(choices, out, data)
        if out and bytes(chunk.usage) not in EMPTY_RAW:  # a usage on every chunk (continuous usage stats)
            out[-1] = self.with_usage(out[-1], out[-1].data or b"")
        return out

    def with_usage(self, event: SSEEvent, data: bytes) -> SSEEvent:
        """``event`` (a chunk, ``data``) with the reasoning tokens counted so far in its usage, unless
        the server wrote its own (see :mod:`..usage`)."""
        chunk = obj(data)
        usage = chunk.get("usage") if chunk is not None else None
        filled = with_reasoning_tokens(usage, USAGE.field, self.counts.reasoning_events) if usage else None
        if chunk is None or filled is None:
            return event
        chunk["usage"] = filled
        self.counts.reasoning_written = True
        return encode_event(encode(chunk), fields=event.fields)

    def output(
        self, event: SSEEvent, data: bytes, choices: Sequence[ReadChoice], runs: dict[int, list[Segment]]
    ) -> list[SSEEvent]:
        """What goes out for a chunk whose choices at the positions in ``runs`` come out as those runs."""
        chunks, envelope = rewritten(data, runs, self.field)
        if envelope is not None:
            self._envelope, self.last_raw = envelope, None
        return [encode_event(c, fields=event.fields) for c in chunks]

    def flush(self) -> list[SSEEvent]:
        """Chunks carrying what every choice holds; translation goes on."""
        return self._held(sorted(self.channels.flush(), key=lambda held: held[0]))  # type: ignore[arg-type]

    def finish(self) -> list[SSEEvent]:
        """The choices are over (``[DONE]``, the usage chunk, EOF): every choice's held text."""
        return self._held(sorted(self.channels.finish(), key=lambda held: held[0]))  # type: ignore[arg-type]

    # Chat numbers nothing (a choice keeps its index): an oversized chunk goes out as it came.

    def answers(self, t: Transcripts) -> list[Said]:
        """Each choice's answer: what the model wrote, and the tool calls it made."""
        choices = sorted({*t.texts, *t.calls}, key=lambda i: i if isinstance(i, int) else -1)
        return [Said(t.text(i), tuple(t.calls.get(i, ()))) for i in choices]

    # -- per choice -----------------------------------------------------------------------------

    def _scan(self, index: int, delta: Delta | None, finished: bool, joined: bool) -> list[Segment] | None:
        """The runs to send for choice ``index``, or ``None`` when it goes out unchanged."""
        channels = self.channels
        text = delta.content if delta is not None else None
        if index not in channels:
            if text is None:
                return None
            channels.touch(index)  # on the role chunk's empty text already: the first text finds it starting
        out = (channels.scan if joined else channels.text)(index, text) if text else []
        if finished:
            out += channels.end(index)
        self.note_reasoning(out)
        if not out:
            return None if not text else []
        if len(out) == 1 and out[0].kind == CONTENT and out[0].text == text:
            return None
        return merge_segments(out)

    def note_reasoning(self, runs: list[Segment]) -> None:
        """One upstream event's runs for one choice: it counts once if any of them is reasoning (its
        own text, or what was held from the events before it and released by it)."""
        for seg in runs:
            if seg.kind != CONTENT:
                self.counts.reasoning_events += 1
                return

    def _whole_characters(self, data: bytes) -> bytes | None:
        """A chunk msgspec cannot read because a delta holds half a surrogate pair (a server that
        cut an escaped ``\\ud83d\\ude00`` between two deltas), as the SDKs' parser reads it, with
        each choice's halves joined (see :meth:`Channels.whole`), encoded again. ``None`` when it
        is not that."""
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            return None
        if not isinstance(doc, dict) or not isinstance(choices := doc.get("choices"), list):
            return None
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            text = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(delta, dict) and isinstance(text, str) and isinstance(index := choice.get("index", 0), int):
                delta["content"] = self.channels.whole(index, text)
        try:
            # allow_nan=False: a number out of range (-1e400) read as infinity has no JSON to be written as.
            return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        except (UnicodeEncodeError, ValueError):
            return None  # half a character somewhere else, or such a number: unreadable

    @staticmethod
    def _note_calls(transcripts: Transcripts, index: int, raw: msgspec.Raw) -> None:
        try:
            calls = decode_call_ids(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        for call in calls:
            if isinstance(call.id, str) and call.id:
                transcripts.call(index, call.id)

    # -- held text, and the order in which choices first appear ------------------------------------

    def _held(self, held: list[tuple[int, list[Segment]]]) -> list[SSEEvent]:
        """One chunk per run of held text, choice by choice, in the stream's envelope."""
        out: list[SSEEvent] = []
        for index, segments in held:
            if not segments:
                continue
            if self.last_raw is not None:
                self._envelope, self.last_raw = envelope_of(decode_obj(self.last_raw)), None
            if index not in self._shown:
                out += self._announce_before(index)
                self._shown.add(index)
            out += [encode_event(c) for c in held_chunks(self._envelope, index, segments, self.field)]
        return out

    def _keep_order(self, choices: Sequence[ReadChoice], out: list[SSEEvent], data: bytes) -> list[SSEEvent]:
        """``out`` (what goes out for a chunk of ``choices``) with every choice that the upstream
        showed before and the client has not seen announced ahead of the first chunk of a choice
        with a higher index, so that the client first sees the choices in the upstream's order."""
        sent: list[list[int]] = [indexes(e.data) if e.data is not None else [] for e in out]
        shown, unshown = self._shown, self.unshown
        for choice in choices:  # dropped from this chunk and never seen: held back, to be announced
            index = choice.index
            if index not in shown and index not in unshown and not any(index in ids for ids in sent):
                unshown[index] = data
        result: list[SSEEvent] = []
        for event, ids in zip(out, sent, strict=True):
            for index in ids:
                if index not in shown:
                    result += self._announce_before(index)
                    shown.add(index)
                    unshown.pop(index, None)
            result.append(event)
        return result

    def _announce_before(self, index: int) -> list[SSEEvent]:
        """A chunk with an empty delta for each choice below ``index`` the client has not seen yet."""
        out: list[SSEEvent] = []
        for earlier in sorted(k for k in self.unshown if k < index):
            out.append(encode_event(announcement(self.unshown.pop(earlier), earlier)))
            self._shown.add(earlier)
        return out

    def shown(self, index: int) -> bool:
        """Whether the client has seen choice ``index``."""
        return index in self._shown
