"""What the benchmarks share: interleaved repetition, medians with their range, and the machine."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import platform
import socket
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder


@dataclass
class Spread:
    """The median of repeated measurements, with the smallest and the largest."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))

    def fmt(self, spec: str = ".2f", scale: float = 1.0) -> str:
        return f"{self.median * scale:{spec}} ({self.low * scale:{spec}}–{self.high * scale:{spec}})"


def interleaved(variants: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Run every variant once per round, in turn, ``rounds`` times: drift hits them all alike."""
    results: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            results[name].append(run())
    return results


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """Garbage collected before, and not during, a timed run in process (as ``timeit`` does): a
    collection walks the whole process's heap, the benchmark's own data included, and would land
    on whichever variant happened to trigger it. End-to-end runs keep the collector on."""
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def cpu_time(fn: Callable[[], object]) -> float:
    """CPU seconds this process spent in ``fn`` (steadier than wall time on a shared machine),
    with no garbage collection meanwhile."""
    with no_collection():
        start = time.process_time()
        fn()
        return time.process_time() - start


def machine() -> str:
    import aiohttp
    import msgspec

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores, {cpu}; CPython {platform.python_version()}, "
        f"aiohttp {aiohttp.__version__}, msgspec {msgspec.__version__}"
    )


def pieces_of(stream: bytes, size: int = 4096) -> list[bytes]:
    """``stream`` cut as a network would hand it over."""
    return [stream[i : i + size] for i in range(0, len(stream), size)]


def split_and_rejoin(pieces: list[bytes]) -> bytes:
    """The baseline: split the stream into SSE events and join their bytes again, the least any
    SSE-aware middleware does."""
    decoder = SSEDecoder()
    out = [b"".join(e.raw for e in decoder.feed(p)) for p in pieces]
    events, tail = decoder.finish()
    return b"".join(out) + b"".join(e.raw for e in events) + tail


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def wait_ready(port: int) -> None:
    """Until a server listens on ``port`` (a process started with spawn takes a moment)."""
    for _ in range(400):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def steady_cost(
    head: list[bytes], body: list[bytes], tail: list[bytes], make: Callable[[], StreamPipeline], rounds: int
) -> dict[str, Spread]:
    """The cost of ``body``'s events alone, one event per ``feed``, after ``head`` set the stream
    up: CPU µs per event of split-and-rejoin fed the same way, and what the pipeline adds to it."""

    def run(state: SSEDecoder | StreamPipeline) -> float:
        feed = state.feed if isinstance(state, StreamPipeline) else lambda ev: b"".join(e.raw for e in state.feed(ev))
        for ev in head:
            feed(ev)
        with no_collection():
            start = time.process_time()
            for ev in body:
                feed(ev)
            elapsed = time.process_time() - start
        for ev in tail:
            feed(ev)
        return elapsed

    times = interleaved({"baseline": lambda: run(SSEDecoder()), "middleware": lambda: run(make())}, rounds)
    pairs = list(zip(times["baseline"], times["middleware"], strict=True))
    return {
        "baseline_us": Spread.of([b / len(body) * 1e6 for b, _ in pairs]),
        "added_us": Spread.of([(m - b) / len(body) * 1e6 for b, m in pairs]),
    }
