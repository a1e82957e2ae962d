"""What each surface's fast paths earn: the steady cost per event of the production translator next to
its plain reference translator (the oracle the fast paths are proven against), one event per ``feed``,
each over split-and-rejoin fed the same way, in every upstream layout.

A fast path stays only where it earns at least 0.5 µs per event on a deployed layout.

``--fields``: instead, what chat's reasoning costs under both names (``chat_reasoning_field="both"``,
the default) next to one name (``reasoning_content``), the production translator, every layout.

``--batched``: instead, a whole short stream in one read (a 20-event tag-free chat stream: the role
chunk, the text, the finish, ``[DONE]``), through the production translator and the reference alone.

    python bench/fastpaths.py [--rounds 5] [--quick] [--fields | --batched]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NamedTuple

import layouts
import messages_stream
import responses_stream
from common import Spread, interleaved, no_collection

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.chat import ChatReference
from gateway_mw.surfaces.messages import MessagesReference
from gateway_mw.surfaces.responses import ResponsesReference

Streams = Callable[[str, str, int], list[bytes]]
"""(layout, kind of steady event, n) → a whole stream of about ``n`` events, one ``bytes`` per event."""


class Surface(NamedTuple):
    config: ThinkExtractConfig
    reference: Callable[[ThinkExtractConfig], Any]
    layouts: dict[str, str]
    kinds: dict[str, str]
    streams: Streams


def _messages(layout: str, kind: str, n: int) -> list[bytes]:
    head, body, tail = messages_stream.layout_stream(layout, kind, n)
    return [*head, *body, *tail]


def _responses(layout: str, kind: str, n: int) -> list[bytes]:
    words = responses_stream.WORDS
    return responses_stream.layout_stream(
        layout, [responses_stream.STEADY[kind], *(words[i % len(words)] for i in range(n))]
    )


SURFACES = {
    "chat": Surface(
        ThinkExtractConfig(),
        ChatReference,
        layouts.LAYOUTS,
        {k: layouts.STREAMS[k] for k in ("content", "reasoning")},
        layouts.stream,
    ),
    "messages": Surface(
        messages_stream.CONFIG, MessagesReference, messages_stream.LAYOUTS, messages_stream.STEADY, _messages
    ),
    "responses": Surface(
        ThinkExtractConfig(),
        ResponsesReference,
        responses_stream.LAYOUTS,
        {"content": "answer text", "answer": "answer after a reasoning item (renumbered)", "reasoning": "reasoning"},
        _responses,
    ),
}


def _steady(events: list[bytes], make: Callable[[], SSEDecoder | StreamPipeline]) -> float:
    """CPU seconds for the events past the first four, one per feed, after those set the stream up."""
    import time

    state = make()
    feed = state.feed if isinstance(state, StreamPipeline) else lambda ev: b"".join(e.raw for e in state.feed(ev))
    for ev in events[:4]:
        feed(ev)
    with no_collection():
        start = time.process_time()
        for ev in events[4:-2]:
            feed(ev)
        elapsed = time.process_time() - start
    for ev in events[-2:]:
        feed(ev)
    return elapsed


def row(surface: str, layout: str, kind: str, n: int, rounds: int) -> dict[str, Spread]:
    s = SURFACES[surface]
    events = s.streams(layout, kind, n)

    def with_reference() -> StreamPipeline:
        pipeline = StreamPipeline(surface, s.config)  # type: ignore[arg-type]
        pipeline._translator = s.reference(s.config)
        return pipeline

    times = interleaved(
        {
            "baseline": lambda: _steady(events, SSEDecoder),
            "production": lambda: _steady(events, lambda: StreamPipeline(surface, s.config)),  # type: ignore[arg-type]
            "reference": lambda: _steady(events, with_reference),
        },
        rounds,
    )
    body = len(events) - 6
    per = {name: [t / body * 1e6 for t in values] for name, values in times.items()}
    base = per["baseline"]
    return {
        "production": Spread.of([p - b for p, b in zip(per["production"], base, strict=True)]),
        "reference": Spread.of([r - b for r, b in zip(per["reference"], base, strict=True)]),
        "earns": Spread.of([r - p for r, p in zip(per["reference"], per["production"], strict=True)]),
    }


def table(rounds: int, quick: bool = False) -> str:
    n = 400 if quick else 2000
    out = [
        f"The steady part of a {n:,}-event stream, one event per `feed`: CPU time added over split-and-rejoin"
        f" by the production translator and by the reference alone, and what the fast paths earn (reference"
        f" minus production), µs per event, median (min–max) of {rounds} interleaved rounds:",
        "",
        "| surface | upstream layout | stream | production | reference | fast paths earn |",
        "|---|---|---|---|---|---|",
    ]
    for surface, s in SURFACES.items():
        for layout, label in s.layouts.items():
            for kind, kind_label in s.kinds.items():
                r = row(surface, layout, kind, n, rounds)
                out.append(
                    f"| {surface} | {label} | {kind_label} | {r['production'].fmt()}"
                    f" | {r['reference'].fmt()} | {r['earns'].fmt()} |"
                )
    return "\n".join(out)


def fields_table(rounds: int, quick: bool = False) -> str:
    """Chat's production translator with one reasoning name and with both, over split-and-rejoin."""
    n = 400 if quick else 2000
    configs = {
        "one": ThinkExtractConfig(chat_reasoning_field="reasoning_content"),
        "both": ThinkExtractConfig(chat_reasoning_field="both"),
    }
    out = [
        f"The steady part of a {n:,}-event chat stream, one event per `feed`: CPU time the production translator"
        f" adds over split-and-rejoin with `chat_reasoning_field` `reasoning_content` and `both`, and the"
        f" difference, µs per event, median (min–max) of {rounds} interleaved rounds:",
        "",
        "| upstream layout | stream | `reasoning_content` | `both` | both − one |",
        "|---|---|---|---|---|",
    ]
    for layout, label in layouts.LAYOUTS.items():
        for kind in ("reasoning", "typical", "content"):
            row = _fields_row(layouts.stream(layout, kind, n), configs, rounds)
            out.append(f"| {label} | {layouts.STREAMS[kind]} | {' | '.join(row)} |")
    return "\n".join(out)


