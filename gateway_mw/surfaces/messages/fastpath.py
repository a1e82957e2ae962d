"""The messages fast path: a layer over :class:`MessagesReference` that passes runs of steady
``text_delta`` events without decoding them one by one.

While the one open text block is steady in one kind (its scanner holds nothing, no half character is
held), a span of events that only continue its text with text free of the scanner's triggers gives
what :meth:`MessagesReference.event` gives for each event: the event as it came, renumbered, or
rewritten as a ``thinking_delta``, or nothing (a redacted run held under its cap). The layer proves
it on the span's bytes, for the layouts deployed upstreams write (:data:`LAYOUTS`): every event must
be exactly the layout's bytes around one JSON string, the text. Each layout's rewrite is the
reference's for that layout, so the output is built from the same pieces. Anything else (another
layout, an unknown key, a ping between events) is declined, with no state changed, for the
reference to translate. In a span of several events, the ones before the first that does not
qualify are passed so, and that one goes to the reference.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import msgspec

from ...config import ThinkExtractConfig
from ...rawjson import UNREADABLE, encode
from ...scanner import CONTENT, Kind, Scanner
from ...sse import SSEEvent
from ...steady import DECLINED, Proven, Steady
from ..base import translated
from .blocks import TextBlock
from .reference import MessagesReference

__all__ = ["LAYOUTS", "MessagesStream", "translate_stream"]

NAMED = b"event: content_block_delta\ndata: "  # how an event of the usual framing starts, up to its data
DATA = b"data: "

LAYOUTS: dict[str, tuple[bytes, bytes, bytes, bytes]] = {
    # name: a text_delta event of block %d, before and after its text; then the reference's
    # thinking_delta written for it (the upstream's keys in their order, compact).
    "anthropic": (
        b'{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":',
        b"}}",
        b'{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":',
        b"}}",
    ),
    "vllm": (  # pydantic's field order: type, delta, index
        b'{"type":"content_block_delta","delta":{"type":"text_delta","text":',
        b'},"index":%d}',
        b'{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":',
        b'},"index":%d}',
    ),
    "llamacpp": (  # keys sorted
        b'{"delta":{"text":',
        b',"type":"text_delta"},"index":%d,"type":"content_block_delta"}',
        b'{"delta":{"thinking":',
        b',"type":"thinking_delta"},"index":%d,"type":"content_block_delta"}',
    ),
    "pyjson": (  # json.dumps spacing: the rewrite is compact
        b'{"type": "content_block_delta", "index": %d, "delta": {"type": "text_delta", "text": ',
        b"}}",
        b'{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":',
        b"}}",
    ),
}

_decode_text = msgspec.json.Decoder(str).decode
_decode_texts = msgspec.json.Decoder(list[str]).decode

# One layout for one block: the upstream's bytes before its text's opening quote (the data, from its
# first byte) and after its closing quote (to the blank line), what is written before and after the
# text, and whether the text is written afresh (a thinking_delta; else as it came).
_Layout = tuple[bytes, bytes, bytes, bytes, bool]


def _at(template: bytes, index: int) -> bytes:
    return template % index if b"%d" in template else template


def _layouts(upstream: int, out: int, reasoning: bool) -> list[_Layout]:
    """Every layout of block ``upstream``'s events, written as block ``out`` in the kind it is in."""
    found = []
    for before, after, thinking_before, thinking_after in LAYOUTS.values():
        if reasoning:
            head, tail = _at(thinking_before, out), _at(thinking_after, out)
        else:
            head, tail = _at(before, out), _at(after, out)
        found.append((_at(before, upstream), _at(after, upstream) + b"\n\n", NAMED + head, tail + b"\n\n", reasoning))
    return found


class _Steady(Steady):
    """The one open text block, steady: a text free of ``triggers`` goes through it whole."""

    __slots__ = ("block", "layouts", "unchanged")

    def __init__(self, block: TextBlock, scanner: Scanner, kind: Kind, layouts: list[_Layout], unchanged: bool) -> None:
        super().__init__(kind, scanner)
        self.block = block
        self.layouts = layouts
        self.unchanged = unchanged  # answer text not renumbered: an event with its event: line goes as it came


