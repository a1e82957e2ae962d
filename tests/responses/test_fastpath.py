"""The Responses fast path against the full path, the reference translator alone: the same bytes.

The fast path passes steady ``output_text.delta`` events as they came, gives them the client's
numbers (on their bytes, or rewritten as the full path rewrites them), or writes them as reasoning
deltas; one event per feed or in runs, it must give exactly the bytes reading every event and
answering it gives, or decline. Hypothesis builds hostile streams (escapes, ``\\u003c`` spelling ``<``,
``\\/``, escaped keys, unicode, spaced JSON, reordered keys, duplicate and nested keys, logprobs,
missing or jumping sequence numbers, numbers spelled ``"4"`` or ``4.0``, unknown events, comments,
blank lines, bad JSON, function calls, several parts) in the layouts of real servers: OpenAI
(``obfuscation``), vLLM (keys in alphabetical order), llama-server (no indexes, no numbers) and
Python's ``json.dumps`` spacing, with and without ``event:`` lines.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.responses import ResponsesStream
from gateway_mw.surfaces.responses.reference import ResponsesReference

from ..hypothesis_examples import examples
from ..spelling import SPACING, Spelling
from .support import full_path, layout_body, new_ids, run_events, text_events

CFG = ThinkExtractConfig()
CONTENT = ThinkExtractConfig(responses_reasoning_format="content")
CONFIGS = [
    CFG,
    ThinkExtractConfig(responses_reasoning_format="summary"),
    ThinkExtractConfig(start_with_reasoning=True),
    ThinkExtractConfig(stream_mode="buffered"),
    ThinkExtractConfig(code_aware=False, separator=""),
]


def run(stream: bytes, piece: int, config: ThinkExtractConfig, full: bool) -> tuple[bytes, tuple[int, ...]]:
    pipeline = StreamPipeline("responses", config, new_ids())
    if full:
        pipeline._translator = full_path(config)
    out = b"".join(pipeline.feed(stream[i : i + piece]) for i in range(0, len(stream), piece)) + pipeline.finish()
    assert pipeline.error is None
    c = pipeline.counts
    counts = (c.reasoning_blocks, c.reasoning_chars, c.unclosed, c.overflows, c.unreadable_events, c.oversized_events)
    return out, counts


TEXT = st.lists(
    st.sampled_from(
        [
            " step",
            "abc",
            " ",
            "é",
            "🙂",
            '"q"',
            "\\",
            "/",
            "\n",
            "\t",
            "\x01",
            "\x7f",
            "\u2028",
            "<think>",
            "</think>",
            "<",
            "`",
            "[THINK]",
            "x",
        ]
    ),
    min_size=0,
    max_size=3,
).map("".join)
PLAIN = st.sampled_from([" step", " by", " the", " sum", "é", "🙂 ok", "a\tb", ' said "hi"', "x\\y"])


@st.composite
def string(draw: st.DrawFn, text: str) -> str:
    """``text`` as a JSON string, spelled one of several valid ways (mostly the compact one)."""
    encoded = json.dumps(text, ensure_ascii=draw(st.integers(0, 7)) == 0)
    if draw(st.integers(0, 5)) == 0:
        encoded = encoded.replace("<", "\\u003c")
    if draw(st.integers(0, 7)) == 0:
        encoded = encoded.replace("/", "\\/")
    return encoded


class Upstream:
    """An upstream Responses stream being written: numbering, event lines, layouts."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.names = draw(st.sampled_from(["all", "all", "none", "mixed", "late"]))
        self.named_from = draw(st.integers(0, 200))  # "late": events are named from this one on
        self.events = 0
        self.layout = draw(st.sampled_from(["bench", "openai", "sorted"]))
        self.seq = draw(st.sampled_from([0, 0, 0, 7]))
        self.jumps = draw(st.booleans())
        self.parts: list[bytes] = []

    def number(self) -> int:
        if self.jumps and self.draw(st.integers(0, 30)) == 0:
            self.seq += self.draw(st.integers(1, 3))  # the upstream skips numbers: renumbering applies
        n = self.seq
        self.seq += 1
        return n

    def frame(self, kind: str, data: bytes) -> bytes:
        self.events += 1
        named = self.names == "all" or (self.names == "mixed" and self.draw(st.booleans()))
        named = named or (self.names == "late" and self.events > self.named_from)
        return (f"event: {kind}\n".encode() if named else b"") + b"data: " + data + b"\n\n"

    def add(self, body: dict[str, Any]) -> None:
        body = {**body, "sequence_number": self.number()}
        self.parts.append(self.frame(body["type"], json.dumps(body, separators=(",", ":")).encode()))

    def delta(self, item_id: str, index: int, part: int, text: str, hostile: bool) -> bytes:
        """One ``output_text.delta`` event, compact in the stream's layout unless ``hostile``."""
        draw = self.draw
        n = self.number()
        items: list[tuple[str, str]] = [
            ("type", '"response.output_text.delta"'),
            ("item_id", json.dumps(item_id)),
            ("output_index", str(index)),
            ("content_index", str(part)),
            ("delta", json.dumps(text, ensure_ascii=False)),
            ("logprobs", "[]"),
            ("sequence_number", str(n)),
        ]
        if self.layout == "openai":
            items = [items[0], items[6], *items[1:6], ("obfuscation", '"aZ3"')]
        elif self.layout == "sorted":
            items.sort()
        colon, comma = ":", ","
        if hostile:
            shape = draw(st.integers(0, 15))
            if shape == 0:
                colon, comma = ": ", ", "
            elif shape == 1:
                items = [(k, draw(string(text)) if k == "delta" else v) for k, v in items]
            elif shape == 2:
                items.append(("delta", json.dumps(draw(TEXT))))  # a duplicate key: the last one counts
            elif shape == 3:
                items.append(("sequence_number", str(n + draw(st.integers(0, 2)))))
            elif shape == 4:
                logprobs = '[{"token":"t","logprob":-0.5,"bytes":[116],"top_logprobs":[]}]'
                items = [(k, logprobs if k == "logprobs" else v) for k, v in items]
            elif shape == 5:
                items = [(k, v) for k, v in items if k != "sequence_number"]
            elif shape == 6:
                items.append(("extra", '{"delta":"<think>"}'))
            elif shape == 7:
                items = [(k, '"msg_other"' if k == "item_id" else v) for k, v in items]
            elif shape == 8:
                items = [(k, str(part + 1) if k == "content_index" else v) for k, v in items]
            elif shape == 9:
                items = [(k, f"{n}.0" if k == "sequence_number" else v) for k, v in items]
            elif shape == 10:
                items = [(k, '""' if k == "delta" else v) for k, v in items]
            elif shape == 11:
                items = [(k, "null" if k in ("delta", "logprobs") else v) for k, v in items]
            elif shape == 12:
                items.append(("obfuscation", json.dumps(draw(TEXT))))
            elif shape == 13:
                items = [(k, v.replace("_", "\\u005f") if k == "item_id" else v) for k, v in items]
        data = "{" + comma.join(f'"{k}"{colon}{v}' for k, v in items) + "}"
        if hostile and shape == 14:
            data = data + "," + data  # two events on one line: not JSON
        if hostile and shape == 15:
            return b":     " + data.encode() + b"\n\n"  # a comment: no data at all
        return self.frame("response.output_text.delta", data.encode())


