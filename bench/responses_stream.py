"""Responses stream translation in process: events/s next to a split-and-rejoin baseline.

A realistic upstream Responses stream (``event:`` lines, ``sequence_number`` on every event, one
``response.output_text.delta`` per token, a ``response.completed`` repeating the whole output) is
fed in 4 KiB network pieces to ``StreamPipeline("responses", ThinkExtractConfig())``, and to a
baseline that only splits the stream into events and joins their bytes again. Rounds interleave
the two, so both see the same machine state; times are CPU time (steadier than wall time on a
shared machine), and the figures are medians with their min–max.

(a) typical: a reasoning block of N/2 deltas, then an answer of N/2 deltas;
(b) tag-free: N answer deltas, no tags at all.

Then the deployment pattern (``deployment_table``): one event per ``feed``, the steady part of a long
stream (the events after its first few), next to split-and-rejoin fed the same way, in the layouts
real servers write (``LAYOUTS``): steady answer text as it came, steady answer text after a reasoning
item (renumbered and moved), and steady reasoning. And the same streams batched (``batched_table``):
whole streams in 4 KiB network pieces, as a proxy that buffers hands them on.

    python bench/responses_stream.py [--events 20000] [--rounds 7] [--deployment] [--batched] [--quick]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from common import Spread, cpu_time, interleaved, pieces_of, split_and_rejoin, steady_cost

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline

MSG_ID = "msg_67ccd3a9da748190baa7f1570fe91ac6"
WORDS = [" step", " by", " step", " the", " sum", " of", " two", " and", " two", " is", " four."]


def _frame(body: dict[str, Any]) -> bytes:
    return f"event: {body['type']}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n".encode()


def _response(status: str, output: list[Any]) -> dict[str, Any]:
    return {
        "id": "resp_67ccd3a9da748190baa7f1570fe91ac6",
        "object": "response",
        "created_at": 1741476777,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "qwen3-32b",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 0.6,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 0.95,
        "truncation": "disabled",
        "usage": None,
        "metadata": {},
    }


def message_events(deltas: list[str], in_progress: bool = True) -> list[dict[str, Any]]:
    """The events of a whole upstream stream of one message item whose text arrives as ``deltas``,
    numbered; ``in_progress``: with the ``response.in_progress`` event OpenAI sends second."""
    text = "".join(deltas)
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    item = {"id": MSG_ID, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    done_item = {**item, "status": "completed", "content": [{**part, "text": text}]}
    at = {"item_id": MSG_ID, "output_index": 0, "content_index": 0}
    started = {"type": "response.in_progress", "response": _response("in_progress", [])}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("in_progress", [])},
        *([started] if in_progress else []),
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", **at, "part": part},
        *({"type": "response.output_text.delta", **at, "delta": d, "logprobs": []} for d in deltas),
        {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **at, "part": {**part, "text": text}},
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.completed", "response": _response("completed", [done_item])},
    ]
    return [{**e, "sequence_number": i} for i, e in enumerate(events)]


def upstream_stream(deltas: list[str]) -> bytes:
    """The whole upstream stream of one message item whose text arrives as ``deltas``."""
    return b"".join(_frame(e) for e in message_events(deltas))


def typical_deltas(n: int) -> list[str]:
    half = n // 2
    reasoning = ["<think>"] + [WORDS[i % len(WORDS)] for i in range(half - 2)] + ["</think>"]
    return reasoning + [WORDS[i % len(WORDS)] for i in range(n - len(reasoning))]


def plain_deltas(n: int) -> list[str]:
    return [WORDS[i % len(WORDS)] for i in range(n)]


def translated(pieces: list[bytes]) -> bytes:
    pipeline = StreamPipeline("responses", ThinkExtractConfig())
    out = [pipeline.feed(p) for p in pieces]
    return b"".join(out) + pipeline.finish()


def run(events: int = 20000, rounds: int = 7) -> list[dict[str, Any]]:
    """One row per stream kind: events/s of both paths, their ratio, and the added µs per event."""
    rows = []
    for name, deltas in (("typical", typical_deltas(events)), ("tag-free", plain_deltas(events))):
        pieces = pieces_of(upstream_stream(deltas))
        translated(pieces)  # warm up both paths
        split_and_rejoin(pieces)
        times = interleaved(
            {
                "baseline": lambda p=pieces: cpu_time(lambda: split_and_rejoin(p)),
                "translator": lambda p=pieces: cpu_time(lambda: translated(p)),
            },
            max(5, rounds),
        )
        t_base, t_mw = times["baseline"], times["translator"]
        n = len(deltas)
        rows.append(
            {
                "stream": name,
                "events": n,
                "translator_events_per_s": Spread.of([n / t for t in t_mw]),
                "baseline_events_per_s": Spread.of([n / t for t in t_base]),
                "ratio": Spread.of([b / m for b, m in zip(t_base, t_mw, strict=True)]),
                "added_us_per_event": Spread.of([(m - b) / n * 1e6 for b, m in zip(t_base, t_mw, strict=True)]),
            }
        )
    return rows


# -- the deployment pattern: one event per feed, each server's layout -------------------------------

LAYOUTS = {
    "openai": "OpenAI (`obfuscation`, `sequence_number` second)",
    "vllm": "vLLM (keys in alphabetical order)",
    "llamacpp": "llama.cpp (no indexes, no `sequence_number`)",
    "pyjson": "Python `json.dumps` spacing, no `event:` lines",
}
STEADY = {
    "content": "Hello",  # answer text from the start: passed as it came
    "answer": "<think>r</think>Hello",  # answer text after a reasoning item: renumbered and moved
    "reasoning": "<think>r",  # reasoning: written as reasoning deltas
}


def layout_event(layout: str, body: dict[str, Any]) -> bytes:
    """One event as ``layout``'s server writes it (``body`` in OpenAI's key order)."""
    if layout == "llamacpp":  # nlohmann::json: keys sorted, no indexes or numbers, event: lines
        body = {k: v for k, v in sorted(body.items()) if k not in ("output_index", "content_index", "sequence_number")}
        body.pop("logprobs", None)
        return (
            f"event: {body['type']}\ndata: {json.dumps(body, separators=(',', ':'), ensure_ascii=False)}\n\n".encode()
        )
    if layout == "vllm":  # pydantic's model_dump_json: the fields in the SDK's (alphabetical) order
        data = json.dumps(dict(sorted(body.items())), separators=(",", ":"), ensure_ascii=False)
        return f"event: {body['type']}\ndata: {data}\n\n".encode()
    if layout == "pyjson":
        return f"data: {json.dumps(body)}\n\n".encode()
    if body["type"] == "response.output_text.delta":  # OpenAI's own: the number second, obfuscation
        body = {"type": body["type"], "sequence_number": body["sequence_number"], **body, "obfuscation": "k2Zr"}
    return f"event: {body['type']}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n".encode()


def layout_stream(layout: str, deltas: list[str]) -> list[bytes]:
    """The events of a whole upstream stream whose one message's text arrives as ``deltas``."""
    return [layout_event(layout, e) for e in message_events(deltas, in_progress=False)]


