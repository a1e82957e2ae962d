"""The shared reasoning scanner: text in, reasoning/content segments out.

Pure and synchronous: no I/O, no JSON, no asyncio. One :class:`Scanner` per text channel (a chat
choice, an Anthropic content block, a Responses output item). The rules it implements are numbered
in ``docs/scanner.md``; the comments below refer to them.

Cost is linear: every feed looks at the text it receives plus the held-back suffix, which is
bounded by the longest tag (live mode) or ``max_buffer_bytes`` (a buffered block).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, Literal

import msgspec

from .config import TagPair, ThinkExtractConfig

__all__ = ["CONTENT", "REASONING", "Kind", "Scanner", "Segment", "extract", "merge_segments"]

Kind = Literal["reasoning", "content"]
REASONING: Final = "reasoning"
CONTENT: Final = "content"

_DEFAULT_CONFIG = ThinkExtractConfig()


class Segment(msgspec.Struct, frozen=True, gc=False):
    """A run of text of one kind. ``text`` is never empty."""

    kind: Kind
    text: str


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


class _TagTable:
    """The tag pairs compiled for scanning: open strings grouped by their first character."""

    def __init__(self, pairs: tuple[TagPair, ...]) -> None:
        by_first: dict[str, list[TagPair]] = {}
        # Longest first, so that at a tie the longest open string wins (rule 1); stable for duplicates.
        for pair in sorted(pairs, key=lambda p: -len(p.open)):
            by_first.setdefault(pair.open[0], []).append(pair)
        self.by_first = by_first
        self.first_chars = frozenset(by_first)
        self.first_re = re.compile("[" + "".join(re.escape(c) for c in sorted(by_first)) + "]")
        self.by_length = sorted(pairs, key=lambda p: -len(p.open))
        self.default = pairs[0]

    def match_open(self, buf: str, pos: int, final: bool) -> TagPair | Literal[False] | None:
        """The pair whose open string starts at ``pos``, ``None`` if none does, or ``False`` when
        ``buf`` ends too early to tell (never when ``final``: no more text will come)."""
        return self._match(self.by_first[buf[pos]], buf, pos, final)

    def match_leading(self, text: str, final: bool) -> TagPair | Literal[False] | None:
        """Like :meth:`match_open` at position 0, whatever the first character."""
        return self._match(self.by_length, text, 0, final)

    @staticmethod
    def _match(candidates: list[TagPair], buf: str, pos: int, final: bool) -> TagPair | Literal[False] | None:
        rest_len = len(buf) - pos
        for pair in candidates:  # longest first
            open_ = pair.open
            if len(open_) <= rest_len:
                if buf.startswith(open_, pos):
                    return pair  # every longer candidate was already ruled out
            elif not final and open_.startswith(buf[pos:]):
                return False  # a longer open string may still complete
        return None


_compile_tags = lru_cache(maxsize=64)(_TagTable)

_CODE_CHARS = re.compile("[`~\n]")


class _CodeTracker:
    """Whether the content text seen so far leaves us inside Markdown code.

    Fenced blocks: a line starting with at most three spaces then three or more backticks or
    tildes opens a fence; a line starting the same way with at least as many of the same character
    closes it. Inline spans: a run of N backticks opens a span that the next run of exactly N
    backticks closes; a span also ends at the end of its line, so a stray backtick cannot hide tags
    for the rest of the answer.
    """

    __slots__ = ("fence_char", "fence_len", "inline_len", "line_ok", "line_spaces", "run_char", "run_len", "run_ok")

    def __init__(self) -> None:
        self.fence_char = ""  # "" when not inside a fenced block
        self.fence_len = 0
        self.inline_len = 0  # 0 when not inside an inline code span
        self.line_ok = True  # the current line so far is at most three spaces: a fence may start here
        self.line_spaces = 0
        self.run_char = ""  # a backtick/tilde run at the end of the text seen, not yet resolved
        self.run_len = 0
        self.run_ok = False

    @property
    def quiet(self) -> bool:
        """True when text free of backticks, tildes and newlines cannot change the state."""
        return not self.line_ok and not self.run_len

    def new_line(self) -> None:
        self._resolve_run()
        self.inline_len = 0
        self.line_ok = True
        self.line_spaces = 0

    def advance(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n:
            if self.run_len:
                ch = self.run_char
                if text[i] == ch:
                    j = i + 1
                    while j < n and text[j] == ch:
                        j += 1
                    self.run_len += j - i
                    i = j
                    continue
                self._resolve_run()
            m = _CODE_CHARS.search(text, i)
            end = m.start() if m else n
            if self.line_ok and end > i:
                gap = text[i:end]
                self.line_spaces += len(gap)
                if gap.strip(" ") or self.line_spaces > 3:
                    self.line_ok = False
            if m is None:
                return
            ch = text[end]
            if ch == "\n":
                self.new_line()
                i = end + 1
            else:
                self.run_char, self.run_len, self.run_ok = ch, 1, self.line_ok
                self.line_ok = False
                i = end + 1

    def in_code(self) -> bool:
        """Whether the next character (not a backtick or tilde) is inside code."""
        self._resolve_run()
        return bool(self.fence_char) or self.inline_len > 0

    def _resolve_run(self) -> None:
        count = self.run_len
        if not count:
            return
        ch, at_line_start = self.run_char, self.run_ok
        self.run_len = 0
        if self.fence_char:
            if at_line_start and ch == self.fence_char and count >= self.fence_len:
                self.fence_char = ""
        elif at_line_start and count >= 3 and not self.inline_len:
            self.fence_char, self.fence_len = ch, count
        elif ch == "`":
            if not self.inline_len:
                self.inline_len = count
            elif self.inline_len == count:
                self.inline_len = 0


_START, _CONTENT, _REASONING = 0, 1, 2
_NOTHING: frozenset[str] = frozenset()


class Scanner:
    """Splits one channel's text into reasoning and content segments as it streams.

    ``feed(text)`` returns the segments that ``text`` completes; ``finish()`` flushes what is held.
    Adjacent segments of one kind (within a call and across calls) belong to the same block.
    """

    def __init__(self, config: ThinkExtractConfig | None = None) -> None:
        cfg = _DEFAULT_CONFIG if config is None else config
        self._tags = _compile_tags(cfg.tag_pairs)
        self._buffered = cfg.stream_mode == "buffered"
        self._separator = cfg.separator
        self._leading_only = cfg.placement == "leading"
        self._strip = cfg.strip_whitespace
        self._cap = cfg.max_buffer_bytes
        self._code = _CodeTracker() if cfg.code_aware else None
        self._content_triggers = self._tags.first_chars | (frozenset("`~\n") if cfg.code_aware else frozenset())

        self._state = _START if cfg.start_with_reasoning else _CONTENT
        self._held = ""  # suffix that could still be a tag (rule 2)
        self._tags_live = True  # False once placement="leading" has seen content
        self._pair = self._tags.default
        self._close = self._pair.close
        # A buffered reasoning block (rule 7): its open tag as written, body parts, body size.
        self._open_text = ""
        self._body: list[str] = []
        self._body_bytes = 0
        # The current block (rules 4, 5): kind, whether it emitted text, whitespace held meanwhile.
        self._kind: Kind = CONTENT
        self._started = False
        self._pending: list[str] = []
        self._pending_bytes = 0
        self._spilling = False  # a whitespace run outgrew the cap: the rest of it is not held
        self._kinds_emitted: set[str] = set()
        self._out: list[tuple[Kind, str]] = []
        self._fast: frozenset[str] | None = None  # triggers for the no-tag fast path, when it applies
        self._finished = False

        self.reasoning_blocks = 0
        """Reasoning blocks that emitted text."""
        self.reasoning_chars = 0
        """Characters emitted as reasoning."""
        self.overflows = 0
        """Buffered blocks released as content because they outgrew ``max_buffer_bytes``."""
        self.unclosed = False
        """Whether the channel ended inside a reasoning block."""

    # -- public API -----------------------------------------------------------------------------

    @property
    def steady(self) -> Kind | None:
        """The kind a text free of :attr:`triggers` takes, whole and at once, leaving this scanner
        as it was (but for its counters); ``None`` when the next text needs the full scan."""
        if self._fast is None:
            return None
        if self._state == _CONTENT:
            return CONTENT
        return REASONING if self._state == _REASONING and not self._buffered else None

    def pass_steady(self, chars: int) -> None:
        """Account for ``chars`` characters of trigger-free text that went by in the :attr:`steady`
        kind without being fed: exactly what feeding them would have done."""
        if self._state == _REASONING:
            self.reasoning_chars += chars

    @property
    def triggers(self) -> frozenset[str]:
        """The characters that end a :attr:`steady` run (meaningless while it is ``None``)."""
        return self._fast or _NOTHING

    def feed(self, text: str) -> list[Segment]:
        if not text:
            return []
        if self._finished:
            raise RuntimeError("Scanner.feed() called after finish()")
        fast = self._fast
        if fast is not None and fast.isdisjoint(text):
            # The common case: a block is under way and the text holds no character that could
            # start a tag or change the code state.
            if self._state == _CONTENT:
                return [Segment(CONTENT, text)]
            if not self._buffered:
                self.reasoning_chars += len(text)
                return [Segment(REASONING, text)]
            size = _utf8_len(text)
            if self._body_bytes + size <= self._cap:
                self._body.append(text)
                self._body_bytes += size
                return []
        held = self._held
        if held:
            self._held = ""
            text = held + text
        self._scan(text)
        self._refresh_fast()
        return self._take()

    def flush(self) -> list[Segment]:
        """Give up waiting: emit what is held back, and keep scanning what comes next.

        For when the text that follows cannot reach this scanner in order (the pipeline is about to
        send an event it could not read). A held partial open tag becomes content, a held partial
        close tag live reasoning, and a buffered block is released verbatim as content (rule 7's
        rule for a block that cannot be held). Whitespace held under rule 4 stays held: it emits
        nothing unless its block goes on.
        """
        if self._finished:
            return []
        held, self._held = self._held, ""
        if self._state == _START:
            self._open(self._tags.default, "")  # too late for an explicit open tag (rule 3)
        if held:
            if self._state == _CONTENT:
                self._content(held)
            elif self._buffered:
                self._body.append(held)
            else:
                self._block_text(held)
        if self._state == _REASONING and self._buffered:
            self._release()
        self._refresh_fast()
        return self._take()

    def finish(self) -> list[Segment]:
        if self._finished:
            return []
        self._finished = True  # from here on nothing is held back: no more text can complete a tag
        held, self._held = self._held, ""
        if held:
            self._scan(held)
        if self._state == _REASONING:  # rule 6
            self.unclosed = True
            if self._buffered:  # an unclosed buffered block never was a block
                self._release()
            # live: what was streamed stays reasoning
        self._end_block()
        self._fast = None
        return self._take()

    # -- scanning -------------------------------------------------------------------------------

    def _scan(self, buf: str) -> None:
        pos, n = 0, len(buf)
        while pos < n:
            if self._state == _CONTENT:
                pos = self._scan_content(buf, pos)
            elif self._state == _REASONING:
                pos = self._scan_reasoning(buf, pos)
            else:
                pos = self._scan_start(buf, pos)

    def _scan_start(self, buf: str, pos: int) -> int:
        """Rule 3: an explicit open tag at the very start is consumed."""
        pair = self._tags.match_leading(buf[pos:] if pos else buf, self._finished)
        if pair is False:
            self._held = buf[pos:]
            return len(buf)
        if pair is None:
            self._open(self._tags.default, "")
            return pos
        self._open(pair, pair.open)
        return pos + len(pair.open)

    def _scan_content(self, buf: str, pos: int) -> int:
        n = len(buf)
        tags = self._tags
        code = self._code
        final = self._finished
        i = pos  # buf[pos:i] is plain content the code tracker has already seen
        while self._tags_live:
            m = tags.first_re.search(buf, i)
            if m is None:
                break
            p = m.start()
            if code is not None:
                code.advance(buf[i:p])
                i = p
            if self._leading_only and p > pos:
                self._observe_leading(buf[pos:p])
                if not self._tags_live:
                    break
            in_code = code is not None and code.in_code()
            pair = None if in_code else tags.match_open(buf, p, final)
            if pair is None:  # a literal character: look further
                if code is not None:
                    code.advance(buf[p])
                i = p + 1
                continue
            if p > pos:
                self._content(buf[pos:p], track=False)
            if pair is False:  # rule 2: hold what could still be an open tag
                self._held = buf[p:]
                return n
            self._open(pair, pair.open)
            return p + len(pair.open)
        if code is not None:
            code.advance(buf[i:])
        if self._leading_only:
            self._observe_leading(buf[pos:])
        self._content(buf[pos:], track=False)
        return n

    def _scan_reasoning(self, buf: str, pos: int) -> int:
        close = self._close
        idx = buf.find(close, pos)
        if idx >= 0:
            end = idx
        else:
            end = len(buf) if self._finished else self._close_prefix_start(buf, pos)
        if end > pos:
            if self._buffered:
                fit = self._hold_body(buf, pos, end)
                if fit < end:  # rule 7: too large to hold, released as content
                    self.overflows += 1
                    self._release()
                    return fit
            else:
                self._block_text(buf[pos:end])
        if idx < 0:
            self._held = buf[end:]
            return len(buf)
        self._close_reasoning()
        return idx + len(close)

    def _close_prefix_start(self, buf: str, pos: int) -> int:
        """Start of the longest suffix of ``buf[pos:]`` that is a proper prefix of the close tag."""
        close = self._close
        n = len(buf)
        q = buf.find(close[0], max(pos, n - len(close) + 1))
        while q >= 0:
            if close.startswith(buf[q:]):
                return q
            q = buf.find(close[0], q + 1)
        return n

    def _hold_body(self, buf: str, pos: int, end: int) -> int:
        """Hold ``buf[pos:end]`` as block body; return where the cap cut it (``end`` if it fits)."""
        piece = buf[pos:end]
        size = _utf8_len(piece)
        room = self._cap - self._body_bytes
        if size <= room:
            self._body.append(piece)
            self._body_bytes += size
            return end
        fitting = piece[:room] if piece.isascii() else piece.encode()[:room].decode("utf-8", "ignore")
        self._body.append(fitting)
        return pos + len(fitting)

    # -- block transitions ----------------------------------------------------------------------

    def _open(self, pair: TagPair, open_text: str) -> None:
        self._pair, self._close = pair, pair.close
        self._state = _REASONING
        if self._buffered:
            # The content block stays open until we know whether this is a block at all.
            self._open_text = open_text
            self._body = []
            self._body_bytes = 0
        else:
            self._end_block()
            self._begin(REASONING)

    def _close_reasoning(self) -> None:
        if self._buffered:
            self._end_block()
            self._begin(REASONING)
            body, self._body = self._body, []
            self._block_text("".join(body))
        self._end_block()
        self._begin(CONTENT)
        self._state = _CONTENT
        if self._code is not None:
            self._code.new_line()

    def _release(self) -> None:
        """Emit a buffered block verbatim as content, continuing the content block (rules 6, 7)."""
        text = self._open_text + "".join(self._body)
        self._body = []
        self._state = _CONTENT
        if text:
            self._content(text)

    def _content(self, text: str, track: bool = True) -> None:
        if track:
            if self._code is not None:
                self._code.advance(text)
            if self._leading_only:
                self._observe_leading(text)
        self._block_text(text)

    def _observe_leading(self, text: str) -> None:
        if self._tags_live and text and not text.isspace():
            self._tags_live = False

    # -- blocks and whitespace (rules 4, 5) ------------------------------------------------------

    def _begin(self, kind: Kind) -> None:
        self._kind = kind
        self._started = False

    def _end_block(self) -> None:
        if self._started and self._kind == REASONING:
            self.reasoning_blocks += 1
        # Whitespace still pending is the whole of a whitespace-only block, or trimmed trailing space.
        self._pending = []
        self._pending_bytes = 0
        self._started = False
        self._spilling = False

    def _block_text(self, text: str) -> None:
        if not text:
            return
        if self._strip:
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
        self._pending_bytes += _utf8_len(space)
        if self._pending_bytes > self._cap:
            # Bound memory: this run of whitespace becomes block text, up to its end.
            pending = "".join(self._pending)
            self._pending = []
            self._pending_bytes = 0
            self._emit(pending, keep_pending=False)
            self._spilling = True

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

    def _refresh_fast(self) -> None:
        """Decide whether the next feed may take the fast path (see :meth:`feed`)."""
        self._fast = None
        if self._held:
            return
        if self._state == _REASONING:
            if self._buffered or (self._started and not self._strip):
                self._fast = frozenset(self._close[0])
        elif self._state == _CONTENT and self._started and not self._strip:
            if not self._tags_live:
                self._fast = _NOTHING
            elif not self._leading_only and (self._code is None or self._code.quiet):
                self._fast = self._content_triggers


def extract(text: str, config: ThinkExtractConfig | None = None) -> list[Segment]:
    """The non-stream form: the merged blocks of ``text`` fed in one piece, then finished."""
    scanner = Scanner(config)
    return merge_segments(scanner.feed(text) + scanner.finish())


def merge_segments(segments: list[Segment]) -> list[Segment]:
    """Join adjacent segments of one kind: one segment per block."""
    if len(segments) < 2:
        return segments
    merged = [segments[0]]
    for seg in segments[1:]:
        if seg.kind == merged[-1].kind:
            merged[-1] = Segment(seg.kind, merged[-1].text + seg.text)
        else:
            merged.append(seg)
    return merged
