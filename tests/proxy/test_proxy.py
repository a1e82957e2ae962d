"""examples/proxy.py over real loopback HTTP: the demo model through the official SDKs, a scripted
upstream for the proxy's own duties (headers, errors, disconnects, the upstream's host), settings,
metrics, ``--demo`` and gunicorn.

Every proxy here runs on ``web.AppRunner`` + ``TCPSite`` as ``web.run_app`` and gunicorn's worker do,
so a client disconnect does not cancel the handler by itself.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import msgspec
import openai
import pytest
from aiohttp import web

from examples import demo_model, proxy
from gateway_mw import THINKEXTRACT_STATS, ModelProfile, TagPair, ThinkExtractConfig
from gateway_mw.proxy.app import gateway_middleware

from .processes import gunicorn_env, listening_at
from .support import SSE_HEAD, USER, RawUpstream, chunked, raw_request, refused_port, split, sse_chunk, until

ROOT = Path(__file__).resolve().parents[2]
QUESTION = demo_model.QUESTION


@contextlib.asynccontextmanager
async def running(app: web.Application) -> AsyncIterator[str]:
    """Serve ``app`` on a free loopback port as ``web.run_app`` does; yield its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def settings(**changes: Any) -> proxy.Settings:
    if "upstream" in changes and "think_extract" not in changes:
        # A scripted upstream answers only what the test sends: its server named, the gateway does
        # not ask it (GET /v1/models) which one it is.
        changes["think_extract"] = proxy.DEMO_CONFIG.replace(upstream_server="generic")
    base = proxy.Settings(pace=0.0, think_extract=proxy.DEMO_CONFIG)
    return msgspec.structs.replace(base, **changes)


WIDE = ("* **",)
"""Every route under the prefix: for the tests of forwarding itself, whatever the path."""


@pytest.fixture
async def demo_base() -> AsyncIterator[str]:
    async with running(proxy.build_app(settings())) as base:
        yield base


@pytest.fixture(params=["demo-model", "scripted-upstream"])
async def base(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """The proxy on the embedded demo model, or on a scripted upstream that replays the demo model's
    bytes in 5-byte pieces (every tag, event and UTF-8 character cut somewhere)."""
    if request.param == "demo-model":
        async with running(proxy.build_app(settings())) as url:
            yield url
        return

    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        line, _headers, body = up.requests[-1]
        method, target, _ = line.split(" ")
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, model + target, data=body, headers={"Content-Type": "application/json"}) as r,
        ):
            status, ctype, data = r.status, r.headers["Content-Type"], await r.read()
        head = f"HTTP/1.1 {status} Scripted\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n"
        writer.write(head.encode() + b"Connection: close\r\n\r\n")
        for i in range(0, len(data), 5):
            writer.write(chunked(data[i : i + 5]))
            await writer.drain()
            await asyncio.sleep(0)  # let the proxy read each piece on its own
        writer.write(b"0\r\n\r\n")

    async with (
        running(demo_model.build_app(pace=0)) as model,
        RawUpstream(respond) as up,
        running(proxy.build_app(settings(upstream=up.url, think_extract=proxy.DEMO_CONFIG))) as url,
    ):
        yield url


# -- the embedded demo model through the official SDKs -------------------------------------------------


def oai(base: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base + "/v1", api_key="k", max_retries=0, _strict_response_validation=True)


def claude(base: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=base, api_key="k", max_retries=0, _strict_response_validation=True)


@pytest.mark.parametrize("model", ["demo", "demo-r1"])
@pytest.mark.parametrize("stream", [False, True])
async def test_chat_through_the_sdk(base: str, model: str, stream: bool) -> None:
    reasoning, answer = split(model)
    async with oai(base) as client:
        if stream:
            async with client.chat.completions.stream(model=model, messages=USER) as s:
                result = await s.get_final_completion()
        else:
            result = await client.chat.completions.create(model=model, messages=USER)
    message = result.choices[0].message
    assert message.model_dump(exclude_none=True) == {
        "role": "assistant",
        "content": answer,
        "reasoning_content": reasoning,
        "reasoning": reasoning,
    }
    assert (result.model, result.choices[0].finish_reason) == (model, "stop")