def steady_row(layout: str, kind: str, n: int, rounds: int, config: ThinkExtractConfig) -> dict[str, Spread]:
    """The steady cost alone: the events of an ``n``-delta stream after its first few, one per feed,
    next to split-and-rejoin fed the same way."""
    events = layout_stream(layout, [STEADY[kind], *(WORDS[i % len(WORDS)] for i in range(n))])
    head, body, tail = events[:4], events[4:-4], events[-4:]

    return steady_cost(head, body, tail, lambda: StreamPipeline("responses", config), rounds)


def deployment_table(rounds: int, quick: bool = False) -> str:
    """The deployment pattern on the Responses surface, as a markdown table (with its caption)."""
    n = 2000 if not quick else 300
    rounds = max(5, rounds) if not quick else 3
    config = ThinkExtractConfig()
    out = [
        f"Responses in process, one event per `feed`: the steady part of a {n:,}-delta stream (events after"
        " the fourth), CPU time added over split-and-rejoin fed the same way, median (min–max) of"
        f" {rounds} interleaved rounds:",
        "",
        "| upstream layout | baseline per event | added: answer text | added: answer after reasoning"
        " (renumbered) | added: steady reasoning |",
        "|---|---|---|---|---|",
    ]
    for layout, label in LAYOUTS.items():
        rows = {kind: steady_row(layout, kind, n, rounds, config) for kind in STEADY}
        cells = " | ".join(f"{rows[kind]['added_us'].fmt()} µs" for kind in STEADY)
        out.append(f"| {label} | {rows['content']['baseline_us'].fmt()} µs | {cells} |")
    return "\n".join(out) + "\n"


