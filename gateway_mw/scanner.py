"""The shared reasoning scanner: text in, reasoning/content segments out.

Pure and synchronous: no I/O, no JSON, no asyncio. One :class:`Scanner` per text channel (a chat
choice, an Anthropic content block, a Responses output item). The rules it implements are numbered
in ``docs/scanner.md``; the comments below refer to them.

Cost is linear: every feed looks at the text it receives plus the held-back suffix, which is
bounded by the longest tag (live mode) or ``max_buffer_bytes`` (a buffered block).

The model family mechanisms (``docs/models.md``) live in the scanner layer too, so every surface
gets them alike: tool-call markers that end a reasoning block and answer wrappers dropped from
content here, and, with ``protocol="harmony"``, the channel protocol of gpt-oss in ``harmony.py``
(``Scanner(config)`` returns a :class:`~.harmony.HarmonyScanner`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, Literal, NamedTuple

import msgspec

from .config import TagPair, ThinkExtractConfig

__all__ = ["CONTENT", "PROTOCOLS", "REASONING", "Kind", "Scanner", "Segment", "extract", "merge_segments"]

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
    """The strings content state looks for, grouped by their first character: the open strings of
    the tag pairs, the tool-call markers (after one, no tag counts) and the answer-wrapper strings
    that are dropped from content."""

    def __init__(
        self, pairs: tuple[TagPair, ...], wrappers: tuple[TagPair, ...] = (), markers: tuple[str, ...] = ()
    ) -> None:
        # What each string does: open a pair's block, or (None) end tag recognition if it is one of
        # ``markers``, else vanish as an answer wrapper.
        action: dict[str, TagPair | None] = {}
        for pair in pairs:
            action.setdefault(pair.open, pair)  # the first of duplicate pairs wins
        self.markers = frozenset(m for m in markers if m not in action)
        for marker in self.markers:
            action[marker] = None
        for wrapper in wrappers:
            action.setdefault(wrapper.open, None)
            action.setdefault(wrapper.close, None)
        by_first: dict[str, list[str]] = {}
        # Longest first, so that at a tie the longest string wins (rule 1).
        for string in sorted(action, key=lambda t: -len(t)):
            by_first.setdefault(string[0], []).append(string)
        self.action = action
        self.by_first = by_first
        self.first_chars = frozenset(by_first)
        self.first_re = re.compile("[" + "".join(re.escape(c) for c in sorted(by_first)) + "]")
        self.opens_by_length = sorted({p.open for p in pairs}, key=lambda t: -len(t))
        self.default = pairs[0]
        # Open tags that no longer string starts with: a text that is exactly one opens its block
        # whatever follows (Scanner.feed's whole-tag step).
        self.whole_opens = {
            string: pair
            for string, pair in action.items()
            if pair is not None and not any(o != string and o.startswith(string) for o in action)
        }

    def match_open(self, buf: str, pos: int, final: bool) -> str | Literal[False] | None:
        """The string (open tag or wrapper) that starts at ``pos``, ``None`` if none does, or
        ``False`` when ``buf`` ends too early to tell (never when ``final``: no more text will come)."""
        return self._match(self.by_first[buf[pos]], buf, pos, final)

    def match_leading(self, text: str, final: bool) -> TagPair | Literal[False] | None:
        """The pair whose open tag starts ``text``, whatever its first character."""
        found = self._match(self.opens_by_length, text, 0, final)
        if found is None or found is False:
            return found
        pair = self.action[found]
        assert pair is not None  # opens_by_length holds pair opens only
        return pair

    @staticmethod
    def _match(candidates: list[str], buf: str, pos: int, final: bool) -> str | Literal[False] | None:
        rest = buf[pos : pos + len(candidates[0])]  # as much as the longest candidate needs
        for string in candidates:  # longest first
            if rest.startswith(string):
                return string  # every longer candidate was already ruled out
            if not final and string.startswith(rest):
                return False  # a longer string may still complete (rest is all the text there is)
        return None


_compile_tags = lru_cache(maxsize=64)(_TagTable)


class _Stops:
    """The strings that end a reasoning block when tool-call markers are configured."""

    def __init__(self, close: str, markers: tuple[str, ...]) -> None:
        by_first: dict[str, list[str]] = {}
        for string in sorted({close, *markers}, key=lambda t: -len(t)):
            by_first.setdefault(string[0], []).append(string)
        self.by_first = by_first
        self.first_re = re.compile("[" + "".join(re.escape(c) for c in sorted(by_first)) + "]")


_compile_stops = lru_cache(maxsize=64)(_Stops)


def _prefix_start(buf: str, pos: int, needle: str) -> int:
    """Start of the longest suffix of ``buf[pos:]`` that is a proper prefix of ``needle``
    (``len(buf)`` if none is)."""
    n = len(buf)
    first = needle[0]
    q = buf.find(first, max(pos, n - len(needle) + 1))
    while q >= 0:
        if needle.startswith(buf[q:]):
            return q
        q = buf.find(first, q + 1)
    return n


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
# Every character str.isspace() accepts (none is above U+3000).
WHITESPACE: Final = frozenset(c for c in map(chr, range(0x3001)) if c.isspace())


@lru_cache(maxsize=64)
def _with_whitespace(triggers: frozenset[str]) -> frozenset[str]:
    return triggers | WHITESPACE


class _Settings(NamedTuple):
    """What a scanner takes from its configuration, in the order ``Scanner.__init__`` unpacks it."""

    tags: _TagTable
    markers: tuple[str, ...]  # tool-call markers: each ends a reasoning block
    marker_firsts: frozenset[str]
    buffered: bool
    separator: str
    leading_only: bool
    strip: bool
    trim: bool
    # The reasoning's own trailing whitespace waits for a close tag only when asked: holding it makes
    # whitespace a trigger in reasoning, and a surface's raw fast path then reads every event.
    trim_tail: bool
    cap: int
    code_aware: bool
    content_triggers: frozenset[str]
    start_with_reasoning: bool


def _settings(cfg: ThinkExtractConfig) -> _Settings:
    """What a scanner takes from its configuration, worked out once per configuration and kept with
    it (a scanner is made per channel: per stream, often per event on the messages surface)."""
    settings: _Settings | None = cfg.derived.get("scanner")
    if settings is not None:
        return settings
    tags = _compile_tags(cfg.tag_pairs, cfg.content_wrappers, cfg.tool_call_markers)
    trim = cfg.trim_tag_edges and not cfg.strip_whitespace  # strip_whitespace trims every edge already
    settings = cfg.derived["scanner"] = _Settings(
        tags=tags,
        markers=cfg.tool_call_markers,
        marker_firsts=frozenset(m[0] for m in cfg.tool_call_markers),
        buffered=cfg.stream_mode == "buffered",
        separator=cfg.separator,
        leading_only=cfg.placement == "leading",
        strip=cfg.strip_whitespace,
        trim=trim,
        trim_tail=trim and cfg.trim_reasoning_tail,
        cap=cfg.max_buffer_bytes,
        code_aware=cfg.code_aware,
        content_triggers=tags.first_chars | (frozenset("`~\n") if cfg.code_aware else frozenset()),
        start_with_reasoning=cfg.start_with_reasoning,
    )
    return settings


PROTOCOLS: dict[str, type[Scanner]] = {}
"""The scanner of each ``protocol`` other than ``tags``, chosen by ``Scanner(config)``; the module
that defines one registers it (``harmony.py``: gpt-oss), and the package imports them all."""


class Scanner:
    """Splits one channel's text into reasoning and content segments as it streams.

    ``feed(text)`` returns the segments that ``text`` completes; ``finish()`` flushes what is held.
    Adjacent segments of one kind (within a call and across calls) belong to the same block.
    """

    # Slots: a scanner is touched once per chunk, and slot access stays fast however many fields it has.
    __slots__ = (
        "_body",
        "_body_bytes",
        "_buffered",
        "_cap",
        "_close",
        "_code",
        "_content_triggers",
        "_fast",
        "_fast_char",
        "_finished",
        "_fresh",
        "_held",
        "_kind",
        "_kinds_emitted",
        "_lead",
        "_lead_trim",
        "_leading_only",
        "_marker_firsts",
        "_markers",
        "_open_text",
        "_out",
        "_pair",
        "_pending",
        "_pending_bytes",
        "_separator",
        "_spilling",
        "_started",
        "_state",
        "_strip",
        "_tags",
        "_tags_live",
        "_tail_chars",
        "_tail_trim",
        "_trim",
        "_trim_tail",
        "_ws",
        "_ws_cap",
        "overflows",
        "reasoning_blocks",
        "reasoning_chars",
        "transcript",
        "unclosed",
    )

    def __new__(cls, config: ThinkExtractConfig | None = None) -> Scanner:
        if cls is Scanner and config is not None and config.protocol != "tags":
            return super().__new__(PROTOCOLS[config.protocol])
        return super().__new__(cls)

    def __init__(self, config: ThinkExtractConfig | None = None) -> None:
        (
            self._tags,
            self._markers,
            self._marker_firsts,
            self._buffered,
            self._separator,
            self._leading_only,
            self._strip,
            self._trim,
            self._trim_tail,
            self._cap,
            code_aware,
            self._content_triggers,
            start_with_reasoning,
        ) = _settings(_DEFAULT_CONFIG if config is None else config)
        self._code = _CodeTracker() if code_aware else None
        self._state = _START if start_with_reasoning else _CONTENT
        self._held = ""  # suffix that could still be a tag (rule 2)
        self._lead = ""  # start_with_reasoning: whitespace before a possible open tag (rule 3)
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
        self._lead_trim = False  # the block drops its leading whitespace (it starts at a tag)
        self._tail_trim = False  # the block holds its trailing whitespace, to drop it at a tag
        self._tail_chars = _NOTHING  # the characters it holds at its end: WHITESPACE, if it does
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
        self._fast: frozenset[str] | None = None  # triggers for the no-tag fast path, when it applies
        self._fast_char = ""  # live reasoning: the one character in _fast, if it holds only one
        # Triggers of a block yet to emit (see starting): the first content block is one.
        self._fresh = None if self._strip or start_with_reasoning else self._content_triggers
        self._finished = False

        self.reasoning_blocks = 0
        """Reasoning blocks that emitted text."""
        self.reasoning_chars = 0
        """Characters emitted as reasoning."""
        self.overflows = 0
        """Buffered blocks released as content because they outgrew ``max_buffer_bytes`` (and, with
        ``protocol="harmony"``, headers too long to be one, sent on as text)."""
        self.unclosed = False
        """Whether the channel ended inside a reasoning block."""
        self.transcript: list[str] | None = None
        """Set to a list to keep every text the channel was given, in order (:meth:`feed`,
        :meth:`pass_steady`, :meth:`take_steady`): what the model wrote, for the reasoning record."""

    # -- public API -----------------------------------------------------------------------------

    @property
    def steady(self) -> Kind | None:
        """The kind a text free of :attr:`triggers` takes, whole and at once, leaving this scanner
        as it was (but for its counters); ``None`` when the next text needs the full scan."""
        if self._fast is None:
            return None
        if self._state == _CONTENT:
            return CONTENT
        if self._state != _REASONING or self._buffered or self._ws:
            return None  # held trailing whitespace (trim_tag_edges) must go out before more text
        return REASONING

    def pass_steady(self, text: str) -> None:
        """Account for ``text``, trigger-free, that went by in the :attr:`steady` kind without being
        fed: exactly what feeding it would have done."""
        if self.transcript is not None:
            self.transcript.append(text)
        if self._state == _REASONING:
            self.reasoning_chars += len(text)

    @property
    def starting(self) -> Kind | None:
        """The kind of a block that has not emitted yet (right after a tag, say) and whose next
        text, when free of :attr:`triggers`, goes wholly to it; :meth:`take_steady` says what
        comes out (the block's edges trimmed, the separator). ``None`` otherwise."""
        if self._fresh is None:
            return None
        return CONTENT if self._state == _CONTENT else REASONING

    def take_steady(self, text: str) -> str:
        """Feed ``text``, free of :attr:`triggers`, while :attr:`steady` or :attr:`starting`: the
        one segment's text it makes ("" when the block's edge swallowed it all), without the scan."""
        if self._fast is not None:
            self.pass_steady(text)
            return text
        if self.transcript is not None:
            self.transcript.append(text)
        # A block's first text: no tag can start in it, so the scan would hand it to the block whole.
        if self._state == _CONTENT:
            self._content(text)
        else:
            self._block_text(text)
        self._refresh_fast()
        out = self._out
        if not out:
            return ""
        self._out = []
        return out[0][1]

    @property
    def triggers(self) -> frozenset[str]:
        """The characters that end a :attr:`steady` run or a :attr:`starting` block's first text
        (meaningless while both are ``None``): those that may start a tag or change the code state,
        and in a reasoning block whose trailing whitespace is held (``trim_tag_edges``) every
        whitespace character."""
        fast = self._fast
        if fast is None:
            fast = self._fresh
            if fast is None:
                return _NOTHING
        return _with_whitespace(fast) if self._tail_trim else fast

    def feed(self, text: str) -> list[Segment]:
        if not text:
            return []
        if self._finished:
            raise RuntimeError("Scanner.feed() called after finish()")
        if self.transcript is not None:
            self.transcript.append(text)
        fast = self._fast
        # The common case: a block is under way and the text holds no character that could
        # start a tag or change the code state.
        if fast is not None:
            if self._state == _CONTENT:
                if fast.isdisjoint(text):
                    return [Segment(CONTENT, text)]
            # Live reasoning. char: the one character every stop starts with, if there is one
            # (tested faster than a set); always "" in buffered mode.
            elif (char not in text) if (char := self._fast_char) else (not self._buffered and fast.isdisjoint(text)):
                if text[-1] in self._tail_chars:  # trim_tag_edges: hold the trailing whitespace
                    body = text.rstrip()
                    end = len(body)
                    if not end or len(text) - end > self._ws_cap:
                        return self._hold_space_run(text)
                    held_ws, self._ws = self._ws, text[end:]
                    text = held_ws + body if held_ws else body
                elif self._ws:  # whitespace held at the end of the last text: inside after all
                    text = self._ws + text
                    self._ws = ""
                self.reasoning_chars += len(text)
                return [Segment(REASONING, text)]
            elif self._buffered and fast.isdisjoint(text):
                size = _utf8_len(text)
                if self._body_bytes + size <= self._cap:
                    self._body.append(text)
                    self._body_bytes += size
                    return []
        if self._ws:
            self._settle()
        held = self._held
        if held:
            self._held = ""
            text = held + text
        if not ((text == self._close or text in self._tags.whole_opens) and self._whole_tag(text)):
            self._scan(text)
        self._refresh_fast()
        return self._take()

    def _whole_tag(self, text: str) -> bool:
        """Take ``text`` if it is exactly a tag the scan would act on (a model's tag is often a
        token of its own): the block it opens or closes, without the scan."""
        state = self._state
        if state == _CONTENT:
            pair = self._tags.whole_opens.get(text)
            if pair is None or not self._tags_live or (self._code is not None and self._code.in_code()):
                return False
            self._open(pair, text)
            return True
        if state != _REASONING or text != self._close:
            return False
        if self._markers and any(m != text and m.startswith(text) for m in self._markers):
            return False  # a longer tool-call marker may still follow (rule 1)
        self._close_reasoning()
        return True

    def flush(self) -> list[Segment]:
        """Give up waiting: emit what is held back, and keep scanning what comes next.

        For when the text that follows cannot reach this scanner in order (the pipeline is about to
        send an event it could not read). A held partial open tag becomes content, a held partial
        close tag live reasoning, and a buffered block is released verbatim as content (rule 7's
        rule for a block that cannot be held). Trailing whitespace of a reasoning block, held by
        ``trim_tag_edges`` in case a close tag follows, goes out as reasoning. Leading whitespace
        held under rule 4 stays held: it emits nothing unless its block goes on.
        """
        if self._finished:
            return []
        self._settle()
        held, self._held = self._held, ""
        if self._state == _START:
            self._open(self._tags.default, "")  # too late for an explicit open tag (rule 3)
            held, self._lead = self._lead + held, ""
        if held:
            if self._state == _CONTENT:
                self._content(held)
            elif self._buffered:
                self._body.append(held)
            else:
                self._block_text(held)
        if self._state == _REASONING and self._buffered:
            self._release()
        self._release_tail()
        self._refresh_fast()
        return self._take()

    def finish(self) -> list[Segment]:
        if self._finished:
            return []
        self._finished = True  # from here on nothing is held back: no more text can complete a tag
        self._settle()
        held, self._held = self._held, ""
        if held or self._state == _START:
            self._scan(held)
        if self._state == _REASONING:  # rule 6
            self.unclosed = True
            if self._buffered:  # an unclosed buffered block never was a block
                self._release()
            # live: what was streamed stays reasoning, its trailing whitespace too (no tag ends it)
            self._release_tail()
        self._end_block()
        self._fast = None
        return self._take()

    # -- scanning -------------------------------------------------------------------------------

    def _scan(self, buf: str) -> None:
        if self._state == _START:
            buf = self._scan_start(buf)
        pos, n = 0, len(buf)
        while pos < n:
            if self._state == _CONTENT:
                pos = self._scan_content(buf, pos)
            else:
                pos = self._scan_reasoning(buf, pos)

    def _scan_start(self, buf: str) -> str:
        """Rule 3: an explicit open tag at the start, or after whitespace only, is consumed with
        that whitespace. Returns the text left to scan in the state this sets ("" while undecided).

        The whitespace seen so far waits in ``_lead`` (bounded by ``max_buffer_bytes``: past that
        the block opens with the first pair, the whitespace its text), so no feed rescans it.
        """
        text = buf.lstrip()
        if len(text) < len(buf):
            self._lead += buf[: len(buf) - len(text)]
        lead = self._lead
        if not lead or _utf8_len(lead) <= self._cap:  # else too much whitespace to wait on
            if not text:
                if not self._finished:
                    return ""
            else:
                pair = self._tags.match_leading(text, self._finished)
                if pair is False:
                    self._held = text
                    return ""
                if pair is not None:
                    self._lead = ""
                    self._open(pair, lead + pair.open)
                    return text[len(pair.open) :]
        self._lead = ""
        self._open(self._tags.default, "")
        return lead + text

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
            if code is not None and p > i:
                code.advance(buf[i:p])
                i = p
            if self._leading_only and p > pos:
                self._observe_leading(buf[pos:p])
                if not self._tags_live:
                    break
            in_code = code is not None and code.in_code()
            found = None if in_code else tags.match_open(buf, p, final)
            if found is None:  # a literal character: look further
                if code is not None:
                    code.advance(buf[p])
                i = p + 1
                continue
            if p > pos:
                self._content(buf[pos:p], track=False)
            if found is False:  # rule 2: hold what could still be an open tag
                self._held = buf[p:]
                return n
            pair = tags.action[found]
            if pair is not None:
                self._open(pair, found)
            elif found in tags.markers:  # a tool call: it and everything after it are content
                self._tags_live = False
                return p
            # else an answer wrapper of this family: it vanishes from the content
            return p + len(found)
        if code is not None:
            code.advance(buf[i:])
        if self._leading_only:
            self._observe_leading(buf[pos:])
        self._content(buf[pos:], track=False)
        return n

    def _scan_reasoning(self, buf: str, pos: int) -> int:
        close = self._close
        if self._markers:
            return self._scan_reasoning_marked(buf, pos)
        idx = buf.find(close, pos)
        if idx >= 0:
            end = idx
        else:
            end = len(buf) if self._finished else _prefix_start(buf, pos, close)
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

    def _scan_reasoning_marked(self, buf: str, pos: int) -> int:
        """:meth:`_scan_reasoning` for a family whose tool-call markers also end a block. The close
        tag and the markers are matched as rule 1 matches open tags: the leftmost wins, the longest
        at a tie, and text that may still become one of them is held. A marker and everything
        after it are content."""
        n = len(buf)
        stops = _compile_stops(self._close, self._markers)
        final = self._finished
        stop, found = n, None
        m = stops.first_re.search(buf, pos)
        while m is not None:
            p = m.start()
            found = _TagTable._match(stops.by_first[buf[p]], buf, p, final)
            if found is not None:
                stop = p
                break
            m = stops.first_re.search(buf, p + 1)
        if stop > pos:
            if self._buffered:
                fit = self._hold_body(buf, pos, stop)
                if fit < stop:  # rule 7
                    self.overflows += 1
                    self._release()
                    return fit
            else:
                self._block_text(buf[pos:stop])
        if found is None:
            return n
        if found is False:  # rule 2
            self._held = buf[stop:]
            return n
        self._close_reasoning()
        if found == self._close:
            return stop + len(found)
        self._tags_live = False  # the tool call and everything after it are content
        return stop

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
        self._begin(CONTENT, after_tag=True)
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

    def _begin(self, kind: Kind, after_tag: bool = False) -> None:
        """Start a block. With ``trim_tag_edges``, a reasoning block (it always starts at a tag,
        explicit or implied) drops its leading whitespace (and, with ``trim_reasoning_tail``, holds
        its trailing whitespace), and a content block that starts ``after_tag`` drops its leading
        whitespace."""
        self._kind = kind
        self._started = False
        trim = self._trim
        self._tail_trim = self._trim_tail and kind == REASONING
        self._tail_chars = WHITESPACE if self._tail_trim else _NOTHING
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
        self._pending_bytes += _utf8_len(space)
        if self._pending_bytes > self._cap:
            # Bound memory: this run of whitespace becomes block text, up to its end.
            pending = "".join(self._pending)
            self._pending = []
            self._pending_bytes = 0
            self._emit(pending, keep_pending=False)
            self._spilling = True

    def _hold_space_run(self, text: str) -> list[Segment]:
        """:meth:`feed`'s fast path, in a live reasoning block that holds its trailing whitespace
        (``trim_tag_edges``), for stop-free text that is whitespace only or ends in a long run."""
        self._settle()
        self._block_text(text)
        if self._spilling or self._pending:
            self._fast = None  # the next text must see where that run ends
            self._fast_char = ""
        return self._take()

    def _settle(self) -> None:
        """Move the whitespace the fast path holds into ``_pending``."""
        ws = self._ws
        if ws:
            self._ws = ""
            self._pending.append(ws)  # _pending is empty while the fast path runs
            self._pending_bytes += _utf8_len(ws)

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

    def _refresh_fast(self) -> None:
        """Decide whether the next feed may take the fast path (see :meth:`feed`)."""
        self._fast = None
        self._fast_char = ""
        self._fresh = None
        if self._held:
            return
        if self._state == _REASONING:
            if self._buffered or (
                self._started and not self._strip and not (self._tail_trim and (self._spilling or self._pending))
            ):
                self._fast = fast = self._marker_firsts | frozenset(self._close[0])
                self._fast_char = self._close[0] if len(fast) == 1 and not self._buffered else ""
            elif not self._started and not self._strip and not self._pending and not self._ws:
                self._fresh = self._marker_firsts | frozenset(self._close[0])
        elif self._state == _CONTENT and not self._strip:
            triggers = self._content_triggers if self._tags_live else _NOTHING
            if not self._started:
                # take_steady tracks the code state and the leading placement as the scan does.
                if not self._pending and not self._ws:
                    self._fresh = triggers
            elif not self._tags_live or (not self._leading_only and (self._code is None or self._code.quiet)):
                self._fast = triggers


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