async def test_chat_raw_stream_chunks_carry_one_kind_each(base: str) -> None:
    reasoning, answer = split("demo-r1")
    kinds = []
    async with oai(base) as client:
        stream = await client.chat.completions.create(model="demo-r1", messages=USER, stream=True)
        async for chunk in stream:
            delta = chunk.choices[0].delta
            r = (delta.model_extra or {}).get("reasoning_content")
            kinds.append(("reasoning", r) if r else ("content", delta.content) if delta.content else ("none", ""))
    assert "".join(t for k, t in kinds if k == "reasoning") == reasoning
    assert "".join(t for k, t in kinds if k == "content") == answer
    # All reasoning first, then all the answer: no mixed or repeated chunk.
    order = [k for k, _ in kinds if k != "none"]
    assert order == sorted(order, key=lambda k: k != "reasoning")


@pytest.mark.parametrize("stream", [False, True])
async def test_messages_through_the_sdk(base: str, stream: bool) -> None:
    reasoning, answer = split("demo")
    async with claude(base) as client:
        if stream:
            async with client.messages.stream(model="demo", max_tokens=256, messages=USER) as s:
                message = await s.get_final_message()
        else:
            message = await client.messages.create(model="demo", max_tokens=256, messages=USER)
    blocks = [block.model_dump(exclude_none=True) for block in message.content]
    # messages_policy="unsigned": a thinking block carrying the documented gateway signature
    # ("gw1:" + unpadded base64url of the SHA-256 of the thinking text), then the text.
    digest = hashlib.sha256(reasoning.encode()).digest()
    signature = "gw1:" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert blocks == [
        {"type": "thinking", "thinking": reasoning, "signature": signature},
        {"type": "text", "text": answer},
    ]
    assert (message.model, message.stop_reason) == ("demo", "end_turn")


@pytest.mark.parametrize("stream", [False, True])
async def test_responses_through_the_sdk(base: str, stream: bool) -> None:
    reasoning, answer = split("demo-r1")
    async with oai(base) as client:
        if stream:
            async with client.responses.stream(model="demo-r1", input=QUESTION) as s:
                response = await s.get_final_response()
        else:
            response = await client.responses.create(model="demo-r1", input=QUESTION)
    keep = {"type", "role", "summary", "content"}
    output = [{k: v for k, v in item.model_dump(exclude_none=True).items() if k in keep} for item in response.output]
    for item in output:
        for part in item.get("content", []):
            if part["type"] == "output_text":
                part.setdefault("logprobs", [])  # optional on the part (wire contracts, 1.2)
    text_part = {"type": "output_text", "annotations": [], "logprobs": []}
    assert output == [
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": reasoning}],
            "content": [{"type": "reasoning_text", "text": reasoning}],
        },
        {"type": "message", "role": "assistant", "content": [{**text_part, "text": answer}]},
    ]
    assert response.output[0].id.startswith("rs_")
    assert response.output_text == answer
    assert (response.model, response.status) == ("demo-r1", "completed")


async def test_responses_second_turn_answers_the_last_user_message(base: str) -> None:
    """A replayed reasoning item and a tool result carry no role: they are not the user's question."""
    async with oai(base) as client:
        first = await client.responses.create(model="demo-r1", input=QUESTION)
        replay = [item.model_dump(exclude_none=True) for item in first.output]
        tool = {"type": "function_call_output", "call_id": "call_1", "output": "4"}
        history = [{"role": "user", "content": QUESTION}, *replay, {"role": "user", "content": "And 3+3?"}, tool]
        second = await client.responses.create(model="demo-r1", input=history)
    _, answer = demo_model.model_text("demo-r1", "And 3+3?").removeprefix("<think>").partition("</think>")[::2]
    assert second.output_text == answer


async def test_demo_model_alone_speaks_each_wire_format_strictly() -> None:
    """What the model writes, straight from it, validates strictly in every SDK (no gateway)."""
    async with running(demo_model.build_app(pace=0)) as base, oai(base) as client, claude(base) as ant:
        c = await client.chat.completions.create(model="demo", messages=USER)
        assert c.choices[0].message.content == demo_model.model_text("demo", QUESTION)
        async with client.responses.stream(model="demo", input=QUESTION) as s:
            assert (await s.get_final_response()).output_text == demo_model.model_text("demo", QUESTION)
        async with ant.messages.stream(model="demo", max_tokens=9, messages=USER) as m:
            text = (await m.get_final_message()).content[0]
        assert text.model_dump(exclude_none=True) == {"type": "text", "text": demo_model.model_text("demo", QUESTION)}