class MessagesStream(MessagesReference):
    """The messages translator: the reference, and the fast path for steady text."""

    def __init__(self, config: ThinkExtractConfig) -> None:
        super().__init__(config)
        self._steady: _Steady | None = None
        self._steady_known = False  # self._steady holds until the reference translates again
        # Each block's layouts, the one its upstream wrote last first (one test where there were four).
        self._layouts: dict[tuple[int, int, bool], list[_Layout]] = {}

    # Everything but fast_forward may change what the steady block depends on.

    def event(self, event: SSEEvent) -> list[SSEEvent]:
        self._steady_known = False
        return super().event(event)

    def flush(self) -> list[SSEEvent]:
        self._steady_known = False
        return super().flush()

    def finish(self) -> list[SSEEvent]:
        self._steady_known = False
        return super().finish()

    def oversized(self, piece: bytes, more: bool) -> bytes:
        self._steady_known = False
        return super().oversized(piece, more)

    def fast_forward(self, span: bytes) -> Proven:
        """The bytes for the first events of ``span`` (whole events, ``\\n`` line endings, no
        ``\\r``) that are provably what :meth:`event` gives for each, the translator's state then as
        :meth:`event` leaves it, and where they end; :data:`DECLINED`, with nothing changed, when the
        first is not."""
        if not self._active:
            return span, len(span)  # this stream's model is not translated: every event passes as it came
        if not self._steady_known:
            self._steady = self._find_steady()
            self._steady_known = True
        steady = self._steady
        if steady is None:
            return DECLINED
        if span.startswith(NAMED):
            start = 33
        elif span.startswith(DATA):
            start = 6
        else:
            return DECLINED
        first = span.find(b"\n\n") + 2  # the first event's end
        layouts = steady.layouts
        for layout in layouts:
            before, after = layout[0], layout[1]
            # The text's quotes are in the first event's bytes that the layout does not hold.
            if not (span.startswith(before, start) and span.endswith(after, 0, first)):
                continue
            if layout is not layouts[0]:
                layouts.remove(layout)
                layouts.insert(0, layout)
            if first < len(span):
                out = self._run(steady, layout, span, start, span[start + len(before) : len(span) - len(after)])
                if out is not None:
                    return out, len(span)
                # Not every event qualifies: the ones before the first that does not, if any.
                room = None  # a redacted block holds its reasoning up to its cap
                if layout[4] and self._writer.redacted:
                    room = self._writer.room(steady.block)
                cut = _qualifying(steady, layout, span, span[:start] + before, room)
                return self.fast_forward(span[:cut]) if 0 < cut < len(span) else DECLINED
            spelled = span[start + len(before) : first - len(after)]
            try:
                text = _decode_text(spelled)  # one event: its text is one JSON string, alone
            except UNREADABLE:
                return DECLINED
            if spelled[:1] != b'"' or spelled[-1:] != b'"' or not text or not steady.triggers.isdisjoint(text):
                return DECLINED  # whitespace around the text (it may end a line), an empty text, a trigger
            out_one: bytes | None
            if steady.unchanged and start == 33:
                out_one = span
            elif layout[4]:
                out_one = self._reasoning(steady, layout, [text], text)
                if out_one is not None:
                    self.counts.reasoning_events += 1
            else:
                out_one = layout[2] + spelled + layout[3]
            if out_one is None:
                return DECLINED
            steady.scanner.pass_steady(text)
            self._last = steady.block.upstream
            return out_one, len(span)
        return DECLINED

    def _run(self, steady: _Steady, layout: _Layout, span: bytes, start: int, spelled: bytes) -> bytes | None:
        """Several events of ``layout``, each starting as the first does (``start``: where its data
        starts); ``spelled``: the bytes from the first event's text to the last one's. Each event
        must be exactly the layout's bytes around one JSON string: joined by a comma and a line
        break (no JSON string holds one), the texts then read as a list of strings, one per event."""
        before, after, written_head, written_tail, reasoning = layout
        boundary = after + span[:start]  # ends an event and starts the next one's data
        separators = spelled.count(boundary + before)
        if not separators:
            return None
        # Each boundary marked by a line break, then each marked boundary and the layout's bytes
        # after it by a comma and one (two replaces of needles short enough for a quick search).
        marked = spelled.replace(boundary, b"\n")
        listed = b"[" + marked.replace(b"\n" + before, b",\n") + b"]"
        if listed.count(b"\n") != separators:
            return None  # a line break elsewhere: an event is not one line of the layout
        try:
            texts = _decode_texts(listed)
        except UNREADABLE:
            return None
        if len(texts) != separators + 1 or not all(texts):  # an empty text is dropped: the reference says so
            return None
        text = "".join(texts)
        if not steady.triggers.isdisjoint(text):
            return None
        if not reasoning:
            if steady.unchanged and start == 33:
                out = span
            else:
                out = written_head + marked.replace(b"\n" + before, written_tail + written_head) + written_tail
        else:
            written = self._reasoning(steady, layout, texts, text)
            if written is None:
                return None
            self.counts.reasoning_events += len(texts)
            out = written
        steady.scanner.pass_steady(text)
        self._last = steady.block.upstream
        return out

    def _reasoning(self, steady: _Steady, layout: _Layout, texts: list[str], text: str) -> bytes | None:
        """Reasoning: held for a redacted block (within its cap: the reference ends the block after
        the event that crosses it), or written afresh as ``thinking_delta``s."""
        block = steady.block
        if self._writer.redacted:
            if not self._writer.holds(block, text):
                return None
            block.parts.append(text)
            block.held += len(text) if text.isascii() else len(text.encode())
            return b""
        block.digest.update(text.encode())
        return layout[2] + _thinking_texts(texts, text, layout) + layout[3]

    def _find_steady(self) -> _Steady | None:
        """The one open text block, when it is steady in the kind of the output block it writes
        (nothing held, no half character), with its layouts."""
        if len(self._blocks) != 1:
            return None
        block = next(iter(self._blocks.values()))
        scanner = self.channels.scanner(block.upstream)
        if scanner is None or block.half:
            return None
        kind = scanner.steady
        if kind is None or kind != block.kind:
            return None
        key = (block.upstream, block.out, kind != CONTENT)
        layouts = self._layouts.get(key)
        if layouts is None:
            layouts = self._layouts[key] = _layouts(*key)
        unchanged = kind == CONTENT and block.out == block.upstream
        return _Steady(block, scanner, kind, layouts, unchanged)