OTHER = st.sampled_from(
    [
        b": keepalive\n\n",
        b"data: {bad json\n\n",
        b'data: {"type":"response.output_text.delta","output_index":0\n\n',
        b"\n",
        b"id: 5\n\n",
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",\ndata: "x":1}\n\n',
        b'data: {"type":"response.output_text.annotation.added","output_index":0,"annotation":{}}\n\n',
    ]
)


@st.composite
def stream(draw: st.DrawFn) -> bytes:
    up = Upstream(draw)
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    up.add({"type": "response.created", "response": response})
    up.add({"type": "response.in_progress", "response": response})
    output: list[Any] = []
    for m in range(draw(st.integers(1, 2))):
        if draw(st.integers(0, 3)) == 0:  # a function call before this message
            call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
            up.add({"type": "response.output_item.added", "output_index": len(output), "item": call})
            up.add({"type": "response.output_item.done", "output_index": len(output), "item": call})
            output.append(call)
        index, item_id = len(output), f"msg_{m}"
        item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        up.add({"type": "response.output_item.added", "output_index": index, "item": item})
        parts = []
        for part in range(draw(st.sampled_from([1, 1, 1, 2]))):
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            at = {"item_id": item_id, "output_index": index, "content_index": part}
            up.add({"type": "response.content_part.added", **at, "part": empty})
            texts = [draw(st.sampled_from(["Hello", "<think>", "<think>r</think>answer", "", "a <th"]))]
            up.parts.append(up.delta(item_id, index, part, texts[0], hostile=False))
            for _ in range(draw(st.integers(1, 14))):
                kind = draw(st.integers(0, 11))
                if kind < 6:  # a run long enough for the fast path
                    text = draw(PLAIN)
                    for _ in range(draw(st.integers(1, 60))):
                        up.parts.append(up.delta(item_id, index, part, text, hostile=False))
                        texts.append(text)
                elif kind < 10:
                    text = draw(TEXT)
                    up.parts.append(up.delta(item_id, index, part, text, hostile=draw(st.booleans())))
                    texts.append(text)
                else:
                    up.parts.append(draw(OTHER))
            text = "".join(texts)
            done = {**empty, "text": text}
            up.add({"type": "response.output_text.done", **at, "text": text, "logprobs": []})
            up.add({"type": "response.content_part.done", **at, "part": done})
            parts.append(done)
        finished = {**item, "status": "completed", "content": parts}
        up.add({"type": "response.output_item.done", "output_index": index, "item": finished})
        output.append(finished)
    ending = draw(st.integers(0, 5))
    if ending:
        up.add({"type": "response.completed", "response": {**response, "status": "completed", "output": output}})
    if ending == 1:
        up.parts.append(b"data: [DONE]\n\n")
    return b"".join(up.parts)


