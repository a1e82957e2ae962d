"""Ollama's native API: ``/api/chat`` (``message.content`` → ``message.thinking``) and ``/api/generate``
(``response`` → ``thinking``), streamed as newline-delimited JSON (Ollama streams when ``stream`` is
absent) or as one JSON body.

One answer per response, one channel (:class:`~gateway_mw.channels.Channels`). A line whose text the
scanner passes unchanged goes on as the same bytes; a line whose text holds reasoning becomes one line
per run, in order, each the upstream's line with its text replaced (a reasoning run in ``thinking``,
the text ``""``). Text held back (a partial tag) goes out before the final ``done`` line, which keeps
its metrics, in lines that say ``done: false``: the upstream's done line is the one that says it is.
A line that already carries ``thinking`` (Ollama's own parser ran) is the upstream's reasoning: it
wins, and every line from then on goes on as it came, answer lines included.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Final

import msgspec

from ..calls import call_spellings
from ..channels import Channels, Counts, Said, Transcripts
from ..config import ThinkExtractConfig
from ..controls.forms import think
from ..controls.side import SurfaceControls
from ..history import ollama as history
from ..ndjson import encode_line
from ..rawjson import UNREADABLE, Obj, as_str, encode, escaped, obj
from ..scanner import CONTENT, Segment, merge_segments
from ..sse import SSEEvent
from . import StreamTranslator
from .base import NewId, translated
from .definition import NDJSON_TYPES, SurfaceDefinition
from .exclude import ReasoningFilter
from .ollama_budget import SIDE as BUDGET
from .said import document, ids_of, text_of
from .translator import Translator, one_answer
from .usage import BodyUsage

__all__ = ["SURFACE", "OllamaStream", "OllamaWithoutReasoning", "transform_body", "translate_stream"]

_ANSWER = 0  # the one channel


class _Message(msgspec.Struct, gc=False):
    content: str | None = None
    thinking: str | None = None
    tool_calls: Any = None  # read for the reasoning record's keys: their ids, names and arguments


class _Line(msgspec.Struct, gc=False):
    """What is read of a line: the model, the text and reasoning of either endpoint, whether it ends."""

    model: Any = None
    message: _Message | None = None
    response: str | None = None
    thinking: str | None = None
    done: Any = None


_decode_line = msgspec.json.Decoder(_Line).decode


def _text_of(line: _Line) -> tuple[str | None, str | None]:
    """(text, reasoning) of a line: ``message`` on ``/api/chat``, ``response`` on ``/api/generate``."""
    if line.message is not None:
        return line.message.content, line.message.thinking
    return line.response, line.thinking


class OllamaStream(Translator):
    """Translate an Ollama NDJSON stream, one line at a time (sans-I/O)."""

    def __init__(self, config: ThinkExtractConfig) -> None:
        super().__init__(Channels(config, injected=False))
        self._envelope: Obj = {}  # of the last line rewritten or held: what lines written for held text copy
        self._chat = True
        self._calls: tuple[str, ...] = ()  # the names and arguments of the answer's tool calls (record keys)

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        data = event.data
        if data is None or self.channels.is_native(_ANSWER):
            return [event]  # after Ollama's own reasoning, every line goes on as it came: not even read
        try:
            line = _decode_line(data)
        except UNREADABLE:
            return self.unreadable(event)  # not a line this reads
        channels = self.channels
        channels.resolve(line.model if isinstance(line.model, str) else None)
        if not channels.enabled:
            return [event]
        if line.message is None and line.response is None:  # no text (an error line): after what was held
            return [*self.flush(), event]
        self._chat = line.message is not None
        if channels.transcripts is not None and line.message is not None and line.message.tool_calls:
            for call_id in _ids(line.message.tool_calls):
                channels.transcripts.call(_ANSWER, call_id)
            self._calls += call_spellings(line.message.tool_calls)
        text, thinking = _text_of(line)
        if thinking:  # Ollama's own parser ran: its reasoning wins, after what was held
            self._envelope = _envelope_of(data)
            return [*self._lines(channels.native(_ANSWER), None), event]
        runs = channels.text(_ANSWER, text or "")
        if line.done is True:  # the one done line, last: what it ends goes out before it
            self._envelope = _envelope_of(data)
            runs += channels.end(_ANSWER)
            return [*self._lines(runs, None), self._with_text(obj(data) or {}, "", None) if text else event]
        if not runs and text:  # all held (a tag): nothing to say yet, but the line a flush will copy
            doc = obj(data) or {}
            self._envelope = _envelope_of(data, doc)
            return [self._with_text(doc, "", None)] if _says_more(doc) else []
        if not text:
            return [*self._lines(runs, None), event]  # what was held, then the line as it came
        if len(runs) == 1 and runs[0].kind == CONTENT and runs[0].text == text:
            return [event]
        return self._lines(runs, data)

    def flush(self) -> list[SSEEvent]:
        held = [seg for _, segments in self.channels.flush() for seg in segments]
        return self._lines(held, None)

    def finish(self) -> list[SSEEvent]:
        held = [seg for _, segments in self.channels.finish() for seg in segments]
        return self._lines(held, None)

    def answers(self, t: Transcripts) -> list[Said]:
        return one_answer(t, self._calls)  # the one channel, _ANSWER

    # -- writing --------------------------------------------------------------------------------

    def _lines(self, runs: list[Segment], data: bytes | None) -> list[SSEEvent]:
        """One line per run: the last is the line ``data`` with its text replaced, the ones before
        it its envelope (what the line carries besides its text — tool calls, ``logprobs`` — goes
        out once, on the last); with no ``data``, lines of the envelope saying ``done: false``."""
        merged = merge_segments(runs)
        whole: Obj | None = None
        if data is not None:
            whole = obj(data) or {}
            self._envelope = _envelope_of(data, whole)
        out: list[SSEEvent] = []
        for i, seg in enumerate(merged):
            line = whole if i == len(merged) - 1 else None
            if seg.kind == CONTENT:
                out.append(self._with_text(line, seg.text, None))
            else:
                out.append(self._with_text(line, "", seg.text))
        return out

    def _with_text(self, line: Obj | None, text: str, thinking: str | None) -> SSEEvent:
        """The line ``line`` (read) with its text replaced; with no ``line``, the envelope's,
        saying ``done: false``."""
        if line is not None:
            doc: Obj = line
        else:  # a line for held text, or a run before a line's last: never the last line
            doc = dict(self._envelope)
        if self._chat:
            held = doc.get("message")
            message = dict(held) if isinstance(held, dict) else obj(held) or {"role": "assistant"}
            doc["message"] = _put(message, "content", text, thinking)
        else:
            doc = _put(doc, "response", text, thinking)
        if line is None:
            doc["done"] = False
        return encode_line(encode(doc))


def _ids(tool_calls: Any) -> list[str]:
    """The ids of a line's tool calls, where they have one (keys of the reasoning record, as a body's are)."""
    if not isinstance(tool_calls, list):
        return []
    return [c["id"] for c in tool_calls if isinstance(c, dict) and isinstance(c.get("id"), str)]


_TEXT_LINE = frozenset(("model", "created_at", "message", "response", "thinking", "done"))
_TEXT_MESSAGE = frozenset(("role", "content", "thinking"))


def _says_more(doc: Obj) -> bool:
    """Whether a line carries something besides its text (tool calls, ``logprobs``…): a client
    reads it, so the line goes out even when its text is held."""
    if any(k not in _TEXT_LINE for k in doc):
        return True
    message = obj(doc.get("message"))
    return message is not None and any(k not in _TEXT_MESSAGE for k in message)


def _envelope_of(data: bytes, doc: Obj | None = None) -> Obj:
    """What a line written for held text copies of the line ``data``: who wrote it, when, and the
    message's role; not its tool calls, its metrics or whether it is done."""
    doc = obj(data) if doc is None else doc
    if doc is None:
        return {}
    out: Obj = {k: doc[k] for k in ("model", "created_at") if k in doc}
    message = obj(doc.get("message"))
    if message is not None:
        out["message"] = {k: message[k] for k in ("role",) if k in message}
    return out


