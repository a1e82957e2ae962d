"""The gateway against careless or hostile clients, over real loopback HTTP: a client that leaves at the
last moment, credentials and control characters that must not reach the log, paths that try to leave
the prefix, connections that never send a request, and a stop that must keep to its bound.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from gateway_mw.proxy import PROXY, build_app

from .test_proxy import SSE_HEAD, RawUpstream, chunked, raw_request, sse_chunk
from .test_proxy_operator import records, serving, settings

GATEWAY_LOGGERS = ("gateway_mw", "gateway_mw.proxy", "aiohttp.server", "aiohttp.web", "asyncio")


async def until(check: object, seconds: float = 5.0) -> None:
    """Wait (bounded) until ``check()`` is true."""
    assert callable(check)
    for _ in range(int(seconds / 0.01)):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not true within {seconds}s: {check}")


# -- a client that leaves after [DONE] --------------------------------------------------------------


@pytest.mark.parametrize("middleware", [True, False], ids=["middleware", "plain"])
async def test_a_client_leaving_after_done_before_the_upstreams_end_is_one_counted_disconnect(
    middleware: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    done = sse_chunk("answer") + b"data: [DONE]\n\n"

    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + chunked(done))
        await writer.drain()
        await up.go.wait()  # the stream's end comes after the client has gone
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async with RawUpstream(respond) as up:
        s = settings(upstream=up.url, middleware=middleware)
        app = build_app(s)
        # The upstream's end arrives between two looks of the disconnect watcher, as it does when the
        # client closes right after [DONE]: the watcher must not see the client leave first.
        app[PROXY].disconnect_poll = 60.0
        async with serving(s, app) as base:
            reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
            body = b'{"model":"m","stream":true}'
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: left-1\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            await asyncio.wait_for(reader.readuntil(b"data: [DONE]\n\n"), 5)
            writer.close()  # the client has all it wants
            await asyncio.sleep(0.2)  # the gateway has seen it go
            up.go.set()
            await asyncio.wait_for(up.closed.wait(), 5)
            counters = app[PROXY].counters
            await until(lambda: counters.client_disconnects > 0)
            await asyncio.sleep(0.1)  # anything aiohttp would log after the handler
    assert counters.client_disconnects == 1
    assert records(caplog, *GATEWAY_LOGGERS) == [
        (
            "gateway_mw.proxy",
            logging.DEBUG,
            "request left-1: POST /v1/chat/completions: the client left before the end of the answer",
        )
    ]
    assert [r.exc_info for r in caplog.records if r.name in GATEWAY_LOGGERS] == [None]


# -- paths that try to leave the prefix ---------------------------------------------------------------

DOT_SEGMENTS = {"message": "dot segments are not allowed in the path"}
SEPARATORS = {"message": "encoded slashes and backslashes are not allowed in the path"}
NOT_UTF8 = {"message": "the path is not UTF-8 once percent-decoded"}
REFUSED_PATHS = [
    ("/v1/..%2fadmin", SEPARATORS),
    ("/v1/%2e%2e%2fadmin", SEPARATORS),
    ("/v1/..%5cadmin", SEPARATORS),
    ("/v1/..%5Cadmin", SEPARATORS),
    ("/v1/..\\admin", SEPARATORS),
    ("/v1/models%2Fother", SEPARATORS),
    ("/v1/%252fadmin", SEPARATORS),
    ("/v1/%255cadmin", SEPARATORS),
    ("/v1/%252e%252e/admin", DOT_SEGMENTS),
    ("/v1/models/%252E", DOT_SEGMENTS),
    ("/v1/a%252eb", DOT_SEGMENTS),
    ("/v1/.%2e/admin", DOT_SEGMENTS),
    ("/v1/%2E./admin", DOT_SEGMENTS),
    ("/v1/..;x=1/admin", DOT_SEGMENTS),
    ("/v1/%2e%2e;/admin", DOT_SEGMENTS),
    ("/v1/models/.", DOT_SEGMENTS),
    ("/v1/models/%2e", DOT_SEGMENTS),
    ("/v1/%c0%ae%c0%ae/admin", NOT_UTF8),
]
FORWARDED_PATHS = [
    "/v1/files/a%20b",
    "/v1/models/org%40name",
    "/v1/x.y/..z/...",
    "/v1/models/.hidden",
    "/v1/caf%C3%A9",
    "/v1/a%25b",
]


async def test_a_path_whose_decoded_form_leaves_its_segment_is_refused_the_rest_forwarded_as_sent() -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")

    async with RawUpstream(respond) as up, serving(settings(upstream=up.url)) as base:
        answers = {path: await raw_request(base, f"GET {path} HTTP/1.1\nHost: x") for path, _ in REFUSED_PATHS}
        forwarded = {path: await raw_request(base, f"GET {path} HTTP/1.1\nHost: x") for path in FORWARDED_PATHS}
    got = {}
    for path, answer in answers.items():
        head, _, body = answer.partition(b"\r\n\r\n")
        got[path] = (head.split(b"\r\n")[0], json.loads(body))
    error = {"type": "invalid_request_error", "param": None, "code": "invalid_request"}
    refused = b"HTTP/1.1 400 Bad Request"
    assert got == {path: (refused, {"error": {**refusal, **error}}) for path, refusal in REFUSED_PATHS}
    assert [line for line, _, _ in up.requests] == [f"GET {path} HTTP/1.1" for path in FORWARDED_PATHS]
    assert all(answer.startswith(b"HTTP/1.1 200 OK\r\n") for answer in forwarded.values())
