"""What a configuration compiles to for the scanner (the strings it looks for, the Markdown code
state, the settings it unpacks), worked out once per configuration; and the scanner's states."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, Literal, NamedTuple

from .config import TagPair, ThinkExtractConfig

__all__ = [
    "IN_CONTENT",
    "IN_REASONING",
    "NO_CHARS",
    "START",
    "WHITESPACE",
    "CodeTracker",
    "ScanSettings",
    "Stops",
    "TagTable",
    "compile_stops",
    "prefix_start",
    "scan_settings",
    "with_whitespace",
]

START, IN_CONTENT, IN_REASONING = 0, 1, 2
"""The scanner's states: before the text shows whether it opens inside reasoning (rule 3), in
content, in a reasoning block."""
NO_CHARS: frozenset[str] = frozenset()
# Every character str.isspace() accepts (none is above U+3000).
WHITESPACE: Final = frozenset(c for c in map(chr, range(0x3001)) if c.isspace())


class TagTable:
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
        # Every string, longest first: a match at a position is the one rule 1 picks there.
        self.strings_re = re.compile("|".join(re.escape(t) for t in sorted(action, key=lambda t: -len(t))))
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


compile_tags = lru_cache(maxsize=64)(TagTable)


class Stops:
    """The strings that end a reasoning block when tool-call markers are configured."""

    def __init__(self, close: str, markers: tuple[str, ...]) -> None:
        by_first: dict[str, list[str]] = {}
        for string in sorted({close, *markers}, key=lambda t: -len(t)):
            by_first.setdefault(string[0], []).append(string)
        self.by_first = by_first
        self.first_re = re.compile("[" + "".join(re.escape(c) for c in sorted(by_first)) + "]")


compile_stops = lru_cache(maxsize=64)(Stops)


def prefix_start(buf: str, pos: int, needle: str) -> int:
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


class CodeTracker:
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


@lru_cache(maxsize=64)
def with_whitespace(triggers: frozenset[str]) -> frozenset[str]:
    return triggers | WHITESPACE


class ScanSettings(NamedTuple):
    """What a scanner takes from its configuration, in the order ``Scanner.__init__`` unpacks it."""

    tags: TagTable
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


def scan_settings(cfg: ThinkExtractConfig) -> ScanSettings:
    """What a scanner takes from its configuration, worked out once per configuration and kept with
    it (a scanner is made per channel: per stream, often per event on the messages surface)."""
    settings: ScanSettings | None = cfg.derived.get("scanner")
    if settings is not None:
        return settings
    tags = compile_tags(cfg.tag_pairs, cfg.content_wrappers, cfg.tool_call_markers)
    trim = cfg.trim_tag_edges and not cfg.strip_whitespace  # strip_whitespace trims every edge already
    settings = cfg.derived["scanner"] = ScanSettings(
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
