"""docs/ollama.md shows what the gateway does as before/after pairs: each pair is what the code does."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gateway_mw import ThinkExtractConfig
from gateway_mw.history import transform_request
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces import ollama
from gateway_mw.surfaces.registry import SURFACES

DOC = Path(__file__).resolve().parents[2] / "docs" / "ollama.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
CFG = ThinkExtractConfig()


def blocks() -> list[str]:
    return [m.group(2) for m in FENCE.finditer(DOC.read_text())]


def compact(text: str) -> bytes:
    """A pretty-printed JSON block as the wire carries it: one line, no spaces between tokens."""
    return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":")).encode()


def test_the_doc_shows_its_examples() -> None:
    assert len(blocks()) == 10


def test_the_stream_example_is_what_the_gateway_sends_line_by_line() -> None:
    before, after = blocks()[0:2]
    pipeline = StreamPipeline("ollama", CFG)
    out = b"".join(pipeline.feed(line.encode() + b"\n") for line in before.splitlines()) + pipeline.finish()
    assert out.decode() == after


def test_the_non_stream_examples_are_what_the_gateway_sends() -> None:
    docs = blocks()
    chat_before, chat_after = docs[2], docs[3]
    assert ollama.transform_body(compact(chat_before), CFG)[0] == compact(chat_after)
    generate_before, generate_after = docs[4].splitlines()
    assert ollama.transform_body(generate_before.encode(), CFG)[0] == generate_after.encode()


def test_ollamas_own_reasoning_goes_on_as_the_same_bytes() -> None:
    (native,) = blocks()[5:6]
    pipeline = StreamPipeline("ollama", CFG)
    out = b"".join(pipeline.feed(line.encode() + b"\n") for line in native.splitlines()) + pipeline.finish()
    assert out.decode() == native
    lines = [json.loads(line)["message"] for line in native.splitlines()]
    assert "".join(m.get("thinking", "") for m in lines) == "2+2 is 4; say it."
    assert "".join(m["content"] for m in lines) == "It is 4. <think> is a tag."


def test_the_request_example_is_what_ollama_receives() -> None:
    before, after = blocks()[6:8]
    config = ThinkExtractConfig(upstream_server="ollama")
    assert transform_request(SURFACES["ollama"], compact(before), config) == compact(after)


def test_an_answer_without_reasoning_goes_on_as_the_same_bytes() -> None:
    (plain,) = blocks()[9:10]
    pipeline = StreamPipeline("ollama", CFG)
    out = b"".join(pipeline.feed(line.encode() + b"\n") for line in plain.splitlines()) + pipeline.finish()
    assert out.decode() == plain
