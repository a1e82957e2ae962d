"""gpt-oss harmony: a channel protocol, not a tag pair.

A :class:`HarmonyScanner` is what ``Scanner(config)`` returns for ``protocol="harmony"``: the same
API and the same invariants (linear, bounded holdback, chunking-invariant, stream = non-stream),
reading ``<|start|>assistant<|channel|>NAME<|message|>…<|end|>`` messages: ``analysis`` is
reasoning, ``final`` and ``commentary`` are content without their control tokens, and a message
with a recipient (a tool call, ``to=functions.…``) is content verbatim.
"""

from __future__ import annotations

import re
from typing import Final

from .config import ThinkExtractConfig
from .scanner import PROTOCOLS, Scanner
from .scanrules import IN_CONTENT, START, prefix_start
from .segments import CONTENT, REASONING, Kind, Segment

__all__ = ["HarmonyScanner"]


_H_START, _H_CHANNEL, _H_MESSAGE, _H_CONSTRAIN = "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"
_H_TERMINATORS = ("<|end|>", "<|return|>", "<|call|>")
_H_OPENERS = (_H_START, _H_CHANNEL)
_H_BODY_STOPS = _H_OPENERS + _H_TERMINATORS  # a body ends at its terminator, or where a header begins
_H_LONGEST = max(map(len, _H_BODY_STOPS))
_H_HEADER_MAX = 1024  # characters: a longer "header" is not one, and goes out as text
_H_TRIGGERS: Final = frozenset("<")  # every harmony marker starts with "<|"
_RECIPIENT = re.compile(r"(?:^|[\s>])to=\S")
_H_TOP, _H_HEADER, _H_BODY = 0, 1, 2
_RAW: Final = "raw"  # a tool call: the whole message, markers included, is content verbatim


def _next_marker(buf: str, pos: int, markers: tuple[str, ...], final: bool) -> tuple[int, str | None]:
    """The first of ``markers`` at or after ``pos``: ``(index, marker)``; ``(index, "")`` when
    ``buf[index:]`` may still become one (not when ``final``); ``(len(buf), None)`` for none."""
    n = len(buf)
    i = buf.find("<", pos)
    while i >= 0:
        for marker in markers:
            if buf.startswith(marker, i):
                return i, marker
        if not final and n - i < _H_LONGEST:
            tail = buf[i:]
            if any(marker.startswith(tail) for marker in markers):
                return i, ""
        i = buf.find("<", i + 1)
    return n, None


def _harmony_kind(header: str) -> str:
    """What a message with this header is: a tool call (it names a recipient), reasoning (the
    ``analysis`` channel) or content (``final``, ``commentary`` preambles, anything else)."""
    head = header.split(_H_CONSTRAIN, 1)[0].replace("<|", " <|").replace("|>", "|> ")
    if _RECIPIENT.search(head):
        return _RAW
    at = header.rfind(_H_CHANNEL)
    if at >= 0:
        words = header[at + len(_H_CHANNEL) :].replace("<|", " <|").split()
        if words and words[0] == "analysis":
            return REASONING
    return CONTENT


