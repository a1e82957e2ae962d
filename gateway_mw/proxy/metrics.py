"""``GET /metrics``: the middleware's statistics and the gateway's own counters and histograms,
written by prometheus-client.

One process: the application's own registry is exposed, with prometheus-client's process collector.
Several (gunicorn ``-w N``): set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the workers
start; every worker then writes its values there and a scrape of any worker reads all of them, summed
(the open streams of live workers; the process metrics of each live worker, by ``pid``).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, fields

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

from ..record import ReasoningRecord
from ..stats import ThinkExtractStats

__all__ = ["CONTENT_TYPE", "OUTCOMES", "Counters", "GatewayMetrics", "multiprocess_dir", "sweep_dead_workers"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_HELP = {
    "seen": "Responses on the surface's routes.",
    "translated": "Responses that went through the translator.",
    "passed_through": "Responses left untouched, by reason.",
    "reasoning_blocks": "Reasoning blocks moved into native fields.",
    "reasoning_chars": "Characters of reasoning moved into native fields.",
    "unclosed_blocks": "Reasoning blocks still open at the end of a response.",
    "cap_overflows": "Buffered blocks released as content at max_buffer_bytes.",
    "unreadable_events": "Data events passed on untranslated because they could not be read.",
    "oversized_events": "Events over max_event_bytes, streamed through raw.",
    "translation_errors": "Responses in which a translator failed (the failing event passed as it came).",
    "budgets": "Streams whose reasoning budget the gateway enforced, by what came of it.",
    "budget_reasoning_events": "Reasoning events counted on streams whose budget the gateway enforced.",
}

_RECORD_HELP = {
    "written": "Reasoning record: entries written (one per key an answer can be found by).",
    "hits": "Reasoning record: keys asked for and found (reasoning restored from them).",
    "misses": "Reasoning record: keys asked for and not found.",
    "evicted": "Reasoning record: entries removed before their time to keep its bounds.",
    "backend_errors": "Reasoning record: reads and writes that failed or timed out (answered as no record).",
    "too_large": "Reasoning record: entries not written, over the per-entry cap.",
    "dropped": "Reasoning record: entries not written, too many writes in flight.",
}

CONTROLS = "gateway_mw_reasoning_controls"  # exposed as ..._total
_CONTROLS_HELP = (
    "Requests whose reasoning control was read, by surface, intent (default, off, on, effort, budget) and "
    "outcome (unchanged, applied, nearest, unsupported)."
)

# Seconds: from a few milliseconds (a cached answer) to the ten minutes of a long generation.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


@dataclass
class Counters:
    """What the gateway itself saw in this process (``/metrics`` adds up every worker's)."""

    upstream_connect_errors: int = 0
    upstream_timeouts: int = 0
    upstream_dropped: int = 0
    client_disconnects: int = 0
    client_auth_failures: int = 0


OUTCOMES = ("completed", "client_gone", "upstream_dropped", "timed_out", "cancelled")
"""How a relayed stream ended: its end reached the client; the client left; the upstream failed; the
upstream said nothing for ``read_timeout``; the gateway's stop cancelled it (``shutdown_timeout``)."""

_PROCESS_HELP = {
    "process_virtual_memory_bytes": "Virtual memory size in bytes.",
    "process_resident_memory_bytes": "Resident memory size in bytes.",
    "process_start_time_seconds": "Start time of the process since unix epoch in seconds.",
    "process_cpu_seconds_total": "Total user and system CPU time spent in seconds.",
    "process_open_fds": "Number of open file descriptors.",
    "process_max_fds": "Maximum number of open file descriptors.",
}
_LIVE_FILE = re.compile(r"gauge_live\w*?_(\d+)\.db")


def multiprocess_dir() -> str | None:
    """The directory of prometheus-client's multiprocess mode, when it is on."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def sweep_dead_workers(path: str) -> None:
    """Forget the live gauges (open streams, process metrics) of worker processes that are gone: a
    worker killed mid-stream never lowered its gauge. (gunicorn's ``child_exit`` hook of
    :mod:`.gunicorn_conf` does this at once; this covers any other way of running the workers.)"""
    from prometheus_client import multiprocess

    with contextlib.suppress(OSError):
        for name in os.listdir(path):
            found = _LIVE_FILE.fullmatch(name)
            if found is None:
                continue
            pid = int(found.group(1))
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
            except PermissionError:
                pass  # alive, another user's


class GatewayMetrics:
    """The metrics of one application: the live counters are mirrored into prometheus-client
    counters (by their increase since the last look), the histograms observed directly."""

    def __init__(
        self, stats: ThinkExtractStats | None, counters: Counters, record: ReasoningRecord | None = None
    ) -> None:
        self.stats = stats
        self.counters = counters
        self.record = record
        self.registry = CollectorRegistry(auto_describe=False)
        self.latency = Histogram(
            "gateway_proxy_request_duration_seconds",
            "Forwarded requests: from the request to the end of the answer, by surface.",
            ["surface"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.ttfb = Histogram(
            "gateway_proxy_time_to_first_byte_seconds",
            "Forwarded requests: from the request to the upstream's first body bytes, by surface.",
            ["surface"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            "gateway_proxy_requests",
            "Requests on the forwarded routes, by surface, status and client key alias.",
            ["surface", "status", "key"],
            registry=self.registry,
        )
        self.open_streams = Gauge(
            "gateway_proxy_open_streams",
            "Streams being relayed now, by surface.",
            ["surface"],
            multiprocess_mode="livesum",
            registry=self.registry,
        )
        self.streams = Counter(
            "gateway_proxy_streams",
            "Streams relayed, by surface and outcome (completed, client_gone, upstream_dropped, timed_out, cancelled,"
            " budget: ended by the reasoning budget the gateway enforces, its continuation a stream of its own).",
            ["surface", "outcome"],
            registry=self.registry,
        )
        self.tokens = Counter(
            "gateway_proxy_tokens",
            "Tokens the upstream reported in its usage objects, by surface, client key alias and kind "
            "(prompt, completion, reasoning).",
            ["surface", "key", "kind"],
            registry=self.registry,
        )
        self._process: dict[str, Gauge] = {}
        if multiprocess_dir() is None:
            ProcessCollector(registry=self.registry)
        else:  # the collector reads this process alone: each worker writes its own values, by pid
            for name, help_ in _PROCESS_HELP.items():
                self._process[name] = Gauge(name, help_, multiprocess_mode="liveall", registry=self.registry)
        self._families: dict[str, Counter] = {}
        self._seen: dict[tuple[str, tuple[str, ...]], float] = {}
        self.sync()

    def sample_process(self) -> None:
        """Write this process's memory, CPU and file descriptors to its multiprocess gauges (a worker
        does so every few seconds, and before it answers a scrape)."""
        if not self._process:
            return
        for family in ProcessCollector(registry=None).collect():
            for sample in family.samples:
                gauge = self._process.get(sample.name)
                if gauge is not None:
                    gauge.set(sample.value)

    def _family(self, name: str, help_: str, labels: tuple[str, ...]) -> Counter:
        family = self._families.get(name)
        if family is None:
            family = self._families[name] = Counter(name, help_, list(labels), registry=self.registry)
        return family

    def _mirror(self, name: str, help_: str, labels: dict[str, str], value: float) -> None:
        key = (name, tuple(labels.values()))
        seen = self._seen.get(key)
        if seen is not None and value <= seen:
            return
        family = self._family(name, help_, tuple(labels))
        child = family.labels(**labels) if labels else family
        child.inc(value - (seen or 0.0))  # a new series starts at what is there (zero, usually)
        self._seen[key] = value

    def sync(self) -> None:
        """Bring the prometheus-client counters up to the live counts."""
        if self.stats is not None:
            for surface, values in self.stats.snapshot().items():
                for key, value in values.items():
                    help_ = _HELP.get(key, f"gateway_mw statistic {key}.")
                    if key == "controls":  # keyed "<intent>:<outcome>"
                        for said, n in value.items():
                            intent, _, outcome = said.partition(":")
                            labels = {"surface": surface, "intent": intent, "outcome": outcome}
                            self._mirror(CONTROLS, _CONTROLS_HELP, labels, n)
                    elif isinstance(value, dict):
                        for reason, n in value.items():
                            self._mirror(f"thinkextract_{key}", help_, {"surface": surface, "reason": reason}, n)
                    else:
                        self._mirror(f"thinkextract_{key}", help_, {"surface": surface}, value)
        for f in fields(self.counters):
            help_ = f"Gateway: {f.name.replace('_', ' ')}."
            self._mirror(f"gateway_proxy_{f.name}", help_, {}, float(getattr(self.counters, f.name)))
        if self.record is not None:
            counts = self.record.counts
            for f in fields(counts):
                help_ = _RECORD_HELP.get(f.name, f"Reasoning record: {f.name.replace('_', ' ')}.")
                self._mirror(f"gateway_mw_record_{f.name}", help_, {}, float(getattr(counts, f.name)))

    def exposition(self) -> bytes:
        """The Prometheus text format: this process, or every process in multiprocess mode."""
        self.sync()
        path = multiprocess_dir()
        if path is None:
            return bytes(generate_latest(self.registry))
        from prometheus_client import multiprocess

        self.sample_process()
        sweep_dead_workers(path)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]  # registers itself
        return bytes(generate_latest(registry))
