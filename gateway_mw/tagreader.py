"""The scanner's reading side: the tags, tool-call markers and answer wrappers found in the text,
the Markdown code they may hide in, a reasoning block held whole (rules 1–3, 6 and 7 of
``docs/scanner.md``); the blocks they open and close are written by :class:`~.blocks.BlockWriter`."""

from __future__ import annotations

from .blocks import BlockWriter
from .config import TagPair
from .scanrules import (
    IN_CONTENT,
    IN_REASONING,
    START,
    CodeTracker,
    ScanSettings,
    TagTable,
    compile_stops,
    prefix_start,
)
from .segments import CONTENT, REASONING, utf8_len

__all__ = ["TagReader"]


class TagReader(BlockWriter):
    """Where the text is (before it, in content, in reasoning) and what it holds back."""

    __slots__ = (
        "_body",
        "_body_bytes",
        "_buffered",
        "_close",
        "_code",
        "_content_triggers",
        "_finished",
        "_held",
        "_lead",
        "_leading_only",
        "_marker_firsts",
        "_markers",
        "_open_text",
        "_pair",
        "_state",
        "_tags",
        "_tags_live",
        "overflows",
    )

    def __init__(self, settings: ScanSettings) -> None:
        super().__init__(settings)
        self._tags = settings.tags
        self._markers = settings.markers
        self._marker_firsts = settings.marker_firsts
        self._buffered = settings.buffered
        self._leading_only = settings.leading_only
        self._content_triggers = settings.content_triggers
        self._code = CodeTracker() if settings.code_aware else None
        self._state = START if settings.start_with_reasoning else IN_CONTENT
        self._held = ""  # suffix that could still be a tag (rule 2)
        self._lead = ""  # start_with_reasoning: whitespace before a possible open tag (rule 3)
        self._tags_live = True  # False once placement="leading" has seen content
        self._pair = self._tags.default
        self._close = self._pair.close
        # A buffered reasoning block (rule 7): its open tag as written, body parts, body size.
        self._open_text = ""
        self._body: list[str] = []
        self._body_bytes = 0
        self._finished = False
        self.overflows = 0
        """Buffered blocks released as content because they outgrew ``max_buffer_bytes`` (and, with
        ``protocol="harmony"``, headers too long to be one, sent on as text)."""

    def _scan(self, buf: str) -> None:
        if self._state == START:
            buf = self._scan_start(buf)
        pos, n = 0, len(buf)
        while pos < n:
            if self._state == IN_CONTENT:
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
        if not lead or utf8_len(lead) <= self._cap:  # else too much whitespace to wait on
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
            end = len(buf) if self._finished else prefix_start(buf, pos, close)
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
        stops = compile_stops(self._close, self._markers)
        final = self._finished
        stop, found = n, None
        m = stops.first_re.search(buf, pos)
        while m is not None:
            p = m.start()
            found = TagTable._match(stops.by_first[buf[p]], buf, p, final)
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
        size = utf8_len(piece)
        room = self._cap - self._body_bytes
        if size <= room:
            self._body.append(piece)
            self._body_bytes += size
            return end
        fitting = piece[:room] if piece.isascii() else piece[: _fitting(piece, room)]
        self._body.append(fitting)
        return pos + len(fitting)

    def _open(self, pair: TagPair, open_text: str) -> None:
        self._pair, self._close = pair, pair.close
        self._state = IN_REASONING
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
        self._state = IN_CONTENT
        if self._code is not None:
            self._code.new_line()

    def _release(self) -> None:
        """Emit a buffered block verbatim as content, continuing the content block (rules 6, 7)."""
        text = self._open_text + "".join(self._body)
        self._body = []
        self._state = IN_CONTENT
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


def _fitting(text: str, room: int) -> int:
    """How many first characters of ``text`` take at most ``room`` UTF-8 bytes (:func:`utf8_len`:
    half a character counted too), found by halving: a block cut at the cap, once."""
    low, high = 0, min(len(text), room)
    while low < high:
        mid = (low + high + 1) // 2
        if utf8_len(text[:mid]) <= room:
            low = mid
        else:
            high = mid - 1
    return low
