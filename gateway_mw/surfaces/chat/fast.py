"""The chat translator's fast paths: a layer over :class:`~.reference.ChatReference` that gives the
bytes the reference would give, or declines and lets it.

While the only choice's channel is in steady content or steady reasoning with nothing held:

* **a window of events** (``fast_forward``): its first events whose every chunk decodes, alone, as
  only continuing choice 0's text with text free of its scanner's triggers go out as they came
  (content), or with each delta's ``content`` key renamed (reasoning); the first that does not goes
  to the reference;
* **one event** is decoded once, strictly while the upstream's continuations fit the run struct,
  leniently after one did not: a continuation goes through the scanner's steady path, its bytes
  kept or edited (:mod:`.edits`), a finish ends the channel; anything else is the reference's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from ...config import ThinkExtractConfig
from ...scanner import CONTENT, Kind, Scanner, Segment, merge_segments
from ...sse import SSEEvent, encode_event
from ...steady import DECLINED, Proven, Steady
from .chunks import EMPTY_RAW, Chunk, ChunkChoice, ReadChoice, decode_chunk, says_nothing
from .edits import edited, renamed_all, without_text
from .reference import ChatReference

__all__ = ["ChatStream"]


class _RunDelta(msgspec.Struct, gc=False):
    content: Annotated[str, msgspec.Meta(min_length=1)]
    role: msgspec.Raw = msgspec.Raw()  # as in chunks.Delta
    reasoning_content: Literal[""] | UnsetType | None = UNSET
    reasoning: Literal[""] | UnsetType | None = UNSET
    reasoning_details: None = None
    tool_calls: None = None


class _RunChoice(msgspec.Struct, gc=False):
    delta: _RunDelta
    index: Literal[0] = 0
    finish_reason: None = None


class _RunChunk(msgspec.Struct, gc=False):
    """A chunk that only continues choice 0's text, as a run of them is decoded: the decoder itself
    refuses anything else (the reference reads every such chunk so, and a chunk it reads otherwise
    is refused: the run is declined). A usage is the reference's to fill."""

    choices: tuple[_RunChoice]
    usage: None = None


decode_run_chunk = msgspec.json.Decoder(_RunChunk).decode

# A value that says nothing, as write.says_nothing reads it: null, "", [] or {}.
_Nothing = (
    None
    | Literal[""]
    | Annotated[list[object], msgspec.Meta(max_length=0)]
    | Annotated[dict[str, object], msgspec.Meta(max_length=0)]
)


