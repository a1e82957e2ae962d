"""What one request's operations cost in a loop, and after the CPU's caches were filled with other work.

    python bench/cold.py [--rounds 5] [--quick]

End to end, between two requests the process runs the sockets, the client and the upstream: the
objects a request reaches (decoders, tables, settings) are no longer in the caches, and each costs
several times what it costs in a loop. Here each operation is timed twice per repetition: right
after itself ("in a loop"), and right after decoding a few megabytes of other JSON ("after other
work"); the medians of the repetitions, then the median (min–max) over the rounds. The answers are
``bench/history.py``'s (one turn's reasoning in its tags, then its answer).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Callable

import msgspec
from common import Spread
from history import ANSWERS, CONFIG

from gateway_mw.config import Surface
from gateway_mw.marks import random_id
from gateway_mw.pipeline import translate_body

_OTHER_WORK = json.dumps({"items": [{"id": i, "text": "z" * 50} for i in range(20_000)]})
"""About 1.4 MB of JSON, decoded between two timed calls: the caches then hold its objects."""


def _times(operation: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The median time of ``operation`` in µs: right after itself, and right after other work."""
    warm, cold = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        warm.append(time.perf_counter() - start)
        json.loads(_OTHER_WORK)
        start = time.perf_counter()
        operation()
        cold.append(time.perf_counter() - start)
    return statistics.median(warm) * 1e6, statistics.median(cold) * 1e6


def _operations() -> dict[str, Callable[[], object]]:
    answer = json.dumps(ANSWERS["messages"]).encode()
    decode = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
    search = re.compile("[<\\[◁]").search
    text = "It is sunny in Paris. It is sunny."

    def trivial() -> int:
        return 1

    operations: dict[str, Callable[[], object]] = {
        "nothing (the timer itself)": lambda: None,
        "a call of a function that returns at once": trivial,
        "a regular expression's search of a sentence": lambda: search(text),
        f"a msgspec decode of a {len(answer)}-byte answer (its members raw)": lambda: decode(answer),
    }
    surface: Surface
    for surface in ("chat", "messages", "responses", "ollama"):
        body = json.dumps(ANSWERS[surface]).encode()
        operations[f"a non-stream {surface} answer's translation"] = (
            lambda surface=surface, body=body: translate_body(surface, body, CONFIG, random_id)  # type: ignore[misc]
        )
    return operations


def table(rounds: int, quick: bool = False) -> str:
    repeats = 10 if quick else 40
    operations = _operations()
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in operations}
    for _ in range(rounds):
        for name, operation in operations.items():
            runs[name].append(_times(operation, repeats))
    lines = [
        f"Each operation timed right after itself and right after decoding {len(_OTHER_WORK) / 1e6:.1f} MB of other"
        f" JSON, the median of {repeats} repetitions, then median (min–max) of {rounds} rounds, µs:",
        "",
        "| operation | in a loop | after other work | ratio |",
        "|---|---|---|---|",
    ]
    for name, pairs in runs.items():
        warm, cold = Spread.of([w for w, _ in pairs]), Spread.of([c for _, c in pairs])
        ratio = Spread.of([c / w for w, c in pairs])
        lines.append(f"| {name} | {warm.fmt()} | {cold.fmt()} | {ratio.fmt('.1f')} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(table(3 if args.quick else args.rounds, args.quick))


if __name__ == "__main__":
    main()