async def test_demo_model_paces_its_tokens() -> None:
    async with running(demo_model.build_app(pace=200)) as base, aiohttp.ClientSession() as session:
        start = time.monotonic()
        body = {"model": "demo", "stream": True, "messages": USER}
        async with session.post(base + "/v1/chat/completions", json=body) as resp:
            await asyncio.wait_for(resp.read(), 60)  # a bound for a hang, not a speed
        elapsed = time.monotonic() - start
    n = len(demo_model.tokens(demo_model.model_text("demo", QUESTION)))
    assert n / 200 * 0.8 < elapsed  # paced: no sooner than its tokens at 200 a second


# -- a scripted upstream ------------------------------------------------------------------------------


async def test_request_forwarded_with_hop_by_hop_headers_stripped() -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")

    async with (
        RawUpstream(respond) as up,
        running(proxy.build_app(settings(upstream=up.url, forward_routes=WIDE))) as base,
    ):
        body = b'{"model":"m"}'
        answer = await raw_request(
            base,
            "POST /v1/embeddings?a=1&b=%20 HTTP/1.1\n"
            "Host: client-side.example\n"
            "Authorization: Bearer client-key\n"
            "Content-Type: application/json\n"
            f"Content-Length: {len(body)}\n"
            "Keep-Alive: timeout=5\n"
            "Proxy-Authorization: Basic eDp5\n"
            "TE: trailers\n"
            "Connection: X-Private-Hop\n"
            "X-Private-Hop: dropped, since Connection names it\n"
            "X-Custom: kept\n"
            "Accept-Encoding: gzip",
            body,
        )
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\n{}")
    answered = dict(h.split(": ", 1) for h in answer.partition(b"\r\n\r\n")[0].decode().split("\r\n")[1:])
    (line, headers, received) = up.requests[0]
    assert (line, received) == ("POST /v1/embeddings?a=1&b=%20 HTTP/1.1", body)
    assert dict(headers) == {
        "Host": f"127.0.0.1:{up.port}",
        "Authorization": "Bearer client-key",
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        "X-Custom": "kept",
        "Accept-Encoding": "identity",
        "Accept": "*/*",
        # What the gateway adds (tests/proxy/test_operator.py has them on and off):
        "X-Request-Id": answered["X-Request-Id"],
        "X-Forwarded-For": "127.0.0.1",
        "X-Forwarded-Proto": "http",
        "Via": "1.1 gateway-mw",
    }
    assert re.fullmatch("[0-9a-f]{32}", answered["X-Request-Id"]) and answered["Via"] == "1.1 gateway-mw"


