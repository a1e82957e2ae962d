"""Hostile upstream events against the Responses fast path: each case the full path (the fast
path off) answers one way and the fast path, unfixed, another."""

from __future__ import annotations

import json
from typing import Any

import openai
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from gateway_mw import ThinkExtractConfig
from gateway_mw.sse import SSEDecoder

from ..hypothesis_examples import examples
from ..responseswire import normalize
from ..ssecompare import events_of
from .support import run_events, text_events

CFG = ThinkExtractConfig()
CONTENT = ThinkExtractConfig(responses_reasoning_format="content")
EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def sdk_texts(stream: bytes) -> dict[int, str]:
    """The text of each message item as the official SDK's stream accumulator builds it (it raises
    on an event about an item it was not told of), by output index."""
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=openai.omit, text_format=openai.omit)
    texts: dict[int, str] = {}
    for frame in SSEDecoder().feed(stream):
        assert frame.data is not None
        for event in state.handle_event(EVENT.validate_python(json.loads(frame.data))):
            if event.type == "response.output_text.delta":
                texts[event.output_index] = event.snapshot
    return texts


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


# The number 0 as JSON may spell it: msgspec reads a float equal to it, or the int 0 for -0.
ZERO = st.sampled_from(["0.0", "0e5", "0E+2", "0e-1", "-0.0", "0.00e9", "-0"])


@settings(max_examples=examples(80), deadline=None)
@given(
    which=st.integers(1, 11),
    key=st.sampled_from(["output_index", "content_index"]),
    zero=ZERO,
    moved=st.booleans(),
    group=st.sampled_from([2, 4, 16]),
    named=st.booleans(),
    config=st.sampled_from([CFG, CONTENT]),
)
def test_a_zero_index_spelled_otherwise_in_a_renumbered_run(
    which: int, key: str, zero: str, moved: bool, group: int, named: bool, config: ThinkExtractConfig
) -> None:
    """A run of answer deltas is renumbered on its bytes when the client's numbers differ from the
    upstream's: after a reasoning item (every delta moved to output_index 1), or when the upstream
    numbers its events from 5. A later event of the run spelling its index 0 as ``0e5`` (read as 0,
    so the run qualified) became ``1e5`` (100000) when ``"output_index":0`` was replaced on its
    bytes; ``0.0`` and ``-0`` went out as they came where the full path writes the client's
    number. The output must be the full path's, byte for byte."""
    first = "Hi" if moved else "Hello"
    bodies = text_events("openai", ["<think>r</think>Hi" if moved else first, *[" step"] * 12])
    if not moved:
        bodies = [{**body, "sequence_number": body["sequence_number"] + 5} for body in bodies]
    delta = 3 + which  # an answer delta after the first one
    assert bodies[delta]["type"] == "response.output_text.delta"
    events = _frames(bodies, {delta: {key: zero}}, named)
    fast, fast_counts = run_events(events, group, config, full=False)
    full, full_counts = run_events(events, 1, config, full=True)
    assert normalize(fast) == normalize(full)
    assert events_of(normalize(fast)) == events_of(normalize(full))
    assert fast_counts == full_counts
    out = [json.loads(line[6:]) for line in normalize(fast).split(b"\n") if line.startswith(b"data: {")]
    answer = [(e["output_index"], e["content_index"]) for e in out if e["type"] == "response.output_text.delta"]
    assert answer == [(1 if moved else 0, 0)] * 13
    assert {type(v) for pair in answer for v in pair} == {int}
    assert sdk_texts(fast) == sdk_texts(full) == {(1 if moved else 0): first + " step" * 12}
