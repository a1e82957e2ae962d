"""What a line carries besides its text — its tool calls, its ``logprobs`` (Ollama ≥ 0.12.11 sends them
on every line when asked) — reaches the client once, in order, whatever the gateway does with the text:
a line written as several (reasoning, then answer) must not repeat them, a line that says nothing once
its tags are taken out must not lose them. And an ``error`` line (what Ollama writes when the runner
fails mid-stream) comes after the text held before it, in the stream's own field."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline

from .wire import CREATED, chat_line, generate_line, ndjson

TOKENS = ["a", " ", "<think>", "</think>", "<", "é", "\n"]
PIECES = st.lists(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4).map("".join), min_size=1, max_size=6)


def through(data: bytes) -> list[dict[str, Any]]:
    pipeline = StreamPipeline("ollama", ThinkExtractConfig(), None)
    out = pipeline.feed(data) + pipeline.finish()
    assert pipeline.error is None
    return [json.loads(line) for line in out.splitlines()]


def logprobs(i: int, piece: str) -> list[dict[str, Any]]:
    return [{"token": piece, "logprob": -float(i), "bytes": list(piece.encode())}]


def call(i: int) -> list[dict[str, Any]]:
    return [{"id": f"call_{i}", "function": {"index": 0, "name": "get_weather", "arguments": {"n": i}}}]


@given(pieces=PIECES)
@example(pieces=["<think>a", "b</think>Hi"])
@example(pieces=["<think>", "a", "</think>", "Hi"])
def test_each_lines_logprobs_reach_the_client_once_in_order(pieces: list[str]) -> None:
    for kind in ("chat", "generate"):
        if kind == "chat":
            lines = [chat_line("qwen3:8b", p) | {"logprobs": logprobs(i, p)} for i, p in enumerate(pieces)]
            lines.append(chat_line("qwen3:8b", "", done=True))
        else:
            lines = [generate_line("qwen3:8b", p) | {"logprobs": logprobs(i, p)} for i, p in enumerate(pieces)]
            lines.append(generate_line("qwen3:8b", "", done=True))
        sent = [entry for line in lines for entry in line.get("logprobs", [])]
        got = [entry for line in through(ndjson(lines)) for entry in line.get("logprobs", [])]
        assert got == sent


@given(pieces=PIECES)
@example(pieces=["<think>", "abc</think>ok"])
@example(pieces=["<think>"])
def test_each_lines_tool_calls_reach_the_client_once_in_order(pieces: list[str]) -> None:
    lines = [chat_line("qwen3:8b", p, tool_calls=call(i)) for i, p in enumerate(pieces)]
    lines.append(chat_line("qwen3:8b", "", done=True))
    sent = [c for line in lines for c in line["message"].get("tool_calls", [])]
    got = [c for line in through(ndjson(lines)) for c in line["message"].get("tool_calls", [])]
    assert got == sent


def test_text_held_before_an_error_line_goes_out_before_it_in_message_content() -> None:
    error = {"error": "an error was encountered while running the model"}
    got = through(ndjson([chat_line("qwen3:8b", "Hello <"), error]))
    assert got == [
        chat_line("qwen3:8b", "Hello "),
        {"model": "qwen3:8b", "created_at": CREATED, "message": {"role": "assistant", "content": "<"}, "done": False},
        error,
    ]
