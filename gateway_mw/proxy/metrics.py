"""``GET /metrics``: the middleware's statistics and the gateway's own counters and histograms,
written by prometheus-client.

One process: the application's own registry is exposed. Several (gunicorn ``-w N``): set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the workers start; every worker then
writes its values there and a scrape of any worker reads all of them, summed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from ..record import ReasoningRecord
from ..stats import ThinkExtractStats

__all__ = ["CONTENT_TYPE", "Counters", "GatewayMetrics", "multiprocess_dir"]

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

# Seconds: from a few milliseconds (a cached answer) to the ten minutes of a long generation.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


@dataclass
class Counters:
    """What the gateway itself saw in this process (``/metrics`` adds up every worker's)."""

    requests: int = 0
    upstream_connect_errors: int = 0
    upstream_timeouts: int = 0
    upstream_dropped: int = 0
    client_disconnects: int = 0
    client_auth_failures: int = 0


def multiprocess_dir() -> str | None:
    """The directory of prometheus-client's multiprocess mode, when it is on."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


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
        self._families: dict[str, Counter] = {}
        self._seen: dict[tuple[str, tuple[str, ...]], float] = {}
        self.sync()

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
                    if isinstance(value, dict):
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

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]  # registers itself
        return bytes(generate_latest(registry))
