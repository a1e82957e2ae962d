"""Ollama's own reasoning (Ollama ≥ 0.12.4 parses a thinking model's reasoning by default): ``thinking``
lines, then answer lines without it. The upstream's reasoning wins: every line goes on as the same
bytes, whatever the cuts, and the real ``ollama`` client reads the whole answer."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable

import ollama
from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.pipeline import StreamPipeline

from .wire import CREATED, native_stream, respond_lines, stream

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
TOKENS = ["a", " ", "<think>", "</think>", "<", "é", "&", "\n"]
TEXT = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4).map("".join)


def through(data: bytes, cuts: list[int], config: ThinkExtractConfig) -> bytes:
    pipeline = StreamPipeline("ollama", config, None)
    points = [0, *sorted({c % (len(data) + 1) for c in cuts}), len(data)]
    out = b"".join(pipeline.feed(data[a:b]) for a, b in itertools.pairwise(points)) + pipeline.finish()
    assert pipeline.error is None
    return out


@given(
    kind=st.sampled_from(["chat", "generate"]),
    model=st.sampled_from(["qwen3:8b", "deepseek-r1:7b", "m"]),
    thinking=st.lists(TEXT, min_size=1, max_size=4),
    answer=st.lists(TEXT, min_size=1, max_size=4),
    joined=st.booleans(),
    older=st.booleans(),  # done_reason before done, as earlier Ollama releases wrote it
    cuts=st.lists(st.integers(0, 2000), max_size=6),
)
def test_every_line_after_ollamas_own_thinking_goes_on_as_it_came(
    kind: str, model: str, thinking: list[str], answer: list[str], joined: bool, older: bool, cuts: list[int]
) -> None:
    data = native_stream(kind, model, thinking, answer, joined, older)
    assert through(data, cuts, ThinkExtractConfig()) == data


async def test_the_ollama_client_reads_the_answer_after_ollamas_own_thinking(aiohttp_server: ServerFactory) -> None:
    data = native_stream("chat", "qwen3:8b", ["I think"], ["The answer", " is 4."])

    async def answer(request: web.Request) -> web.StreamResponse:
        return await respond_lines(request, data)

    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/api/chat", answer)
    server = await aiohttp_server(app)
    client = ollama.AsyncClient(host=str(server.make_url("")))
    question = [{"role": "user", "content": "2+2?"}]
    parts = [p async for p in await client.chat(model="qwen3:8b", messages=question, stream=True)]
    assert ["".join(p.message.thinking or "" for p in parts), "".join(p.message.content or "" for p in parts)] == [
        "I think",
        "The answer is 4.",
    ]
    assert [p.done for p in parts] == [False, False, False, True]


@given(
    kind=st.sampled_from(["chat", "generate"]),
    pieces=st.lists(TEXT, min_size=1, max_size=5),
    native=st.lists(TEXT, max_size=2),
    cuts=st.lists(st.integers(0, 2000), max_size=6),
)
def test_one_done_line_the_last_and_held_text_before_it(
    kind: str, pieces: list[str], native: list[str], cuts: list[int]
) -> None:
    """Text held when the done line (or Ollama's own thinking) arrives goes out in lines that say
    ``done: false``: a client that stops at the first ``done: true`` reads everything."""
    data = stream(kind, "m", pieces)
    if native:  # Ollama's own thinking after inline text that ended in a partial tag
        data = b"".join([*data.splitlines(keepends=True)[:-1], native_stream(kind, "m", native, ["x"])])
    lines = [json.loads(line) for line in through(data, cuts, ThinkExtractConfig()).splitlines()]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert lines[-1] == json.loads(data.splitlines()[-1])  # the upstream's own done line, metrics and all
    # No line before the last repeats the done line's metrics or reason.
    assert all(set(line) <= {"model", "created_at", "message", "response", "thinking", "done"} for line in lines[:-1])


@given(kind=st.sampled_from(["chat", "generate"]), pieces=st.lists(TEXT, min_size=1, max_size=5))
def test_held_text_at_an_early_end_goes_out_in_a_line_of_the_stream(kind: str, pieces: list[str]) -> None:
    """A stream that stops before its done line: what was held goes out in a line with the stream's
    model and time, as every line the client read before it."""
    data = b"".join(stream(kind, "qwen3:8b", pieces).splitlines(keepends=True)[:-1])
    lines = [json.loads(line) for line in through(data, [], ThinkExtractConfig()).splitlines()]
    assert all(line["model"] == "qwen3:8b" and line["created_at"] == CREATED for line in lines)
    assert all(line["done"] is False for line in lines)