def _qualifying(steady: _Steady, layout: _Layout, span: bytes, head: bytes, room: int | None) -> int:
    """Where the first events of ``span`` end that are each ``head`` and ``layout``'s bytes around
    one non-empty JSON string free of the steady block's triggers, and, with ``room``, whose texts
    fit in that many UTF-8 bytes (0: the first is not)."""
    after = layout[1]
    pos = 0
    while pos < len(span):
        end = span.find(b"\n\n", pos) + 2
        if not (span.startswith(head, pos) and span.endswith(after, pos, end)):
            break
        spelled = span[pos + len(head) : end - len(after)]
        try:
            text = _decode_text(spelled)
        except UNREADABLE:
            break
        if spelled[:1] != b'"' or spelled[-1:] != b'"' or not text or not steady.triggers.isdisjoint(text):
            break
        if room is not None:
            room -= len(text) if text.isascii() else len(text.encode())
            if room < 0:
                break
        pos = end
    return pos


def _thinking_texts(texts: list[str], text: str, layout: _Layout) -> bytes:
    """The texts written afresh, each between the layout's tail and head of the next event."""
    if len(texts) == 1:
        return encode(text)
    between = layout[3] + layout[2]
    if '"' not in text:
        # Two texts meet at '","', and no text holds it: inside a JSON string it takes an escaped
        # quote followed by ',' and the closing quote (a text ending '",'), whose '","' may overlap
        # the boundary's, so that neither counting nor replacing could tell them apart.
        return encode(texts)[1:-1].replace(b'","', b'"' + between + b'"')
    return between.join([encode(t) for t in texts])


def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    return translated(MessagesStream(config), events)