def _put(doc: Obj, key: str, text: str, thinking: str | None) -> Obj:
    """``doc`` with ``key`` set to ``text`` and, for reasoning, ``thinking`` right after it."""
    out: Obj = {}
    for k, v in doc.items():
        if k == "thinking":
            continue
        out[k] = text if k == key else v
        if k == key and thinking is not None:
            out["thinking"] = thinking
    if key not in out:
        out[key] = text
        if thinking is not None:
            out["thinking"] = thinking
    return out


def transform_body(body: bytes | bytearray, config: ThinkExtractConfig) -> tuple[bytes | None, Counts]:
    """A non-stream answer with its reasoning in ``thinking``: ``None`` when nothing changed."""
    counts = Counts()
    doc = obj(bytes(body))
    if doc is None:
        return None, counts
    model = as_str(doc.get("model"))
    cfg = config.for_model(model)
    chat = "message" in doc
    holder = obj(doc.get("message")) if chat else doc
    if holder is None or not cfg.enabled:
        return None, counts
    text = as_str(holder.get("content" if chat else "response"))
    if as_str(holder.get("thinking")):
        counts.native = 1
        return None, counts  # Ollama's own reasoning: it wins
    if not text:
        return None, counts
    channels = Channels(cfg, injected=False)
    segments = channels.at_once(_ANSWER, text)
    if segments is None:
        segments = channels.text(_ANSWER, text) + channels.end(_ANSWER)
    counts = channels.counts
    reasoning = "".join(s.text for s in segments if s.kind != CONTENT)
    answer = "".join(s.text for s in segments if s.kind == CONTENT)
    if not reasoning and answer == text:
        return None, counts
    put = _put(holder, "content" if chat else "response", answer, reasoning or None)
    if chat:
        doc["message"] = put
    else:
        doc = put
    return encode(doc), counts