@settings(max_examples=examples(300), deadline=None)
@given(
    upstream=stream(),
    piece=st.sampled_from([1536, 4096, 9000, 65536, 1 << 20]),
    config=st.sampled_from(CONFIGS),
)
def test_fast_path_gives_what_the_full_path_gives(upstream: bytes, piece: int, config: ThinkExtractConfig) -> None:
    fast, fast_counts = run(upstream, piece, config, full=False)
    full, full_counts = run(upstream, piece, config, full=True)
    assert fast == full
    assert fast_counts == full_counts


# -- the fast path is taken ----------------------------------------------------------------------


def _delta(n: int, text: str = " step", index: int = 0) -> bytes:
    body = {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": index,
        "content_index": 0,
        "delta": text,
        "logprobs": [],
        "sequence_number": n,
    }
    return b"event: response.output_text.delta\ndata: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def _head() -> bytes:
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0}
        | {"part": part},
    ]
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': i})}\n\n".encode()
        for i, e in enumerate(events)
    )


def _counting(pipeline: StreamPipeline) -> list[int]:
    calls = [0]
    translator = pipeline._translator
    original = translator.event

    def counting(event: Any) -> Any:
        calls[0] += 1
        return original(event)

    translator.event = counting  # type: ignore[method-assign]
    return calls


