"""What the readings kept for the scopes' next requests hold in memory, next to what they are counted as.

Each request of 32 KiB or more keeps its reading for its scope's next request (``history.carry``),
bounded by what the readings are counted as (the body, the rewritten body, and ``READING_BYTES`` a
message: 64 MiB in all, 8 conversations a scope). Here 100 conversations, each in its own scope, send
one request each (the agent histories of ``bench/history.py``, 1 MB, nothing to change and to
rewrite; then 1 MiB of the shortest turns); the figure is what ``tracemalloc`` sees held once they are
done (the bodies themselves dropped by the caller), next to the count the bound is kept on.

    python bench/carried.py
"""

from __future__ import annotations

import gc
import json
import tracemalloc

from history import CONFIG, _side, histories

from gateway_mw.channels import Said
from gateway_mw.config import Surface
from gateway_mw.history import Request, record_entries, record_keys, transform_request
from gateway_mw.history.carry import CarriedStates

SAID = [Said(original="<think>It is sunny.</think>It is sunny.")]


def shortest_turns(surface: Surface) -> bytes:
    """About 1 MiB of the shortest turns a client sends (a question and a one-word answer)."""
    key = "input" if surface == "responses" else "messages"
    turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}] * 14_000
    return json.dumps({"model": "qwen3-32b", key: turns}).encode()


def held(surface: Surface, body: bytes, conversations: int = 100) -> tuple[float, float, int]:
    """(MiB counted, MiB held, readings kept) once ``conversations`` scopes each sent ``body``."""
    side = _side(surface)
    states = CarriedStates()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for scope in range(conversations):
        own = bytes(bytearray(body))  # each conversation's body its own object, as each request's is
        request = Request(side, own, (states, b"%d" % scope))
        record_keys(side, request, CONFIG)
        request.keep(transform_request(side, request, CONFIG))
        record_entries(side, request, SAID, CONFIG)
        del request, own
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    kept = sum(len(states.readings.of(b"%d" % scope)) for scope in range(conversations))
    return states.size / 2**20, used / 2**20, kept


def table() -> str:
    bodies = histories()
    out = [
        "| surface | history | counted | held | readings kept |",
        "|---|---|---|---|---|",
    ]
    cases = [(surface, f"1 MB, {state}", body) for (surface, size, state), body in bodies.items() if size == "1 MB"]
    cases += [(surface, "1 MiB of the shortest turns", shortest_turns(surface)) for surface in ("chat", "messages")]
    cases.append(("responses", "1 MiB of the shortest turns", shortest_turns("responses")))
    for surface, name, body in cases:
        counted, used, kept = held(surface, body)
        out.append(f"| {surface} | {name} | {counted:.1f} MiB | {used:.1f} MiB | {kept} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(table())
