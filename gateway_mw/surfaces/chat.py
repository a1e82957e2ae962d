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

import json
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Annotated, Any, Literal, cast

import msgspec
from msgspec import UNSET, UnsetType

from ..config import ThinkExtractConfig
from ..rawjson import as_int, as_str, escaped, join_surrogates, obj, raw_list, string_at
from ..scanner import CONTENT, Kind, Scanner, Segment, merge_segments
from ..sse import SSEEvent, encode_event
from .base import Counts, Said, Transcripts, extract_counted, translated

__all__ = ["ChatStream", "transform_body", "translate_stream"]

_DONE = b"[DONE]"
# Top-level keys every split or synthesized chunk repeats; the other keys travel once, on the last.
_ENVELOPE = ("id", "object", "created", "model", "system_fingerprint", "service_tier", "obfuscation")
_Obj = dict[str, Any]  # a JSON object whose values are msgspec.Raw except where the translator wrote


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None
    role: msgspec.Raw = msgspec.Raw()  # only whether it says something: empty when absent
    # UNSET when absent: a steady rename also renames an explicit null (SGLang writes them all).
    reasoning_content: str | UnsetType | None = UNSET
    reasoning: str | UnsetType | None = UNSET
    reasoning_details: msgspec.Raw = msgspec.Raw()  # any JSON; empty when absent
    tool_calls: msgspec.Raw = msgspec.Raw()  # read only for the reasoning record: empty when absent


class _CallId(msgspec.Struct, gc=False):
    id: Any = None


_decode_call_ids = msgspec.json.Decoder(list[_CallId]).decode


class _Choice(msgspec.Struct, gc=False):
    given: int | float | str = msgspec.field(default=0, name="index")  # as written: 0, 0.0 or "0"
    delta: _Delta | None = None
    finish_reason: str | None = None

    def __post_init__(self) -> None:
        if type(self.given) is not int:  # read as the SDKs read it, or not at all
            index = as_int(msgspec.Raw(msgspec.json.encode(self.given)))
            if index is None:
                raise ValueError("a choice index is a whole number")
            self.given = index

    @property
    def index(self) -> int:
        return cast(int, self.given)


class _Chunk(msgspec.Struct, gc=False):
    """The fields of a chunk the translator reads; everything else is skipped by the decoder."""

    model: str | None = None
    choices: list[_Choice] | None = None
    error: msgspec.Raw = msgspec.Raw()


class _CheckedChoice(msgspec.Struct, gc=False):
    delta: dict[str, msgspec.Raw] = {}


class _RunDelta(msgspec.Struct, gc=False):
    content: Annotated[str, msgspec.Meta(min_length=1)]
    role: msgspec.Raw = msgspec.Raw()  # as in _Delta
    reasoning_content: Literal[""] | UnsetType | None = UNSET
    reasoning: Literal[""] | UnsetType | None = UNSET
    reasoning_details: None = None


class _RunChoice(msgspec.Struct, gc=False):
    delta: _RunDelta
    index: Literal[0] = 0
    finish_reason: None = None


class _RunChunk(msgspec.Struct, gc=False):
    """A chunk that only continues choice 0's text, as a run of them is decoded: the decoder itself
    refuses anything else (the full path reads every such chunk so, and a chunk it reads otherwise
    is refused: the run is declined)."""

    choices: tuple[_RunChoice]


_OneChoice = _Choice | _RunChoice  # a choice as the full path or a run reads it


class _Checked(msgspec.Struct, gc=False):
    """A renamed chunk read back, to prove which ``content`` key the rename hit."""

    choices: tuple[_CheckedChoice]


