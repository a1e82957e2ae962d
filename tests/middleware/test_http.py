"""The middleware over real HTTP on loopback: every handler style, every passthrough, failure paths."""

from __future__ import annotations

import asyncio
import gzip
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from aiohttp_sse import sse_response
from openai.types.chat import ChatCompletion

from gateway_mw import THINKEXTRACT_CONFIG, THINKEXTRACT_STATS, ThinkExtractConfig, setup, thinkextract_middleware
from gateway_mw.scanner import Scanner

from ..chatwire import chunk, completion, read_sse, sse
from ..httpcuts import bytes_at_every_cut

ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]
ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

UPSTREAM = [
    chunk("", delta={"role": "assistant"}),
    chunk("<thi"),
    chunk("nk>Two plus"),
    chunk(" two.</think>"),
    chunk("It is 4."),
    chunk("", finish="stop"),
]
UPSTREAM_BYTES = sse(*UPSTREAM, "[DONE]")
EXPECTED = [
    chunk("", delta={"role": "assistant"}),
    chunk(delta={"reasoning_content": "Two plus", "reasoning": "Two plus"}),
    chunk(delta={"reasoning_content": " two.", "reasoning": " two."}),
    chunk("It is 4."),
    chunk("", finish="stop"),
    "[DONE]",
]
COMPLETION = completion("<think>Two plus two.</think>It is 4.")
EXPECTED_COMPLETION = completion("It is 4.", reasoning_content="Two plus two.", reasoning="Two plus two.")
ROUTE = "/v1/chat/completions"


def make_app(handler: Callable[[web.Request], Awaitable[web.StreamResponse]], **config: Any) -> web.Application:
    app = web.Application()
    setup(app, ThinkExtractConfig(**config))
    app.router.add_route("*", ROUTE, handler)
    app.router.add_route("*", "/v1/messages", handler)
    app.router.add_route("*", "/v1/responses", handler)
    app.router.add_route("*", "/v1/embeddings", handler)
    return app


# -- handler styles -------------------------------------------------------------------------


async def json_handler(request: web.Request) -> web.StreamResponse:
    return web.json_response(COMPLETION)


async def sse_body_handler(request: web.Request) -> web.StreamResponse:
    return web.Response(body=UPSTREAM_BYTES, content_type="text/event-stream")