class HarmonyScanner(Scanner):
    """The scanner for ``protocol="harmony"`` (gpt-oss): ``Scanner(config)`` returns one.

    The text is a sequence of messages, each a header (``<|start|>assistant``, ``<|channel|>`` and
    a channel name, maybe ``to=…`` and ``<|constrain|>…``) ended by ``<|message|>``, then a body
    ended by ``<|end|>``, ``<|return|>`` or ``<|call|>`` — or by the next header, when the
    terminator is missing. ``analysis`` bodies are reasoning; ``final`` and ``commentary`` bodies
    are content; headers and terminators vanish. A message that names a recipient (a tool call)
    is content verbatim, header and terminator included, for a tool parser downstream. Text
    outside any message is content. Every message is a block (rules 4 and 5 apply); buffered mode
    holds an analysis body until it ends, and releases it verbatim as content when it cannot.
    ``tag_pairs``, ``placement``, ``code_aware``, ``tool_call_markers`` and ``content_wrappers``
    do not apply.
    """

    __slots__ = ("_header", "_header_len", "_msg", "_opening", "_steady_kind", "_top_block", "_where")

    def __init__(self, config: ThinkExtractConfig | None = None) -> None:
        super().__init__(config)
        self._where = _H_TOP
        self._msg = CONTENT  # the kind of the current message body: REASONING, CONTENT or _RAW
        self._header: list[str] = []
        self._header_len = 0
        self._top_block = False  # the current block is text outside any message
        self._opening = True  # no marker seen yet: text outside messages starts at no tag
        self._steady_kind: Kind = CONTENT
        self._fresh = None  # see starting
        if self._state == START:  # the prompt ended inside an analysis body
            self._open_body(REASONING, "")
        self._state = IN_CONTENT

    @property
    def steady(self) -> Kind | None:
        return None if self._fast is None or self._ws else self._steady_kind

    @property
    def starting(self) -> Kind | None:
        return None  # a message's first text goes through the scan

    def pass_steady(self, text: str) -> None:
        if self.transcript is not None:
            self.transcript.append(text)
        if self._steady_kind == REASONING:
            self.reasoning_chars += len(text)

    def feed(self, text: str) -> list[Segment]:
        if not text:
            return []
        if self._finished:
            raise RuntimeError("Scanner.feed() called after finish()")
        if self.transcript is not None:
            self.transcript.append(text)
        if self._fast is not None and "<" not in text:
            kind = self._steady_kind
            if kind == REASONING:
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
            return [Segment(kind, text)]
        if self._ws:
            self._settle()
        held = self._held
        if held:
            self._held = ""
            text = held + text
        self._scan(text)
        self._refresh_fast()
        return self._take()

    def flush(self) -> list[Segment]:
        if self._finished:
            return []
        self._settle()
        held, self._held = self._held, ""
        if held:
            if self._where == _H_BODY:
                fit = self._body_text(held)
                if fit >= 0:  # a buffered body outgrew the cap: the rest of it goes out as it stands
                    self._block_text(held[fit:])
            else:
                self._add_header_or_top(held)
        if self._where == _H_HEADER:
            self._release_header()
        elif self._where == _H_BODY and self._msg == REASONING and self._buffered:
            self._release_body()
        self._release_tail()
        self._refresh_fast()
        return self._take()

    def finish(self) -> list[Segment]:
        if self._finished:
            return []
        self._finished = True
        self._settle()
        held, self._held = self._held, ""
        if held:
            self._scan(held)
        if self._where == _H_HEADER:  # never became a message: it was text
            self._release_header()
        elif self._where == _H_BODY and self._msg == REASONING:
            self.unclosed = True
            if self._buffered:
                self._release_body()
            self._release_tail()  # no terminator ends it: its trailing whitespace stays
        self._end_block()
        self._fast = None
        return self._take()

    # -- scanning ---------------------------------------------------------------------------------

    def _scan(self, buf: str) -> None:
        pos, n = 0, len(buf)
        while pos < n:
            if self._where == _H_BODY:
                pos = self._scan_body(buf, pos)
            elif self._where == _H_HEADER:
                pos = self._scan_header(buf, pos)
            else:
                pos = self._scan_top(buf, pos)

    def _scan_top(self, buf: str, pos: int) -> int:
        idx, marker = _next_marker(buf, pos, _H_BODY_STOPS, self._finished)
        if idx > pos:
            self._top_text(buf[pos:idx])
        if marker is None:
            return idx
        if not marker:
            self._held = buf[idx:]
            return len(buf)
        self._opening = False
        if marker in _H_OPENERS:
            self._where = _H_HEADER
            self._header = [marker]
            self._header_len = len(marker)
        # else a stray terminator: a control token, it vanishes
        return idx + len(marker)

    def _scan_header(self, buf: str, pos: int) -> int:
        n = len(buf)
        idx = buf.find(_H_MESSAGE, pos)
        end = idx if idx >= 0 else (n if self._finished else prefix_start(buf, pos, _H_MESSAGE))
        room = _H_HEADER_MAX - self._header_len
        if end - pos > room:  # no header is this long: what was taken for one is text
            self._header.append(buf[pos : pos + room])
            self.overflows += 1
            self._release_header()
            return pos + room
        self._header.append(buf[pos:end])
        self._header_len += end - pos
        if idx < 0:
            self._held = buf[end:]
            return n
        header = "".join(self._header) + _H_MESSAGE
        self._header = []
        self._open_body(_harmony_kind(header), header)
        return idx + len(_H_MESSAGE)

    def _scan_body(self, buf: str, pos: int) -> int:
        idx, marker = _next_marker(buf, pos, _H_BODY_STOPS, self._finished)
        if idx > pos:
            fit = self._body_text(buf[pos:idx])
            if fit >= 0:
                return pos + fit
        if marker is None:
            return idx
        if not marker:
            self._held = buf[idx:]
            return len(buf)
        if marker in _H_OPENERS:  # the terminator is missing: the next header ends this body
            self._close_body()
            return idx
        if self._msg == _RAW:
            self._block_text(marker)
        self._close_body()
        return idx + len(marker)

    # -- messages ---------------------------------------------------------------------------------

    def _open_body(self, kind: str, header: str) -> None:
        self._where = _H_BODY
        self._msg = kind
        self._top_block = False
        if kind == REASONING and self._buffered:
            # The block before stays open until this one is known to be a block (rule 6).
            self._open_text = header
            self._body = []
            self._body_bytes = 0
            return
        self._end_block()
        if kind == _RAW:  # verbatim: nothing trimmed
            self._begin(CONTENT)
        else:  # the body starts right after the header's <|message|>
            self._begin(REASONING if kind == REASONING else CONTENT, after_tag=True)
        if kind == _RAW:
            self._block_text(header)

    def _body_text(self, text: str) -> int:
        """Body text of the current message; the index where a buffered body outgrew the cap, else -1."""
        if self._msg == REASONING and self._buffered:
            fit = self._hold_body(text, 0, len(text))
            if fit < len(text):  # rule 7: released verbatim, the rest of the message too
                self.overflows += 1
                self._release_body()
                return fit
            return -1
        self._block_text(text)
        return -1

    def _close_body(self) -> None:
        if self._msg == REASONING and self._buffered:
            self._end_block()
            self._begin(REASONING)
            body, self._body = self._body, []
            self._block_text("".join(body))
        self._end_block()
        self._where = _H_TOP

    def _release_body(self) -> None:
        """A buffered analysis message that cannot be held goes out verbatim as content."""
        text = self._open_text + "".join(self._body)
        self._body = []
        self._msg = _RAW
        if self._kind != CONTENT:
            self._end_block()
            self._begin(CONTENT)
        self._block_text(text)

    def _release_header(self) -> None:
        text = "".join(self._header)
        self._header = []
        self._header_len = 0
        self._where = _H_TOP
        self._top_text(text)

    def _add_header_or_top(self, text: str) -> None:
        if self._where == _H_HEADER:
            self._header.append(text)
            self._header_len += len(text)
        else:
            self._top_text(text)

    def _top_text(self, text: str) -> None:
        if not self._top_block:
            self._end_block()
            self._begin(CONTENT, after_tag=not self._opening)
            self._top_block = True
        self._block_text(text)

    def _refresh_fast(self) -> None:
        self._fast = None
        if self._held or not self._started or self._strip or (self._tail_trim and (self._spilling or self._pending)):
            return
        if self._where == _H_BODY:
            if self._msg == REASONING and self._buffered:
                return
            self._steady_kind = REASONING if self._msg == REASONING else CONTENT
        elif self._where == _H_TOP and self._top_block:
            self._steady_kind = CONTENT
        else:
            return
        self._fast = _H_TRIGGERS


PROTOCOLS["harmony"] = HarmonyScanner
