"""Chat completions in the deployment pattern: many concurrent streams, one event per write, the
chunk layout of each upstream server (``layouts.py``), short (20-event) and long (2,000-event) streams.

1. In process: every stream's pipeline fed one event per ``feed``, the streams interleaved event by
   event (as a gateway serving many of them does), next to the split-and-rejoin baseline fed the same
   way. CPU time; the added cost per event, and per stream for the short ones.
2. End to end in one process: an upstream writing one event per write (pausing between writes so
   that the gateway reads each event on its own, as when tokens trickle in; and, for comparison,
   without the pause), a proxying gateway (``ClientSession`` → ``StreamResponse``) with and without
   the middleware, and a client, 200 concurrent streams; rounds alternate between the two gateways,
   each going first in every other round. A control row puts two gateways without it side by side.
   The ratio is throughput with the middleware over throughput without, from CPU time.

    python bench/deployment.py [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import aiohttp
import layouts
from aiohttp import web
from common import Spread, cpu_time, free_port, interleaved, steady_cost

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder

ROUTE = "/v1/chat/completions"
CONFIG = ThinkExtractConfig()


# -- 1. in process --------------------------------------------------------------------------------


def _baseline(events: list[bytes], streams: int) -> None:
    decoders = [SSEDecoder() for _ in range(streams)]
    for ev in events:
        for decoder in decoders:
            b"".join(e.raw for e in decoder.feed(ev))
    for decoder in decoders:
        decoder.finish()


def _middleware(events: list[bytes], streams: int) -> None:
    pipelines = [StreamPipeline("chat", CONFIG) for _ in range(streams)]
    for ev in events:
        for pipeline in pipelines:
            pipeline.feed(ev)
    for pipeline in pipelines:
        pipeline.finish()


def in_process_row(layout: str, kind: str, n: int, streams: int, rounds: int) -> dict[str, Any]:
    """``streams`` streams of ``n`` events each, one event per feed, interleaved."""
    events = layouts.stream(layout, kind, n)
    total = len(events) * streams
    times = interleaved(
        {
            "baseline": lambda: cpu_time(lambda: _baseline(events, streams)),
            "middleware": lambda: cpu_time(lambda: _middleware(events, streams)),
        },
        rounds,
    )
    pairs = list(zip(times["baseline"], times["middleware"], strict=True))
    return {
        "baseline_us": Spread.of([b / total * 1e6 for b, _ in pairs]),
        "added_us": Spread.of([(m - b) / total * 1e6 for b, m in pairs]),
        "added_stream_us": Spread.of([(m - b) / streams * 1e6 for b, m in pairs]),
    }


def steady_row(layout: str, kind: str, n: int, rounds: int) -> dict[str, Any]:
    """The steady cost alone: a long stream's events past its first few, one event per feed."""
    events = layouts.stream(layout, kind, n)
    return steady_cost(events[:4], events[4:-2], events[-2:], lambda: StreamPipeline("chat", CONFIG), rounds)


