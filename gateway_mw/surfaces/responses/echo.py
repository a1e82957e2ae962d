"""llama.cpp's echo of a prefill on its Responses endpoint, taken out before the translator.

llama.cpp converts a Responses request to a chat one and continues its final assistant message (its
assistant prefill); its answer's first ``response.output_text.delta`` then starts with the prefill
itself (build 0c1e570: ``"delta":"<think>…</think>beta"``), as its chat answer's first content
does. The done events and ``response.completed`` repeat it too, but the translator writes those from
the deltas it was given, so the deltas are all that is stripped.
"""

from __future__ import annotations

import json

from ...sse import SSEDecoder, SSEEvent
from .openitems import peek

__all__ = ["Echo"]

_DELTA = "response.output_text.delta"


class Echo:
    """Takes the prefill out of the first text deltas of a continuation's upstream stream. Events
    whose text may be the start of the echo are held (with any event between them) until it is
    told: an echo whole is taken out, anything else goes as it came, in order."""

    def __init__(self, prefill: str, max_event_bytes: int) -> None:
        self._left = _units(prefill)  # compared in UTF-16 units: an echo may split a pair between events
        self._decoder = SSEDecoder(max_event_bytes)
        self._held: list[tuple[bytes, bool]] = []  # (an event's bytes, whether its text is echo so far)
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
        head = peek(data) if data is not None and not event.oversized else None
        if head is None or data is None or head.type != _DELTA or not head.delta:
            if not self._held:
                return event.raw  # the response's start, its item and part: nothing to compare yet
            self._held.append((event.raw, False))
            return b""
        left, said = self._left, _units(head.delta)
        if left.startswith(said) and len(said) < len(left):
            self._left = left[len(said) :]
            self._held.append((event.raw, True))
            return b""
        if not said.startswith(left):  # the continuation's own text: no echo
            return self._release() + event.raw
        body = json.loads(data)
        body["delta"] = said[len(left) :].decode("utf-16-le", "surrogatepass")
        new = json.dumps(body, separators=(",", ":")).encode()  # ASCII escapes: a lone half too
        kept = b"".join(raw for raw, echoed in self._held if not echoed)
        self._held, self.done = [], True
        return kept + event.fields + b"data: " + new + b"\n\n"


def _units(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")
