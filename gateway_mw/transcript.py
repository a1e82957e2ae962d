"""What the model wrote, kept as it streams by for the reasoning record, within what one entry of the
record may hold: past that, nothing more is kept (so large an entry is never stored anyway), and the
memory a long answer takes stays that of the answer's pieces in flight."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["Budget", "Transcript"]


class Budget:
    """The characters the transcripts of one response may keep together (each is at least a byte
    of an entry); once over, every transcript of it is dropped."""

    __slots__ = ("kept", "limit", "over", "size")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.over = False
        self.kept: list[list[str]] = []
        """The parts of each transcript (not the transcripts, which hold this budget: no cycle)."""

    def drop(self) -> None:
        self.over = True
        for parts in self.kept:
            parts.clear()


class Transcript:
    """The texts one channel was given, in order, while its response's :class:`Budget` lasts."""

    __slots__ = ("budget", "parts")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.parts: list[str] = []
        budget.kept.append(self.parts)

    def append(self, text: str) -> None:
        budget = self.budget
        if budget.over:
            return
        budget.size += len(text)
        if budget.size > budget.limit:
            budget.drop()
            return
        self.parts.append(text)

    def __iter__(self) -> Iterator[str]:
        """The texts kept, in order."""
        return iter(self.parts)

    def text(self) -> str:
        """Every text kept, joined; ``""`` once the budget is over (never a part of the answer)."""
        return "" if self.budget.over else "".join(self.parts)