# -- without reasoning (``reasoning_exclude``) -------------------------------------------------------


def _without_thinking(data: bytes) -> tuple[Obj, Obj | None] | None:
    """A line (or a body) without ``thinking``, in its message or at its top, and its message (read);
    ``None``: it had none."""
    if data.find(b"thinking") < 0 and not escaped(data):
        return None
    doc = obj(data)
    if doc is None:
        return None
    message = obj(doc.get("message"))
    if message is not None and "thinking" in message:
        del message["thinking"]
        doc["message"] = message
    elif "thinking" in doc:
        del doc["thinking"]
    else:
        return None
    return doc, message


class OllamaWithoutReasoning:
    """An Ollama stream's lines without ``thinking`` (a :class:`~.exclude.ReasoningFilter`). A line left
    saying nothing (no text, nothing besides it, not the done line) is dropped: Ollama writes a line
    per token, and one per reasoning token would say only how long the model reasoned."""

    def events(self, events: list[SSEEvent]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for event in events:
            read = _without_thinking(event.data) if event.data is not None else None
            if read is None:
                out.append(event)
            elif _says_something(*read):
                out.append(encode_line(encode(read[0])))
        return out


def _says_something(doc: Obj, message: Obj | None) -> bool:
    """Whether a line without its reasoning still says something: it is the done line, or it
    carries text or anything besides it (tool calls, ``logprobs``…)."""
    if bytes(doc.get("done") or b"") == b"true" or any(k not in _TEXT_LINE for k in doc):
        return True
    if message is None:
        return bool(as_str(doc.get("response")))
    return bool(as_str(message.get("content"))) or any(k not in _TEXT_MESSAGE for k in message)


def body_without_reasoning(body: bytes | bytearray) -> bytes | None:
    """A non-stream answer without ``thinking``; ``None`` when it had none."""
    read = _without_thinking(bytes(body))
    return None if read is None else encode(read[0])


def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream lines in, client lines out."""
    return translated(OllamaStream(config), events)


class _Ollama:
    """The surface as the gateway knows it (:class:`~.definition.SurfaceDefinition`)."""

    name: Final = "ollama"
    # Its chat and generate routes, and the read-only ones Open WebUI and `ollama run` ask before they chat.
    forward_routes: Final = (
        "POST /api/chat",
        "POST /api/generate",
        "GET /api/tags",
        "GET /api/version",
        "GET /api/ps",
        "POST /api/show",
    )
    error_paths: Final = ("/api/",)  # where its native routes live
    framing: Final = "ndjson"
    stream_types: Final = NDJSON_TYPES
    unknown_family: Final = ("field", "all")  # Ollama reads `thinking` whatever the model: where the client's went
    read_history = staticmethod(history.read)
    transform_history = staticmethod(history.transform)
    history_keys = staticmethod(history.keys)
    answer_prefix = staticmethod(history.prefix)
    budget: Final = BUDGET  # /api/chat continues a final assistant message; /api/generate cannot
    # It streams unless `stream` is false (api/types.go `Stream *bool`).
    controls: Final = SurfaceControls(
        think, {"stream": b"true"}, streams_unless_false=True, texts_alone=("prompt", "system")
    )
    usage: Final[BodyUsage | None] = None  # its eval_count is all the answer's tokens

    def stream(self, config: ThinkExtractConfig, new_id: NewId) -> StreamTranslator:
        return OllamaStream(config)

    def transform_body(
        self, body: bytes | bytearray, config: ThinkExtractConfig, new_id: NewId
    ) -> tuple[bytes | None, Counts]:
        return transform_body(body, config)

    def without_reasoning(self) -> ReasoningFilter:
        return OllamaWithoutReasoning()

    def body_without_reasoning(self, body: bytes | bytearray) -> bytes | None:
        return body_without_reasoning(body)

    def said_of_body(self, body: bytes, item_ids: tuple[str, ...]) -> list[Said]:
        """``/api/chat``'s message, or ``/api/generate``'s response (no history to key it by)."""
        doc = document(body)
        if doc is None:
            return []
        message = doc.get("message")
        if isinstance(message, dict):
            calls = message.get("tool_calls")
            return [Said(text_of(message.get("content"), "text"), ids_of(calls, "id"), (), call_spellings(calls))]
        return [Said(text_of(doc.get("response"), "text"))]

    def asks_for_blobs(self, read: object, body: bytes) -> bool:
        return False

    def enabled(self, config: ThinkExtractConfig) -> bool:
        return config.ollama_enabled

    def story(self, config: ThinkExtractConfig) -> str:
        return "reasoning into thinking"

    def error_body(self, status: int, code: str, message: str) -> dict[str, Any]:
        """``error`` a string: Ollama's clients read it so."""
        return {"error": message}


SURFACE: SurfaceDefinition = _Ollama()