async def test_response_hop_by_hop_headers_stripped_and_body_streamed_as_it_comes() -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=99\r\nProxy-Authenticate: Basic\r\n"
            b"Trailer: X-Checksum\r\nUpgrade: h2c\r\nX-Request-Id: r-1\r\nCache-Control: no-cache\r\n\r\n"
        )
        writer.write(chunked(sse_chunk("first")))
        await writer.drain()
        await up.go.wait()  # nothing more until the client has seen the first event
        writer.write(chunked(sse_chunk("second") + b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()

    async with (
        RawUpstream(respond) as up,
        running(proxy.build_app(settings(upstream=up.url))) as base,
        aiohttp.ClientSession() as session,
        session.post(base + "/v1/chat/completions", json={"model": "m"}) as resp,
    ):
        first = await asyncio.wait_for(resp.content.readuntil(b"\n\n"), 60)
        up.go.set()
        rest = await resp.read()
        headers = {k.lower(): v for k, v in resp.headers.items() if k not in ("Date", "Server")}
    assert (first, rest) == (sse_chunk("first"), sse_chunk("second") + b"data: [DONE]\n\n")
    assert headers == {
        "content-type": "text/event-stream",
        "x-request-id": "r-1",
        "cache-control": "no-cache",
        "via": "1.1 gateway-mw",
        "transfer-encoding": "chunked",  # the proxy's own chunking, toward the client
    }


@pytest.mark.parametrize("sent", [{"Authorization": "Bearer client"}, {"x-api-key": "client"}, {}])
async def test_upstream_key_replaces_the_clients(sent: dict[str, str]) -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")

    async with RawUpstream(respond) as up:
        # A server named, so that the gateway does not ask this one-shot upstream what it is first.
        env = {"UPSTREAM_KEY": "sk-upstream", "THINK_EXTRACT_UPSTREAM_SERVER": "generic"}
        s, _ = proxy.load_settings(["--upstream", up.url, "--upstream-key-env", "UPSTREAM_KEY"], env)
        async with (
            running(proxy.build_app(s)) as base,
            aiohttp.ClientSession() as session,
            session.get(base + "/v1/models", headers=sent) as resp,
        ):
            assert resp.status == 204
    auth = {k.lower(): v for k, v in up.requests[0][1] if k.lower() in ("authorization", "x-api-key")}
    expected = {"authorization": "Bearer sk-upstream", "x-api-key": "sk-upstream"}
    assert auth == ({k: expected[k] for k in (n.lower() for n in sent)} if sent else expected)


async def test_redirects_are_returned_not_followed() -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://elsewhere.example/v1/x\r\nContent-Length: 0\r\n\r\n"
        )

    async with (
        RawUpstream(respond) as up,
        running(proxy.build_app(settings(upstream=up.url))) as base,
        aiohttp.ClientSession() as session,
        session.post(base + "/v1/chat/completions", json={}, allow_redirects=False) as resp,
    ):
        assert (resp.status, resp.headers["Location"]) == (307, "http://elsewhere.example/v1/x")
    assert len(up.requests) == 1


async def test_client_cannot_choose_the_upstream_host_or_leave_the_prefix() -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")

    async with (
        RawUpstream(respond) as up,
        running(proxy.build_app(settings(upstream=up.url, forward_routes=WIDE))) as base,
    ):
        host = f"127.0.0.1:{up.port}"
        absolute = await raw_request(base, "GET http://evil.example:9/v1/models?x=1 HTTP/1.1\nHost: evil.example:9")
        double = await raw_request(base, "GET /v1//evil.example/models HTTP/1.1\nHost: evil.example")
        outside = await raw_request(base, "GET //evil.example/v1/models HTTP/1.1\nHost: evil.example")
        dots = await raw_request(base, "GET /v1/../admin HTTP/1.1\nHost: x")
        encoded = await raw_request(base, "GET /v1/%2E%2e/admin HTTP/1.1\nHost: x")
    seen = [(line, dict(headers)["Host"]) for line, headers, _ in up.requests]
    assert seen == [
        ("GET /v1/models?x=1 HTTP/1.1", host),
        ("GET /v1//evil.example/models HTTP/1.1", host),
    ]
    assert absolute.startswith(b"HTTP/1.1 200") and double.startswith(b"HTTP/1.1 200")
    assert outside.startswith(b"HTTP/1.1 404")
    for answer in (dots, encoded):
        status, _, body = answer.partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 400")
        assert json.loads(body) == {
            "error": {
                "message": "dot segments are not allowed in the path",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request",
            }
        }


UNREACHABLE = {
    "/v1/chat/completions": {
        "error": {
            "message": "the upstream model server is unreachable",
            "type": "server_error",
            "param": None,
            "code": "upstream_unreachable",
        }
    },
    "/v1/messages": {
        "type": "error",
        "error": {"type": "api_error", "message": "the upstream model server is unreachable"},
    },
}


@pytest.mark.parametrize("path", list(UNREACHABLE))
async def test_upstream_down_is_a_502_in_the_surfaces_shape(path: str) -> None:
    with refused_port() as port:
        s = settings(upstream=f"http://127.0.0.1:{port}")
        async with (
            running(proxy.build_app(s)) as base,
            aiohttp.ClientSession() as session,
            session.post(base + path, json={"model": "m"}) as resp,
        ):
            assert (resp.status, await resp.json()) == (502, UNREACHABLE[path])


async def test_upstream_down_reaches_the_sdks_as_their_own_errors() -> None:
    with refused_port() as port:
        s = settings(upstream=f"http://127.0.0.1:{port}")
        async with running(proxy.build_app(s)) as base, oai(base) as client, claude(base) as ant:
            with pytest.raises(openai.APIStatusError) as oe:
                await client.chat.completions.create(model="m", messages=USER)
            with pytest.raises(anthropic.APIStatusError) as ae:
                await ant.messages.create(model="m", max_tokens=5, messages=USER)
    assert (oe.value.status_code, oe.value.code) == (502, "upstream_unreachable")
    assert (ae.value.status_code, ae.value.body) == (502, UNREACHABLE["/v1/messages"])


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "/v1/responses",
            {
                "error": {
                    "message": "the upstream model server did not answer in time",
                    "type": "server_error",
                    "param": None,
                    "code": "upstream_timeout",
                }
            },
        ),
        (
            "/v1/messages",
            {
                "type": "error",
                "error": {"type": "timeout_error", "message": "the upstream model server did not answer in time"},
            },
        ),
    ],
)
async def test_upstream_slow_is_a_504_after_the_read_timeout(path: str, expected: dict[str, Any]) -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        await up.wait_closed_by_peer(writer)  # never answers

    async with RawUpstream(respond) as up:
        s = settings(upstream=up.url, read_timeout=0.3)
        async with running(proxy.build_app(s)) as base, aiohttp.ClientSession() as session:
            start = time.monotonic()
            async with session.post(base + path, json={"model": "m"}) as resp:
                assert (resp.status, await resp.json()) == (504, expected)
            assert time.monotonic() - start >= 0.3  # not before the read timeout (the upstream never answers)
        await asyncio.wait_for(up.closed.wait(), 60)  # and the proxy let go of the upstream


