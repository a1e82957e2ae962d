"""The NDJSON framing: any cut of a stream gives the same lines, each kept as its exact bytes; a line
over the cap goes through in pieces, never held; and the request side for Ollama's /api/chat."""

from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.history import transform_request
from gateway_mw.ndjson import NDJSONDecoder
from gateway_mw.surfaces.registry import SURFACES

LINES = st.lists(
    st.sampled_from([b'{"a":1}', b'{"b":"x y"}', b"", b"not json", b'{"c":"\\u003cthink\\u003e"}']), max_size=8
)


@given(lines=LINES, crlf=st.booleans(), cuts=st.lists(st.integers(0, 200), max_size=8), last_open=st.booleans())
def test_any_cut_gives_the_same_lines_as_their_bytes(
    lines: list[bytes], crlf: bool, cuts: list[int], last_open: bool
) -> None:
    end = b"\r\n" if crlf else b"\n"
    body = b"".join(line + end for line in lines)
    if last_open and lines and lines[-1]:
        body = body[: -len(end)]  # a last line without its ending is a line all the same
    decoder = NDJSONDecoder(1 << 20)
    points = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    events = [e for a, b in itertools.pairwise(points) for e in decoder.feed(body[a:b])]
    last, tail = decoder.finish()
    events += last
    assert b"".join(e.raw for e in events) + tail == body  # nothing lost, nothing reordered
    assert [e.data for e in events if e.data is not None] == [line for line in lines if line.strip()]


def test_a_line_over_the_cap_goes_through_in_pieces() -> None:
    decoder = NDJSONDecoder(16)
    big = b'{"x":"' + b"y" * 100 + b'"}\n'
    events = decoder.feed(big[:40]) + decoder.feed(big[40:90]) + decoder.feed(big[90:] + b'{"a":1}\n')
    assert [(e.raw, e.oversized, e.more) for e in events[:-1]] == [
        (big[:40], True, True),
        (big[40:90], True, True),
        (big[90:], True, False),
    ]
    assert events[-1].data == b'{"a":1}'
    assert decoder.oversized_events == 1 and decoder.pending == 0


def test_the_history_gives_thinking_back_where_ollama_reads_it() -> None:
    history = {
        "model": "qwen3:8b",
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": "<think>I call it.</think>",
                "tool_calls": [{"function": {"name": "w", "arguments": {}}}],
            },
            {"role": "tool", "content": "sunny", "tool_name": "w"},
        ],
    }
    out = transform_request(SURFACES["ollama"], json.dumps(history).encode(), ThinkExtractConfig())
    assert out is not None
    assistant = json.loads(out)["messages"][1]
    # Qwen3's template reads the reasoning field of the current turn: Ollama's is `thinking`.
    assert assistant == {
        "role": "assistant",
        "content": "",
        "thinking": "I call it.",
        "tool_calls": history["messages"][1]["tool_calls"],
    }
    assert transform_request(SURFACES["ollama"], out, ThinkExtractConfig()) is None
    llama = {**history, "model": "llama3.2"}  # no known family: where Ollama reads it all the same
    llama_out = transform_request(SURFACES["ollama"], json.dumps(llama).encode(), ThinkExtractConfig())
    assert llama_out is not None
    assert json.loads(llama_out)["messages"][1] == assistant
    prompt = {"model": "qwen3:8b", "prompt": "<think>x</think>y"}  # /api/generate: no history
    assert transform_request(SURFACES["ollama"], json.dumps(prompt).encode(), ThinkExtractConfig()) is None
