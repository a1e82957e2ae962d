"""Peak memory of one long stream through the translator: Responses next to Anthropic messages.

The same text (a reasoning block, then the answer) is streamed on both surfaces in deltas of about
200 bytes, one event per feed, as a model server writes it. The Responses upstream ends as the real
API does: ``output_text.done``, ``content_part.done``, ``output_item.done`` and ``response.completed``
each repeat the whole text, so its largest event is about the size of the text; a messages stream
has no such event. Each run is a fresh process; the figure is its peak resident memory over what it
held once the upstream's events were made (they are not counted), next to the size of the largest
event the upstream sent.

    python bench/memory.py [--sizes 10,40] [--quick]

The children run with glibc's ``mmap`` threshold fixed (``MALLOC_MMAP_THRESHOLD_``): with the default
dynamic one, a freed block of tens of MB is kept for reuse or not depending on its size, and the peak
of a smaller size comes out lower than it is.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
from collections.abc import Iterator

from faults import peak_rss

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline

MB = 1024 * 1024
DELTA = 200
CONFIG = ThinkExtractConfig(messages_policy="unsigned")


def _rss() -> int:
    """Resident memory now, after resetting the peak to it (building the text peaked higher)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _text(size: int) -> str:
    words = "the quick brown fox jumps over the lazy dog " * (DELTA // 44 + 1)
    piece = words[:DELTA]
    count = size // DELTA
    reasoning = max(1, count // 10)
    return "<think>" + piece * reasoning + "</think>" + piece * (count - reasoning)


def _event(kind: str, body: bytes) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + body + b"\n\n"


def responses_stream(text: str) -> Iterator[bytes]:
    seq = iter(range(1 << 40))
    encoded = json.dumps(text).encode()  # the upstream's own copy of the text, as its done events write it

    def ev(kind: str, fields: bytes) -> bytes:
        return _event(kind, b'{"type":"%s",%s,"sequence_number":%d}' % (kind.encode(), fields, next(seq)))

    response = b'{"id":"resp_1","object":"response","created_at":1,"model":"m","status":"%s","output":%s,'
    response += b'"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}'
    yield ev("response.created", b'"response":' + response % (b"in_progress", b"[]"))
    item = b'{"id":"msg_1","type":"message","role":"assistant","status":"%s","content":%s}'
    yield ev("response.output_item.added", b'"output_index":0,"item":' + item % (b"in_progress", b"[]"))
    at = b'"item_id":"msg_1","output_index":0,"content_index":0'
    yield ev("response.content_part.added", at + b',"part":{"type":"output_text","text":"","annotations":[]}')
    for start in range(0, len(text), DELTA):
        delta = json.dumps(text[start : start + DELTA]).encode()
        yield ev("response.output_text.delta", at + b',"delta":' + delta + b',"logprobs":[]')
    part = b'{"type":"output_text","text":' + encoded + b',"annotations":[]}'
    yield ev("response.output_text.done", at + b',"text":' + encoded + b',"logprobs":[]')
    yield ev("response.content_part.done", at + b',"part":' + part)
    done = item % (b"completed", b"[" + part + b"]")
    yield ev("response.output_item.done", b'"output_index":0,"item":' + done)
    yield ev("response.completed", b'"response":' + response % (b"completed", b"[" + done + b"]"))


def messages_stream(text: str) -> Iterator[bytes]:
    message = b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":'
    message += b'{"input_tokens":1,"output_tokens":1}}'
    yield _event("message_start", b'{"type":"message_start","message":' + message + b"}")
    yield _event(
        "content_block_start", b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'
    )
    head = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":'
    for start in range(0, len(text), DELTA):
        yield _event("content_block_delta", head + json.dumps(text[start : start + DELTA]).encode() + b"}}")
    yield _event("content_block_stop", b'{"type":"content_block_stop","index":0}')
    yield _event(
        "message_delta", b'{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}'
    )
    yield _event("message_stop", b'{"type":"message_stop"}')


def _measure(surface: str, size: int, result: multiprocessing.Queue[tuple[int, int, int]]) -> None:
    stream = responses_stream if surface == "responses" else messages_stream
    # The upstream's bytes, made before the count starts and kept (memory they freed would hide ours).
    pieces = list(stream(_text(size)))
    largest = max(map(len, pieces))
    before = _rss()
    pipeline = StreamPipeline("responses" if surface == "responses" else "messages", CONFIG)
    sent = 0
    for piece in pieces:
        sent += len(pipeline.feed(piece))
    sent += len(pipeline.finish())
    assert pipeline.error is None
    result.put((peak_rss() - before, largest, sent))


def measure(surface: str, size: int) -> tuple[int, int]:
    """(peak memory over start, largest upstream event), in bytes, in a fresh process."""
    os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(128 * 1024))  # read by the child at its start
    ctx = multiprocessing.get_context("spawn")
    result: multiprocessing.Queue[tuple[int, int, int]] = ctx.Queue()
    process = ctx.Process(target=_measure, args=(surface, size, result))
    process.start()
    peak, largest, _ = result.get()
    process.join()
    return max(0, peak), largest


def table(sizes_mb: list[float]) -> str:
    lines = [
        "| text streamed | Responses: peak over start | its largest event | messages: peak over start |",
        "|---|---|---|---|",
    ]
    for size in sizes_mb:
        responses_peak, largest = measure("responses", int(size * MB))
        messages_peak, _ = measure("messages", int(size * MB))
        lines.append(
            f"| {size:g} MB | {responses_peak / MB:.1f} MB ({responses_peak / largest:.1f}× the largest event)"
            f" | {largest / MB:.1f} MB | {messages_peak / MB:.1f} MB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10,40", help="text sizes in MB, comma-separated")
    parser.add_argument("--quick", action="store_true", help="2 MB only: check that the command works")
    args = parser.parse_args()
    sizes = [2.0] if args.quick else [float(s) for s in args.sizes.split(",")]
    print(table(sizes))


if __name__ == "__main__":
    main()
