"""The deployed Responses translator against the reference alone: the same bytes, always.

``ResponsesStream`` is the reference translator (``surfaces.responses.reference.ResponsesReference``) with the
fast path as a layer over it. Run alone, the reference is the oracle: a pipeline with it must give
exactly the bytes a pipeline with the deployed translator gives, for every upstream, however it is
cut, with the same counts and the same record of what was said.

Hypothesis writes whole upstream streams as real servers write them: OpenAI's own (``event:`` lines,
``sequence_number`` second, ``obfuscation``), the same without ``event:`` lines, vLLM (keys in
alphabetical order), llama.cpp (no indexes, no numbers) and Python's ``json.dumps`` spacing; now and
then respelled (spacing, key order, escapes in strings and keys), numbers written ``"4"`` or ``4.0``,
members added, doubled, nulled or left out, halves of a surrogate pair in two deltas, deltas too large
to hold, and events no translator reads. They are fed one event per feed, a few events per feed, or
cut at random.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.channels import Transcripts
from gateway_mw.marks import NewId
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.responses.reference import ResponsesReference

from ..hypothesis_examples import examples
from ..spelling import SPACING, Spelling

MSG = "msg_67ccd3a9da748190baa7f1570fe91ac6"
CONFIGS = [
    ThinkExtractConfig(),
    ThinkExtractConfig(responses_reasoning_format="content"),
    ThinkExtractConfig(responses_reasoning_format="summary", responses_encrypted_content=True),
    ThinkExtractConfig(start_with_reasoning=True),
    ThinkExtractConfig(trim_tag_edges=True, trim_reasoning_tail=True),
    ThinkExtractConfig(stream_mode="buffered"),
    ThinkExtractConfig(code_aware=False, separator=""),
    ThinkExtractConfig(max_event_bytes=600, max_body_bytes=1 << 20),  # some deltas too large to hold
]
LAYOUTS = ["openai", "data-only", "vllm", "llamacpp", "pyjson"]
WORDS = [" step", " by", " the", "é", "数", "🙂", ' "q"', " a\\b", " x/y", "\t", "\n", " ", "x", "\u2028"]
TAGS = ["<think>", "</think>", "a<think>b", "c</think>d", "<", "<th", "ink>", "`", "```", "[THINK]"]
STARTS = ["", "Hello", "<think>", "<think>\n", "<think>r</think>", "<think>r</think>Hi", "r</think>Hi"]
HALVES = '"\\ud83d"', '"\\ude00"'  # one character's surrogate pair, cut between two deltas
OTHER = [
    b": keepalive\n\n",
    b"data: {bad json\n\n",
    b'data: {"type":"response.output_text.delta","output_index":0\n\n',
    b"\n",
    b"id: 5\n\n",
    b'data: {"type":"response.output_text.annotation.added","output_index":0,"annotation":{}}\n\n',
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",\ndata: "x":1}\n\n',
]


def new_ids() -> NewId:
    """Made-up ids that are the same for both pipelines of a comparison."""
    counter = itertools.count()
    return lambda prefix: f"{prefix}{next(counter):032x}"


def layout_body(layout: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (in OpenAI's key order) with the members and order ``layout``'s server writes."""
    if layout == "llamacpp":  # nlohmann::json: keys sorted; no indexes, numbers or delta logprobs
        body = {k: v for k, v in body.items() if k not in ("output_index", "content_index", "sequence_number")}
        if body["type"] == "response.output_text.delta":
            body.pop("logprobs", None)
        return dict(sorted(body.items()))
    if layout == "vllm":  # pydantic's model_dump_json: the SDK's (alphabetical) field order
        return dict(sorted(body.items()))
    if layout in ("openai", "data-only") and body["type"] == "response.output_text.delta":
        return {"type": body["type"], "sequence_number": body.get("sequence_number"), **body, "obfuscation": "Zq3x"}
    return body


