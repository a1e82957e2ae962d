"""Scanner throughput: a ~1 MB corpus of reasoning blocks and answers cut into 4-character chunks.

Prints chunks/s and MB/s for live and buffered mode, a split-only baseline (the cost of the
benchmark loop itself), and the time ratio of a 4x corpus to the base one (linear cost: ~4).

    python bench/scanner.py
"""

from __future__ import annotations

import random
import time

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


def run(pieces: list[str], config: ThinkExtractConfig) -> float:
    scanner = Scanner(config)
    feed = scanner.feed
    start = time.perf_counter()
    for piece in pieces:
        feed(piece)
    scanner.finish()
    return time.perf_counter() - start


def baseline(pieces: list[str]) -> float:
    """The loop alone with a trivial per-chunk call: what no scanner could beat."""
    out: list[str] = []
    append = out.append
    start = time.perf_counter()
    for piece in pieces:
        append(piece)
    return time.perf_counter() - start


def best_of(fn: object, *args: object, repeat: int = 5) -> float:
    return min(fn(*args) for _ in range(repeat))  # type: ignore[operator]


def main() -> None:
    base = corpus(1_000_000)
    big = base * 4
    pieces, big_pieces = chunks_of(base), chunks_of(big)
    mb = len(base.encode()) / 1e6
    print(f"corpus: {mb:.2f} MB, {len(pieces):,} chunks of 4 characters")
    t0 = best_of(baseline, pieces)
    print(f"  loop baseline     {len(pieces) / t0:>13,.0f} chunks/s")
    for mode in ("live", "buffered"):
        cfg = ThinkExtractConfig(stream_mode=mode)  # type: ignore[arg-type]
        t1 = best_of(run, pieces, cfg)
        t4 = best_of(run, big_pieces, cfg, repeat=3)
        print(
            f"  {mode:<9} {len(pieces) / t1:>13,.0f} chunks/s  {mb / t1:6.1f} MB/s"
            f"  4x corpus / 1x time ratio {t4 / t1:.2f}"
        )


if __name__ == "__main__":
    main()
