"""Scanner throughput: ~1 MB corpora cut into 4-character chunks.

Corpora: ``think`` (reasoning blocks, mostly ``<think>``, each followed by a Markdown answer),
``plain`` (the same answers with no tag at all), ``think`` again under a family preset whose
tool-call markers also end a block (Qwen3's), and ``harmony`` (gpt-oss messages, read by the
harmony protocol). Prints chunks/s and MB/s per corpus and mode, the bare loop (the cost of the
benchmark loop itself), and the time ratio of a 4x corpus to the base one (linear cost: ~4).

    python bench/scanner.py [--rounds 5] [--rows think,plain]
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


def corpus(target_bytes: int, seed: int = 7, kind: str = "think") -> str:
    """Reasoning blocks (default tag pairs, mostly <think>) each followed by a Markdown answer;
    ``plain``: the answers alone; ``harmony``: the same as gpt-oss analysis and final messages."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < target_bytes:
        pair = DEFAULT_TAG_PAIRS[0] if rng.random() < 0.8 else rng.choice(DEFAULT_TAG_PAIRS)
        reasoning = " ".join(rng.choice(WORDS) for _ in range(rng.randint(80, 400)))
        answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 200)))
        tail = f"\n\nHere is the answer: `x < y`.\n{answer}\n"
        if kind == "plain":
            block = tail
        elif kind == "harmony":
            block = (
                f"<|channel|>analysis<|message|>{reasoning}<|end|>"
                f"<|start|>assistant<|channel|>final<|message|>{tail}<|return|>"
            )
        else:
            block = f"{pair.open}{reasoning}{pair.close}{tail}"
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


def _rows() -> dict[str, tuple[str, str, ThinkExtractConfig]]:
    """Each row: the name ``--rows`` selects it by, its corpus, its settings."""
    live, buffered = ThinkExtractConfig(), ThinkExtractConfig(stream_mode="buffered")
    rows = {
        "think live": ("think", "think", live),
        "think buffered": ("think", "think", buffered),
        "plain live": ("plain", "plain", live),
        "plain buffered": ("plain", "plain", buffered),
    }
    if "protocol" in ThinkExtractConfig.__struct_fields__:  # a build with model families
        rows["think, tool-call markers (qwen3)"] = ("markers", "think", live.for_model("qwen3-8b"))
        rows["harmony (gpt-oss)"] = ("harmony", "harmony", live.for_model("gpt-oss-120b"))
    return rows


def run(rounds: int = 5, only: list[str] | None = None) -> dict[str, Any]:
    rows = {name: (kind, cfg) for name, (key, kind, cfg) in _rows().items() if not only or key in only}
    texts = {kind: corpus(1_000_000, kind=kind) for kind in {kind for kind, _ in rows.values()}}
    pieces = {kind: chunks_of(text) for kind, text in texts.items()}
    big = {kind: chunks_of(text * 4) for kind, text in texts.items()}
    variants: dict[str, Any] = {"loop": lambda: baseline(pieces["think" if "think" in pieces else next(iter(pieces))])}
    for name, (kind, config) in rows.items():
        variants[name] = lambda kind=kind, config=config: scan(pieces[kind], config)
        variants[name + " 4x"] = lambda kind=kind, config=config: scan(big[kind], config)
    times = interleaved(variants, rounds)
    result: dict[str, Any] = {"loop": Spread.of([len(next(iter(pieces.values()))) / t for t in times["loop"]])}
    for name, (kind, _) in rows.items():
        n, mb = len(pieces[kind]), len(texts[kind].encode()) / 1e6
        result[name] = {
            "chunks": n,
            "chunks_per_s": Spread.of([n / t for t in times[name]]),
            "mb_per_s": Spread.of([mb / t for t in times[name]]),
            "scale_4x": Spread.of([b / a for a, b in zip(times[name], times[name + " 4x"], strict=True)]),
        }
    return result


def table(rounds: int = 5, only: list[str] | None = None) -> str:
    result = run(rounds, only)
    lines = [
        f"~1 MB corpora in chunks of 4 characters, CPU time, median (min–max) of {rounds} interleaved rounds."
        f" The bare loop: {result.pop('loop').fmt(',.0f')} chunks/s.",
        "",
        "| corpus and mode | chunks/s | MB/s | 4× corpus / 1× time |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {name} | {row['chunks_per_s'].fmt(',.0f')} | {row['mb_per_s'].fmt('.1f')} | {row['scale_4x'].fmt()} |"
        for name, row in result.items()
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", default="", help="comma-separated rows to run: think, plain, markers, harmony")
    args = parser.parse_args()
    print(table(args.rounds, [r for r in args.rows.split(",") if r] or None))


if __name__ == "__main__":
    main()
