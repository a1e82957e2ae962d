"""Every benchmark, each variant interleaved with its baseline, printed as the tables of docs/performance.md.

    python bench/report.py [--rounds 7] [--quick]

A full run writes its tables into docs/performance.md (everything after the "## Figures" heading);
``--only a,b`` runs those sections and replaces only theirs there; ``--quick`` only prints.

Ratios measured in one run are the headline; absolute figures are this machine's. ``--quick`` runs
fewer rounds and smaller inputs, to check that the command works.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chat_stream
import cold
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


def _sections(rounds: int, quick: bool) -> dict[str, tuple[str, Callable[[], str]]]:
    """Every section of the report by its short name: its heading, and what prints its figures."""
    events = 2000 if quick else 20_000
    return {
        "deployment": ("Chat completions in the deployment pattern", lambda: deployment.tables(rounds, quick)),
        "scanner": ("Scanner", lambda: scanner.table(rounds)),
        "vercel": ("Next to the Vercel AI SDK's reasoning extraction", lambda: vercel.table(rounds, quick)),
        "chat-stream": ("Chat completions stream, batched reads", lambda: chat_stream.tables(rounds, quick)),
        "litellm": (
            "A peer on the same stream: LiteLLM",
            lambda: (
                peer_litellm.table(rounds, 200 if quick else 1000)
                if peer_litellm.available()
                else "Not measured in this run: LiteLLM is not installed (`pip install -e '.[bench]'`)."
            ),
        ),
        "messages": (
            "Anthropic messages stream (policy `unsigned`)",
            lambda: (
                f"In process, CPU time, median (min–max) of {rounds} interleaved rounds:\n\n"
                + in_process_table(messages_stream.run(events, rounds))
                + "\n\n"
                + messages_stream.deployment_table(rounds, quick)
            ),
        ),
        "responses": (
            "OpenAI Responses stream",
            lambda: (
                f"In process, 4 KiB pieces, CPU time, median (min–max) of {rounds} interleaved rounds:\n\n"
                + in_process_table(responses_stream.run(events, rounds))
                + "\n\n"
                + responses_stream.deployment_table(rounds, quick)
            ),
        ),
        "fastpaths": ("What the fast paths earn", lambda: fastpaths.table(rounds, quick)),
        "history": ("The request side: agent histories", lambda: history.tables(rounds, quick)),
        "cold": ("What a request touches, in a loop and after other work", lambda: cold.table(rounds, quick)),
        "memory": (
            "Peak memory: Responses next to messages",
            lambda: (
                "The same text streamed on both surfaces in deltas of 200 characters, each surface in a"
                " fresh process:\n\n" + memory.table([2.0] if quick else [10.0, 40.0])
            ),
        ),
        "faults": (
            "Hostile input: memory and CPU of the gateway process",
            lambda: faults.table(faults.run(0.05 if quick else 1.0)),
        ),
        "proxy": ("The standalone proxy, end to end", lambda: proxy.report(quick=quick)),
        "record": ("The reasoning record: a read and a write", lambda: record.table(rounds, quick)),
    }


def _replace_sections(page: str, figures: dict[str, str]) -> str:
    """``page`` with the text under each ``### heading`` of ``figures`` replaced (up to the next ``### ``)."""
    for heading, text in figures.items():
        start = page.find(f"\n### {heading}\n")
        if start == -1:  # a section new to the page goes at its end
            page = page.rstrip("\n") + f"\n\n### {heading}\n\n{text}\n"
            continue
        body = start + len(f"\n### {heading}\n")
        end = page.find("\n### ", body)
        page = page[:body] + "\n" + text + "\n" + (page[end:] if end != -1 else "")
    return page


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only", default="", help="comma-separated section names (default: all); " + ", ".join(_sections(0, True))
    )
    args = parser.parse_args()
    rounds = 2 if args.quick else max(5, args.rounds)
    sections = _sections(rounds, args.quick)
    names = [n for n in args.only.split(",") if n] or list(sections)
    unknown = [n for n in names if n not in sections]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(sections)}")
    started = time.perf_counter()
    only = f" --only {','.join(names)}" if args.only else ""
    command = f"`python bench/report.py --rounds {rounds}{only}`{' --quick' if args.quick else ''}"
    figures: dict[str, str] = {}
    for name in names:
        heading, run = sections[name]
        text = run()
        figures[heading] = f"Machine: {machine()}. Command: {command}.\n\n{text}" if args.only else text
        print(f"### {heading}\n\n{figures[heading]}\n", flush=True)
    took = f"(The whole report took {time.perf_counter() - started:.0f} s.)"
    print(took)
    if args.quick:
        return
    page = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
    head, _, old = page.read_text().partition(FIGURES)
    if args.only:  # only the sections run: each says its own command and machine
        page.write_text(head + FIGURES + _replace_sections(old, figures))
        return
    out = [f"Machine: {machine()}.", f"Command: {command}.", ""]
    out += [f"### {heading}\n\n{text}\n" for heading, text in figures.items()]
    page.write_text(head + FIGURES + "\n".join(out) + "\n" + took + "\n")


if __name__ == "__main__":
    main()