def test_the_fast_path_is_taken() -> None:
    """The property above would hold vacuously if the fast path never ran: check that it does, on
    answer text passed as it came, answer text renumbered and moved, and reasoning."""
    for config in (CONTENT, ThinkExtractConfig(responses_reasoning_format="summary")):
        # Answer text: the events go out as they came.
        pipeline = StreamPipeline("responses", config)
        pipeline.feed(_head() + _delta(3, "Hello"))
        calls = _counting(pipeline)
        run = b"".join(_delta(n) for n in range(4, 404))
        assert pipeline.feed(run) == run
        assert calls[0] == 0

        # Reasoning, then the answer: reasoning deltas, then the answer renumbered and moved to index 1.
        pipeline = StreamPipeline("responses", config)
        pipeline.feed(_head() + _delta(3, "<think>r"))
        calls = _counting(pipeline)
        reasoning = pipeline.feed(b"".join(_delta(n) for n in range(4, 404)))
        assert calls[0] == 0
        translator = pipeline._translator
        assert translator.counts.reasoning_chars == 0  # counted when the part ends
        answer_start = pipeline.feed(_delta(404, "</think>Hi"))
        calls[0] = 0
        answer = pipeline.feed(b"".join(_delta(n) for n in range(405, 805)))
        assert calls[0] == 0
        out = [json.loads(e.data) for e in SSEDecoder().feed(reasoning + answer_start + answer) if e.data]
        kind = "reasoning_summary_text" if config.responses_reasoning_format == "summary" else "reasoning_text"
        assert [e["delta"] for e in out[:400]] == [" step"] * 400
        assert {e["type"] for e in out[:400]} == {f"response.{kind}.delta"}
        assert [e["output_index"] for e in out[-400:]] == [1] * 400
        numbers = [e["sequence_number"] for e in out]
        assert numbers == list(range(numbers[0], numbers[0] + len(out)))
        done = {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0}
        done_event = f"data: {json.dumps({**done, 'text': '?', 'sequence_number': 805})}\n\n".encode()
        closing = answer_start + pipeline.feed(done_event)
        texts = [json.loads(e.data).get("text") for e in SSEDecoder().feed(closing) if e.data]
        # The done events repeat the text the fast path passed.
        assert [t for t in texts if t] == ["r" + " step" * 400, "Hi" + " step" * 400]
        item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": []}
        item_done = {"type": "response.output_item.done", "output_index": 0, "item": item, "sequence_number": 806}
        pipeline.feed(f"data: {json.dumps(item_done)}\n\n".encode())
        assert translator.counts.reasoning_chars == 1 + 5 * 400  # counted when the item ends


def _line(n: int, text: str = " step") -> bytes:
    return _delta(n, text).split(b"\n")[1][6:]  # the data of a delta event


HOSTILE = [
    b"data: " + _line(50) + b"," + _line(51) + b"\n\n",  # two values on one line: not JSON
    b":     " + _line(50) + b"\n\n",  # a comment: no data
    b"x:    " + _line(50) + b"\n\n",  # an unknown field: no data
    _line(50)[:-20].join([b"data: ", b"\n\ndata: "]) + _line(50)[-20:] + b"\n\n",  # one value over two events
    b"data: " + _line(50) + b"event: response.output_text.delta\n\n",
    b"data:" + _line(50) + b"\n\n",
    b"data:  " + _line(50) + b"\n\n",
    b"id: 7\ndata: " + _line(50) + b"\n\n",
    b"event: response.output_text.delta\nevent: x\ndata: " + _line(50) + b"\n\n",
    b"data: " + _line(50).replace(b',"delta"', b',\ndata: "delta"') + b"\n\n",  # two data lines, valid JSON
    b"data: " + _line(50).replace(b'" step"', b'" st\\u0065p"') + b"\n\n",
    b"data: " + _line(50).replace(b',"delta":', b',"delta"\n:') + b"\n\n",  # a comment line that reads as JSON
    b"data: " + _line(50, " <think>") + b"\n\n",
    b"event: response.output_text.delta\n\n",
    b"\n",
]