@pytest.mark.parametrize("upstream_talks", [True, False], ids=["streaming-upstream", "silent-upstream"])
async def test_client_disconnect_cancels_the_upstream_request(upstream_talks: bool) -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + chunked(sse_chunk("<think>thinking")))
        await writer.drain()
        await up.wait_closed_by_peer(writer, chunked(sse_chunk(" more")) if upstream_talks else None)

    async with RawUpstream(respond) as up:
        app = proxy.build_app(settings(upstream=up.url))
        async with running(app) as base:
            async with aiohttp.ClientSession() as session:
                resp = await session.post(base + "/v1/chat/completions", json={"model": "m", "stream": True})
                first = await asyncio.wait_for(resp.content.readuntil(b"\n\n"), 60)
                assert json.loads(first[6:])["choices"][0]["delta"] == {
                    "reasoning_content": "thinking",
                    "reasoning": "thinking",
                }
                resp.close()  # the client goes away mid-stream
                await asyncio.wait_for(up.closed.wait(), 60)  # else the upstream would wait for ever
            assert app[proxy.PROXY].counters.client_disconnects == 1


@pytest.mark.parametrize("before_headers", [True, False], ids=["waiting-for-headers", "json-body-held"])
async def test_client_disconnect_cancels_the_upstream_while_nothing_reaches_the_client(before_headers: bool) -> None:
    """Nothing is written to the client (no headers yet, or a JSON body the middleware holds): the
    proxy still notices the client left."""

    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        if not before_headers:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            await writer.drain()
        await up.wait_closed_by_peer(writer)

    async with RawUpstream(respond) as up:
        app = proxy.build_app(settings(upstream=up.url))
        async with running(app) as base:
            _reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
            body = b'{"model":"m"}'
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            await until(lambda: up.requests)  # the request reached the upstream
            writer.close()  # the client goes away
            await asyncio.wait_for(up.closed.wait(), 60)  # else the upstream would wait for ever
            assert app[proxy.PROXY].counters.client_disconnects == 1