# A value that says nothing (see _nothing).
_Nothing = (
    None
    | Literal[""]
    | Annotated[list[Any], msgspec.Meta(max_length=0)]
    | Annotated[dict[str, Any], msgspec.Meta(max_length=0)]
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
    """A chunk that says nothing but its text, in the keys real servers write: it decodes only
    if every other value is the envelope or says nothing (the decoder refuses any other key)."""

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
_decode_chunk = msgspec.json.Decoder(_Chunk).decode
_decode_run_chunk = msgspec.json.Decoder(_RunChunk).decode
_decode_checked = msgspec.json.Decoder(_Checked).decode
_decode_any = msgspec.json.Decoder().decode
# Rewrites decode only the objects on the way to the text; every other value stays raw bytes, so
# it is re-emitted exactly (numbers msgspec would reject, deep nesting, escapes) and cheaply.
_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_list = msgspec.json.Decoder(list[dict[str, msgspec.Raw]]).decode
_encode = msgspec.json.Encoder().encode
_EMPTY_RAW = (b"", b"null", b"false", b"[]", b"{}", b'""')
_NOTHING_RAW = (b"", b"null", b"[]", b"{}", b'""')  # values that say nothing in a delta or a choice
_NULL = msgspec.Raw(b"null")
_NATIVE_MESSAGE_KEYS = ("reasoning_content", "reasoning", "reasoning_details")
_CONTENT_KEY = b'"content"'
_OTHER_FIELD = {"reasoning_content": "reasoning", "reasoning": "reasoning_content"}
_FIELD_KEYS = {field: b'"' + field.encode() + b'"' for field in _OTHER_FIELD}


def _has_native_reasoning(delta: _Delta) -> bool:
    if delta.reasoning_content or delta.reasoning:
        return True
    details = delta.reasoning_details
    return bool(details) and bytes(details) not in _EMPTY_RAW


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, msgspec.Raw) and bytes(value) in (b"", b"null"))


def _says_nothing(value: Any) -> bool:
    """Whether a delta's or a choice's value is absent in all but spelling: null, ``""``, ``[]``, ``{}``."""
    if value is None or value == "":
        return True
    if not isinstance(value, msgspec.Raw):
        return False
    raw = bytes(value)
    return raw in _NOTHING_RAW or (raw[:1] in (b"[", b"{") and not raw[1:-1].strip())


def _nothing(value: Any) -> bool:
    """:func:`_says_nothing` for a decoded value."""
    return value is None or value == "" or value == [] or value == {}


def _role(choice: _OneChoice) -> msgspec.Raw:
    return choice.delta.role if choice.delta is not None else msgspec.Raw()


def _quiet(data: bytes) -> bool:
    """Whether a one-choice chunk whose text was all held says nothing else: then it is not sent.

    What :meth:`ChatStream._rewrite` decides, without rebuilding the chunk: every top-level value
    but the envelope's null, and every value of the choice and its delta but the index and the text
    saying nothing. The usual spellings decode as a :class:`_QuietChunk`; anything else is read whole.
    """
    try:
        _decode_quiet(data)
        return True
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _quiet_read(data)