def test_hostile_events_in_steady_runs() -> None:
    """Events the full path reads otherwise than a plain delta, in the middle of a steady run and
    at the start of a chunk (so that a window starts with them), in answer text and in reasoning."""
    done = {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0}
    tail = f"data: {json.dumps({**done, 'text': '?', 'sequence_number': 99})}\n\n".encode()
    for start in ("Hello", "<think>r"):
        for hostile in HOSTILE:
            before = _head() + _delta(3, start) + b"".join(_delta(n) for n in range(4, 24))
            mid = b"".join(_delta(n) for n in range(24, 30))
            after = b"".join(_delta(n) for n in range(30, 44))
            for config in CONFIGS[:2]:
                for cuts in (
                    [before + mid + hostile + after],
                    [before, hostile + after],
                    [before, mid + hostile + after],
                ):
                    outs = []
                    for full in (False, True):
                        pipeline = StreamPipeline("responses", config, new_ids())
                        if full:
                            pipeline._translator = full_path(config)
                        # The done event comes alone: in a window, it would make the fast path refuse it.
                        out = b"".join(pipeline.feed(c) for c in [*cuts, tail]) + pipeline.finish()
                        c = pipeline.counts
                        outs.append((out, c.reasoning_chars, c.unreadable_events))
                    assert outs[0] == outs[1], (start, hostile)


# -- every upstream layout, one event per feed ------------------------------------------------------

WORDS = st.sampled_from([" step", " by", "the", "ü", "数", "🙂", ' "q"', " a\\b", " x/y", "tab\t", "word", "\n", " "])
TAGGED = st.sampled_from(["<think>", "</think>", "a<think>b", "c</think>d", "<", "`", "[THINK]", "\u2028"])
DELTAS = st.one_of(WORDS, WORDS, WORDS, WORDS, TAGGED)
EXTRA = st.sampled_from(
    [
        None,
        "",
        [],
        {},
        0,
        "x",
        '"output_index":5',
        {"sequence_number": 3},
        {"output_index": 0},
        {"output_index": 9, "delta": "<think>"},
    ]
)
OWNED = ["item_id", "output_index", "content_index", "sequence_number"]
LAYOUT_CONFIGS = [
    CFG,
    CONTENT,
    ThinkExtractConfig(responses_reasoning_format="summary"),
    ThinkExtractConfig(trim_tag_edges=True, trim_reasoning_tail=True),
]