def batched_row(layout: str, kind: str, n: int, rounds: int, config: ThinkExtractConfig) -> dict[str, Spread]:
    """A whole ``n``-delta stream in ``layout`` cut in 4 KiB pieces: µs per delta of split-and-rejoin,
    and what the pipeline adds to it."""
    pieces = pieces_of(b"".join(layout_stream(layout, [STEADY[kind], *(WORDS[i % len(WORDS)] for i in range(n))])))

    def translate() -> None:
        pipeline = StreamPipeline("responses", config)
        for piece in pieces:
            pipeline.feed(piece)
        pipeline.finish()

    times = interleaved(
        {"baseline": lambda: cpu_time(lambda: split_and_rejoin(pieces)), "translator": lambda: cpu_time(translate)},
        rounds,
    )
    pairs = list(zip(times["baseline"], times["translator"], strict=True))
    return {
        "baseline_us": Spread.of([b / n * 1e6 for b, _ in pairs]),
        "added_us": Spread.of([(m - b) / n * 1e6 for b, m in pairs]),
    }


def batched_table(rounds: int, quick: bool = False) -> str:
    """The layouts of :func:`deployment_table`, batched: whole streams in 4 KiB pieces."""
    n = 5000 if not quick else 300
    rounds = max(5, rounds) if not quick else 3
    config = ThinkExtractConfig()
    out = [
        f"Responses in process, batched: a whole {n:,}-delta stream in 4 KiB pieces, CPU time added over"
        f" split-and-rejoin per delta, median (min–max) of {rounds} interleaved rounds:",
        "",
        "| upstream layout | baseline per delta | added: answer text | added: answer after reasoning"
        " (renumbered) | added: steady reasoning |",
        "|---|---|---|---|---|",
    ]
    for layout, label in LAYOUTS.items():
        rows = {kind: batched_row(layout, kind, n, rounds, config) for kind in STEADY}
        cells = " | ".join(f"{rows[kind]['added_us'].fmt()} µs" for kind in STEADY)
        out.append(f"| {label} | {rows['content']['baseline_us'].fmt()} µs | {cells} |")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--deployment", action="store_true", help="the one-event-per-feed table only")
    parser.add_argument("--batched", action="store_true", help="the batched table of the same layouts only")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.deployment:
        print(deployment_table(args.rounds, args.quick))
        return
    if args.batched:
        print(batched_table(args.rounds, args.quick))
        return
    rows = run(args.events, args.rounds)
    print(
        f"Responses stream in process, {args.events:,} output_text.delta events, 4 KiB pieces, CPU time,"
        f" {max(5, args.rounds)} interleaved rounds: median (min–max)"
    )
    for row in rows:
        print(
            f"  {row['stream']:<9} translator {row['translator_events_per_s'].fmt(',.0f')} events/s"
            f" | baseline {row['baseline_events_per_s'].fmt(',.0f')} events/s"
            f" | ratio {row['ratio'].fmt()}"
            f" | added {row['added_us_per_event'].fmt()} µs/event"
        )


if __name__ == "__main__":
    main()
