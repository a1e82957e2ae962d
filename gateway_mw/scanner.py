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

from .config import ThinkExtractConfig
from .scanrules import IN_CONTENT, IN_REASONING, NO_CHARS, START, scan_settings, with_whitespace
from .segments import CONTENT, REASONING, Kind, Segment, merge_segments, utf8_len
from .tagreader import TagReader
from .transcript import Transcript

__all__ = ["CONTENT", "PROTOCOLS", "REASONING", "Kind", "Scanner", "Segment", "at_once", "extract", "merge_segments"]

_DEFAULT_CONFIG = ThinkExtractConfig()

PROTOCOLS: dict[str, type[Scanner]] = {}
"""The scanner of each ``protocol`` other than ``tags``, chosen by ``Scanner(config)``; the module
that defines one registers it (``harmony.py``: gpt-oss), and the package imports them all."""


class Scanner(TagReader):
    """Splits one channel's text into reasoning and content segments as it streams.

    ``feed(text)`` returns the segments that ``text`` completes; ``finish()`` flushes what is held.
    Adjacent segments of one kind (within a call and across calls) belong to the same block.

    The scan is in :class:`~.tagreader.TagReader` (the tags and what they open and close) and
    :class:`~.blocks.BlockWriter` (the blocks' edges and what goes out); this class is the public
    contract and the steady path that skips the scan for text that cannot change anything.
    """

    __slots__ = ("_fast", "_fast_char", "_fresh", "transcript", "unclosed")

    def __new__(cls, config: ThinkExtractConfig | None = None) -> Scanner:
        if cls is Scanner and config is not None and config.protocol != "tags":
            return super().__new__(PROTOCOLS[config.protocol])
        return super().__new__(cls)

    def __init__(self, config: ThinkExtractConfig | None = None) -> None:
        settings = scan_settings(_DEFAULT_CONFIG if config is None else config)
        super().__init__(settings)
        self._fast: frozenset[str] | None = None  # triggers for the no-tag fast path, when it applies
        self._fast_char = ""  # live reasoning: the one character in _fast, if it holds only one
        # Triggers of a block yet to emit (see starting): the first content block is one.
        self._fresh = None if self._strip or settings.start_with_reasoning else self._content_triggers
        self.unclosed = False
        """Whether the channel ended inside a reasoning block."""
        self.transcript: Transcript | None = None
        """Set to keep every text the channel was given, in order (:meth:`feed`,
        :meth:`pass_steady`, :meth:`take_steady`): what the model wrote, for the reasoning record."""

    @property
    def steady(self) -> Kind | None:
        """The kind a text free of :attr:`triggers` takes, whole and at once, leaving this scanner
        as it was (but for its counters); ``None`` when the next text needs the full scan."""
        if self._fast is None:
            return None
        if self._state == IN_CONTENT:
            return CONTENT
        if self._state != IN_REASONING or self._buffered or self._ws:
            return None  # held trailing whitespace (trim_tag_edges) must go out before more text
        return REASONING

    def pass_steady(self, text: str) -> None:
        """Account for ``text``, trigger-free, that went by in the :attr:`steady` kind without being
        fed: exactly what feeding it would have done."""
        if self.transcript is not None:
            self.transcript.append(text)
        if self._state == IN_REASONING:
            self.reasoning_chars += len(text)

    @property
    def starting(self) -> Kind | None:
        """The kind of a block that has not emitted yet (right after a tag, say) and whose next
        text, when free of :attr:`triggers`, goes wholly to it; :meth:`take_steady` says what
        comes out (the block's edges trimmed, the separator). ``None`` otherwise."""
        if self._fresh is None:
            return None
        return CONTENT if self._state == IN_CONTENT else REASONING

    def take_steady(self, text: str) -> str:
        """Feed ``text``, free of :attr:`triggers`, while :attr:`steady` or :attr:`starting`: the
        one segment's text it makes ("" when the block's edge swallowed it all), without the scan."""
        if self._fast is not None:
            self.pass_steady(text)
            return text
        if self.transcript is not None:
            self.transcript.append(text)
        # A block's first text: no tag can start in it, so the scan would hand it to the block whole.
        if self._state == IN_CONTENT:
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
                return NO_CHARS
        return with_whitespace(fast) if self._tail_trim else fast

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
            if self._state == IN_CONTENT:
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
                size = utf8_len(text)
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
        if state == IN_CONTENT:
            pair = self._tags.whole_opens.get(text)
            if pair is None or not self._tags_live or (self._code is not None and self._code.in_code()):
                return False
            self._open(pair, text)
            return True
        if state != IN_REASONING or text != self._close:
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
        if self._state == START:
            self._open(self._tags.default, "")  # too late for an explicit open tag (rule 3)
            held, self._lead = self._lead + held, ""
        if held:
            if self._state == IN_CONTENT:
                self._content(held)
            elif self._buffered:
                self._body.append(held)
            else:
                self._block_text(held)
        if self._state == IN_REASONING and self._buffered:
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
        if held or self._state == START:
            self._scan(held)
        if self._state == IN_REASONING:  # rule 6
            self.unclosed = True
            if self._buffered:  # an unclosed buffered block never was a block
                self._release()
            # live: what was streamed stays reasoning, its trailing whitespace too (no tag ends it)
            self._release_tail()
        self._end_block()
        self._fast = None
        return self._take()

    def _hold_space_run(self, text: str) -> list[Segment]:
        """:meth:`feed`'s fast path, in a live reasoning block that holds its trailing whitespace
        (``trim_tag_edges``), for stop-free text that is whitespace only or ends in a long run."""
        self._settle()
        self._block_text(text)
        if self._spilling or self._pending:
            self._fast = None  # the next text must see where that run ends
            self._fast_char = ""
        return self._take()

    def _refresh_fast(self) -> None:
        """Decide whether the next feed may take the fast path (see :meth:`feed`)."""
        self._fast = None
        self._fast_char = ""
        self._fresh = None
        if self._held:
            return
        if self._state == IN_REASONING:
            if self._buffered or (
                self._started and not self._strip and not (self._tail_trim and (self._spilling or self._pending))
            ):
                self._fast = fast = self._marker_firsts | frozenset(self._close[0])
                self._fast_char = self._close[0] if len(fast) == 1 and not self._buffered else ""
            elif not self._started and not self._strip and not self._pending and not self._ws:
                self._fresh = self._marker_firsts | frozenset(self._close[0])
        elif self._state == IN_CONTENT and not self._strip:
            triggers = self._content_triggers if self._tags_live else NO_CHARS
            if not self._started:
                # take_steady tracks the code state and the leading placement as the scan does.
                if not self._pending and not self._ws:
                    self._fresh = triggers
            elif not self._tags_live or (not self._leading_only and (self._code is None or self._code.quiet)):
                self._fast = triggers