@st.composite
def layout_stream(draw: st.DrawFn) -> list[bytes]:
    """A whole stream in one server's layout, keys reordered, spaced and escaped at random, now and
    then an unknown member: its events one by one."""
    layout = draw(st.sampled_from(["openai", "vllm", "llamacpp", "pyjson"]))
    rnd = draw(st.randoms(use_true_random=False))
    comma, colon = (", ", ": ") if layout == "pyjson" else draw(st.sampled_from(SPACING))
    ascii_only = layout == "pyjson" or draw(st.booleans())
    reorder, slash, lt, key_escapes = (draw(st.integers(0, 3)) == 0 for _ in range(4))
    named = draw(st.sampled_from(["all", "none", "some"])) if layout != "pyjson" else "none"
    logprobs = draw(st.integers(0, 3)) > 0  # some servers send no logprobs with a delta

    def key(value: str) -> str | None:
        if not key_escapes or rnd.random() >= 0.5:
            return None
        return json.dumps(value, ensure_ascii=ascii_only).replace("_", "\\u005f")

    encode = Spelling(comma, colon, ascii_only, slash, lt, rnd if reorder else None, key).encode

    start = draw(st.sampled_from(["", "Hello", "<think>", "<think>\n", "<think>r</think>", "<think>r</think>Hi"]))
    deltas = [start, *draw(st.lists(DELTAS, min_size=1, max_size=40))]
    msg = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "object": "response", "model": "m", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": msg},
        {"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0}
        | {"part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}},
    ]
    for d in deltas:
        at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        events.append({"type": "response.output_text.delta", **at, "delta": d, "logprobs": []})
        if not logprobs:
            del events[-1]["logprobs"]
        if draw(st.integers(0, 9)) == 0:  # numbers as some servers spell them: the SDKs read 4, 4.0, "4" alike
            spell = draw(st.sampled_from([str, float]))
            events[-1]["output_index"] = spell(0)
            events[-1]["content_index"] = spell(0)
            events[-1]["spelled"] = True
        if draw(st.integers(0, 5)) == 0:  # a member that says nothing, or something; or none
            key = draw(st.sampled_from([*["extra", "obfuscation", "logprobs"] * 3, *OWNED, "-logprobs"]))
            if key == "-logprobs":
                events[-1].pop("logprobs", None)
            else:
                events[-1][key] = None if key in OWNED and draw(st.booleans()) else draw(EXTRA)
    full = "".join(deltas)
    done = {**msg, "status": "completed", "content": [{"type": "output_text", "text": full, "annotations": []}]}
    events += [
        {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0}
        | {"text": full, "logprobs": []},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "resp_1", "object": "response", "output": [done]}},
    ]
    first = draw(st.sampled_from([0, 0, 3]))
    out = []
    for seq, body in enumerate(events, start=first):
        spelled = body.pop("spelled", False)
        doc = layout_body(
            layout,
            {**body, "sequence_number": str(seq) if spelled and isinstance(body.get("output_index"), str) else seq},
        )
        line = f"event: {body['type']}\n" if named == "all" or (named == "some" and draw(st.booleans())) else ""
        out.append(f"{line}data: {encode(doc)}\n".encode() + b"\n")
    return out


@settings(max_examples=examples(400), deadline=None)
@given(events=layout_stream(), group=st.sampled_from([1, 1, 2, 5, 16, 0]), config=st.sampled_from(LAYOUT_CONFIGS))
def test_every_layout_gives_what_the_full_path_gives(
    events: list[bytes], group: int, config: ThinkExtractConfig
) -> None:
    """One event per feed and batched, steady content, steady reasoning and the tags between: the
    full path's bytes, however the upstream spells its JSON."""
    fast, fast_counts = run_events(events, group, config, full=False)
    full, full_counts = run_events(events, 1, config, full=True)
    assert fast == full
    assert fast_counts == full_counts


FAKES = [
    ',"extra":{"output_index":0,"sequence_number":7}',  # the owned keys nested: not the event's
    ',"extra":"sequence_number"',  # an owned key's name as a string value
    ',"output_index":0',  # a duplicate: the last one counts
    ',"sequence_number":null',
    ',"logprobs":null',
    ',"extra":"a\\"sequence_number\\":1"',
    ',"item_id":"msg_1"',
    "",
]


@pytest.mark.parametrize("fake", FAKES)
@pytest.mark.parametrize("layout", ["openai", "vllm", "llamacpp"])
@pytest.mark.parametrize("start", ["Hello", "<think>r</think>Hi", "<think>r"])
@pytest.mark.parametrize("group", [1, 4, 64])
def test_keys_that_look_like_the_owned_ones(fake: str, layout: str, start: str, group: int) -> None:
    """Events whose bytes hold an owned key's name elsewhere than as that key, or twice: the
    output is the full path's, byte for byte, one event per feed and in runs."""
    words = [start, *([" step", " by"] * 12)]
    events: list[bytes] = []
    for seq, body in enumerate(text_events(layout, words)):
        if body.get("delta") in (" step", " by") and seq % 3 == 0:
            data = json.dumps(body, separators=(",", ":"))
            events.append(f"event: {body['type']}\ndata: {data[:-1]}{fake}}}\n\n".encode())
        else:
            events.append(f"event: {body['type']}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n".encode())
    for config in (CFG, CONTENT):
        fast, fast_counts = run_events(events, group, config, full=False)
        full, full_counts = run_events(events, 1, config, full=True)
        assert fast == full
        assert fast_counts == full_counts


