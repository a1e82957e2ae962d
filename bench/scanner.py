"""Scanner throughput: a ~1 MB corpus of reasoning blocks and answers cut into 4-character chunks.

Prints chunks/s and MB/s for live and buffered mode, the bare loop (the cost of the benchmark
loop itself), and the time ratio of a 4x corpus to the base one (linear cost: ~4).

    python bench/scanner.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from common import Spread, cpu_time, interleaved

from gateway_mw import DEFAULT_TAG_PAIRS, Scanner, ThinkExtractConfig

WORDS = [
    "the",
    "model",
    "considers",
    "each",
    "step",
    "then",
    "checks",
    "the",
    "answer",
    "against",
    "the",
    "question",
    "again",
]


def corpus(target_bytes: int, seed: int = 7) -> str:
    """Reasoning blocks (default tag pairs, mostly <think>) each followed by a Markdown answer."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < target_bytes:
        pair = DEFAULT_TAG_PAIRS[0] if rng.random() < 0.8 else rng.choice(DEFAULT_TAG_PAIRS)
        reasoning = " ".join(rng.choice(WORDS) for _ in range(rng.randint(80, 400)))
        answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 200)))
        block = f"{pair.open}{reasoning}{pair.close}\n\nHere is the answer: `x < y`.\n{answer}\n"
        parts.append(block)
        size += len(block)
    return "".join(parts)


def chunks_of(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def scan(pieces: list[str], config: ThinkExtractConfig) -> float:
    """CPU seconds to feed every piece to one scanner and finish it."""
    scanner = Scanner(config)
    feed = scanner.feed

    def loop() -> None:
        for piece in pieces:
            feed(piece)
        scanner.finish()

    return cpu_time(loop)


def baseline(pieces: list[str]) -> float:
    """The loop alone with a trivial per-chunk call: what no scanner could beat."""
    out: list[str] = []
    append = out.append

    def loop() -> None:
        for piece in pieces:
            append(piece)

    return cpu_time(loop)


def run(rounds: int = 5) -> dict[str, Any]:
    base = corpus(1_000_000)
    pieces, big_pieces = chunks_of(base), chunks_of(base * 4)
    live, buffered = ThinkExtractConfig(), ThinkExtractConfig(stream_mode="buffered")
    times = interleaved(
        {
            "loop": lambda: baseline(pieces),
            "live": lambda: scan(pieces, live),
            "buffered": lambda: scan(pieces, buffered),
            "live 4x": lambda: scan(big_pieces, live),
            "buffered 4x": lambda: scan(big_pieces, buffered),
        },
        rounds,
    )
    n, mb = len(pieces), len(base.encode()) / 1e6
    return {
        "chunks": n,
        "mb": mb,
        "loop": Spread.of([n / t for t in times["loop"]]),
        **{
            mode: {
                "chunks_per_s": Spread.of([n / t for t in times[mode]]),
                "mb_per_s": Spread.of([mb / t for t in times[mode]]),
                "scale_4x": Spread.of([b / a for a, b in zip(times[mode], times[mode + " 4x"], strict=True)]),
            }
            for mode in ("live", "buffered")
        },
    }


def table(rounds: int = 5) -> str:
    result = run(rounds)
    lines = [
        f"A {result['mb']:.2f} MB corpus in {result['chunks']:,} chunks of 4 characters, CPU time, median (min–max)"
        f" of {rounds} interleaved rounds. The bare loop: {result['loop'].fmt(',.0f')} chunks/s.",
        "",
        "| mode | chunks/s | MB/s | 4× corpus / 1× time |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {mode} | {result[mode]['chunks_per_s'].fmt(',.0f')} | {result[mode]['mb_per_s'].fmt('.1f')}"
        f" | {result[mode]['scale_4x'].fmt()} |"
        for mode in ("live", "buffered")
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    print(table(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