def extract(text: str, config: ThinkExtractConfig | None = None) -> list[Segment]:
    """The non-stream form: the merged blocks of ``text`` fed in one piece, then finished."""
    known = at_once(text, _DEFAULT_CONFIG if config is None else config)
    if known is not None:
        return known
    scanner = Scanner(config)
    return merge_segments(scanner.feed(text) + scanner.finish())


def at_once(text: str, config: ThinkExtractConfig) -> list[Segment] | None:
    """What :func:`extract` gives for ``text``, when its shape shows it without the scan; ``None``
    when the scan must read it.

    The shapes of nearly every whole answer: text in which no tag string can start (content), and a
    reasoning block that opens at the first character (or, with ``start_with_reasoning``, is open
    from it), closes before any other tag character, and is followed by such text. The edges are
    trimmed as the scan trims them; anything that would make the scan hold, cap, mark or separate
    text (buffered mode, ``strip_whitespace``, a whitespace-only part, a tool-call marker at the
    close) is left to it. The scan is the oracle (``tests/core/test_scanner_at_once.py``): a whole
    answer then costs a few searches instead of a scanner's objects, once in the translation and
    again in the reasoning record.
    """
    if config.protocol != "tags":
        return None
    settings = scan_settings(config)
    if settings.buffered or settings.strip:
        return None
    tags = settings.tags
    first = tags.first_re.search(text)
    if settings.start_with_reasoning:  # open from the first character, unless a tag may start it (rule 3)
        if (first is not None and first.start() == 0) or text[:1].isspace():
            return None
        pair, start = tags.default, 0
    elif first is None:  # no tag string starts anywhere: content, byte for byte
        if text.isspace():
            return None  # held whitespace emits nothing (rule 4)
        return [Segment(CONTENT, text)] if text else []
    else:
        if first.start() != 0:
            return None
        string = tags.strings_re.match(text)  # the longest that starts it (rule 1)
        found = tags.action.get(string.group()) if string is not None else None
        if found is None:  # a wrapper or a marker, not an open tag
            return None
        pair, start = found, len(found.open)
    close = pair.close
    end = text.find(close, start)
    if end < 0:
        return None
    reasoning = text[start:end]
    if close[0] in reasoning:
        return None  # something in it may end the block before that close
    for stop in settings.marker_firsts:
        if stop in reasoning:
            return None
    for marker in settings.markers:
        if marker.startswith(text[end : end + len(marker)]):
            return None  # a tool-call marker at the close (or that may still be one) ends it instead
    answer = text[end + len(close) :]
    if tags.first_re.search(answer) is not None:
        return None
    if settings.trim:  # the whitespace touching the tags (but the reasoning's own tail, by default)
        reasoning = reasoning.lstrip()
        answer = answer.lstrip()
        if settings.trim_tail and reasoning[-1:].isspace():
            return None  # held until the close: the scan knows how much it holds
    elif reasoning.isspace() or answer.isspace():
        return None
    segments = [Segment(REASONING, reasoning)] if reasoning else []
    return [*segments, Segment(CONTENT, answer)] if answer else segments