class Writer:
    """One upstream stream being written: its layout, its spelling, its numbers."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.layout = draw(st.sampled_from(LAYOUTS))
        self.named = {"openai": "all", "vllm": "all", "llamacpp": "all"}.get(self.layout, "none")
        if self.layout != "pyjson" and draw(st.integers(0, 4)) == 0:
            self.named = draw(st.sampled_from(["all", "none", "some"]))
        rnd = draw(st.randoms(use_true_random=False))
        hostile = draw(st.integers(0, 2)) == 0  # respelled: spacing, key order, escapes
        comma, colon = (", ", ": ") if self.layout == "pyjson" else SPACING[0]
        if hostile:
            comma, colon = draw(st.sampled_from(SPACING))
        self.spelling = Spelling(
            comma,
            colon,
            ascii_only=self.layout == "pyjson" or (hostile and draw(st.booleans())),
            slash=hostile and draw(st.booleans()),
            lt=hostile and draw(st.booleans()),
            rnd=rnd if hostile and draw(st.booleans()) else None,
            key=(lambda k: json.dumps(k).replace("_", "\\u005f") if rnd.random() < 0.3 else None)
            if hostile and draw(st.booleans())
            else None,
        )
        self.seq = draw(st.sampled_from([0, 0, 0, 7]))
        self.events: list[bytes] = []

    def add(self, body: dict[str, Any], raw: dict[str, str] | None = None) -> None:
        """One event; ``raw``: members written as given (a value no encoder writes, a duplicate)."""
        body = layout_body(self.layout, {**body, "sequence_number": self.seq})
        self.seq += 1
        data = self.spelling.encode(body)
        for key, value in (raw or {}).items():
            data = data[:-1] + f'{self.spelling.comma}"{key}"{self.spelling.colon}{value}}}'
        named = self.named == "all" or (self.named == "some" and self.draw(st.booleans()))
        self.events.append((f"event: {body['type']}\n" if named else "").encode() + f"data: {data}\n\n".encode())

    def delta(self, at: dict[str, Any], text: str) -> None:
        draw = self.draw
        body: dict[str, Any] = {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []}
        raw: dict[str, str] = {}
        odd = draw(st.integers(0, 11))
        if odd == 0:  # numbers as some servers spell them: the SDKs read 4, 4.0 and "4" alike
            spell = draw(st.sampled_from([str, float]))
            body.update({k: spell(v) for k, v in at.items() if k != "item_id"})
        elif odd == 1:
            del body["logprobs"]
        elif odd == 2:
            key = draw(st.sampled_from(["logprobs", "obfuscation", "item_id", "sequence_number", "extra"]))
            body[key] = None
        elif odd == 3:
            value = draw(st.sampled_from(['"<think>"', "0", "[]", '{"output_index":9}', f'"{MSG}"', '" step"']))
            raw[draw(st.sampled_from(["delta", "output_index", "item_id", "extra", "obfuscation"]))] = value
        elif odd == 4:
            body["logprobs"] = [{"token": "t", "logprob": -0.5, "bytes": [116], "top_logprobs": []}]
        self.add(body, raw)


@st.composite
def upstreams(draw: st.DrawFn) -> list[bytes]:
    """A whole upstream stream, one ``bytes`` per event."""
    up = Writer(draw)
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    up.add({"type": "response.created", "response": response})
    if draw(st.booleans()):
        up.add({"type": "response.in_progress", "response": response})
    output: list[Any] = []
    for m in range(draw(st.integers(1, 2))):
        if draw(st.integers(0, 4)) == 0:  # a function call before this message
            call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
            up.add({"type": "response.output_item.added", "output_index": len(output), "item": call})
            up.add({"type": "response.output_item.done", "output_index": len(output), "item": call})
            output.append(call)
        index, item_id = len(output), f"{MSG}{m or ''}"
        item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        up.add({"type": "response.output_item.added", "output_index": index, "item": item})
        parts = []
        for p in range(draw(st.sampled_from([1, 1, 1, 2]))):
            at = {"item_id": item_id, "output_index": index, "content_index": p}
            opening = draw(st.sampled_from(["", "", "", "Hi", "<think>"]))  # text in content_part.added
            empty = {"type": "output_text", "text": opening, "annotations": [], "logprobs": []}
            up.add({"type": "response.content_part.added", **at, "part": empty})
            texts = [opening, draw(st.sampled_from(STARTS))]
            up.delta(at, texts[-1])
            for _ in range(draw(st.integers(1, 12))):
                kind = draw(st.integers(0, 12))
                if kind < 6:  # a run long enough for the fast path
                    word = draw(st.sampled_from(WORDS))
                    for _ in range(draw(st.integers(1, 40))):
                        up.delta(at, word)
                        texts.append(word)
                elif kind < 9:
                    texts.append(draw(st.sampled_from(TAGS)))
                    up.delta(at, texts[-1])
                elif kind == 9:
                    up.events.append(draw(st.sampled_from(OTHER)))
                elif kind == 10:  # a character whose surrogate halves come in two deltas
                    for half in HALVES:
                        up.add({"type": "response.output_text.delta", **at, "logprobs": []}, {"delta": half})
                    texts.append("🙂")
                elif kind == 11:
                    texts.append("y" * draw(st.sampled_from([700, 3000])))  # too large for a small cap
                    up.delta(at, texts[-1])
                else:  # a refusal part inside the message
                    refusal = {"type": "refusal", "refusal": "no"}
                    up.add({"type": "response.content_part.added", **at, "content_index": p + 5, "part": refusal})
                    up.add({"type": "response.content_part.done", **at, "content_index": p + 5, "part": refusal})
            text = "".join(texts)
            if draw(st.integers(0, 5)):
                up.add({"type": "response.output_text.done", **at, "text": text, "logprobs": []})
            done = {**empty, "text": text}
            if draw(st.integers(0, 5)):
                up.add({"type": "response.content_part.done", **at, "part": done})
            parts.append(done)
        finished = {**item, "status": "completed", "content": parts}
        up.add({"type": "response.output_item.done", "output_index": index, "item": finished})
        output.append(finished)
    ending = draw(st.integers(0, 5))
    if ending:
        up.add({"type": "response.completed", "response": {**response, "status": "completed", "output": output}})
    if ending == 1:
        up.events.append(b"data: [DONE]\n\n")
    return up.events


@st.composite
def feeds(draw: st.DrawFn, events: list[bytes]) -> list[bytes]:
    """The stream as the pipeline is fed it: one event per feed, a few per feed, or cut at random."""
    how = draw(st.sampled_from(["one", "one", "group", "cuts", "pieces"]))
    if how == "one":
        return events
    if how == "group":
        size = draw(st.sampled_from([2, 5, 16, 64]))
        return [b"".join(events[i : i + size]) for i in range(0, len(events), size)]
    stream = b"".join(events)
    if how == "pieces":
        size = draw(st.sampled_from([1536, 4096, 9000]))
        return [stream[i : i + size] for i in range(0, len(stream), size)]
    cuts = sorted(set(draw(st.lists(st.integers(0, len(stream)), max_size=40))))
    return [stream[a:b] for a, b in itertools.pairwise([0, *cuts, len(stream)])]


def translated(pieces: list[bytes], config: ThinkExtractConfig, reference: bool) -> tuple[bytes, tuple[Any, ...]]:
    """The pipeline's bytes, its counts and what was said: with the deployed translator, or with the
    reference alone in its place."""
    pipeline = StreamPipeline("responses", config, new_ids(), keep=True)
    if reference:
        pipeline._translator = ResponsesReference(config, new_id=new_ids())
        pipeline._translator.transcripts = Transcripts()
    out = b"".join(pipeline.feed(piece) for piece in pieces if piece) + pipeline.finish()
    assert pipeline.error is None
    c = pipeline.counts
    counts = (c.reasoning_blocks, c.reasoning_chars, c.unclosed, c.overflows, c.unreadable_events, c.oversized_events)
    return out, (counts, pipeline.said())


@settings(
    max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(data=st.data(), events=upstreams(), config=st.sampled_from(CONFIGS))
def test_the_deployed_translator_gives_the_references_bytes(
    data: st.DataObject, events: list[bytes], config: ThinkExtractConfig
) -> None:
    pieces = data.draw(feeds(events))
    reference = translated(pieces, config, reference=True)
    deployed = translated(pieces, config, reference=False)
    assert deployed[0] == reference[0]
    assert deployed[1] == reference[1]