def _quiet_read(data: bytes) -> bool:
    """:func:`_quiet`, the chunk read whole."""
    try:
        doc = _decode_any(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    if not isinstance(doc, dict):
        return False
    for key, value in doc.items():
        if key != "choices" and key not in _ENVELOPE and value is not None:
            return False
    choices = doc.get("choices")
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        return False
    for key, value in choices[0].items():
        if key == "delta":
            if value is not None and (
                not isinstance(value, dict) or not all(_nothing(v) for k, v in value.items() if k != "content")
            ):
                return False
        elif key != "index" and not _nothing(value):
            return False
    return True


def _delta_of(choice: _Obj) -> _Obj:
    raw = choice.get("delta")
    return _decode_obj(raw) if isinstance(raw, msgspec.Raw) and not _is_null(raw) else {}


def _with_text(obj: _Obj, key: str, text: str) -> _Obj:
    """``obj`` with its ``content`` replaced by ``key: text`` in the same place (else appended).

    An explicit empty ``key`` (``null`` or ``""``, as SGLang writes every absent field) trades
    places with ``content``: ``{"content":"r","reasoning_content":null}`` becomes
    ``{"reasoning_content":"r","content":null}``, as the server writes reasoning it splits itself.
    """
    out: _Obj = {}
    placed = False
    swap = key != "content" and "content" in obj and key in obj and _says_nothing(obj[key])
    for k, v in obj.items():
        if k == "content":
            out[key] = text
            placed = True
        elif k != key:
            out[k] = v
        elif swap:
            out["content"] = v
    if not placed:
        out[key] = text
    return out


def _with_mirror(delta: _Obj, source: str, target: str) -> _Obj:
    """``delta`` with ``target`` set to ``source``'s value, right after it (an empty ``target`` replaced)."""
    out: _Obj = {}
    for k, v in delta.items():
        if k == target:
            continue
        out[k] = v
        if k == source:
            out[target] = v
    return out


class _ChoiceAt(msgspec.Struct, gc=False):
    index: msgspec.Raw = msgspec.Raw(b"0")


class _ChoicesAt(msgspec.Struct, gc=False):
    choices: list[_ChoiceAt] | None = None


_decode_choices_at = msgspec.json.Decoder(_ChoicesAt).decode


def _indexes(data: bytes) -> list[int]:
    """The choice indexes a chunk carries, as the SDKs read them ([] for anything else)."""
    try:
        choices = _decode_choices_at(data).choices or []
    except (msgspec.DecodeError, msgspec.ValidationError):
        return []
    return [i for i in (as_int(c.index) for c in choices) if i is not None]


def _joined(events: list[SSEEvent]) -> bytes:
    return events[0].raw if len(events) == 1 else b"".join([e.raw for e in events])


def _continued_text(chunk: _Chunk) -> str | None:
    """The text of ``chunk`` when all it does is continue choice 0's text (no other choice, no
    finish, no reasoning of its own); else ``None``."""
    choices = chunk.choices
    if choices is None or len(choices) != 1:
        return None
    choice = choices[0]
    delta = choice.delta
    if choice.given or choice.finish_reason is not None or delta is None:
        return None
    text = delta.content
    if not text or delta.reasoning_content or delta.reasoning:
        return None
    details = delta.reasoning_details
    if details and bytes(details) not in _EMPTY_RAW:
        return None
    return text


def _only_finishes(chunk: _Chunk) -> bool:
    """Whether ``chunk`` only finishes choice 0: one choice, index 0, a finish reason, no text and
    no reasoning of its own."""
    choices = chunk.choices
    if choices is None or len(choices) != 1:
        return False
    choice = choices[0]
    delta = choice.delta
    if choice.given or choice.finish_reason is None:
        return False
    if delta is None:
        return True
    details = delta.reasoning_details
    return (
        not delta.content
        and not delta.reasoning_content
        and not delta.reasoning
        and (not details or bytes(details) in _EMPTY_RAW)
    )


class ChatStream:
    """Translate a chat completions event stream, one event at a time (sans-I/O)."""

    large_events: frozenset[bytes] = frozenset()

    def __init__(self, config: ThinkExtractConfig) -> None:
        self._base = config
        self._config: ThinkExtractConfig | None = None  # resolved for the model on the first chunk
        self._field = config.chat_reasoning_field
        self._field_key = _FIELD_KEYS[self._field]
        self._mirror: str | None = None  # the upstream's other name for reasoning, when it is mirrored
        self._scanners: dict[int, Scanner] = {}
        self._native: set[int] = set()  # choices that carry upstream reasoning: left alone
        self._envelope: _Obj = {}  # from the last rewritten chunk, for synthesized ones
        self._last_raw: bytes | None = None  # the last data chunk not yet decoded for its envelope
        # Choice 0 alone under way: its kind, its triggers, its scanner, whether a trigger-free text
        # passes whole (else it is a block's first text, see Scanner.starting). See _refresh_steady.
        self._steady: tuple[Kind, frozenset[str], Scanner, bool] | None = None
        # Whether a lone event is first read as a plain continuation (see _one): until one is not,
        # then again once one is; never again once a continuation did not fit (an upstream that
        # writes, say, an empty reasoning_details list in every delta).
        self._strict = True
        self._strict_fits = True
        # The order in which the client first sees each choice: the SDKs' accumulators file choices
        # by first appearance, so a choice whose first chunks were all held (a bare tag) is
        # announced, with an empty delta, before a later choice is first shown (see _keep_order).
        self._shown: set[int] = set()
        self._unshown: dict[int, bytes] = {}  # choice index → its first chunk's data, for the envelope
        self.transcripts: Transcripts | None = None  # set when the reasoning record keeps what was said
        self._high: dict[int, str] = {}  # choice index → the high surrogate its last delta ended with
        self.counts = Counts()

    # -- events ---------------------------------------------------------------------------------

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        data = event.data
        if data is None:
            return [event]
        if data == _DONE:
            return [*self._finish_all(), event]
        try:
            chunk = _decode_chunk(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            joined = self._whole_characters(data)
            try:
                if joined is None:
                    raise ValueError("not a chunk")
                chunk = _decode_chunk(joined)
            except (ValueError, msgspec.ValidationError):
                # Not a chunk we can read: whatever was held goes out first, so that text keeps its order.
                self.counts.unreadable_events += 1
                return [*self.flush(), event]
            event, data = encode_event(joined, fields=event.fields), joined
        else:
            if self._high:  # a half character that the next delta did not complete: no character
                for choice in chunk.choices or ():
                    self._high.pop(choice.index, None)
        return self._chunk_event(event, data, chunk)

    def _whole_characters(self, data: bytes) -> bytes | None:
        """A chunk msgspec cannot read because a delta holds half a surrogate pair (a server that
        cut an escaped ``\\ud83d\\ude00`` between two deltas), as the SDKs' parser reads it, with
        each choice's halves joined (see :func:`join_surrogates`; a high one is held for the next
        delta), encoded again. ``None`` when it is not that."""
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            return None
        if not isinstance(doc, dict) or not isinstance(choices := doc.get("choices"), list):
            return None
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            text = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(delta, dict) and isinstance(text, str):
                index = choice.get("index", 0)
                held = self._high.pop(index, "") if isinstance(index, int) else ""
                delta["content"], held = join_surrogates(held, text)
                if held and isinstance(index, int):
                    self._high[index] = held
        try:
            return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:
            return None  # half a character somewhere else: unreadable

    def _chunk_event(self, event: SSEEvent, data: bytes, chunk: _Chunk) -> list[SSEEvent]:
        """:meth:`event` for a chunk already decoded (``data``, its bytes)."""
        if self._config is None:
            self._resolve(chunk.model)
        assert self._config is not None
        if not self._config.enabled:
            return [event]
        choices = chunk.choices
        if not choices:
            if choices is not None or bytes(chunk.error) not in _EMPTY_RAW:
                # The usage chunk or an error: the choices are over; every held character goes first.
                return [*self._finish_all(), event]
            return [*self.flush(), event]  # some other object: it passes, after what was held
        steady = self._steady
        if steady is not None:
            text = _continued_text(chunk)
            if text is not None:
                return self._continued(event, data, choices, text, steady)
            if _only_finishes(chunk):
                return self._finished(event, data, choices, steady[2])
        self._last_raw = data
        before: list[SSEEvent] = []  # flushes of choices that turned native, sent ahead of this chunk
        runs: dict[int, list[Segment]] | None = None  # by position in the chunk: the choices that change
        mirrored: list[int] | None = None  # positions of native choices whose reasoning gets the other name too
        for pos, choice in enumerate(choices):
            delta = choice.delta
            if self.transcripts is not None and delta is not None and delta.tool_calls:
                self._note_calls(choice.index, delta.tool_calls)
            if choice.index not in self._native:
                if delta is None or not _has_native_reasoning(delta):
                    new = self._scan(choice)
                    if new is not None:
                        if runs is None:
                            runs = {}
                        runs[pos] = new
                    continue
                # Upstream reasoning wins: this choice is left as is from here on.
                self._native.add(choice.index)
                before += self._finish_all(only=choice.index)
            if self._mirror is not None and delta is not None and self._needs_mirror(delta):
                if mirrored is None:
                    mirrored = []
                mirrored.append(pos)
        if mirrored is not None:
            data = self._mirrored(data, mirrored)
            event = encode_event(data, fields=event.fields)
            self._last_raw = data
        out = [event] if runs is None else self._output(event, data, choices, runs)
        if before:
            out = before + out
        if self._unshown or len(choices) > 1 or choices[0].index not in self._shown:
            out = self._keep_order(choices, out, data)
        self._refresh_steady()
        return out

    def _continued(
        self,
        event: SSEEvent,
        data: bytes,
        choices: Sequence[_OneChoice],
        text: str,
        steady: tuple[Kind, frozenset[str], Scanner, bool],
    ) -> list[SSEEvent]:
        """A chunk that only continues choice 0's text while that choice alone is under way: what
        the loop over the choices would do, without it."""
        self._last_raw = data
        kind, triggers, scanner, whole = steady
        if triggers.isdisjoint(text):
            if whole and kind == CONTENT:
                scanner.pass_steady(text)
                return [event]
            if whole:
                scanner.pass_steady(text)
                renamed = self._edited(data, choices[0].delta, True, text)  # type: ignore[arg-type]
                if renamed is not None:
                    return [encode_event(renamed, fields=event.fields)]
                runs = [Segment(kind, text)]  # the rename unproven: the rewrite
            else:  # a block's first text: its edge trimmed, maybe the separator, but no scan
                taken = scanner.take_steady(text)
                self._refresh_steady()
                if kind == CONTENT and taken == text:
                    return [event]
                if taken and (edited := self._edited(data, choices[0].delta, kind != CONTENT, taken)) is not None:  # type: ignore[arg-type]
                    return [encode_event(edited, fields=event.fields)]
                return self._output(event, data, choices, {0: [Segment(kind, taken)] if taken else []})
        else:
            runs = scanner.feed(text)
            if not runs:  # all held: a tag, say
                self._refresh_steady()
                held = self._all_held(event, data, choices[0])
                return held if held is not None else self._rewrite(event, {0: runs})
            if len(runs) == 1 and runs[0].kind == CONTENT and runs[0].text == text:
                self._refresh_steady()
                return [event]
            runs = merge_segments(runs)
        out = self._output(event, data, choices, {0: runs})
        self._refresh_steady()
        return out

    def _finished(self, event: SSEEvent, data: bytes, choices: list[_Choice], scanner: Scanner) -> list[SSEEvent]:
        """Choice 0's finish chunk, while that choice alone is under way: its scanner finishes,
        nothing else changes."""
        self._last_raw = data
        held = merge_segments(self._finish_choice(0, scanner))
        out = self._output(event, data, choices, {0: held}) if held else [event]
        self._refresh_steady()
        return out

    def _output(
        self, event: SSEEvent, data: bytes, choices: Sequence[_OneChoice], runs: dict[int, list[Segment]]
    ) -> list[SSEEvent]:
        """What goes out for a chunk whose choices at the positions in ``runs`` come out as those runs."""
        if len(choices) == 1:
            choice = choices[0]
            if not runs[0] and (held := self._all_held(event, data, choice)) is not None:
                return held
            if len(runs[0]) == 1 and choice.delta is not None:
                # One choice, one run: the edit on the bytes, where it is provably the rewrite's.
                seg = runs[0][0]
                edited = self._edited(data, choice.delta, seg.kind != CONTENT, seg.text)
                if edited is not None:
                    return [encode_event(edited, fields=event.fields)]
        return self._rewrite(event, runs)

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
        """The bytes for a run of whole events, when provably exact without handling them one by one.

        The proof is the decoder's: each event is decoded alone into the fields the translator reads
        (whatever their spelling, order or spacing; the rest skipped), and each must only continue
        choice 0's steady text with text free of its scanner's triggers. Then the span
        goes out as it came (steady content), or with each delta's ``content`` key renamed (steady
        reasoning, see :meth:`_edited`). A single event that does anything else is translated here
        as :meth:`event` translates it, from the chunk already decoded.
        """
        steady = self._steady
        if steady is None:
            config = self._config  # this stream's model may not be translated: then all passes
            return span if config is not None and not config.enabled else None
        if not span.startswith(b"data: {"):
            return None  # [DONE] included: a decoder's error costs more than this test
        end = span.find(b"\n")  # one byte searched for: memchr speed, where a pair is not
        try:
            if end == len(span) - 2:  # one event, one line
                return self._one(span, steady)
            if not steady[3]:  # a block's first text: one event at a time
                return None
            # Each event alone, as the full path reads it: the pieces between event ends, each
            # one line (a span with no other newline), each one chunk. Any line but "data: " (a
            # comment, event:, id:) leaves a piece that is not JSON.
            bodies = span[6:-2].split(b"\n\ndata: ")
            if span.count(b"\n") != 2 * len(bodies):
                return None
            # One by one, stopping at the first event that does not qualify: a declined window
            # (a tag a few events in) costs the decodes up to it, not the whole window's.
            decode, triggers = _decode_run_chunk, steady[1]
            chunks: list[_RunChunk] = []
            texts: list[str] = []
            for body in bodies:
                run_chunk = decode(body)
                run_text = run_chunk.choices[0].delta.content
                if not triggers.isdisjoint(run_text):
                    return None
                texts.append(run_text)
                chunks.append(run_chunk)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if steady[0] == CONTENT:
            out = span
        else:
            renamed = self._renamed_all(span, bodies, chunks)
            if renamed is None:
                return None
            out = renamed
        steady[2].pass_steady("".join(texts))
        last = span.rfind(b"\n\ndata: ") + 8  # the envelope of synthesized chunks: the last event's
        self._last_raw = span[last if last >= 8 else 6 : -2]
        return out

    def _one(self, span: bytes, steady: tuple[Kind, frozenset[str], Scanner, bool]) -> bytes:
        """:meth:`fast_forward` for one event on one line: whatever it does, what :meth:`event`
        would send for it, decoded once.

        Most events only continue the text: the strict run struct says so in the decoder itself
        (no Python check, nothing else kept). After one that does not, events are read leniently
        (a strict decline costs an exception) until one continues the text again; for good when a
        continuation itself did not fit."""
        body = span[6:-2]
        declined = False
        if self._strict:
            try:
                run = _decode_run_chunk(body)
            except msgspec.ValidationError:
                self._strict, declined = False, True
            else:
                text = run.choices[0].delta.content
                if steady[3] and steady[1].isdisjoint(text):
                    self._last_raw = body
                    if steady[0] == CONTENT:
                        steady[2].pass_steady(text)
                        return span
                    renamed = self._edited(span, run.choices[0].delta, True, text, framed=True)
                    if renamed is not None:
                        steady[2].pass_steady(text)
                        return renamed
                return _joined(self._continued(SSEEvent(raw=span, data=body), body, run.choices, text, steady))
        chunk = _decode_chunk(body)
        event = SSEEvent(raw=span, data=body)
        lenient = _continued_text(chunk)
        if lenient is not None:  # what event() does with it, from the chunk decoded
            if declined:
                self._strict_fits = False
            self._strict = self._strict_fits
            return _joined(self._continued(event, body, chunk.choices, lenient, steady))  # type: ignore[arg-type]
        if _only_finishes(chunk):
            return _joined(self._finished(event, body, chunk.choices, steady[2]))  # type: ignore[arg-type]
        return _joined(self._chunk_event(event, body, chunk))

    # -- the fast paths -------------------------------------------------------------------------

    def _resolve(self, model: str | None) -> None:
        config = self._config = self._base.for_model(model)
        other = _OTHER_FIELD[self._field]
        self._mirror = other if config.chat_mirror_reasoning else None

    def _refresh_steady(self) -> None:
        """Note when choice 0 alone is under way with nothing held, so that a text free of its
        scanner's triggers would go through it unchanged (content) or wholly as reasoning, or as
        the first text of a block that has just begun (its edge trimmed, no scan needed)."""
        self._steady = None
        scanners = self._scanners
        if len(scanners) != 1 or self._native or self._unshown or self._high:
            return
        scanner = scanners.get(0)
        if scanner is None:
            return
        kind = scanner.steady
        if kind is not None:
            self._steady = (kind, scanner.triggers, scanner, True)
        elif (kind := scanner.starting) is not None:
            self._steady = (kind, scanner.triggers, scanner, False)

    def _edited(
        self, data: bytes, delta: _Delta | _RunDelta, reasoning: bool, text: str, framed: bool = False
    ) -> bytes | None:
        """``data`` (a chunk whose one choice's text comes out as one run) with that delta's text
        replaced by ``text`` and, for ``reasoning``, its ``content`` key renamed to the reasoning
        field (an explicit empty reasoning field of the delta renamed ``content``): what the full
        rewrite gives, every other byte kept. ``None`` when unproven. ``framed``: ``data`` is the
        whole event, its ``data: `` and blank line included.

        With no ``\\u`` escape in the chunk every key is spelled as itself, so a ``"content"`` that
        occurs once is the delta's key (the decoder saw that key), and so is a reasoning field's
        name that occurs once when the decoder saw the delta carry it. With escapes the edited chunk
        is read back: the delta must carry ``text`` where it belongs (and no ``content`` beside it).
        """
        original = delta.content
        if not original:
            return None
        has_escape = escaped(data)
        key = self._field_key
        present = getattr(delta, self._field) is not UNSET  # an explicit empty field: the keys trade names
        if reasoning and text == original:  # the steady case: one key renamed (or two traded)
            parts = data.split(_CONTENT_KEY)
            if len(parts) != 2:
                return None
            if not present:
                out = key.join(parts)
            elif has_escape:
                return None
            elif data.count(key) != 1:
                return None  # the reasoning field's name must be the delta's key alone
            else:
                head, tail = parts
                size = len(key)
                i = tail.find(key)  # SGLang writes it after the text
                if i >= 0:
                    out = b"".join((head, key, tail[:i], _CONTENT_KEY, tail[i + size :]))
                else:
                    i = head.find(key)
                    if i < 0:
                        return None
                    out = b"".join((head[:i], _CONTENT_KEY, head[i + size :], key, tail))
        else:
            at = data.find(_CONTENT_KEY)
            if at < 0 or data.find(_CONTENT_KEY, at + 9) >= 0:
                return None
            value = string_at(data, at + 9) if text != original else None
            if value is None and text != original:
                return None
            if not reasoning:  # the text alone
                if value is None:
                    return data  # the same text (a held character given back at the finish, say)
                out = b"".join((data[: value[0]], _encode(text), data[value[1] :]))
            elif not present:  # the key and, when it changed, the text
                if value is None:
                    out = b"".join((data[:at], key, data[at + 9 :]))
                else:
                    out = b"".join((data[:at], key, data[at + 9 : value[0]], _encode(text), data[value[1] :]))
            else:
                start = data.find(key)
                if has_escape or start < 0 or data.find(key, start + len(key)) >= 0:
                    return None
                size = len(key)
                if value is None:
                    middle: tuple[bytes, ...] = (key,)
                    lo, hi = at, at + 9
                else:
                    middle = (key, data[at + 9 : value[0]], _encode(text))
                    lo, hi = at, value[1]
                if start < lo:
                    out = b"".join((data[:start], _CONTENT_KEY, data[start + size : lo], *middle, data[hi:]))
                elif start >= hi:
                    out = b"".join((data[:lo], *middle, data[hi:start], _CONTENT_KEY, data[start + size :]))
                else:
                    return None
        if has_escape:
            try:
                read = _decode_checked(out[6:-2] if framed else out).choices[0].delta
            except (msgspec.DecodeError, msgspec.ValidationError):
                return None
            if reasoning and ("content" in read or as_str(read.get(self._field)) != text):
                return None
            if not reasoning and as_str(read.get("content")) != text:
                return None
        return out

    def _renamed_all(self, span: bytes, bodies: list[bytes], chunks: list[_RunChunk]) -> bytes | None:
        """Steady reasoning: ``span`` (``data: `` lines of ``chunks``) with each event renamed."""
        field = self._field
        # With no escapes every event holds its delta's key spelled as itself: then one each.
        if (
            not escaped(span)
            and span.count(_CONTENT_KEY) == len(chunks)
            and all(getattr(c.choices[0].delta, field) is UNSET for c in chunks)
        ):
            return span.replace(_CONTENT_KEY, self._field_key)
        out: list[bytes] = []
        for body, chunk in zip(bodies, chunks, strict=True):
            delta = chunk.choices[0].delta
            renamed = self._edited(body, delta, True, delta.content)
            if renamed is None:
                return None
            out.append(renamed)
        return b"data: " + b"\n\ndata: ".join(out) + b"\n\n"

    def _all_held(self, event: SSEEvent, data: bytes, choice: _OneChoice) -> list[SSEEvent] | None:
        """What goes out for a one-choice chunk whose text was all held (a tag, or whitespace held
        at a block's edge), without the full rewrite: nothing when it says nothing else; with a
        role (Ollama writes one in every delta), the chunk without its text. ``None``: unproven."""
        if _says_nothing(_role(choice)):
            return [] if self._quiet(data) else None
        bare = self._without_text(data, choice)
        return None if bare is None else [encode_event(bare, fields=event.fields)]

    @staticmethod
    def _quiet(data: bytes) -> bool:
        return _quiet(data)

    def _without_text(self, data: bytes, choice: _OneChoice) -> bytes | None:
        """``data`` with its one delta's ``content`` member taken out: what the full rewrite sends
        for a chunk whose text was all held and that has something else to say. ``None`` when
        unproven (see :meth:`_edited`)."""
        delta = choice.delta
        if delta is None or delta.content is None:
            return None
        at = data.find(_CONTENT_KEY)
        if at < 0 or data.find(_CONTENT_KEY, at + 9) >= 0:
            return None
        value = string_at(data, at + 9)
        if value is None:
            return None
        end = value[1]
        after = end
        while after < len(data) and data[after] in b" \t\r\n":
            after += 1
        if after < len(data) and data[after] == 44:  # ",": the member and its comma go
            out = data[:at] + data[after + 1 :]
        else:  # the last member: the comma before it goes instead
            before = len(data[:at].rstrip())
            if before < 1 or data[before - 1] != 44:
                return None  # the only member: the full rewrite decides
            out = data[: before - 1] + data[end:]
        if escaped(data):
            try:
                read = _decode_checked(out).choices[0].delta
            except (msgspec.DecodeError, msgspec.ValidationError):
                return None
            if "content" in read:
                return None
        return out

    # -- native reasoning under the other name ----------------------------------------------------

    def _needs_mirror(self, delta: _Delta) -> bool:
        """Whether ``delta`` carries reasoning under the other name only."""
        source = self._mirror
        return bool(delta.reasoning if source == "reasoning" else delta.reasoning_content) and not getattr(
            delta, self._field
        )

    def _mirrored(self, data: bytes, positions: list[int]) -> bytes:
        """``data`` with the reasoning of the choices at ``positions`` also under the client's field."""
        assert self._mirror is not None
        chunk: _Obj = _decode_obj(data)
        choices: list[_Obj] = _decode_list(chunk["choices"])
        for pos in positions:
            choices[pos]["delta"] = _with_mirror(_delta_of(choices[pos]), self._mirror, self._field)
        chunk["choices"] = choices
        return _encode(chunk)

    # -- the reasoning record --------------------------------------------------------------------

    def _note_calls(self, index: int, raw: msgspec.Raw) -> None:
        assert self.transcripts is not None
        try:
            calls = _decode_call_ids(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        for call in calls:
            if isinstance(call.id, str) and call.id:
                self.transcripts.call(index, call.id)

    def said(self) -> list[Said]:
        """Each choice's answer: what the model wrote, and the tool calls it made."""
        t = self.transcripts
        if t is None:
            return []
        choices = sorted({*t.texts, *t.calls}, key=lambda i: i if isinstance(i, int) else -1)
        return [Said(t.text(i), tuple(t.calls.get(i, ()))) for i in choices]

    # -- the order in which choices first appear ---------------------------------------------------

    def _keep_order(self, choices: Sequence[_OneChoice], out: list[SSEEvent], data: bytes) -> list[SSEEvent]:
        """``out`` (what goes out for a chunk of ``choices``) with every choice that the upstream
        showed before and the client has not seen announced ahead of the first chunk of a choice
        with a higher index, so that the client first sees the choices in the upstream's order."""
        sent: list[list[int]] = [_indexes(e.data) if e.data is not None else [] for e in out]
        shown, unshown = self._shown, self._unshown
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
        for earlier in sorted(k for k in self._unshown if k < index):
            envelope = {k: v for k, v in _decode_obj(self._unshown.pop(earlier)).items() if k in _ENVELOPE}
            choice = {"index": earlier, "delta": {}, "logprobs": None, "finish_reason": None}
            body = {**envelope, "choices": [choice]}
            body.setdefault("object", "chat.completion.chunk")
            out.append(encode_event(_encode(body)))
            self._shown.add(earlier)
        return out

    # -- per choice -----------------------------------------------------------------------------

    def _scan(self, choice: _Choice) -> list[Segment] | None:
        """The runs to send for this choice, or ``None`` when it goes out unchanged."""
        index, delta = choice.index, choice.delta
        text = delta.content if delta is not None else None
        scanner = self._scanners.get(index)
        if scanner is None:
            if text is None:
                return None
            # Made on the role chunk's empty text already: the first text then finds it starting.
            assert self._config is not None
            scanner = self._scanners[index] = Scanner(self._config)
            if self.transcripts is not None:
                self.transcripts.watch(index, scanner)
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
        if not self._scanners:  # every choice finished already (as at [DONE] after the finish chunks)
            self._steady = None
            return []
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
            # Explicit nulls and empty strings say nothing (SGLang spells every absent field so).
            if all(_says_nothing(v) for v in others.values()) and all(
                _says_nothing(v) for k, v in choice.items() if k not in ("index", "delta")
            ):
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
            if index not in self._shown:
                out += self._announce_before(index)
                self._shown.add(index)
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
        return _mirror_message(choice, message, cfg)  # upstream reasoning wins
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


def _mirror_message(choice: _Obj, message: _Obj, cfg: ThinkExtractConfig) -> bool:
    """With ``chat_mirror_reasoning``: a message whose reasoning came under the other name gets it
    under ``chat_reasoning_field`` too, right after it; whether anything changed."""
    if not cfg.chat_mirror_reasoning:
        return False
    field = cfg.chat_reasoning_field
    source = _OTHER_FIELD[field]
    if source not in message or as_str(message[source]) in (None, "") or as_str(message.get(field)):
        return False
    choice["message"] = _with_mirror(message, source, field)
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


def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    return translated(ChatStream(config), events)
