"""What reading (and writing) the reasoning controls adds to the request side: agent histories of
200 KB and 1 MB on chat and messages, with no control field and with one, through the request side
with ``reasoning_controls`` on and off, in alternating rounds of one run.

With ``history_reasoning="pass"`` the request side read no body before the controls; it now reads
the control fields and the texts a switch may end, alone (the second table, next to ``json.loads``
of the same body for scale). The third: an agent's next request (the history, then two messages
more) so read alone, read whole and kept for the scope's next request (the first request the
gateway sees of a conversation), and read on from the scope's kept reading of the request before.

The request side is what the middleware runs for a body it reads, in process: the body read once
(``history.Request``: the surface's lean decode, which reads the control fields in the same pass),
the record's keys and the transform; with controls on, the intent read from that reading, the edits
written, and the body edited when there are edits. The history is the gateway's own output of an
agent's (nothing to rewrite: what most requests of a conversation are), so that the controls' part
is not hidden behind a rewrite.

    python bench/controls.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from common import Spread, interleaved, machine, no_collection
from history import TURN, chat_history, messages_history

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import Surface
from gateway_mw.controls import apply_edits, read_intent, read_with_texts, write_controls
from gateway_mw.history import Request, record_keys, transform_request
from gateway_mw.history.carry import CarriedStates
from gateway_mw.history.passed import read_on, read_whole
from gateway_mw.surfaces.registry import SURFACES

SIZES = {"200 KB": 200_000, "1 MB": 1_000_000}
WITH = ThinkExtractConfig(upstream_server="vllm", messages_policy="unsigned")
WITHOUT = WITH.replace(reasoning_controls=False)
CONTROL: dict[Surface, tuple[str, Any]] = {
    "chat": ("reasoning_effort", "none"),
    "messages": ("thinking", {"type": "disabled"}),
}


def bodies() -> dict[tuple[Surface, str, str], bytes]:
    """Each surface's history by size, as the upstream reads it already, without a control field
    and with one (at the end, where clients put it)."""
    out: dict[tuple[Surface, str, str], bytes] = {}
    for surface, make in (("chat", chat_history), ("messages", messages_history)):
        for size_name, size in SIZES.items():
            raw = make(max(1, size // TURN))
            rewritten = transform_request(SURFACES[surface], raw, WITH)
            request = json.loads(rewritten if rewritten is not None else raw)
            request.pop("thinking", None)  # Claude Code's shape carries one: the first state has none
            out[surface, size_name, "no control"] = json.dumps(request).encode()
            name, value = CONTROL[surface]
            out[surface, size_name, "a control"] = json.dumps({**request, name: value}).encode()
    return out


def request_side(surface: Surface, body: bytes, config: ThinkExtractConfig) -> bytes | None:
    """The middleware's request side for ``body``, in process (what ``incoming`` runs, less I/O)."""
    side = SURFACES[surface]
    read = Request(side, body)
    record_keys(side, read, config)
    new = transform_request(side, read, config)
    if not config.reasoning_controls:
        return new
    fields, texts = read.controls, read.texts()
    if fields is None:
        both = read_with_texts(body, side.controls)
        if both is None:
            return new
        fields, texts = both
    model = fields.model if isinstance(fields.model, str) else None
    intent = read_intent(body, SURFACES[surface], fields, texts)
    done = write_controls(intent, fields, SURFACES[surface], "vllm", config.for_model(model))
    if done.edits:
        return apply_edits(body if new is None else new, done.edits, done.appends)
    return new


def _per_call(surface: Surface, body: bytes, config: ThinkExtractConfig, n: int) -> float:
    with no_collection():
        start = time.process_time()
        for _ in range(n):
            request_side(surface, body, config)
        return (time.process_time() - start) / n


def controls_alone(surface: Surface, body: bytes) -> object:
    """The request side with the history off: the controls' own read, and what is written."""
    both = read_with_texts(body, SURFACES[surface].controls)
    if both is None:
        return None
    fields, texts = both
    intent = read_intent(body, SURFACES[surface], fields, texts)
    done = write_controls(intent, fields, SURFACES[surface], "vllm", WITH.for_model(fields.model))
    return apply_edits(body, done.edits, done.appends) if done.edits else None


def _timed(fn: Callable[[], object], n: int) -> float:
    with no_collection():
        start = time.process_time()
        for _ in range(n):
            fn()
        return (time.process_time() - start) / n