async def test_a_client_that_stops_reading_stops_the_upstream() -> None:
    """No unbounded buffering: the upstream's writes stall while the client reads nothing."""
    written = 0
    piece = b"x" * 65536

    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        nonlocal written
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 104857600\r\n\r\n")
        for _ in range(1600):  # 100 MiB
            writer.write(piece)
            await writer.drain()
            written += len(piece)

    async with (
        RawUpstream(respond) as up,
        running(proxy.build_app(settings(upstream=up.url, forward_routes=WIDE))) as base,
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
        writer.write(b"GET /v1/files/big HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")
        # Read nothing more, until the upstream's writes have stopped (a busy machine may pause them a
        # moment before that: a pause is taken for the stall, and the bound below holds for it too).
        stalled_at = -1
        while written != stalled_at:
            stalled_at = written
            await asyncio.sleep(0.3)
        assert stalled_at < 32 * 1024 * 1024  # socket buffers and one piece per hop, no more
        got = 0
        while got < 1024 * 1024:  # reading again lets it go on
            got += len(await reader.read(65536))
        await until(lambda: written > stalled_at)
        writer.close()


async def test_a_chunked_request_body_is_streamed_to_the_upstream() -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")

    parts = [b'{"model": "m", ', b'"input": "' + b"y" * 100000 + b'"}']

    async def body() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    async with (
        RawUpstream(respond) as up,
        running(proxy.build_app(settings(upstream=up.url, forward_routes=WIDE))) as base,
        aiohttp.ClientSession() as session,
        session.post(base + "/v1/embeddings", data=body(), headers={"Content-Type": "application/json"}) as resp,
    ):
        assert (resp.status, await resp.read()) == (200, b"{}")
    line, headers, received = up.requests[0]
    assert (line, received) == ("POST /v1/embeddings HTTP/1.1", b"".join(parts))
    assert dict(headers)["Transfer-Encoding"] == "chunked" and "Content-Length" not in dict(headers)


async def test_upstream_dropping_mid_stream_cuts_the_client_after_the_held_text() -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + chunked(sse_chunk("<think>partial</thi")))
        await writer.drain()
        writer.transport.abort()

    async with RawUpstream(respond) as up, running(proxy.build_app(settings(upstream=up.url))) as base:
        received = b""
        async with aiohttp.ClientSession() as session:
            resp = await session.post(base + "/v1/chat/completions", json={"model": "m", "stream": True})
            with pytest.raises(aiohttp.ClientPayloadError):
                async for piece in resp.content.iter_any():
                    received += piece
    deltas = [json.loads(e[6:])["choices"][0]["delta"] for e in received.split(b"\n\n") if e]
    assert deltas == [
        {"reasoning_content": "partial", "reasoning": "partial"},
        {"reasoning_content": "</thi", "reasoning": "</thi"},
    ]


