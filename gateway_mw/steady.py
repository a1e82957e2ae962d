"""What every surface's fast path shares: the steady channel it proves events against, and the
answer it gives the pipeline for a span of whole events.

A fast path is a layer over its surface's reference translator. While one channel's scanner is
steady (nothing held, no half character), an event whose only effect is to continue that channel's
text with text free of the scanner's triggers goes out as the reference would write it, without
the reference. The layer proves events one by one from the start of the span it is offered and
answers with the bytes for the proven ones and where they end (:data:`DECLINED`: none): the
pipeline hands the next event to the reference and offers the rest again, so that one event the
layer cannot prove costs that event, never the window it came in.

Pure: no I/O.
"""

from __future__ import annotations

from .scanner import Kind, Scanner

__all__ = ["DECLINED", "Proven", "Steady", "end_of_events"]

Proven = tuple[bytes, int]
"""The bytes to send for a span's first events, and where in the span those events end."""
DECLINED: Proven = (b"", 0)


class Steady:
    """A channel steady in ``kind``: a text free of ``triggers`` goes through ``scanner`` unchanged
    (``scanner.pass_steady``). Each surface's layer adds what it needs to write the events."""

    __slots__ = ("kind", "scanner", "triggers")

    def __init__(self, kind: Kind, scanner: Scanner) -> None:
        self.kind = kind
        self.scanner = scanner
        self.triggers = scanner.triggers


def end_of_events(span: bytes, count: int) -> int:
    """Where in ``span`` (whole events, ``\\n`` line endings) its first ``count`` events end."""
    end = 0
    for _ in range(count):
        end = span.find(b"\n\n", end) + 2
    return end