class _QuietDelta(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    content: str | None = None
    role: _Nothing = None
    reasoning_content: _Nothing = None
    reasoning: _Nothing = None
    reasoning_details: _Nothing = None
    tool_calls: _Nothing = None
    function_call: _Nothing = None
    refusal: _Nothing = None


class _QuietChoice(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    index: msgspec.Raw = msgspec.Raw()
    delta: _QuietDelta | None = None
    logprobs: _Nothing = None
    finish_reason: _Nothing = None
    stop_reason: _Nothing = None
    matched_stop: _Nothing = None


class _QuietChunk(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A one-choice chunk that says nothing but its text, in the keys real servers write: it
    decodes only if every other value is the envelope or says nothing (any other key is refused).
    Such a chunk whose text was all held (a tag) is one the reference drops."""

    choices: tuple[_QuietChoice]
    id: msgspec.Raw = msgspec.Raw()
    object: msgspec.Raw = msgspec.Raw()
    created: msgspec.Raw = msgspec.Raw()
    model: msgspec.Raw = msgspec.Raw()
    system_fingerprint: msgspec.Raw = msgspec.Raw()
    service_tier: msgspec.Raw = msgspec.Raw()
    obfuscation: msgspec.Raw = msgspec.Raw()
    usage: None = None


_decode_quiet = msgspec.json.Decoder(_QuietChunk).decode


def _quiet(data: bytes) -> bool:
    try:
        _decode_quiet(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return True


class _Steady(Steady):
    """Choice 0 alone under way with nothing held: a text free of ``triggers`` goes through
    ``scanner`` unchanged as ``kind`` (``whole``), or as a block's first text, its edge trimmed."""

    __slots__ = ("whole",)

    def __init__(self, kind: Kind, scanner: Scanner, whole: bool) -> None:
        super().__init__(kind, scanner)
        self.whole = whole


def _continued_text(chunk: Chunk) -> str | None:
    """The text of ``chunk`` when all it does is continue choice 0's text (no other choice, no
    finish, no reasoning or tool call of its own, no usage); else ``None``."""
    choices = chunk.choices
    if choices is None or len(choices) != 1 or bytes(chunk.usage) not in EMPTY_RAW:
        return None
    choice = choices[0]
    delta = choice.delta
    if choice.given or choice.finish_reason is not None or delta is None:
        return None
    text = delta.content
    if not text or delta.reasoning_content or delta.reasoning:
        return None
    if delta.reasoning_details and bytes(delta.reasoning_details) not in EMPTY_RAW:
        return None
    if delta.tool_calls and bytes(delta.tool_calls) not in EMPTY_RAW:
        return None
    return text


def _only_finishes(chunk: Chunk) -> bool:
    """Whether ``chunk`` only finishes choice 0: one choice, index 0, a finish reason, no text, no
    reasoning, no tool call of its own and no usage."""
    choices = chunk.choices
    if choices is None or len(choices) != 1 or bytes(chunk.usage) not in EMPTY_RAW:
        return False
    choice = choices[0]
    delta = choice.delta
    if choice.given or choice.finish_reason is None:
        return False
    if delta is None:
        return True
    return (
        not delta.content
        and not delta.reasoning_content
        and not delta.reasoning
        and (not delta.reasoning_details or bytes(delta.reasoning_details) in EMPTY_RAW)
        and (not delta.tool_calls or bytes(delta.tool_calls) in EMPTY_RAW)
    )


def _joined(events: list[SSEEvent]) -> bytes:
    return events[0].raw if len(events) == 1 else b"".join([e.raw for e in events])


class ChatStream(ChatReference):
    """Translate a chat completions event stream (sans-I/O), by the fast paths where they prove."""

    def __init__(self, config: ThinkExtractConfig) -> None:
        super().__init__(config)
        self._steady: _Steady | None = None
        # Whether a lone event is first read as a plain continuation (see _one): until one is not,
        # then again once one is; never again once a continuation did not fit (an upstream that
        # writes, say, an empty reasoning_details list in every delta).
        self._strict = True
        self._strict_fits = True

    # -- the reference, with the steady state kept --------------------------------------------------

    def chunk_event(self, event: SSEEvent, data: bytes, chunk: Chunk, joined: bool = False) -> list[SSEEvent]:
        steady = self._steady
        if steady is not None and not joined:
            text = _continued_text(chunk)
            if text is not None:
                return self._continued(event, data, chunk.choices, text, steady)  # type: ignore[arg-type]
            if _only_finishes(chunk):
                return self._finished(event, data, chunk.choices)  # type: ignore[arg-type]
        out = super().chunk_event(event, data, chunk, joined)
        self._refresh_steady()
        return out

    def output(
        self, event: SSEEvent, data: bytes, choices: Sequence[ReadChoice], runs: dict[int, list[Segment]]
    ) -> list[SSEEvent]:
        """One choice, one run: the edit on the bytes, where it is provably the rebuild's. One choice
        whose text was all held: in a chunk that says nothing else, nothing, as the rebuild finds;
        with a ``role`` said, the chunk without its text."""
        if len(choices) == 1 and not runs[0] and (delta := choices[0].delta) is not None:
            if not says_nothing(delta.role):
                out = without_text(data)
                if out is not None:
                    self.last_raw = data  # its envelope, decoded only if held text needs it
                    return [encode_event(out, fields=event.fields)]
            elif _quiet(data):
                self.last_raw = data
                return []
        if len(choices) == 1 and len(runs[0]) == 1 and (delta := choices[0].delta) is not None:
            seg = runs[0][0]
            out = edited(data, delta, self.field, seg.kind != CONTENT, seg.text)
            if out is not None:
                return [encode_event(out, fields=event.fields)]
        return super().output(event, data, choices, runs)

    def flush(self) -> list[SSEEvent]:
        out = super().flush()
        self._refresh_steady()
        return out

    def finish(self) -> list[SSEEvent]:
        out = super().finish()
        self._refresh_steady()
        return out

    def _refresh_steady(self) -> None:
        """Note when choice 0 alone is under way with nothing held, so that a text free of its
        scanner's triggers would go through it unchanged (content) or wholly as reasoning, or as
        the first text of a block that has just begun (its edge trimmed, no scan needed)."""
        self._steady = None
        channels = self.channels
        if len(channels) != 1 or channels.any_native or self.unshown or channels.has_half(0):
            return
        scanner = channels.scanner(0)
        if scanner is None:
            return
        kind = scanner.steady
        if kind is not None:
            self._steady = _Steady(kind, scanner, True)
        elif (kind := scanner.starting) is not None:
            self._steady = _Steady(kind, scanner, False)

    # -- one chunk in the steady state ----------------------------------------------------------------

    def _continued(
        self, event: SSEEvent, data: bytes, choices: Sequence[ReadChoice], text: str, steady: _Steady
    ) -> list[SSEEvent]:
        """A chunk that only continues choice 0's text while that choice alone is under way: what
        the reference does, without its loop over the choices."""
        self.last_raw = data
        kind, triggers, scanner, whole = steady.kind, steady.triggers, steady.scanner, steady.whole
        delta = choices[0].delta
        assert delta is not None
        if triggers.isdisjoint(text):
            if whole and kind == CONTENT:
                scanner.pass_steady(text)
                return [event]
            if whole:
                scanner.pass_steady(text)
                self.counts.reasoning_events += 1
                renamed = edited(data, delta, self.field, True, text)
                if renamed is not None:
                    return [encode_event(renamed, fields=event.fields)]
                runs = [Segment(kind, text)]  # the rename unproven: the rebuild
            else:  # a block's first text: its edge trimmed, maybe the separator, but no scan
                taken = scanner.take_steady(text)
                if taken and kind != CONTENT:
                    self.counts.reasoning_events += 1
                self._refresh_steady()
                if kind == CONTENT and taken == text:
                    return [event]
                return self.output(event, data, choices, {0: [Segment(kind, taken)] if taken else []})
        else:
            runs = scanner.feed(text)
            self.note_reasoning(runs)
            if len(runs) == 1 and runs[0].kind == CONTENT and runs[0].text == text:
                self._refresh_steady()
                return [event]
            runs = merge_segments(runs)
        out = self.output(event, data, choices, {0: runs})
        self._refresh_steady()
        return out

    def _finished(self, event: SSEEvent, data: bytes, choices: list[ChunkChoice]) -> list[SSEEvent]:
        """Choice 0's finish chunk, while that choice alone is under way: its channel ends."""
        self.last_raw = data
        held = merge_segments(self.channels.end(0))
        self.note_reasoning(held)
        out = self.output(event, data, choices, {0: held}) if held else [event]
        self._refresh_steady()
        return out

    # -- runs of events ---------------------------------------------------------------------------------

    def fast_forward(self, span: bytes) -> Proven:
        """The bytes for the first events of ``span``, as many as are provably exact without
        handling them one by one, and where they end.

        The proof is the decoder's: each event is decoded alone into the fields the translator reads
        (whatever their spelling, order or spacing; the rest skipped), and each must only continue
        choice 0's steady text with text free of its scanner's triggers. A single event that does
        anything else is translated here as :meth:`event` translates it, from the chunk decoded once.
        """
        steady = self._steady
        if steady is None:
            config = self.channels.config  # this stream's model may not be translated: then all passes
            return (span, len(span)) if config is not None and not config.enabled else DECLINED
        if not span.startswith(b"data: {"):
            return DECLINED  # [DONE] included: a decoder's error costs more than this test
        end = span.find(b"\n")  # one byte searched for: memchr speed, where a pair is not
        if end == len(span) - 2:  # one event, one line
            try:
                return self._one(span, steady), len(span)
            except (msgspec.DecodeError, msgspec.ValidationError):
                return DECLINED
        if not steady.whole:  # a block's first text: one event at a time
            return DECLINED
        # Each event alone, as the reference reads it: the pieces between event ends, each one
        # line, each one chunk. Any line but "data: " (a comment, event:, id:) leaves a newline in
        # its piece: the events before it are taken.
        bodies = span[6:-2].split(b"\n\ndata: ")
        events = len(bodies)
        others = span.count(b"\n") != 2 * events  # the span goes on past its last whole data event
        if others:
            other = next(i for i, body in enumerate(bodies) if b"\n" in body)
            line = bodies[other].find(b"\n")
            if bodies[other].startswith(b"\n\n", line):  # a whole event, then one of other lines
                bodies[other] = bodies[other][:line]
                other += 1
            del bodies[other:]
        # One by one, stopping at the first event that does not qualify (a tag, a finish, [DONE]):
        # the events before it are proven, and it alone goes to the reference.
        deltas: list[_RunDelta] = []
        triggers = steady.triggers
        for body in bodies:
            try:
                delta = decode_run_chunk(body).choices[0].delta
            except (msgspec.DecodeError, msgspec.ValidationError):
                break
            if not triggers.isdisjoint(delta.content):
                break
            deltas.append(delta)
        if not deltas:
            return DECLINED
        if len(deltas) < events or others:  # the span given back ends with the last event proven
            del bodies[len(deltas) :]
            span = span[: sum(map(len, bodies)) + 8 * len(bodies)]  # each event: "data: ", body, "\n\n"
        out = span if steady.kind == CONTENT else renamed_all(span, bodies, deltas, self.field)  # type: ignore[arg-type]
        if out is None:
            return DECLINED
        steady.scanner.pass_steady("".join([d.content for d in deltas]))
        if steady.kind != CONTENT:
            self.counts.reasoning_events += len(deltas)
        self.last_raw = bodies[-1]  # the envelope of the chunks made later: the last event's
        return out, len(span)

    def _one(self, span: bytes, steady: _Steady) -> bytes:
        """:meth:`fast_forward` for one event on one line: whatever it does, what :meth:`event` would
        send for it, decoded once.

        Most events only continue the text: the strict run struct says so in the decoder itself
        (no Python check, nothing else kept). After one that does not, events are read leniently
        (a strict decline costs an exception) until one continues the text again; for good when a
        continuation itself did not fit."""
        body = span[6:-2]
        event = SSEEvent(raw=span, data=body)
        declined = False
        if self._strict:
            try:
                run = decode_run_chunk(body)
            except msgspec.ValidationError:
                self._strict, declined = False, True
            else:
                delta = run.choices[0].delta
                text = delta.content
                if steady.whole and steady.triggers.isdisjoint(text):
                    self.last_raw = body
                    if steady.kind == CONTENT:
                        steady.scanner.pass_steady(text)
                        return span
                    renamed = edited(span, delta, self.field, True, text)
                    if renamed is not None:
                        steady.scanner.pass_steady(text)
                        self.counts.reasoning_events += 1
                        return renamed
                return _joined(self._continued(event, body, run.choices, text, steady))
        chunk = decode_chunk(body)
        lenient = _continued_text(chunk)
        if lenient is not None:  # what event() does with it, from the chunk decoded
            if declined:
                self._strict_fits = False
            self._strict = self._strict_fits
            return _joined(self._continued(event, body, chunk.choices, lenient, steady))  # type: ignore[arg-type]
        return _joined(self.chunk_event(event, body, chunk))
