"""Token usage as the upstream reports it, read from the response the gateway relays.

The upstream's ``usage`` objects carry the counts: a chat completion's body or the last chunk of its
stream (``stream_options.include_usage``), ``response.completed`` of a Responses stream, a messages
body or its stream's ``message_start`` (input) and ``message_delta`` (output), and for Ollama's native
routes the last line's ``prompt_eval_count`` and ``eval_count``. All of these sit at the start or the
end of a body, so :class:`UsageTap` keeps only the first and the last bytes it relays (by reference,
a constant cost per piece: nothing is parsed while the body streams) and reads them once at its end.
"""

from __future__ import annotations

import json
import re
from collections import deque

__all__ = ["TAP_BYTES", "Usage", "UsageTap", "read_usage"]

TAP_BYTES = 64 * 1024
"""How much of the start and of the end of a body the tap keeps."""

_USAGE = re.compile(r'"usage"\s*:\s*')
_MODEL = re.compile(r'"model"\s*:\s*("(?:[^"\\]|\\.){1,256}")')
_OLLAMA = {
    "prompt": re.compile(r'"prompt_eval_count"\s*:\s*(\d{1,12})\b'),
    "completion": re.compile(r'"eval_count"\s*:\s*(\d{1,12})\b'),
}
_DECODER = json.JSONDecoder()


Usage = dict[str, int]
"""Token counts by kind: ``prompt``, ``completion``, ``reasoning`` (each only where reported)."""


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _kinds(usage: dict[str, object]) -> Usage:
    """The counts of one ``usage`` object, in whichever API's shape it is."""
    out: Usage = {}
    if (prompt := _count(usage.get("prompt_tokens"))) is not None:
        out["prompt"] = prompt
    elif (prompt := _count(usage.get("input_tokens"))) is not None:
        # Anthropic counts cached input apart from input_tokens; OpenAI's prompt_tokens include it.
        cached = [_count(usage.get(k)) for k in ("cache_creation_input_tokens", "cache_read_input_tokens")]
        out["prompt"] = prompt + sum(n for n in cached if n is not None)
    for key in ("completion_tokens", "output_tokens"):
        if (completion := _count(usage.get(key))) is not None:
            out["completion"] = completion
            break
    for key in ("completion_tokens_details", "output_tokens_details"):
        details = usage.get(key)
        if isinstance(details, dict) and (reasoning := _count(details.get("reasoning_tokens"))) is not None:
            out["reasoning"] = reasoning
            break
    return out


def read_usage(*texts: str) -> Usage:
    """The token counts in ``texts`` (pieces of one body, in order): every ``usage`` object, a later
    count of a kind replacing an earlier one (a stream's last word is its total); else Ollama's."""
    found: Usage = {}
    for text in texts:
        for match in _USAGE.finditer(text):
            try:
                value, _ = _DECODER.raw_decode(text, match.end())
            except ValueError:
                continue  # cut off where the tap's two ends meet, or not JSON at all
            if isinstance(value, dict):
                found.update(_kinds(value))
    if found:
        return found
    for text in reversed(texts):
        for kind, pattern in _OLLAMA.items():
            counts = pattern.findall(text)
            if counts and kind not in found:
                found[kind] = int(counts[-1])
        if found:
            break
    return found


class UsageTap:
    """The first and the last :data:`TAP_BYTES` of a body, kept as the body goes by."""

    __slots__ = ("_cap", "_cut", "_head", "_head_len", "_tail", "_tail_len")

    def __init__(self, cap: int = TAP_BYTES) -> None:
        self._cap = cap
        self._head: list[bytes] = []
        self._head_len = 0
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self._cut = False  # bytes between the head and the tail were let go

    def feed(self, piece: bytes) -> None:
        room = self._cap - self._head_len
        if room > 0:
            self._head.append(piece[:room] if len(piece) > room else piece)
            self._head_len += min(room, len(piece))
            if len(piece) <= room:
                return
            piece = piece[room:]
        if len(piece) >= self._cap:
            self._cut = self._cut or bool(self._tail) or len(piece) > self._cap
            self._tail.clear()
            piece = piece[-self._cap :]
            self._tail_len = 0
        self._tail.append(piece)
        self._tail_len += len(piece)
        while self._tail_len - len(self._tail[0]) >= self._cap:
            self._tail_len -= len(self._tail.popleft())
            self._cut = True

    def texts(self) -> tuple[str, ...]:
        """What was kept, as text: one piece, or the head and the tail when bytes between were let go."""
        head, tail = b"".join(self._head), b"".join(self._tail)
        if not self._cut:
            return (_text(head + tail),)
        return (_text(head), _text(tail))

    def usage(self) -> Usage:
        return read_usage(*self.texts())

    def model(self) -> str | None:
        """The first ``model`` the body names (the response's own, as the translators read it)."""
        found = _MODEL.search(_text(b"".join(self._head)))
        if found is None:
            return None
        try:
            model = json.loads(found.group(1))
        except ValueError:
            return None
        return model if isinstance(model, str) else None


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")