def in_process_tables(rounds: int, quick: bool = False, goals: list[str] | None = None) -> str:
    """The in-process tables; ``goals`` (if given) gets one line per goal, measured."""
    long_n = 2000 if not quick else 400
    short_streams = 500 if not quick else 50
    out = [
        f"In process, one event per `feed`: the steady part of a {long_n:,}-event stream (events after the"
        f" fourth), CPU time added over split-and-rejoin fed the same way, median (min–max) of {rounds}"
        " interleaved rounds:",
        "",
        "| upstream layout | baseline per event | added: steady content | added: steady reasoning |",
        "|---|---|---|---|",
    ]
    steady_worst = -1e9
    for layout, label in layouts.LAYOUTS.items():
        content = steady_row(layout, "content", long_n, rounds)
        reasoning = steady_row(layout, "reasoning", long_n, rounds)
        steady_worst = max(steady_worst, content["added_us"].median, reasoning["added_us"].median)
        out.append(
            f"| {label} | {content['baseline_us'].fmt()} µs | {content['added_us'].fmt()} µs"
            f" | {reasoning['added_us'].fmt()} µs |"
        )
    out += [
        "",
        f"In process, whole streams, one event per `feed`, {short_streams} streams interleaved event by event:"
        " CPU time added (20-event streams: per stream, set-up and first events of each channel included;"
        f" then per event), median (min–max) of {rounds} interleaved rounds:",
        "",
        "| upstream layout | stream | 20 events: added per stream | 20 events: per event"
        f" | {long_n:,} events: per event |",
        "|---|---|---|---|---|",
    ]
    stream_worst = tagged_worst = -1e9
    for layout, label in layouts.LAYOUTS.items():
        for kind in ("typical", "tagged"):
            short = in_process_row(layout, kind, 20, short_streams, rounds)
            long = in_process_row(layout, kind, long_n, 2, rounds)
            if kind == "typical":
                stream_worst = max(stream_worst, short["added_stream_us"].median)
            else:
                tagged_worst = max(tagged_worst, long["added_us"].median)
            out.append(
                f"| {label} | {layouts.STREAMS[kind]} | {short['added_stream_us'].fmt()} µs"
                f" | {short['added_us'].fmt()} µs | {long['added_us'].fmt()} µs |"
            )
    if goals is not None:
        goals += [
            _goal("added CPU per steady event, one event per feed, worst layout", steady_worst, 1.0, "µs"),
            _goal("a whole 20-event stream (reasoning, then answer), worst layout", stream_worst, 20.0, "µs"),
            _goal("a tag every 4 events, per event, worst layout", tagged_worst, 5.0, "µs"),
        ]
    return "\n".join(out)


def _goal(what: str, value: float, bound: float, unit: str, at_least: bool = False) -> str:
    met = value >= bound if at_least else value <= bound
    sign = "≥" if at_least else "≤"
    bound_text, value_text = f"{sign} {bound:g} {unit}".strip(), f"{value:.2f} {unit}".strip()
    return f"| {what} | {bound_text} | {value_text} | {'met' if met else 'not met'} |"


# -- 2. end to end, one process ---------------------------------------------------------------------


# Two turns of the event loop between an upstream's writes: enough that a gateway serving every
# stream reads each event on its own, as it does when tokens trickle in (``PACED`` below); with no
# pause the upstream writes its whole stream at once and the gateway reads it in a few pieces.
PACED = 2


def upstream_app(streams: dict[tuple[str, str, int], list[bytes]], pause: int = PACED) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        key = (request.query["layout"], request.query["kind"], int(request.query["n"]))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in streams[key]:  # one event per write, as model servers send tokens
            await resp.write(piece)
            for _ in range(pause):
                await asyncio.sleep(0)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post(ROUTE, handler)
    return app


READS = web.AppKey("reads", list)  # [pieces read from the upstream] in one gateway


