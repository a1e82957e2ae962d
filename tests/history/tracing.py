"""What a run of requests leaves held in memory, measured as the bound tests compare it with what the
kept readings are counted at."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

from gateway_mw.history.carry import CarriedStates


def traced(run: Callable[[CarriedStates], object]) -> tuple[CarriedStates, int]:
    """``run`` once on states of its own (what any such run makes once in a process: the settings'
    tables, caches), then on fresh states while memory is traced: those states, and the bytes the
    traced run made and left held."""
    run(CarriedStates())
    states = CarriedStates()
    gc.collect()
    tracemalloc.start()
    try:
        run(states)
        gc.collect()
        return states, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