def _fields_row(events: list[bytes], configs: dict[str, ThinkExtractConfig], rounds: int) -> tuple[str, str, str]:
    variants: dict[str, Callable[[], float]] = {"baseline": lambda: _steady(events, SSEDecoder)}
    for name, config in configs.items():
        variants[name] = lambda config=config: _steady(events, lambda: StreamPipeline("chat", config))
    per = {k: [t / (len(events) - 6) * 1e6 for t in v] for k, v in interleaved(variants, rounds).items()}
    one = [x - b for x, b in zip(per["one"], per["baseline"], strict=True)]
    both = [x - b for x, b in zip(per["both"], per["baseline"], strict=True)]
    cost = [b - o for b, o in zip(both, one, strict=True)]
    return Spread.of(one).fmt(), Spread.of(both).fmt(), Spread.of(cost).fmt()


def batched_table(rounds: int) -> str:
    """A 20-event tag-free chat stream fed in one read, every layout: CPU µs per stream."""
    import time

    config = ThinkExtractConfig()
    out = [
        "A 20-event tag-free chat stream in one read (the role chunk, the text, the finish, `[DONE]`): CPU time"
        f" per stream through the production translator and through the reference alone, µs, median (min–max)"
        f" of {rounds} interleaved rounds:",
        "",
        "| upstream layout | production | reference | production / reference |",
        "|---|---|---|---|",
    ]
    for layout, label in layouts.LAYOUTS.items():
        whole = b"".join(layouts.stream(layout, "content", 20))

        def timed(reference: bool, whole: bytes = whole) -> float:
            with no_collection():
                start = time.process_time()
                for _ in range(200):
                    pipeline = StreamPipeline("chat", config)
                    if reference:
                        pipeline._translator = ChatReference(config)
                    pipeline.feed(whole)
                    pipeline.finish()
                return (time.process_time() - start) / 200 * 1e6

        times = interleaved({"production": lambda: timed(False), "reference": lambda: timed(True)}, rounds)
        ratio = [p / r for p, r in zip(times["production"], times["reference"], strict=True)]
        out.append(
            f"| {label} | {Spread.of(times['production']).fmt()} | {Spread.of(times['reference']).fmt()}"
            f" | {Spread.of(ratio).fmt()} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--fields", action="store_true")
    parser.add_argument("--batched", action="store_true")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    if args.batched:
        print(batched_table(args.rounds))
    else:
        print(fields_table(rounds, args.quick) if args.fields else table(rounds, args.quick))


if __name__ == "__main__":
    main()
