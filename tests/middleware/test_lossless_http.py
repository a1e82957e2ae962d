"""Property: whatever an upstream sends, a client reads every character the model wrote, in order.

Random chat streams, with random unreadable events mixed in, random line endings, cut into random
network pieces and truncated at a random byte, go through the middleware over real HTTP (one server
on loopback for the module). An SSE parser written from the standard reads the client's bytes; the
text it recovers (reasoning and content, in wire order) must be the text of the upstream events it
would have recovered without the middleware, with only whole tags taken out.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_mw import DEFAULT_TAG_PAIRS, ThinkExtractConfig, setup

from ..chatwire import chunk, sse
from ..hypothesis_examples import examples
from ..lossless import only_tags_removed, parse_sse, recovered

ROUTE = "/v1/chat/completions"


async def _replay(request: web.Request) -> web.StreamResponse:
    """The upstream: the request body is the stream to send, ``X-Cuts`` where to cut it."""
    body = await request.read()
    cuts = [int(c) for c in request.headers.get("X-Cuts", "").split(",") if c]
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    start = 0
    for cut in [*cuts, len(body)]:
        if cut > start:
            await resp.write(body[start:cut])
            start = cut
    await resp.write_eof()
    return resp


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """One real server per module, in its own thread, with a translated route per mode."""
    ready = threading.Event()
    state: dict[str, object] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        root = web.Application()
        for mode in ("live", "buffered"):
            sub = web.Application()
            setup(sub, ThinkExtractConfig(stream_mode=mode, separator="", tag_pairs=DEFAULT_TAG_PAIRS[:2]))
            sub.router.add_post(ROUTE, _replay)
            root.add_subapp(f"/{mode}", sub)
        runner = web.AppRunner(root)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        state.update(loop=loop, runner=runner, port=runner.addresses[0][1])
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield f"http://127.0.0.1:{state['port']}"
    loop = state["loop"]
    assert isinstance(loop, asyncio.AbstractEventLoop)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


# No whitespace in the model's text: a whitespace-only block emits nothing by design (rule 4).
PIECE = st.lists(st.sampled_from(["<think>", "</think>", "<thi", "nk>", "</th", "ink>", "<", "a", "bc", "é", "🙂"]))
BAD = st.sampled_from(
    [
        b"data: {not json\n\n",
        b'data: {"choices":[{"index":0,"delta":{"content":NaN}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"content":[1]}}]}\n\n',
        b"data: \xff\xfe\n\n",
        b": keepalive\n\n",
        b'event: error\ndata: {"message":"hiccup"}\n\n',
        b"data: " + b"[" * 100 + b"]" * 100 + b"\n\n",
        b"\n",
    ]
)


@st.composite
def upstreams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    events: list[bytes] = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 4)) == 0:
            events.append(draw(BAD))
        else:
            events.append(sse(chunk("".join(draw(PIECE.map(lambda p: p[:4]))))))
    if draw(st.booleans()):
        events.append(sse(chunk("", finish="stop"), "[DONE]"))
    stream = b"".join(events)
    if draw(st.booleans()):
        stream = stream.replace(b"\n", b"\r\n")
    if draw(st.booleans()):  # the upstream drops mid-stream
        stream = stream[: draw(st.integers(0, len(stream)))]
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(stream) - 1)), max_size=8))))
    return stream, cuts


def segments(body: bytes) -> list[str]:
    """The text an SSE client reads, cut at every event that is not a chat chunk (an error, an
    unreadable event): text may never cross such an event, in either direction."""
    out = [""]
    for data in parse_sse(body):
        try:
            item = json.loads(data)
        except (ValueError, RecursionError):
            item = None
        if not isinstance(item, dict) or not isinstance(item.get("choices"), list):
            out.append("")
            continue
        out[-1] += "".join(text for _, text in recovered(b"data: " + data.encode() + b"\n\n"))
    return out


@pytest.mark.parametrize("mode", ["live", "buffered"])
@settings(
    max_examples=examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(upstream=upstreams())
def test_no_character_is_lost_or_reordered(server_url: str, mode: str, upstream: tuple[bytes, list[int]]) -> None:
    stream, cuts = upstream
    request = urllib.request.Request(
        f"{server_url}/{mode}{ROUTE}", data=stream, headers={"X-Cuts": ",".join(map(str, cuts))}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        body = resp.read()
    assert all(text for _, text in recovered(body))
    sent, received = segments(stream), segments(body)
    assert len(sent) == len(received)
    for original, arrived in zip(sent, received, strict=True):
        assert only_tags_removed(original, arrived), (original, arrived)
    # Events nobody could read reach the client unchanged, in the order they were sent.
    assert [d for d in parse_sse(body) if "index" not in d] == [d for d in parse_sse(stream) if "index" not in d]
