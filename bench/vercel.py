"""The gateway's tag scanner next to the Vercel AI SDK's reasoning extraction, on the same chunks.

The Vercel side is ``extractReasoningMiddleware({ tagName: 'think' })`` from the npm package ``ai``
(the version ``tests/clients/package.json`` pins), run by Node (``bench/vercel.mjs``): the chunks
as ``text-delta`` parts from a ``ReadableStream`` through its ``wrapStream`` transform, read to the
end, as the SDK runs it; its transform function called directly in a loop (the extraction logic
without the stream machinery); and a ``TransformStream`` that only passes parts on (the floor of
any middleware built that way). The gateway side is ``bench/scanner.py``'s scan of the same chunks.

Corpora: ``bench/scanner.py``'s, cut the same way (4 characters): ``think`` with every tag spelled
``<think>`` (the one tag the SDK is given) and ``plain``. Before timing, both must give the same
split: the same blocks, reasoning identical, content identical but for the whitespace right after
``</think>``, which the gateway trims by default (``trim_tag_edges``), and identical to the
character under the SDK's rules (``<think>`` only, no trimming, no code awareness). A mismatch is
printed and fails the run.

Node runs as one long-lived process answering commands, so its rounds interleave with Python's
(``common.interleaved``), both after one warm-up run of every variant. CPU time on both sides
(``time.process_time``, ``process.cpuUsage``). The ``ai`` package is found where
``.ci/clients-install`` puts it (as ``tests/clients/conftest.py`` finds it); without Node or the
package a "Not measured" line is printed instead of the table.

    python bench/vercel.py [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import Spread, interleaved
from scanner import baseline, chunks_of, corpus, scan

from gateway_mw import DEFAULT_TAG_PAIRS, Scanner, TagPair, ThinkExtractConfig

HERE = Path(__file__).resolve().parent
CLIENTS = HERE.parent / "tests" / "clients"
DRIVER = HERE / "vercel.mjs"
THINK = TagPair("<think>", "</think>")
SEPARATOR = "\n"  # the SDK's default, and the gateway's
DEFAULTS = ThinkExtractConfig()
# The gateway under the SDK's rules: only <think>, whitespace kept, tags inside Markdown code count.
SDK_RULES = ThinkExtractConfig(tag_pairs=(THINK,), trim_tag_edges=False, code_aware=False)
NODE_VARIANTS = ("vercel", "direct", "passthrough", "source")
CORPORA = {"think": "think-heavy", "plain": "tag-free"}

Blocks = list[tuple[str, str]]


class SplitMismatch(AssertionError):
    """The gateway and the SDK did not split a corpus alike: comparing their speed would be unfair."""


def pinned_version() -> str:
    version: str = json.loads((CLIENTS / "package.json").read_text())["dependencies"]["ai"]
    return version


def clients_dir() -> Path:
    """Where ``.ci/clients-install`` puts the JavaScript clients (the key it computes), or
    ``GATEWAY_MW_CLIENTS_DIR``: as ``tests/clients/conftest.py`` finds them."""
    if os.environ.get("GATEWAY_MW_CLIENTS_DIR"):
        return Path(os.environ["GATEWAY_MW_CLIENTS_DIR"])
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        if (CLIENTS / name).exists():
            digest.update((CLIENTS / name).read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "gateway_mw" / "clients" / digest.hexdigest()[:16]


def locate() -> tuple[list[str], Path] | str:
    """The Node command and the ``ai`` package's entry module, or why they are not there."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
        major = int(out.strip().lstrip("v").split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"`node --version` failed ({exc})"
    if major < 18:
        return f"node {out.strip()} is too old (web streams need 18 or later)"
    package = clients_dir() / "node_modules" / "ai"
    pinned = pinned_version()
    if not (package / "package.json").is_file():
        return f"the Vercel AI SDK (`ai` {pinned}) is not installed ({package} is missing): run .ci/clients-install"
    meta = json.loads((package / "package.json").read_text())
    if meta.get("version") != pinned:
        return f"`ai` {meta.get('version')} is installed in {package}, but {pinned} is pinned: run .ci/clients-install"
    entry = meta.get("exports", {}).get(".", {}).get("import") or meta.get("main") or "index.js"
    return [node], package / entry


def unavailable() -> str | None:
    """Why the comparison cannot run here, or ``None``."""
    found = locate()
    return found if isinstance(found, str) else None


def think_only(text: str) -> str:
    """``text`` with every default tag pair respelled ``<think>``/``</think>``: the one tag the SDK
    is given (no tag string of the defaults holds another, so the respelling is exact)."""
    for pair in sorted(DEFAULT_TAG_PAIRS[1:], key=lambda p: -len(p.open)):
        text = text.replace(pair.open, THINK.open).replace(pair.close, THINK.close)
    return text


class Node:
    """``bench/vercel.mjs`` as one process, asked one command at a time."""

    def __init__(self, command: list[str], entry: Path, chunks_file: Path) -> None:
        self.process = subprocess.Popen(
            [*command, str(DRIVER), str(entry), str(chunks_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            self.close()
            raise RuntimeError(f"bench/vercel.mjs stopped: {self.stderr}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"bench/vercel.mjs: {answer['error']}")
        return answer

    def time(self, variant: str, corpus: str) -> float:
        cpu: float = self.ask(op="time", variant=variant, corpus=corpus)["cpu"]
        return cpu

    def close(self) -> None:
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()


@contextmanager
def node_driver(command: list[str], entry: Path, pieces: dict[str, list[str]]) -> Iterator[Node]:
    with tempfile.TemporaryDirectory() as tmp:
        chunks_file = Path(tmp) / "chunks.json"
        chunks_file.write_text(json.dumps(pieces))
        node = Node(command, entry, chunks_file)
        try:
            yield node
        finally:
            node.close()


# -- the split --------------------------------------------------------------------------------


def gateway_blocks(pieces: list[str], config: ThinkExtractConfig) -> Blocks:
    """The scanner's segments, fed the chunks one by one, merged into blocks."""
    scanner = Scanner(config)
    segments = [s for piece in pieces for s in scanner.feed(piece)] + scanner.finish()
    blocks: Blocks = []
    for segment in segments:
        if blocks and blocks[-1][0] == segment.kind:
            blocks[-1] = (segment.kind, blocks[-1][1] + segment.text)
        else:
            blocks.append((segment.kind, segment.text))
    return blocks


def trimmed_as_defaults(blocks: Blocks) -> Blocks:
    """The SDK's blocks as the gateway's defaults give them: a content block that follows a
    reasoning block loses the whitespace right after ``</think>`` (``trim_tag_edges``), the
    separator that re-entered content starts with staying first."""
    out: Blocks = []
    for i, (kind, text) in enumerate(blocks):
        if kind == "content" and i > 0 and blocks[i - 1][0] == "reasoning":
            later = any(k == "content" for k, _ in blocks[:i])
            body = text[len(SEPARATOR) :] if later and text.startswith(SEPARATOR) else text
            text = (SEPARATOR if later else "") + body.lstrip()
        out.append((kind, text))
    return out


def first_difference(a: Blocks, b: Blocks) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"block {i}: gateway {x[0]} {x[1][:120]!r}… | Vercel {y[0]} {y[1][:120]!r}…"
    return f"the gateway gives {len(a)} blocks, the SDK {len(b)}"


def check_split(node: Node, pieces: dict[str, list[str]]) -> dict[str, int]:
    """Raise :class:`SplitMismatch` unless both sides split every corpus alike; the block count of each."""
    counts: dict[str, int] = {}
    for name, chunks in pieces.items():
        for variant in ("vercel", "direct"):
            sdk: Blocks = [(k, t) for k, t in node.ask(op="split", variant=variant, corpus=name)["blocks"]]
            for label, config, expected in (
                ("defaults", DEFAULTS, trimmed_as_defaults(sdk)),
                ("the SDK's rules", SDK_RULES, sdk),
            ):
                ours = gateway_blocks(chunks, config)
                if ours != expected:
                    raise SplitMismatch(
                        f"{name} corpus, gateway ({label}) vs Vercel ({variant}): {first_difference(ours, expected)}"
                    )
            counts[name] = len(sdk)
    if counts.get("think", 0) < 2 or counts.get("plain") != 1:
        raise SplitMismatch(f"unexpected block counts {counts}: the corpora are not what this benchmark compares")
    return counts


# -- the measurement --------------------------------------------------------------------------


def run(rounds: int = 5, quick: bool = False) -> dict[str, Any]:
    """Every figure of the table; ``{"unavailable": reason}`` when Node or the package is missing.
    Raises :class:`SplitMismatch` when the two do not split the corpora alike."""
    found = locate()
    if isinstance(found, str):
        return {"unavailable": found}
    command, entry = found
    size = 200_000 if quick else 1_000_000
    texts = {"think": think_only(corpus(size, kind="think")), "plain": corpus(size, kind="plain")}
    pieces = {name: chunks_of(text) for name, text in texts.items()}
    with node_driver(command, entry, pieces) as node:
        versions = node.ask(op="version")
        counts = check_split(node, pieces)
        variants: dict[str, Any] = {"python loop": lambda: baseline(pieces["think"])}
        for name in texts:
            variants[f"gateway {name}"] = lambda name=name: scan(pieces[name], DEFAULTS)
            variants[f"gateway-sdk-rules {name}"] = lambda name=name: scan(pieces[name], SDK_RULES)
            for variant in NODE_VARIANTS:
                variants[f"{variant} {name}"] = lambda variant=variant, name=name: node.time(variant, name)
        cold = {name: fn() for name, fn in variants.items()}  # warm-up: Node's JIT, both sides' caches
        times = interleaved(variants, rounds)
    result: dict[str, Any] = {
        "versions": versions,
        "rounds": rounds,
        "bytes": {name: len(text.encode()) for name, text in texts.items()},
        "loop": Spread.of([len(pieces["think"]) / t for t in times["python loop"]]),
        "cold": {name: cold[name] / Spread.of(times[name]).median for name in cold},
        "rows": {},
    }
    for name, text in texts.items():
        n, mb = len(pieces[name]), len(text.encode()) / 1e6
        ours = times[f"gateway {name}"]
        source = times[f"source {name}"]
        measured = {key: times[f"{key} {name}"] for key in ("gateway", "gateway-sdk-rules", "vercel", "direct")}
        # What a stage adds to a stream the SDK reads anyway: its pipeline's time less the source's, round by round.
        measured["vercel added"] = [max(v - s, 1e-9) for v, s in zip(times[f"vercel {name}"], source, strict=True)]
        measured["passthrough added"] = [
            max(p - s, 1e-9) for p, s in zip(times[f"passthrough {name}"], source, strict=True)
        ]
        rows: dict[str, Any] = {"chunks": n, "blocks": counts[name]}
        for key, t in measured.items():
            rows[key] = {
                "chunks_per_s": Spread.of([n / x for x in t]),
                "mb_per_s": Spread.of([mb / x for x in t]),
                # Throughput of the gateway (defaults) over this row's, round by round.
                "ratio": Spread.of([x / g for x, g in zip(t, ours, strict=True)]),
            }
        rows["source"] = Spread.of([n / x for x in source])
        result["rows"][name] = rows
    return result


LABELS = {
    "gateway": "gateway scanner, defaults",
    "gateway-sdk-rules": "gateway scanner, the SDK's rules (`<think>` only, no trimming, no code awareness)",
    "vercel added": "Vercel AI SDK `extractReasoningMiddleware`: what its `wrapStream` adds to a stream",
    "vercel": "the same, the whole stream (source, `wrapStream`, reader)",
    "direct": "the same transform function called directly in a loop, no stream",
    "passthrough added": "Node: what a `TransformStream` that only passes parts on adds (no work)",
}


def table(rounds: int, quick: bool = False) -> str:
    """The markdown table and a line explaining it; a "Not measured" line when Node or the ``ai``
    package is missing. Raises :class:`SplitMismatch` when the two do not split the corpora alike."""
    result = run(rounds, quick)
    if "unavailable" in result:
        return f"Not measured: {result['unavailable']}."
    v, cold = result["versions"], result["cold"]
    size = "~200 KB" if quick else "~1 MB"
    lines = [
        f"bench/scanner.py's {size} corpora (every tag spelled `<think>`) in chunks of 4 characters, the same"
        f" chunks to both, split alike (checked first); `ai` {v['ai']} on Node {v['node']}. CPU time, median"
        f" (min–max) of {rounds} interleaved rounds after one warm-up run each (Node's cold first `wrapStream`"
        f" run: {cold['vercel think']:.2f}× its median, of the direct calls: {cold['direct think']:.2f}×)."
        f" Floors: Python's bare loop {result['loop'].fmt(',.0f')} chunks/s; Node's parts read straight from"
        f' their `ReadableStream` {result["rows"]["think"]["source"].fmt(",.0f")} chunks/s, what "adds" rows'
        " leave out.",
        "",
        "| corpus | implementation | chunks/s | MB/s | gateway (defaults) ÷ this, throughput |",
        "|---|---|---|---|---|",
    ]
    for name, row in result["rows"].items():
        for key, label in LABELS.items():
            cell = row[key]
            ratio = "1" if key == "gateway" else cell["ratio"].fmt()
            if key == "vercel added":
                ratio = f"**{ratio}**"
            lines.append(
                f"| {CORPORA[name]} | {label} | {cell['chunks_per_s'].fmt(',.0f')} | {cell['mb_per_s'].fmt('.1f')}"
                f" | {ratio} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="~200 KB corpora: check that the command works")
    args = parser.parse_args()
    try:
        print(table(args.rounds, args.quick))
    except SplitMismatch as exc:
        print(f"the gateway and the Vercel AI SDK split differently, nothing timed: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