def gateway_app(upstream_port: int, with_middleware: bool, config: ThinkExtractConfig = CONFIG) -> web.Application:
    async def proxy(request: web.Request) -> web.StreamResponse:
        session: aiohttp.ClientSession = request.app["session"]
        reads = request.app[READS]
        url = f"http://127.0.0.1:{upstream_port}{ROUTE}"
        async with session.post(url, params=request.query, data=b"{}") as up:
            resp = web.StreamResponse(headers={"Content-Type": up.headers["Content-Type"]})
            await resp.prepare(request)
            async for piece in up.content.iter_any():
                reads[0] += 1
                await resp.write(piece)
            await resp.write_eof()
            return resp

    async def on_startup(app: web.Application) -> None:
        app["session"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def on_cleanup(app: web.Application) -> None:
        await app["session"].close()

    app = web.Application()
    app[READS] = [0]
    if with_middleware:
        setup(app, config)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_post(ROUTE, proxy)
    return app


async def _start(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


async def _read(session: aiohttp.ClientSession, port: int, params: dict[str, str], streams: int) -> None:
    async def one() -> None:
        async with session.post(f"http://127.0.0.1:{port}{ROUTE}", params=params, data=b"{}") as resp:
            async for _ in resp.content.iter_any():
                pass

    await asyncio.gather(*(one() for _ in range(streams)))


class EndToEnd(NamedTuple):
    ratio: Spread  # throughput with the middleware over without
    events_per_read: float  # events per piece the gateway read from its upstream
    cpu_us: float  # the whole process's CPU per event without the middleware, median of the rounds


def end_to_end(
    streams: int,
    n: int,
    rounds: int,
    kinds: tuple[str, ...],
    config: ThinkExtractConfig = CONFIG,
    which: tuple[str, ...] = tuple(layouts.LAYOUTS),
    pause: int = PACED,
    control: bool = False,
) -> dict[tuple[str, str], EndToEnd]:
    """Per (layout, kind): the throughput ratio, from the CPU time of the whole process (upstream,
    gateway and clients share it), and how many events each gateway read held. ``control``: the
    second gateway has no middleware either, so that the ratio shows the harness's own spread."""
    specs = [(layout, kind, n) for layout in which for kind in kinds]

    async def main() -> dict[tuple[str, str], EndToEnd]:
        up_runner, up_port = await _start(upstream_app({s: layouts.stream(*s) for s in specs}, pause))
        plain_app, mw_app = gateway_app(up_port, False), gateway_app(up_port, not control, config)
        plain_runner, plain_port = await _start(plain_app)
        mw_runner, mw_port = await _start(mw_app)
        results: dict[tuple[str, str], EndToEnd] = {}
        try:
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as session:
                for layout, kind, _ in specs:
                    params = {"layout": layout, "kind": kind, "n": str(n)}
                    await _read(session, plain_port, params, streams)  # warm up both
                    await _read(session, mw_port, params, streams)
                    times: dict[str, list[float]] = {"without": [], "with": []}
                    mw_app[READS][0] = 0
                    order = [("without", plain_port), ("with", mw_port)]
                    for _ in range(rounds):
                        order.reverse()  # each gateway goes first in every other round
                        for name, port in order:
                            t0 = time.process_time()
                            await _read(session, port, params, streams)
                            times[name].append(time.process_time() - t0)
                    pairs = zip(times["without"], times["with"], strict=True)
                    per_round = len(layouts.stream(layout, kind, n)) * streams
                    results[layout, kind] = EndToEnd(
                        Spread.of([a / b for a, b in pairs]),
                        per_round * rounds / mw_app[READS][0],
                        Spread.of([t / per_round * 1e6 for t in times["without"]]).median,
                    )
        finally:
            for runner in (mw_runner, plain_runner, up_runner):
                await runner.cleanup()
        return results

    return asyncio.run(main())


@contextlib.contextmanager
def timed_feed() -> Iterator[list[int]]:
    """``StreamPipeline.feed`` timed around each call while in the block: [nanoseconds, calls]."""
    totals = [0, 0]
    original = StreamPipeline.feed
    clock = time.perf_counter_ns

    def feed(self: StreamPipeline, chunk: bytes) -> bytes:
        start = clock()
        out = original(self, chunk)
        totals[0] += clock() - start
        totals[1] += 1
        return out

    StreamPipeline.feed = feed  # type: ignore[method-assign]
    try:
        yield totals
    finally:
        StreamPipeline.feed = original  # type: ignore[method-assign]


def feed_in_place(streams: int, n: int, layout: str = "vllm", kind: str = "content") -> tuple[float, float]:
    """What one ``feed`` of a one-event read takes, in µs: inside the translating gateway of an
    end-to-end run (the event loop's other work between two calls), and in process, the same
    streams interleaved event by event. The same timer in both."""
    with timed_feed() as in_place:
        end_to_end(streams, n, 1, (kind,), which=(layout,))
    with timed_feed() as in_process:
        _middleware(layouts.stream(layout, kind, n), streams)
    return in_place[0] / in_place[1] / 1e3, in_process[0] / in_process[1] / 1e3


def end_to_end_table(rounds: int, quick: bool = False, goals: list[str] | None = None) -> str:
    streams, n = (50, 40) if quick else (200, 100)
    rounds = min(rounds, 7)  # a round is long: seven alternating rounds per cell at most
    # ... but a paced round's ratio moves by several percent even between two identical gateways
    # (the control row): more of them where each read holds one event.
    paced_rounds = rounds if quick else 12
    kinds = ("typical", "content")
    paced = end_to_end(streams, n, paced_rounds, kinds)
    burst = end_to_end(streams, n, rounds, kinds, pause=0)
    if goals is not None:
        worst = min(r.ratio.median for r in paced.values())
        goals.append(_goal("end to end, one event per read, throughput ratio, worst cell", worst, 0.95, "", True))
    per_read = sorted({round(r.events_per_read, 2) for r in paced.values()})
    cpu = sorted(r.cpu_us for r in paced.values())
    out = [
        f"End to end in one process (upstream, gateway, clients), {streams} concurrent streams × {n} events, one"
        " event per upstream write, the upstream pausing two turns of the event loop between writes so that the"
        f" gateway reads each event on its own (events per gateway read, measured: {', '.join(map(str, per_read))};"
        f" the whole process's CPU per event without the middleware: {cpu[0]:.0f}–{cpu[-1]:.0f} µs)."
        " Throughput with the middleware over without, from the process's CPU time, median (min–max) of"
        f" {paced_rounds} alternating rounds:",
        "",
        "| upstream layout | typical (reasoning, then answer) | tag-free |",
        "|---|---|---|",
    ]
    for layout, label in layouts.LAYOUTS.items():
        out.append(f"| {label} | {paced[layout, 'typical'].ratio.fmt()} | {paced[layout, 'content'].ratio.fmt()} |")
    burst_reads = sorted({round(r.events_per_read) for r in burst.values()})
    out += [
        "",
        "The same with no pause: each upstream writes its whole stream at once, and the gateway reads it in a"
        f" few large pieces (events per read: {', '.join(map(str, burst_reads))}), so the fast path takes runs of"
        f" events and the gateway without the middleware has even less to do per event ({rounds} rounds):",
        "",
        "| upstream layout | typical (reasoning, then answer) | tag-free |",
        "|---|---|---|",
    ]
    for layout, label in layouts.LAYOUTS.items():
        out.append(f"| {label} | {burst[layout, 'typical'].ratio.fmt()} | {burst[layout, 'content'].ratio.fmt()} |")
    out += [
        "",
        "Where the end-to-end difference lies, one event per read, vLLM layout, tag-free, same harness: first a"
        " control, the same gateway without the middleware on both sides (what the harness itself reads as a"
        " difference: a cell within this spread of 1 is no measurable cost); the middleware installed but the"
        " route not one of its own; the route its own but chat translation off (the request is looked at, the"
        " response passes); translating. The gateway without the middleware does no per-event work at all, so"
        " this ratio also carries the cost of reading SSE at all:",
        "",
        "| gateway with the middleware | throughput ratio |",
        "|---|---|",
    ]
    control = end_to_end(streams, n, paced_rounds, ("content",), CONFIG, ("vllm",), control=True)["vllm", "content"]
    out.append(f"| control: no middleware on either side | {control.ratio.fmt()} |")
    variants = (
        ("installed, route not its own", ThinkExtractConfig(routes={"/v1/other": "chat"})),
        ("route its own, chat translation off", ThinkExtractConfig(chat_enabled=False)),
        ("translating", CONFIG),
    )
    for label, config in variants:
        ratio = end_to_end(streams, n, paced_rounds, ("content",), config, ("vllm",))["vllm", "content"].ratio
        out.append(f"| {label} | {ratio.fmt()} |")
    in_place, in_process = feed_in_place(streams, n)
    out += [
        "",
        f"The same stream's `StreamPipeline.feed`, timed around each call: {in_place:.2f} µs per one-event read"
        f" inside the translating gateway of one such run, {in_process:.2f} µs in process ({streams} streams"
        " interleaved event by event, the same timer). Between two calls the event loop runs the upstream, the"
        " sockets and the clients, and the translator's code and data are no longer in the CPU's caches.",
    ]
    return "\n".join(out)


def tables(rounds: int, quick: bool = False) -> str:
    goals: list[str] = []
    body = in_process_tables(rounds, quick, goals) + "\n\n" + end_to_end_table(rounds, quick, goals)
    head = [
        "The goals of this pattern, measured in this run:",
        "",
        "| goal | bound | measured | |",
        "|---|---|---|---|",
    ]
    return "\n".join(head + goals) + "\n\n" + body


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--part", choices=["all", "in-process", "e2e"], default="all")
    args = parser.parse_args()
    if args.part == "in-process":
        print(in_process_tables(args.rounds, args.quick))
    elif args.part == "e2e":
        print(end_to_end_table(args.rounds, args.quick))
    else:
        print(tables(args.rounds, args.quick))


if __name__ == "__main__":
    main()
