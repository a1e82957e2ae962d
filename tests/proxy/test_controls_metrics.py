"""What an operator reads of the reasoning controls: ``/metrics`` counts them by surface, intent and
outcome, from the middleware's statistics (in one process here; under gunicorn's workers, summed, in
:mod:`.test_controls_gateway`)."""

from __future__ import annotations

from gateway_mw.proxy import Counters, GatewayMetrics, ThinkExtractStats

from .support import samples

NAME = "gateway_mw_reasoning_controls"


def lines(exposition: bytes) -> list[str]:
    """The family's lines as written, but for the ``_created`` stamps (the time each series began)."""
    return [line for line in exposition.decode().splitlines() if NAME in line and f"{NAME}_created" not in line]


def test_controls_are_counted_by_surface_intent_and_outcome() -> None:
    stats = ThinkExtractStats()
    metrics = GatewayMetrics(stats, Counters())
    assert lines(metrics.exposition()) == []  # no control read yet: no series
    stats.surface("chat").controls.update({"off:applied": 3, "effort:nearest": 1})
    stats.surface("ollama").controls["on:unsupported"] = 2
    help_ = (
        f"# HELP {NAME}_total Requests whose reasoning control was read, by surface, intent (default, off, on, "
        "effort, budget) and outcome (unchanged, applied, nearest, unsupported)."
    )
    assert lines(metrics.exposition()) == [
        help_,
        f"# TYPE {NAME}_total counter",
        f'{NAME}_total{{intent="off",outcome="applied",surface="chat"}} 3.0',
        f'{NAME}_total{{intent="effort",outcome="nearest",surface="chat"}} 1.0',
        f'{NAME}_total{{intent="on",outcome="unsupported",surface="ollama"}} 2.0',
    ]
    stats.surface("chat").controls["off:applied"] += 2
    stats.surface("messages").controls["budget:nearest"] = 1
    got = samples(metrics.exposition().decode())
    assert {labels: n for (name, labels), n in got.items() if name == f"{NAME}_total"} == {
        (("intent", "off"), ("outcome", "applied"), ("surface", "chat")): 5.0,
        (("intent", "effort"), ("outcome", "nearest"), ("surface", "chat")): 1.0,
        (("intent", "on"), ("outcome", "unsupported"), ("surface", "ollama")): 2.0,
        (("intent", "budget"), ("outcome", "nearest"), ("surface", "messages")): 1.0,
    }
    assert not [name for name, _ in got if name.startswith("thinkextract_controls")]  # one metric, not two
