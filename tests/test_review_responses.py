"""Hostile upstream events against the Responses fast path: each case the full path (the fast
path off) answers one way and the fast path, unfixed, another."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig

from .responseswire import normalize
from .ssecompare import events_of
from .test_responses_fastpath import _events, run_events

CFG = ThinkExtractConfig()
CONTENT = ThinkExtractConfig(responses_reasoning_format="content")


def _frames(bodies: list[dict[str, Any]], spell: dict[int, dict[str, str]], named: bool) -> list[bytes]:
    """``bodies`` as compact events, the values of ``spell[i]`` written in place of event ``i``'s own."""
    out = []
    for i, body in enumerate(bodies):
        data = json.dumps(body, separators=(",", ":"))
        for key, raw in spell.get(i, {}).items():
            data = data.replace(f'"{key}":{json.dumps(body[key])}', f'"{key}":{raw}', 1)
        line = f"event: {body['type']}\n" if named else ""
        out.append(f"{line}data: {data}\n\n".encode())
    return out


# A whole number 0 as JSON may spell it: msgspec reads a float equal to the int 0.
ZERO = st.sampled_from(["0.0", "0e5", "0E+2", "0e-1", "-0.0", "0.00e9"])


@settings(max_examples=60, deadline=None)
@given(
    which=st.integers(1, 11),
    key=st.sampled_from(["output_index", "content_index"]),
    zero=ZERO,
    group=st.sampled_from([2, 4, 16]),
    named=st.booleans(),
    config=st.sampled_from([CFG, CONTENT]),
)
def test_a_float_index_in_a_renumbered_run(
    which: int, key: str, zero: str, group: int, named: bool, config: ThinkExtractConfig
) -> None:
    """After a reasoning item every answer delta is moved to output_index 1 and renumbered on the
    run's bytes. A later event of the run spelling its index 0 as a float (``0e5``) is read as 0, so
    the run qualifies; replacing ``"output_index":0`` on its bytes made ``1e5`` (100000) of it. The
    full path writes 1; the output must be its, byte for byte."""
    bodies = _events("openai", ["<think>r</think>Hi", *[" step"] * 12])
    delta = 3 + which  # an answer delta after the first one
    assert bodies[delta]["type"] == "response.output_text.delta"
    events = _frames(bodies, {delta: {key: zero}}, named)
    fast, fast_counts = run_events(events, group, config, full=False)
    full, full_counts = run_events(events, 1, config, full=True)
    assert normalize(fast) == normalize(full)
    assert events_of(normalize(fast)) == events_of(normalize(full))
    assert fast_counts == full_counts
    moved = [json.loads(line[6:]) for line in normalize(fast).split(b"\n") if line.startswith(b"data: {")]
    answer = [e for e in moved if e["type"] == "response.output_text.delta"]
    assert [(e["output_index"], e["content_index"]) for e in answer] == [(1, 0)] * 13
    assert [type(e["output_index"]) for e in answer] == [int] * 13