async def test_translated_body_gets_its_own_length_and_upstream_errors_pass_as_they_are(demo_base: str) -> None:
    reasoning, answer = split("demo")
    async with aiohttp.ClientSession() as session:
        body = {"model": "demo", "messages": USER}
        async with session.post(demo_base + "/v1/chat/completions", json=body) as resp:
            raw = await resp.read()
            assert (resp.status, int(resp.headers["Content-Length"])) == (200, len(raw))
        message = json.loads(raw)["choices"][0]["message"]
        assert message == {
            "role": "assistant",
            "content": answer,
            "reasoning_content": reasoning,
            "reasoning": reasoning,
        }
        async with session.post(demo_base + "/v1/chat/completions", data=b"{not json") as resp:
            assert (resp.status, await resp.json()) == (
                400,
                {
                    "error": {
                        "message": "the request body is not valid JSON",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
        async with session.post(demo_base + "/v1/messages", json={"messages": []}) as resp:
            assert (resp.status, await resp.json()) == (
                400,
                {"type": "error", "error": {"type": "invalid_request_error", "message": "'model' is required"}},
            )


async def test_healthz_and_metrics(demo_base: str) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    async with oai(demo_base) as client:
        await client.chat.completions.create(model="demo", messages=USER)
    async with aiohttp.ClientSession() as session:
        async with session.get(demo_base + "/healthz") as resp:
            assert (resp.status, await resp.json()) == (200, {"status": "ok"})
        async with session.get(demo_base + "/metrics") as resp:
            assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            text = await resp.text()

    def samples(exposition: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(exposition)
            for s in family.samples
        }

    got = samples(text)
    assert got[("thinkextract_translated_total", (("surface", "chat"),))] == 1
    assert got[("thinkextract_reasoning_blocks_total", (("surface", "chat"),))] == 1
    assert got[("gateway_proxy_requests_total", (("key", "-"), ("status", "200"), ("surface", "chat")))] == 1
    stats = proxy.ThinkExtractStats()
    stats.passed("messages", "disabled")
    written = samples(proxy.GatewayMetrics(stats, proxy.Counters(upstream_timeouts=3)).exposition().decode())
    assert written[("thinkextract_passed_through_total", (("reason", "disabled"), ("surface", "messages")))] == 1
    assert written[("gateway_proxy_upstream_timeouts_total", ())] == 3


# -- settings -----------------------------------------------------------------------------------------


def test_settings_precedence_file_then_env_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        """
[proxy]
upstream = "http://127.0.0.1:8000"
port = 9000
read_timeout = 120

[think_extract]
stream_mode = "buffered"
messages_policy = "redacted"
tag_pairs = [{open = "<think>", close = "</think>"}]

[[think_extract.profiles]]
match = "deepseek-r1*"
start_with_reasoning = true
"""
    )
    env = {"GATEWAY_PORT": "9100", "THINK_EXTRACT_STREAM_MODE": "live", "GATEWAY_CONFIG": str(config)}
    s, _ = proxy.load_settings(["--port", "9200", "--set", "separator=\\n\\n"], env)
    assert s == proxy.Settings(
        upstream="http://127.0.0.1:8000",
        port=9200,
        read_timeout=120.0,
        think_extract=ThinkExtractConfig(
            stream_mode="live",
            messages_policy="redacted",
            separator="\n\n",
            tag_pairs=(TagPair("<think>", "</think>"),),
            profiles=(ModelProfile(match="deepseek-r1*", start_with_reasoning=True),),
        ),
    )


def test_demo_defaults_apply_only_without_an_upstream() -> None:
    demo, _ = proxy.load_settings([], {})
    real, _ = proxy.load_settings(["--upstream", "http://127.0.0.1:1"], {})
    told, _ = proxy.load_settings(["--messages-policy", "off"], {})
    assert (demo.upstream, demo.think_extract) == (None, proxy.DEMO_CONFIG)
    assert real.think_extract == ThinkExtractConfig()
    assert told.think_extract == proxy.DEMO_CONFIG.replace(messages_policy="off")


BAD_SETTINGS = [
    (["--port", "http"], {}, "--port 'http' is invalid: expected an integer from 0 to 65535"),
    (["--upstream", "ftp://x"], {}, "--upstream 'ftp://x' is invalid: expected an http:// or https:// URL with a host"),
    ([], {"GATEWAY_READ_TIMEOUT": "-1"}, "GATEWAY_READ_TIMEOUT='-1' is invalid: expected a number of seconds > 0"),
    (
        [],
        {"THINK_EXTRACT_STREAM_MODE": "batch"},
        "THINK_EXTRACT_STREAM_MODE='batch' is invalid: expected one of live, buffered",
    ),
    (
        ["--set", "max_buffer_bytes=0"],
        {},
        "--set max_buffer_bytes=0 is invalid: expected a positive integer (bytes)",
    ),
    (
        ["--upstream-key-env", "NOT_SET_ANYWHERE"],
        {},
        "upstream_key_env: the variable NOT_SET_ANYWHERE is not set or empty",
    ),
    (["--prefix", "v1"], {}, "--prefix 'v1' is invalid: expected a path that starts and ends with '/', like /v1/"),
    # a reasoning_store found unusable when the application is built: the same one line, exit 2
    (
        ["--upstream", "http://127.0.0.1:9"],
        {"THINK_EXTRACT_REASONING_STORE": "redis://127.0.0.1:6379/zz"},
        "reasoning record: a Redis URL ends in /DB, a database number; got '/zz'",
    ),
    (
        ["--upstream", "http://127.0.0.1:9"],
        {"THINK_EXTRACT_REASONING_STORE": "rediss://[::1:1/0"},
        "reasoning record: not a usable Redis URL: Invalid IPv6 URL",
    ),
    # a key written where its variable's name, or an address, belongs: the setting is named, never the key
    (
        [],
        {"GATEWAY_UPSTREAM_KEY_ENV": "sk-live-secret-1"},
        "GATEWAY_UPSTREAM_KEY_ENV=(its value not shown) is invalid: expected the name of an environment variable",
    ),
    (
        ["--client-keys-env", "sk_live_secret_2"],
        {},
        "client_keys_env: the variable it names (not shown: no upper-case name; a key, perhaps) is not set or empty",
    ),
    (
        ["--upstream-key-env", "sk_live_secret_3"],
        {},
        "upstream_key_env: the variable it names (not shown: no upper-case name; a key, perhaps) is not set or empty",
    ),
    (
        ["--upstream", "https://apikey:sk-secret-4@api.example.com/v1"],
        {},
        "--upstream (its value not shown) is invalid: expected an http:// or https:// URL with a host",
    ),
    (["--set", "nope=1"], {}, "--set nope=1: unknown field 'nope'; fields: " + ", ".join(proxy.TE_FIELDS)),
]


@pytest.mark.parametrize(("argv", "env", "message"), BAD_SETTINGS)
def test_bad_setting_is_a_startup_error_naming_it(
    argv: list[str],
    env: dict[str, str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in list(os.environ):
        if name.startswith(("GATEWAY_", "THINK_EXTRACT_")):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert proxy.main(argv) == 2
    assert capsys.readouterr() == ("", f"examples/proxy.py: error: {message}\n")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[proxy]\nprot = 1\n", "[proxy] unknown key 'prot'"),
        ("[proxy]\nport = 1.5\n", "[proxy] port = 1.5 is invalid"),
        (
            '[think_extract]\nstream_mode = "x"\n',
            "[think_extract] stream_mode = 'x' is invalid: expected one of live, buffered",
        ),
        (
            "[think_extract.profiles]\n",
            "[think_extract] profiles = {} is invalid: expected a JSON list of profiles like",
        ),
        ("[think_extract]\nstreammode = 1\n", "[think_extract] unknown key 'streammode'; keys: enabled, chat_enabled"),
        ("[extras]\n", "unknown table(s) ['extras']"),
        ("port = ", "not valid TOML"),
    ],
)
def test_bad_config_file_names_the_setting(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(proxy.SettingsError) as err:
        proxy.load_settings(["--config", str(path)], {})
    assert str(err.value).startswith(f"--config {path}: ") and message in str(err.value)


# -- as a program -------------------------------------------------------------------------------------


def test_demo_mode_exits_0_with_every_surface_shown() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "THINK_EXTRACT_"))}
    done = subprocess.run(
        [sys.executable, "examples/proxy.py", "--demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    titles = [line for line in lines if " · model " in line]
    assert titles == [
        "chat completions · non-stream · model demo-r1 · POST /v1/chat/completions",
        "chat completions · stream · model demo-r1 · POST /v1/chat/completions",
        "Anthropic messages · non-stream · model demo · POST /v1/messages",
        "Anthropic messages · stream · model demo · POST /v1/messages",
        "OpenAI Responses · non-stream · model demo-r1 · POST /v1/responses",
        "OpenAI Responses · stream · model demo-r1 · POST /v1/responses",
    ]

    verdicts = [line for line in lines if line.startswith(("  ✓", "  =", "  ✗"))]
    assert verdicts == [
        f"  ✓ reasoning moved into {where}, answer clean"
        for where in (
            "message.reasoning_content and message.reasoning",
            "delta.reasoning_content and delta.reasoning",
            "content[0]",
            "content[0]",
            "output[0]",
            "output[0]",
        )
    ]
    assert lines[-1] == "demo: all surfaces answered as expected"


async def test_gunicorn_two_workers_serve_a_stream(tmp_path: Path) -> None:
    gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or shutil.which("gunicorn")
    if gunicorn is None:
        pytest.skip("gunicorn is not installed (pip install -e '.[test]' installs it)")
    env = gunicorn_env(tmp_path, GATEWAY_PACE="0", GATEWAY_DEMO_MODEL="true")
    cmd = [gunicorn, "examples.proxy:app_factory()", "--worker-class", "aiohttp.GunicornWebWorker"]
    cmd += ["-w", "2", "--bind", "127.0.0.1:0", "--graceful-timeout", "3"]
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = await listening_at(log, server)
        async with aiohttp.ClientSession() as session:
            deadline = time.monotonic() + 60
            while True:
                try:
                    async with session.get(base + "/healthz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not come up:\n{log.read_text()}")
                await asyncio.sleep(0.2)
        while True:  # both workers up (the first may answer /healthz before the second has booted)
            workers = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
            if len(workers) == 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert len(workers) == 2
        reasoning, answer = split("demo-r1")
        async with oai(base) as client, client.chat.completions.stream(model="demo-r1", messages=USER) as s:
            final = await s.get_final_completion()
        assert final.choices[0].message.model_dump(exclude_none=True) == {
            "role": "assistant",
            "content": answer,
            "reasoning_content": reasoning,
            "reasoning": reasoning,
        }
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


async def test_stats_are_those_of_the_app_that_served(demo_base: str) -> None:
    """Sanity for /metrics: a passthrough on the demo app is counted where the docs say."""
    async with aiohttp.ClientSession() as session:
        body = {"model": "demo", "messages": USER}
        async with session.post(demo_base + "/v1/chat/completions", json=body, headers={"X-Think-Extract": "off"}) as r:
            assert json.loads(await r.read())["choices"][0]["message"]["content"] == demo_model.model_text(
                "demo", QUESTION
            )


def test_app_keys_exposed() -> None:
    app = proxy.build_app(settings())
    assert THINKEXTRACT_STATS in app and proxy.PROXY in app
    raw = proxy.build_app(settings(middleware=False))
    assert THINKEXTRACT_STATS not in raw and list(raw.middlewares) == [gateway_middleware]
