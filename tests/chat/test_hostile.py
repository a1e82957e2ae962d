"""Chat completions: random streams with hostile events mixed in, read by the openai SDK's own chat
stream accumulator, every chunk validated strictly. Whatever the upstream sends, the client's final
message holds what the model wrote (tags aside), in order, in the two fields."""

from __future__ import annotations

import itertools
import json
from typing import Any

import openai
from hypothesis import example, given, settings
from hypothesis import strategies as st
from openai.lib.streaming.chat._completions import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.scanner import CONTENT, Scanner
from gateway_mw.sse import SSEDecoder

from ..chatwire import chunk
from ..hypothesis_examples import examples

CONFIG = ThinkExtractConfig(separator="", max_event_bytes=2048)
BIG = "x" * 3000  # a chunk over max_event_bytes: streamed through unread
FRAGMENTS = st.sampled_from(["<think>", "</think>", "<thi", "nk>", "</th", "ink>", "a", "b c", "é", "🙂", "ok."])
HOSTILE = st.sampled_from(["unreadable", "duplicate_key", "float_index", "big", "big_call", "late", None])


def _sse(data: dict[str, Any] | str) -> bytes:
    return b"data: " + (data if isinstance(data, str) else json.dumps(data)).encode() + b"\n\n"


def build(deltas: list[tuple[str, str | None]]) -> tuple[bytes, str, str, list[str]]:
    """The upstream's stream, and the reasoning, content and tool calls' arguments a client must end
    up with: what one scanner fed the same text gives, flushed where the upstream sent something it
    cannot read."""
    out = [_sse(chunk("", delta={"role": "assistant"}))]
    scanner = Scanner(CONFIG)
    fields = {"reasoning": "", CONTENT: ""}
    late: list[str] = []
    calls: list[str] = []

    def take(segments: list[Any]) -> None:
        for seg in segments:
            fields["reasoning" if seg.kind != CONTENT else CONTENT] += seg.text

    for text, trouble in deltas:
        raw = _sse(chunk(text))
        if trouble == "duplicate_key":  # parsers read the last value
            raw = raw.replace(b'"content": ', b'"content": "JUNK", "content": ', 1)
        elif trouble == "float_index":
            raw = raw.replace(b'"index": 0', b'"index": 0.0', 1)
        out.append(raw)
        take(scanner.feed(text))
        if trouble == "unreadable":
            out.append(b"data: {not json\n\n")
            take(scanner.flush())
        elif trouble == "big":
            take(scanner.flush())
            out.append(_sse(chunk(BIG)))
            fields[CONTENT] += BIG
        elif trouble == "big_call":  # a tool call over max_event_bytes: streamed through unread
            take(scanner.flush())
            call = {"index": len(calls), "id": f"call_{len(calls)}", "type": "function"}
            calls.append("z" * 2500)
            call["function"] = {"name": "f", "arguments": calls[-1]}
            out.append(_sse(chunk(delta={"tool_calls": [call]})))
        elif trouble == "late":
            late.append("late")
    out.append(_sse(chunk("", finish="stop")))
    take(scanner.finish())
    for text in late:  # after the choice finished: a new channel
        out.append(_sse(chunk(text)))
        fields[CONTENT] += text
    out.append(_sse("[DONE]"))
    return b"".join(out), fields["reasoning"], fields[CONTENT], calls


def client_final(stream: bytes) -> tuple[str, str, list[str]]:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState(input_tools=openai.omit)
    decoder = SSEDecoder()
    frames = decoder.feed(stream)
    assert decoder.finish() == ([], b"")
    for frame in frames:
        assert frame.data is not None
        if frame.data in (b"[DONE]", b"{not json"):
            continue
        state.handle_chunk(ChatCompletionChunk.model_validate(json.loads(frame.data), strict=False))
    message = state.get_final_completion().choices[0].message
    extra = message.model_extra or {}
    calls = [call.function.arguments for call in message.tool_calls or []]
    return extra.get("reasoning_content") or "", message.content or "", calls


# The case the Responses surface failed: an open reasoning block, a chunk over the cap, a partial
# close tag held, then another chunk over the cap (text, or a tool call); in one piece or cut.
_HELD_THEN_BIG = [("<think>", "big"), ("</th", "big")]
_HELD_THEN_BIG_CALL = [("<think>", "big"), ("</th", "big_call")]


