"""The scanner's writing side: the block under way, the whitespace at its edges (rules 4 and 5 of
``docs/scanner.md``), and the segments that go out. :class:`~.tagreader.TagReader` decides where
blocks begin and end; this decides what of their text goes out, and when."""

from __future__ import annotations

from .scanrules import NO_CHARS, WHITESPACE, ScanSettings
from .segments import CONTENT, REASONING, Kind, Segment, utf8_len

__all__ = ["BlockWriter"]


class BlockWriter:
    """The block under way and what it has emitted; the counters of what went out as reasoning."""

    # Slots: a scanner is touched once per chunk, and slot access stays fast however many fields it has.
    __slots__ = (
        "_cap",
        "_kind",
        "_kinds_emitted",
        "_lead_trim",
        "_out",
        "_pending",
        "_pending_bytes",
        "_separator",
        "_spilling",
        "_started",
        "_strip",
        "_tail_chars",
        "_tail_trim",
        "_trim",
        "_trim_tail",
        "_ws",
        "_ws_cap",
        "reasoning_blocks",
        "reasoning_chars",
    )

    def __init__(self, settings: ScanSettings) -> None:
        self._separator = settings.separator
        self._strip = settings.strip
        self._trim = settings.trim
        self._trim_tail = settings.trim_tail
        self._cap = settings.cap
        # The current block (rules 4, 5): kind, whether it emitted text, whitespace held meanwhile.
        self._kind: Kind = CONTENT
        self._started = False
        self._lead_trim = False  # the block drops its leading whitespace (it starts at a tag)
        self._tail_trim = False  # the block holds its trailing whitespace, to drop it at a tag
        self._tail_chars = NO_CHARS  # the characters it holds at its end: WHITESPACE, if it does
        self._pending: list[str] = []
        self._pending_bytes = 0
        self._spilling = False  # a whitespace run outgrew the cap: the rest of it is not held
        # Trailing whitespace the fast path holds (trim_tag_edges); moved to _pending (_settle)
        # before anything else looks at held whitespace. The fast path runs only while _pending
        # is empty.
        self._ws = ""
        self._ws_cap = self._cap // 4  # the most it holds there, in characters (4: UTF-8 bytes at most)
        self._kinds_emitted: set[str] = set()
        self._out: list[tuple[Kind, str]] = []
        self.reasoning_blocks = 0
        """Reasoning blocks that emitted text."""
        self.reasoning_chars = 0
        """Characters emitted as reasoning."""

    def _begin(self, kind: Kind, after_tag: bool = False) -> None:
        """Start a block. With ``trim_tag_edges``, a reasoning block (it always starts at a tag,
        explicit or implied) drops its leading whitespace (and, with ``trim_reasoning_tail``, holds
        its trailing whitespace), and a content block that starts ``after_tag`` drops its leading
        whitespace."""
        self._kind = kind
        self._started = False
        trim = self._trim
        self._tail_trim = self._trim_tail and kind == REASONING
        self._tail_chars = WHITESPACE if self._tail_trim else NO_CHARS
        self._lead_trim = trim and (after_tag or kind == REASONING)

    def _end_block(self) -> None:
        if self._started and self._kind == REASONING:
            self.reasoning_blocks += 1
        # Whitespace still pending is the whole of a whitespace-only block, or trimmed trailing space.
        self._pending = []
        self._pending_bytes = 0
        self._ws = ""
        self._started = False
        self._spilling = False

    def _block_text(self, text: str) -> None:
        if not text:
            return
        if self._lead_trim and not self._started:
            text = text.lstrip()  # trim_tag_edges: whitespace right after a tag
            if not text:
                return
        if self._tail_trim:
            # trim_tag_edges: trailing whitespace waits for what follows it; a close tag drops it
            # (_end_block), more text emits it.
            body = text.rstrip()
            if len(body) == len(text):
                self._spilling = False
                self._emit(text)
            elif body:
                self._spilling = False
                self._emit(body)
                self._hold_space(text[len(body) :])
            else:
                self._hold_space(text)
        elif self._strip:
            if not self._started:
                text = text.lstrip()
                if not text:
                    return
            body = text.rstrip()
            if body:
                self._spilling = False
                self._emit(body)
                tail = text[len(body) :]
                if tail:
                    self._hold_space(tail)
            else:
                self._hold_space(text)
        elif self._started:
            self._push(text)
        elif text.isspace():
            self._hold_space(text)
        else:
            self._emit(text)

    def _hold_space(self, space: str) -> None:
        if self._spilling:
            self._push(space)
            return
        self._pending.append(space)
        self._pending_bytes += utf8_len(space)
        if self._pending_bytes > self._cap:
            # Bound memory: this run of whitespace becomes block text, up to its end.
            pending = "".join(self._pending)
            self._pending = []
            self._pending_bytes = 0
            self._emit(pending, keep_pending=False)
            self._spilling = True

    def _settle(self) -> None:
        """Move the whitespace the fast path holds into ``_pending``."""
        ws = self._ws
        if ws:
            self._ws = ""
            self._pending.append(ws)  # _pending is empty while the fast path runs
            self._pending_bytes += utf8_len(ws)

    def _release_tail(self) -> None:
        """Emit the trailing whitespace a reasoning block holds: no close tag came to drop it."""
        if self._tail_trim and self._pending:
            pending = "".join(self._pending)
            self._pending = []
            self._pending_bytes = 0
            self._push(pending)

    def _emit(self, text: str, keep_pending: bool = True) -> None:
        """Emit block text, preceded by the whitespace held so far and, on re-entry, the separator."""
        if self._pending and keep_pending:
            text = "".join(self._pending) + text
            self._pending = []
            self._pending_bytes = 0
        if not self._started:
            self._started = True
            kind = self._kind
            if kind in self._kinds_emitted:
                if self._separator:
                    text = self._separator + text
            else:
                self._kinds_emitted.add(kind)
        self._push(text)

    def _push(self, text: str) -> None:
        kind = self._kind
        if kind == REASONING:
            self.reasoning_chars += len(text)
        self._out.append((kind, text))

    def _take(self) -> list[Segment]:
        out = self._out
        if not out:
            return []
        self._out = []
        if len(out) == 1:
            return [Segment(*out[0])]
        merged: list[Segment] = []
        kind, parts = out[0][0], [out[0][1]]
        for k, text in out[1:]:
            if k == kind:
                parts.append(text)
            else:
                merged.append(Segment(kind, "".join(parts)))
                kind, parts = k, [text]
        merged.append(Segment(kind, "".join(parts)))
        return merged