async def hand_written_stream(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for item in [*UPSTREAM, "[DONE]"]:
        await resp.write(sse(item))
    await resp.write_eof()
    return resp


async def proxy_style_stream(request: web.Request) -> web.StreamResponse:
    """Copies the upstream length, as a naive proxy does; writes in odd pieces."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    resp.content_length = len(UPSTREAM_BYTES)
    await resp.prepare(request)
    for i in range(0, len(UPSTREAM_BYTES), 7):
        await resp.write(UPSTREAM_BYTES[i : i + 7])
    await resp.write_eof()
    return resp


# aiohttp-sse 3.0 (Python 3.11+) answers GET only unless told otherwise; 2.2 (the newest on 3.10) serves
# every method and has no such argument.
_SSE_ANY_METHOD: dict[str, Any] = (
    {"allow_all_methods": True} if "allow_all_methods" in inspect.signature(sse_response).parameters else {}
)


async def aiohttp_sse_stream(request: web.Request) -> web.StreamResponse:
    async with sse_response(request, **_SSE_ANY_METHOD) as resp:
        for item in [*UPSTREAM, "[DONE]"]:
            await resp.send(item if isinstance(item, str) else json.dumps(item))
    return resp


async def compressed_stream(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    resp.enable_compression()
    await resp.prepare(request)
    await resp.write(UPSTREAM_BYTES)
    await resp.write_eof()
    return resp


async def compressed_json(request: web.Request) -> web.StreamResponse:
    resp = web.json_response(COMPLETION)
    resp.enable_compression()
    return resp


async def hand_written_json(request: web.Request) -> web.StreamResponse:
    body = json.dumps(COMPLETION).encode()
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.content_length = len(body)
    await resp.prepare(request)
    await resp.write(body[:10])
    await resp.write(body[10:])
    await resp.write_eof()
    return resp


@pytest.mark.parametrize(
    "handler",
    [sse_body_handler, hand_written_stream, proxy_style_stream, aiohttp_sse_stream, compressed_stream],
)
async def test_stream_handler_styles(aiohttp_client: ClientFactory, handler: Any) -> None:
    client = await aiohttp_client(make_app(handler))
    resp = await client.post(ROUTE, json={"stream": True}, headers={"Accept-Encoding": "gzip"})
    body = await resp.read()
    assert resp.status == 200
    assert read_sse(body) == EXPECTED
    if handler is sse_body_handler:  # a whole body: its length is known and must be the new one
        assert int(resp.headers["Content-Length"]) == len(body)
    else:  # a stream: sent chunked, whatever length the handler set
        assert (resp.headers.get("Content-Length"), resp.headers.get("Transfer-Encoding")) == (None, "chunked")
    stats = client.app[THINKEXTRACT_STATS].snapshot()["chat"]
    assert (stats["seen"], stats["translated"], stats["reasoning_blocks"], stats["reasoning_chars"]) == (1, 1, 1, 13)


@pytest.mark.parametrize("handler", [json_handler, compressed_json, hand_written_json])
async def test_json_handler_styles(aiohttp_client: ClientFactory, handler: Any) -> None:
    client = await aiohttp_client(make_app(handler))
    resp = await client.post(ROUTE, json={}, headers={"Accept-Encoding": "gzip"})
    body = await resp.read()
    assert json.loads(body) == EXPECTED_COMPLETION
    ChatCompletion.model_validate_json(body, strict=True)
    if "Content-Length" in resp.headers and "Content-Encoding" not in resp.headers:
        assert int(resp.headers["Content-Length"]) == len(body)


async def test_compression_really_applies_to_the_translated_bytes(aiohttp_client: ClientFactory) -> None:
    client = await aiohttp_client(make_app(compressed_stream))
    resp = await client.post(ROUTE, headers={"Accept-Encoding": "gzip"}, auto_decompress=False)
    assert resp.headers["Content-Encoding"] == "gzip"
    assert read_sse(gzip.decompress(await resp.read())) == EXPECTED


async def test_reverse_proxy_in_front_of_a_real_upstream(
    aiohttp_client: ClientFactory, aiohttp_server: ServerFactory
) -> None:
    upstream_app = web.Application()
    upstream_app.router.add_post(ROUTE, proxy_style_stream)  # an upstream sending its length
    upstream = await aiohttp_server(upstream_app)

    async def proxy(request: web.Request) -> web.StreamResponse:
        async with (
            aiohttp.ClientSession() as session,
            session.post(upstream.make_url(ROUTE), data=await request.read()) as up,
        ):
            resp = web.StreamResponse(status=up.status)
            for name in ("Content-Type", "Content-Length"):
                if name in up.headers:
                    resp.headers[name] = up.headers[name]
            await resp.prepare(request)
            async for piece in up.content.iter_any():
                await resp.write(piece)
            await resp.write_eof()
            return resp

    client = await aiohttp_client(make_app(proxy))
    resp = await client.post(ROUTE, json={"stream": True})
    assert read_sse(await resp.read()) == EXPECTED


async def test_stream_cut_at_every_byte_offset_gives_identical_bytes(aiohttp_client: ClientFactory) -> None:
    body = sse(chunk("a<think>é日"), chunk("🙂</think>b"), "[DONE]")
    outputs = await bytes_at_every_cut(lambda handler: aiohttp_client(make_app(handler)), ROUTE, body)
    assert len(outputs) == 1
    assert read_sse(outputs.pop()) == [
        chunk("a"),
        chunk(delta={"reasoning_content": "é日", "reasoning": "é日"}),
        chunk(delta={"reasoning_content": "🙂", "reasoning": "🙂"}),
        chunk("\nb"),
        "[DONE]",
    ]


# -- passthrough ----------------------------------------------------------------------------


def raw_handler(status: int = 200, content_type: str = "text/event-stream", **headers: str) -> Any:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=status, headers={"Content-Type": content_type, **headers})
        await resp.prepare(request)
        if status != 204 and request.method != "HEAD":
            await resp.write(UPSTREAM_BYTES)
        await resp.write_eof()
        return resp

    return handler


@pytest.mark.parametrize(
    ("handler", "config", "request_headers", "reason"),
    [
        (raw_handler(status=400), {}, {}, "status"),
        (raw_handler(status=500, content_type="application/json"), {}, {}, "status"),
        (raw_handler(content_type="text/plain"), {}, {}, "content_type"),
        (raw_handler(content_type="application/octet-stream"), {}, {}, "content_type"),
        (raw_handler(), {}, {"X-Think-Extract": "off"}, "client_off"),
        (raw_handler(), {"enabled": False}, {"X-Think-Extract": "on"}, "disabled"),
        (raw_handler(), {"chat_enabled": False}, {}, "disabled"),
    ],
)
async def test_passthrough(
    aiohttp_client: ClientFactory, handler: Any, config: dict[str, Any], request_headers: dict[str, str], reason: str
) -> None:
    client = await aiohttp_client(make_app(handler, **config))
    resp = await client.post(ROUTE, headers=request_headers)
    assert await resp.read() == UPSTREAM_BYTES
    stats = client.app[THINKEXTRACT_STATS].snapshot()["chat"]
    assert (stats["seen"], stats["translated"], stats["passed_through"]) == (1, 0, {reason: 1})


async def test_empty_204_passes(aiohttp_client: ClientFactory) -> None:
    client = await aiohttp_client(make_app(raw_handler(status=204)))
    resp = await client.post(ROUTE)
    assert (resp.status, await resp.read()) == (204, b"")
    assert client.app[THINKEXTRACT_STATS].snapshot()["chat"]["passed_through"] == {"empty": 1}


async def test_handler_encoded_body_passes_untouched(aiohttp_client: ClientFactory) -> None:
    encoded = gzip.compress(UPSTREAM_BYTES)

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=encoded, headers={"Content-Type": "text/event-stream", "Content-Encoding": "gzip"})

    client = await aiohttp_client(make_app(handler))
    resp = await client.post(ROUTE, auto_decompress=False)
    assert await resp.read() == encoded
    assert client.app[THINKEXTRACT_STATS].snapshot()["chat"]["passed_through"] == {"content_encoding": 1}


@pytest.mark.parametrize(("method", "path"), [("GET", ROUTE), ("HEAD", ROUTE), ("POST", "/v1/embeddings")])
async def test_unrouted_requests_are_not_touched(aiohttp_client: ClientFactory, method: str, path: str) -> None:
    client = await aiohttp_client(make_app(raw_handler()))
    resp = await client.request(method, path)
    assert await resp.read() == (b"" if method == "HEAD" else UPSTREAM_BYTES)
    assert client.app[THINKEXTRACT_STATS].snapshot()["chat"]["seen"] == 0


@pytest.mark.parametrize(
    ("path", "config", "reason"),
    [("/v1/messages", {}, "disabled"), ("/v1/responses", {"responses_enabled": False}, "disabled")],
)
async def test_other_surfaces_pass_until_enabled(
    aiohttp_client: ClientFactory, path: str, config: dict[str, Any], reason: str
) -> None:
    client = await aiohttp_client(make_app(raw_handler(), **config))
    resp = await client.post(path)
    assert await resp.read() == UPSTREAM_BYTES
    surface = path.rsplit("/", 1)[1]
    assert client.app[THINKEXTRACT_STATS].snapshot()[surface]["passed_through"] == {reason: 1}


async def test_sub_app_config_overrides_and_env_is_the_fallback(
    aiohttp_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway_mw import middleware

    monkeypatch.setenv("THINK_EXTRACT_CHAT_REASONING_FIELD", "reasoning")
    middleware._env_config.cache_clear()
    app = web.Application(middlewares=[thinkextract_middleware])
    app.router.add_post(ROUTE, json_handler)
    sub = web.Application()
    sub[THINKEXTRACT_CONFIG] = ThinkExtractConfig(enabled=False)
    sub.router.add_post(ROUTE, json_handler)
    app.add_subapp("/sub", sub)
    client = await aiohttp_client(app)
    try:
        main = await (await client.post(ROUTE)).json()
        assert main["choices"][0]["message"] == {
            "role": "assistant",
            "content": "It is 4.",
            "reasoning": "Two plus two.",
        }
        assert await (await client.post("/sub" + ROUTE)).json() == COMPLETION
    finally:
        middleware._env_config.cache_clear()


# -- failure paths --------------------------------------------------------------------------


async def test_translator_error_fails_open_without_losing_bytes(
    aiohttp_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = Scanner.feed
    calls = 0

    def flaky(self: Scanner, text: str) -> Any:  # the scanner fails on its third text
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("boom")
        return original(self, text)

    monkeypatch.setattr(Scanner, "feed", flaky)
    client = await aiohttp_client(make_app(hand_written_stream))
    resp = await client.post(ROUTE)
    events = read_sse(await resp.read())
    # The failing event goes out as it came; translation goes on with the next one. Its close tag
    # never reached the scanner, so the block is still open: the answer reads as reasoning.
    assert events == [
        chunk("", delta={"role": "assistant"}),
        chunk(delta={"reasoning_content": "Two plus", "reasoning": "Two plus"}),
        chunk(" two.</think>"),
        chunk(delta={"reasoning_content": "It is 4.", "reasoning": "It is 4."}),
        chunk("", finish="stop"),
        "[DONE]",
    ]
    assert client.app[THINKEXTRACT_STATS].snapshot()["chat"]["translation_errors"] == 1


async def test_dropped_upstream_still_flushes_what_was_held(aiohttp_client: ClientFactory) -> None:
    async def dropping(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse(chunk("<think>partial</thi")))
        raise aiohttp.ClientPayloadError("upstream went away")

    client = await aiohttp_client(make_app(dropping))
    resp = await client.post(ROUTE)
    received = b""
    with pytest.raises(aiohttp.ClientPayloadError):
        async for piece in resp.content.iter_any():
            received += piece
    assert read_sse(received) == [
        chunk(delta={"reasoning_content": "partial", "reasoning": "partial"}),
        chunk(
            delta={"reasoning_content": "</thi", "reasoning": "</thi"}
        ),  # held at the drop, flushed as reasoning (live mode)
    ]


async def test_client_disconnect_reaches_the_handler_as_usual(aiohttp_client: ClientFactory) -> None:
    seen: list[BaseException] = []
    started = asyncio.Event()

    async def endless(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            while True:
                await resp.write(sse(chunk("<think>r</think>a")))
                started.set()
                await asyncio.sleep(0.01)
        except (ConnectionResetError, asyncio.CancelledError) as exc:
            seen.append(exc)
            raise

    client = await aiohttp_client(make_app(endless))
    resp = await client.post(ROUTE)
    await started.wait()
    resp.close()
    for _ in range(6000):  # a bound for a hang, not a speed
        if seen:
            break
        await asyncio.sleep(0.01)
    assert seen and isinstance(seen[0], (ConnectionResetError, asyncio.CancelledError))
    second = await client.post(ROUTE, headers={"X-Think-Extract": "off"})
    assert second.status == 200
    second.close()


async def test_streamed_payload_body_is_translated(aiohttp_client: ClientFactory) -> None:
    async def pieces() -> Any:
        for i in range(0, len(UPSTREAM_BYTES), 11):
            yield UPSTREAM_BYTES[i : i + 11]

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=pieces(), content_type="text/event-stream")

    client = await aiohttp_client(make_app(handler))
    resp = await client.post(ROUTE)
    assert read_sse(await resp.read()) == EXPECTED


async def test_file_response_passes_untouched(aiohttp_client: ClientFactory, tmp_path: Any) -> None:
    path = tmp_path / "completion.json"
    path.write_bytes(json.dumps(COMPLETION).encode())

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(path, headers={"Content-Type": "application/json"})

    client = await aiohttp_client(make_app(handler))
    resp = await client.post(ROUTE)
    assert await resp.read() == path.read_bytes()
    assert client.app[THINKEXTRACT_STATS].snapshot()["chat"]["passed_through"] == {"file": 1}


async def test_not_modified_passes(aiohttp_client: ClientFactory) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=304, headers={"Content-Type": "application/json"})

    client = await aiohttp_client(make_app(handler))
    resp = await client.post(ROUTE)
    assert (resp.status, await resp.read()) == (304, b"")
    assert client.app[THINKEXTRACT_STATS].snapshot()["chat"]["passed_through"] == {"status": 1}


@pytest.mark.parametrize("handler", [hand_written_json, json_handler])
async def test_json_body_over_the_limit_is_sent_untranslated(aiohttp_client: ClientFactory, handler: Any) -> None:
    body = json.dumps(COMPLETION).encode()
    client = await aiohttp_client(make_app(handler, max_body_bytes=16))
    resp = await client.post(ROUTE)
    assert json.loads(await resp.read()) == COMPLETION
    assert int(resp.headers["Content-Length"]) == len(await resp.read())
    if handler is hand_written_json:
        assert await resp.read() == body
    assert client.app[THINKEXTRACT_STATS].snapshot()["chat"]["passed_through"] == {"too_large": 1}


async def test_handler_failing_inside_a_json_body_gets_aiohttps_error_response(aiohttp_client: ClientFactory) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(b'{"choices": [')
        raise RuntimeError("handler bug")

    client = await aiohttp_client(make_app(handler))
    resp = await client.post(ROUTE)
    assert resp.status == 500
    assert resp.headers["Content-Type"].startswith("text/plain")