@pytest.mark.parametrize("layout", ["openai", "vllm", "llamacpp", "pyjson"])
@pytest.mark.parametrize("start", ["Hello", "<think>r</think>Hi", "<think>r"])
def test_every_layout_takes_the_fast_path_one_event_per_feed(layout: str, start: str) -> None:
    """In steady answer text (as it came, or renumbered after a reasoning item) and in steady
    reasoning, no event of any layout reaches the full path, and each goes out as it would write it."""
    words = [start, " first", *([" step", " by", " é", " 4"] * 5)]
    bodies = text_events(layout, words)
    if layout == "pyjson":
        events = [f"data: {json.dumps(b)}\n\n".encode() for b in bodies]
    else:
        events = [f"event: {b['type']}\ndata: {json.dumps(b, separators=(',', ':'))}\n\n".encode() for b in bodies]
    head, steady = events[:5], events[5:-1]
    for config in (CFG, CONTENT):
        pipeline = StreamPipeline("responses", config)
        reference = StreamPipeline("responses", config)
        reference._translator = ResponsesReference(config, new_id=lambda prefix: prefix + "1" * 32)
        pipeline._translator = ResponsesStream(config, new_id=lambda prefix: prefix + "1" * 32)
        for ev in head:
            assert pipeline.feed(ev) == reference.feed(ev)
        calls = _counting(pipeline)
        assert [pipeline.feed(ev) for ev in steady] == [reference.feed(ev) for ev in steady]
        assert calls[0] == 0


def test_a_declined_event_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A single event the fast path reads and declines (a tag in steady text) is not read again by
    the full path: a decline costs a comparison, not a second decode."""
    from gateway_mw.surfaces.responses import heads as wire

    reads = []
    decode = wire._decode_head

    def counting(data: bytes) -> Any:
        reads.append(data)
        return decode(data)

    monkeypatch.setattr(wire, "_decode_head", counting)
    events = [
        f"data: {json.dumps(b, separators=(',', ':'))}\n\n".encode() for b in text_events("openai", ["Hello"] * 4)
    ]
    pipeline = StreamPipeline("responses", CFG)
    for ev in events[:5]:
        pipeline.feed(ev)
    for text in ("a<think>", "r", "</think>b", " c"):
        body = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0}
        ev = f"data: {json.dumps({**body, 'delta': text, 'sequence_number': 9})}\n\n".encode()
        reads.clear()
        pipeline.feed(ev)
        assert reads == [ev[6:-2]]


@pytest.mark.parametrize("word", ["step", " step"])
def test_trim_reasoning_tail_reads_whitespace_in_the_full_path(word: str) -> None:
    """With ``trim_reasoning_tail`` whitespace is a trigger in reasoning: a reasoning delta without
    any takes the fast path, one with some is read by the full path; both as the full path writes."""
    config = ThinkExtractConfig(trim_tag_edges=True, trim_reasoning_tail=True)
    events = [
        f"data: {json.dumps(b, separators=(',', ':'))}\n\n".encode()
        for b in text_events("vllm", ["<think>r", *[word] * 6])
    ]
    pipeline = StreamPipeline("responses", config)
    reference = StreamPipeline("responses", config)
    reference._translator = ResponsesReference(config, new_id=lambda prefix: prefix + "1" * 32)
    pipeline._translator = ResponsesStream(config, new_id=lambda prefix: prefix + "1" * 32)
    for ev in events[:5]:
        assert pipeline.feed(ev) == reference.feed(ev)
    calls = _counting(pipeline)
    assert [pipeline.feed(ev) for ev in events[5:]] == [reference.feed(ev) for ev in events[5:]]
    assert pipeline.finish() == reference.finish()
    assert calls[0] == (0 if word == "step" else len(events) - 5 - 1) + 1  # the done event: always read
