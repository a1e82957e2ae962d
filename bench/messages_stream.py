"""Anthropic messages stream translation in process: events/s next to a split-and-rejoin baseline.

Two upstream streams of N events each, fed in 4 KiB network pieces:
(a) typical: one text block whose first half is a ``<think>`` block, then the answer (every event
    after the reasoning is renumbered, every reasoning event becomes a thinking delta);
(b) tag-free: one text block of plain answer text (every event passes as it came);
and (c) the typical stream again, one event per write, as a model server sends tokens (runs of
events that the translator may pass without decoding them are then one event long).
Each round times the baseline (SSE decoder, events joined back to bytes) and the translator
(``StreamPipeline("messages", messages_policy="unsigned")``) one after the other; the figures are
the medians over the rounds, with their min–max.

Then the deployment pattern (:func:`deployment_table`): one event per ``feed``, in the layout of each
upstream, the steady part of a long text block alone — answer text passed as it came, answer text
after a thinking block (renumbered), reasoning (written as ``thinking_delta``s) — as CPU time added
per event over split-and-rejoin fed the same way. And what the fast path earns
(:func:`fast_path_table`): the same steady events, and the batched streams, through the reference
translator alone (every event read) less through the production one.

    python bench/messages_stream.py [--events 20000] [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

from common import Spread, cpu_time, pieces_of, split_and_rejoin, steady_cost

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.messages import MessagesReference

CONFIG = ThinkExtractConfig(messages_policy="unsigned")
WORDS = [" step", " by", " step", " the", " sum", " of", " two", " and", " two", " is", " four."]


def frame(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "bench-model",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    },
}


def message_stream(tokens: list[str]) -> bytes:
    """A whole upstream stream: message_start, one text block streamed as ``tokens``, the end."""
    events = [MESSAGE_START, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]
    events += [{"type": "ping"}]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in tokens]
    events += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": len(tokens)},
        },
        {"type": "message_stop"},
    ]
    return b"".join(frame(e) for e in events)


def typical_tokens(n: int) -> list[str]:
    half = n // 2
    reasoning = ["<think>"] + [WORDS[i % len(WORDS)] for i in range(half - 2)] + ["</think>"]
    return reasoning + [WORDS[i % len(WORDS)] for i in range(n - len(reasoning))]


def plain_tokens(n: int) -> list[str]:
    return [WORDS[i % len(WORDS)] for i in range(n)]


def event_writes(stream: bytes) -> list[bytes]:
    return [e.raw for e in SSEDecoder().feed(stream)]


def translated(pieces: list[bytes]) -> bytes:
    pipeline = StreamPipeline("messages", CONFIG)
    out = [pipeline.feed(p) for p in pieces]
    return b"".join(out) + pipeline.finish()


def timed(fn: Callable[[list[bytes]], bytes], pieces: list[bytes]) -> float:
    return cpu_time(lambda: fn(pieces))


def run(events: int, rounds: int) -> list[dict[str, Any]]:
    """One row per stream: medians and ranges of events/s, the ratio, and the added µs per event."""
    rows = []
    cases = (
        ("(a) typical: reasoning, then the answer; 4 KiB pieces", typical_tokens, pieces_of),
        ("(b) tag-free; 4 KiB pieces", plain_tokens, pieces_of),
        ("(c) typical; one event per write", typical_tokens, event_writes),
    )
    for name, tokens, split in cases:
        stream = message_stream(tokens(events))
        n = len(SSEDecoder().feed(stream))  # every event of the stream, not only the deltas
        pieces = split(stream)
        translated(pieces)  # warm up both paths
        split_and_rejoin(pieces)
        base_t, mw_t = [], []
        for _ in range(rounds):  # interleaved, so that both see the same machine
            base_t.append(timed(split_and_rejoin, pieces))
            mw_t.append(timed(translated, pieces))
        added = [(m - b) / n * 1e6 for b, m in zip(base_t, mw_t, strict=True)]
        ratios = [b / m for b, m in zip(base_t, mw_t, strict=True)]
        rows.append(
            {
                "stream": name,
                "events": n,
                "rounds": rounds,
                "baseline_events_per_s": Spread.of([n / t for t in base_t]),
                "translator_events_per_s": Spread.of([n / t for t in mw_t]),
                "ratio": Spread.of(ratios),
                "added_us_per_event": Spread.of(added),
            }
        )
    return rows


# -- the deployment pattern: one event per feed, each upstream's layout ----------------------------

LAYOUTS = {
    "anthropic": "Anthropic (`type`, `index`, `delta`)",
    "vllm": "vLLM (`delta` before `index`)",
    "llamacpp": "llama.cpp (keys sorted)",
    "pyjson": "Python `json.dumps` spacing",
    "dataonly": "no `event:` lines",
}
STEADY = {
    "content": "answer text",
    "answer": "answer after a thinking block (renumbered)",
    "reasoning": "reasoning (thinking deltas)",
}
HEAD = {"content": ["The"], "answer": ["<think>", " r", "</think>", "The"], "reasoning": ["<think>", "We"]}


def layout_frame(event: dict[str, Any], layout: str) -> bytes:
    """One event as ``layout``'s server writes it."""
    if layout == "vllm" and event["type"] == "content_block_delta":
        event = {"type": event["type"], "delta": event["delta"], "index": event["index"]}
    if layout == "llamacpp":
        data = json.dumps(event, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    elif layout == "pyjson":
        data = json.dumps(event)
    else:
        data = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    head = "" if layout == "dataonly" else f"event: {event['type']}\n"
    return f"{head}data: {data}\n\n".encode()


def layout_stream(layout: str, kind: str, n: int) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """A stream's events one by one, in three parts: the head (up to the steady state), ``n`` steady
    events, the tail."""
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}

    def delta(text: str) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}

    head = [MESSAGE_START, block, *(delta(t) for t in HEAD[kind])]
    body = [delta(WORDS[i % len(WORDS)]) for i in range(n)]
    tail = [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": n},
        },
        {"type": "message_stop"},
    ]
    return tuple([layout_frame(e, layout) for e in part] for part in (head, body, tail))  # type: ignore[return-value]