def table_alone(rounds: int, quick: bool) -> str:
    out = [
        f"History pass, in process, CPU ms per request, median (min–max) of {rounds} alternating rounds:",
        "",
        "| surface | history | body | `json.loads` | controls alone | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for (surface, size_name, state), body in bodies().items():
        n = max(2, (3 if quick else 20) * 200_000 // len(body))
        times = interleaved(
            {
                "loads": lambda body=body, n=n: _timed(lambda: json.loads(body), n),
                "alone": lambda surface=surface, body=body, n=n: _timed(lambda: controls_alone(surface, body), n),
            },
            rounds,
        )
        ratio = Spread.of([a / b for a, b in zip(times["alone"], times["loads"], strict=True)])
        out.append(
            f"| {surface} | {size_name}, {state} | {len(body) / 1000:.0f} KB"
            f" | {Spread.of(times['loads']).fmt(scale=1e3)} ms | {Spread.of(times['alone']).fmt(scale=1e3)} ms"
            f" | {ratio.fmt()} |"
        )
    return "\n".join(out)


def table(rounds: int, quick: bool) -> str:
    out = [
        f"Machine: {machine()}.",
        "",
        f"In process, CPU ms per request, median (min–max) of {rounds} alternating rounds:",
        "",
        "| surface | history | body | controls off | controls on | added | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for (surface, size_name, state), body in bodies().items():
        n = max(2, (3 if quick else 20) * 200_000 // len(body))
        times = interleaved(
            {
                "off": lambda surface=surface, body=body, n=n: _per_call(surface, body, WITHOUT, n),
                "on": lambda surface=surface, body=body, n=n: _per_call(surface, body, WITH, n),
            },
            rounds,
        )
        added = Spread.of([on - off for on, off in zip(times["on"], times["off"], strict=True)])
        ratio = Spread.of([on / off for on, off in zip(times["on"], times["off"], strict=True)])
        out.append(
            f"| {surface} | {size_name}, {state} | {len(body) / 1000:.0f} KB"
            f" | {Spread.of(times['off']).fmt(scale=1e3)} ms | {Spread.of(times['on']).fmt(scale=1e3)} ms"
            f" | {added.fmt('.3f', scale=1e3)} ms | {ratio.fmt()} |"
        )
    return "\n".join(out)


def _next_of(surface: Surface, body: bytes) -> bytes:
    """``body`` with its last two messages once more: an agent's next request, its bytes up to them the same."""
    request = json.loads(body)
    return json.dumps({**request, "messages": request["messages"] + request["messages"][-2:]}).encode()


def table_next(rounds: int, quick: bool) -> str:
    out = [
        f"History pass, an agent's next request, in process, CPU ms per request, median (min–max) of {rounds}"
        " alternating rounds:",
        "",
        "| surface | history | body | read alone | read whole and kept | read on | read on / alone |",
        "|---|---|---|---|---|---|---|",
    ]
    for (surface, size_name, state), earlier in bodies().items():
        if state != "no control":
            continue
        body, side = _next_of(surface, earlier), SURFACES[surface].controls
        kept_states = CarriedStates()
        read_whole(earlier, side, (kept_states, b"scope"))
        (kept,) = kept_states.readings.of(b"scope")

        def on(body: bytes = body, kept: Any = kept, side: Any = side) -> object:
            states = CarriedStates()  # the earlier request's reading kept, as each next request finds it
            states.readings.put(b"scope", kept, 0)
            read = read_on(body, side, (states, b"scope"))
            assert read is not None
            return read

        n = max(2, (3 if quick else 20) * 200_000 // len(body))
        times = interleaved(
            {
                "alone": lambda body=body, side=side, n=n: _timed(lambda: read_with_texts(body, side), n),
                "whole": lambda body=body, side=side, n=n: _timed(
                    lambda: read_whole(body, side, (CarriedStates(), b"scope")), n
                ),
                "on": lambda on=on, n=n: _timed(on, n),
            },
            rounds,
        )
        ratio = Spread.of([a / b for a, b in zip(times["on"], times["alone"], strict=True)])
        out.append(
            f"| {surface} | {size_name}, two messages more | {len(body) / 1000:.0f} KB"
            f" | {Spread.of(times['alone']).fmt(scale=1e3)} ms | {Spread.of(times['whole']).fmt(scale=1e3)} ms"
            f" | {Spread.of(times['on']).fmt(scale=1e3)} ms | {ratio.fmt()} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer calls per round (a smoke run)")
    args = parser.parse_args()
    print(table(args.rounds, args.quick))
    print()
    print(table_alone(args.rounds, args.quick))
    print()
    print(table_next(args.rounds, args.quick))


if __name__ == "__main__":
    main()