@settings(max_examples=examples(150), deadline=None)
@example(deltas=_HELD_THEN_BIG, cuts=[])
@example(deltas=_HELD_THEN_BIG, cuts=[100])
@example(deltas=_HELD_THEN_BIG_CALL, cuts=[])
@example(deltas=_HELD_THEN_BIG_CALL, cuts=[3300])
@example(deltas=[("<think>a</th", "big"), ("ink>b", "big_call")], cuts=[])
@given(
    deltas=st.lists(st.tuples(FRAGMENTS, HOSTILE), min_size=1, max_size=10),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_hostile_streams_reach_the_client_whole_and_in_order(
    deltas: list[tuple[str, str | None]], cuts: list[int]
) -> None:
    body, reasoning, content, calls = build(deltas)
    pipeline = StreamPipeline("chat", CONFIG)
    points = [0, *sorted({c % len(body) for c in cuts}), len(body)]
    out = b"".join(pipeline.feed(body[a:b]) for a, b in itertools.pairwise(points)) + pipeline.finish()
    assert pipeline.error is None
    assert client_final(out) == (reasoning, content, calls)


# -- several choices, and deltas cut between the two halves of a surrogate pair ------------------------

CHOICE_TEXT = st.lists(
    st.sampled_from(["<think>", "</think>", "a", " b", "\U0001f600", "é", "ok.", "\n"]), min_size=1, max_size=6
).map("".join)


def utf16_pieces(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut into deltas at UTF-16 code unit offsets, as a server that streams code units may
    cut it: a piece may end with half of a surrogate pair (a lone surrogate in the Python string)."""
    units = text.encode("utf-16-le", "surrogatepass")
    points = sorted({0, len(units) // 2, *(c % (len(units) // 2 + 1) for c in cuts)})
    return [units[2 * a : 2 * b].decode("utf-16-le", "surrogatepass") for a, b in itertools.pairwise(points)]


def client_choices(stream: bytes) -> list[tuple[str, str]]:
    """(reasoning, content) of every choice as the SDK's accumulator has them (it raises when a
    choice first appears out of order)."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState(input_tools=openai.omit)
    decoder = SSEDecoder()
    for frame in decoder.feed(stream):
        assert frame.data is not None
        if frame.data != b"[DONE]":
            state.handle_chunk(ChatCompletionChunk.model_validate(json.loads(frame.data), strict=False))
    assert decoder.finish() == ([], b"")
    return [
        ((c.message.model_extra or {}).get("reasoning_content") or "", c.message.content or "")
        for c in state.get_final_completion().choices
    ]


@settings(max_examples=examples(150), deadline=None)
@given(
    texts=st.lists(CHOICE_TEXT, min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 40), max_size=6),
    order=st.randoms(use_true_random=False),
    roles=st.booleans(),
    piece=st.integers(0, 40),
)
def test_choices_in_any_interleaving_and_utf16_cuts_reach_the_sdk_whole(
    texts: list[str], cuts: list[int], order: Any, roles: bool, piece: int
) -> None:
    """Every choice's text reaches the SDK's accumulator, its halves of a surrogate pair joined,
    whatever the order in which the upstream interleaves the choices (without role chunks, a choice
    may open with a bare tag); each choice as one scanner fed its text gives."""
    queues = [[(i, p) for p in utf16_pieces(text, cuts)] for i, text in enumerate(texts)]
    frames: list[bytes] = []
    if roles:
        frames += [_sse(chunk("", index=i, delta={"role": "assistant"})) for i in range(len(texts))]
    first = [q.pop(0) for q in queues]  # the upstream shows choices in index order first
    turns = [i for i, q in enumerate(queues) for _ in q]
    order.shuffle(turns)  # which choice speaks next; each choice's own pieces stay in order
    for i, text in first + [queues[i].pop(0) for i in turns]:
        frames.append(b"data: " + json.dumps(chunk(text, index=i), ensure_ascii=True).encode() + b"\n\n")
    frames += [_sse(chunk("", index=i, finish="stop")) for i in range(len(texts))]
    frames.append(_sse("[DONE]"))
    body = b"".join(frames)
    pipeline = StreamPipeline("chat", CONFIG)
    step = piece or len(body)
    out = b"".join(pipeline.feed(body[i : i + step]) for i in range(0, len(body), step)) + pipeline.finish()
    assert pipeline.error is None
    expected = []
    for text in texts:
        scanner = Scanner(CONFIG)
        segments = scanner.feed(text) + scanner.finish()
        expected.append(
            (
                "".join(s.text for s in segments if s.kind != CONTENT),
                "".join(s.text for s in segments if s.kind == CONTENT),
            )
        )
    assert client_choices(out) == expected


# -- a chunk that stays unread while it ends with half a surrogate pair ----------------------------


def _translated(frames: list[bytes]) -> bytes:
    pipeline = StreamPipeline("chat", CONFIG)
    out = b"".join(pipeline.feed(frame) for frame in frames) + pipeline.finish()
    assert pipeline.error is None
    return out


def test_a_half_in_a_chunk_that_goes_out_unread_is_not_sent_again_with_the_next() -> None:
    """The chunk goes out as it came, its high half with it; the next chunk's low half, whose other
    half is gone, is U+FFFD (as any lone half): no character is sent twice."""
    unread = b'data: {"choices":[{"index":0,"delta":{"content":"ab\\ud83d"},"finish_reason":7}]}\n\n'
    low = b'data: {"choices":[{"index":0,"delta":{"content":"\\ude00cd"},"finish_reason":null}]}\n\n'
    done = b"data: [DONE]\n\n"
    fixed = b'data: {"choices":[{"index":0,"delta":{"content":"\xef\xbf\xbdcd"},"finish_reason":null}]}\n\n'
    assert _translated([unread, low, done]) == unread + fixed + done


def test_a_number_out_of_range_next_to_a_half_leaves_the_chunk_as_it_came() -> None:
    """-1e400 is read as infinity, which has no JSON: the chunk is not written again (``-Infinity``
    is no JSON a client reads), it goes out as it came, and nothing of it is held."""
    odd = b'data: {"choices":[{"index":0,"delta":{"content":"ab\\ud83d"},"logprobs":-1e400,"finish_reason":null}]}\n\n'
    plain = _sse(chunk("cd"))
    done = b"data: [DONE]\n\n"
    assert _translated([odd, plain, done]) == odd + plain + done
