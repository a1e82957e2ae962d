"""Every benchmark, each variant interleaved with its baseline, printed as the tables of docs/performance.md.

    python bench/report.py [--rounds 7] [--quick]

A full run writes its tables into docs/performance.md (everything after the "## Figures" heading);
``--quick`` only prints them.

Ratios measured in one run are the headline; absolute figures are this machine's. ``--quick`` runs
fewer rounds and smaller inputs, to check that the command works.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import chat_stream
import deployment
import fastpaths
import faults
import history
import memory
import messages_stream
import peer_litellm
import proxy
import record
import responses_stream
import scanner
import vercel
from common import machine

FIGURES = "## Figures\n\n"


def in_process_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| stream | split+rejoin baseline | with the middleware | throughput ratio | added per event |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {row['stream']} | {row['baseline_events_per_s'].fmt(',.0f')} events/s"
        f" | {row['translator_events_per_s'].fmt(',.0f')} events/s | {row['ratio'].fmt()}"
        f" | {row['added_us_per_event'].fmt()} µs |"
        for row in rows
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 2 if args.quick else max(5, args.rounds)
    events = 2000 if args.quick else 20_000
    started = time.perf_counter()
    out = [
        f"Machine: {machine()}.",
        f"Command: `python bench/report.py --rounds {rounds}`{' --quick' if args.quick else ''}.",
        "",
        "### Chat completions in the deployment pattern",
        "",
        deployment.tables(rounds, args.quick),
        "",
        "### Scanner",
        "",
        scanner.table(rounds),
        "",
        "#### Next to the Vercel AI SDK's reasoning extraction",
        "",
        vercel.table(rounds, args.quick),
        "",
        "### Chat completions stream, batched reads",
        "",
        chat_stream.tables(rounds, args.quick),
        "",
        "### A peer on the same stream: LiteLLM",
        "",
        peer_litellm.table(rounds, 200 if args.quick else 1000)
        if peer_litellm.available()
        else "Not measured in this run: LiteLLM is not installed (`pip install -e '.[bench]'`).",
        "",
        "### Anthropic messages stream (policy `unsigned`)",
        "",
        f"In process, CPU time, median (min–max) of {rounds} interleaved rounds:",
        "",
        in_process_table(messages_stream.run(events, rounds)),
        "",
        messages_stream.deployment_table(rounds, args.quick),
        "",
        "### OpenAI Responses stream",
        "",
        f"In process, 4 KiB pieces, CPU time, median (min–max) of {rounds} interleaved rounds:",
        "",
        in_process_table(responses_stream.run(events, rounds)),
        "",
        responses_stream.deployment_table(rounds, args.quick),
        "",
        "### What the fast paths earn",
        "",
        fastpaths.table(rounds, args.quick),
        "",
        "### The request side: a 200 KB agent history",
        "",
        history.tables(rounds, args.quick),
        "",
        "### Peak memory: Responses next to messages",
        "",
        "The same text streamed on both surfaces in deltas of 200 characters, each surface in a fresh process:",
        "",
        memory.table([2.0] if args.quick else [10.0, 40.0]),
        "",
        "### Hostile input: memory and CPU of the gateway process",
        "",
        faults.table(faults.run(0.05 if args.quick else 1.0)),
    ]
    out += ["", "### The standalone proxy, end to end", "", proxy.report(quick=args.quick)]
    out += ["", "### The reasoning record: a read and a write", "", record.table(rounds, args.quick)]
    out += ["", f"(The whole report took {time.perf_counter() - started:.0f} s.)"]
    text = "\n".join(out)
    print(text)
    if not args.quick:  # the figures of docs/performance.md: everything after its "## Figures" heading
        page = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
        head = page.read_text().split(FIGURES, 1)[0]
        page.write_text(head + FIGURES + text + "\n")


if __name__ == "__main__":
    main()
