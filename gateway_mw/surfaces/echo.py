"""llama.cpp's echo of a prefill, taken out of a continuation's upstream stream before the
translator: one filter for every surface, told by the surface how its text events are read and
rewritten.

llama.cpp continues a request's final assistant message (the gateway's prefill) and streams that
prefill back as the start of its answer's text (chat's first ``content``, messages' first
``text_delta``, responses' first ``response.output_text.delta``); vLLM and SGLang do not. The
client must not get the reasoning twice.
"""

from __future__ import annotations

from collections.abc import Callable

from ..sse import SSEDecoder, SSEEvent

__all__ = ["Echo", "TextOf", "WithText"]

TextOf = Callable[[bytes], "str | None"]
"""An event's ``data`` to the answer text it carries (``None`` or empty: it carries none)."""

WithText = Callable[[bytes, str], "bytes | None"]
"""An event's ``data`` with its answer text replaced (``None``: it cannot be rewritten)."""


class Echo:
    """Takes the prefill out of the first text events of a continuation's upstream stream. Events
    whose text may be the start of the echo are held (with any event between them) until it is
    told: an echo whole is taken out, anything else goes as it came, in order."""

    def __init__(self, prefill: str, max_event_bytes: int, text_of: TextOf, with_text: WithText) -> None:
        self._left = _units(prefill)  # compared in UTF-16 units: an echo may split a pair between events
        self._decoder = SSEDecoder(max_event_bytes)
        self._held: list[tuple[bytes, bool]] = []  # (an event's bytes, whether its text is echo so far)
        self._text_of, self._with_text = text_of, with_text
        self.done = not prefill

    def feed(self, raw: bytes) -> bytes:
        if self.done:
            return raw
        out = [event.raw if self.done else self._strip(event) for event in self._decoder.feed(raw)]
        if self.done:
            out.append(self._decoder.take_pending())
        return b"".join(out)

    def finish(self) -> bytes:
        """At the end: what was held (an echo never finished is no echo), and any tail."""
        if self.done:
            return b""
        events, tail = self._decoder.finish()
        return self._release() + b"".join(e.raw for e in events) + tail

    def _release(self) -> bytes:
        self.done = True
        held, self._held = self._held, []
        return b"".join(raw for raw, _ in held)

    def _strip(self, event: SSEEvent) -> bytes:
        data = event.data
        text = self._text_of(data) if data is not None and not event.oversized else None
        if data is None or not text:
            if not self._held:
                return event.raw  # the answer's start (a role, a block, an item): nothing to compare yet
            self._held.append((event.raw, False))
            return b""
        left, said = self._left, _units(text)
        if left.startswith(said) and len(said) < len(left):
            self._left = left[len(said) :]
            self._held.append((event.raw, True))
            return b""
        if not said.startswith(left):  # the continuation's own text: no echo
            return self._release() + event.raw
        new = self._with_text(data, said[len(left) :].decode("utf-16-le", "surrogatepass"))
        if new is None:
            return self._release() + event.raw
        kept = b"".join(raw for raw, echoed in self._held if not echoed)
        self._held, self.done = [], True
        return kept + event.fields + b"data: " + new + b"\n\n"


def _units(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")