def new_pipeline() -> StreamPipeline:
    return StreamPipeline("messages", CONFIG)


def steady_row(
    layout: str, kind: str, n: int, rounds: int, make: Callable[[], StreamPipeline] = new_pipeline
) -> dict[str, Spread]:
    """The steady part alone, one event per feed: CPU µs per event, baseline and added."""
    head, body, tail = layout_stream(layout, kind, n)

    return steady_cost(head, body, tail, make, rounds)


def deployment_table(rounds: int, quick: bool = False) -> str:
    """The deployment pattern as a markdown table: per layout, the baseline per event and the CPU
    time added per steady event, one event per feed."""
    n = 400 if quick else 4000
    out = [
        f"In process, one event per `feed`: the steady part of a {n:,}-event text block, policy `unsigned`,"
        f" CPU time added over split-and-rejoin fed the same way, median (min–max) of {rounds} interleaved"
        " rounds:",
        "",
        "| upstream layout | baseline per event | " + " | ".join(f"added: {label}" for label in STEADY.values()) + " |",
        "|---|---|" + "---|" * len(STEADY),
    ]
    for layout, label in LAYOUTS.items():
        rows = {kind: steady_row(layout, kind, n, rounds) for kind in STEADY}
        cells = " | ".join(f"{rows[kind]['added_us'].fmt()} µs" for kind in STEADY)
        out.append(f"| {label} | {rows['content']['baseline_us'].fmt()} µs | {cells} |")
    return "\n".join(out)


def reference_pipeline() -> StreamPipeline:
    """The pipeline with the reference translator alone: no span passes without its events read."""
    pipeline = StreamPipeline("messages", CONFIG)
    pipeline._translator = MessagesReference(CONFIG)
    return pipeline


def earned(feeds: list[bytes], count: int, rounds: int, head: Sequence[bytes] = ()) -> Spread:
    """CPU µs per event that the fast path saves on ``feeds`` (after ``head``), interleaved rounds."""

    def run(make: Callable[[], StreamPipeline]) -> float:
        pipeline = make()
        for ev in head:
            pipeline.feed(ev)
        return cpu_time(lambda: [pipeline.feed(f) for f in feeds])

    savings = []
    for _ in range(rounds):
        reference, production = run(reference_pipeline), run(new_pipeline)
        savings.append((reference - production) / count * 1e6)
    return Spread.of(savings)


def fast_path_table(rounds: int, quick: bool = False) -> str:
    """What the fast path earns: CPU µs per event of the reference alone less the production
    translator's, one event per feed for each layout's steady events, and the batched streams."""
    n = 400 if quick else 4000
    out = [
        f"What the fast path earns: CPU µs per event, the reference translator alone less the production one,"
        f" median (min–max) of {rounds} interleaved rounds; one event per `feed`, the steady part of a"
        f" {n:,}-event text block:",
        "",
        "| upstream layout | " + " | ".join(STEADY.values()) + " |",
        "|---|" + "---|" * len(STEADY),
    ]
    for layout, label in LAYOUTS.items():
        cells = []
        for kind in STEADY:
            head, body, _ = layout_stream(layout, kind, n)
            cells.append(f"{earned(body, n, rounds, head).fmt()} µs")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")
    events = 2000 if quick else 20000
    for name, tokens, split in (
        ("(a) typical, 4 KiB pieces", typical_tokens, pieces_of),
        ("(b) tag-free, 4 KiB pieces", plain_tokens, pieces_of),
    ):
        stream = message_stream(tokens(events))
        count = len(SSEDecoder().feed(stream))
        out.append(f"{name}: {earned(split(stream), count, rounds).fmt()} µs per event")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="short streams, for a smoke run")
    args = parser.parse_args()
    print(deployment_table(max(5, args.rounds), args.quick))
    print()
    print(fast_path_table(max(5, args.rounds), args.quick))
    print()
    rows = run(args.events if not args.quick else 2000, max(5, args.rounds))
    print(f"messages stream in process, policy unsigned: median (min–max) of {rows[0]['rounds']} rounds")
    for row in rows:
        print(
            f"  {row['stream']} ({row['events']:,} events)\n"
            f"    split+rejoin baseline {row['baseline_events_per_s'].fmt(',.0f')} events/s\n"
            f"    translator            {row['translator_events_per_s'].fmt(',.0f')} events/s\n"
            f"    ratio {row['ratio'].fmt()}, added {row['added_us_per_event'].fmt()} µs/event"
        )


if __name__ == "__main__":
    main()
