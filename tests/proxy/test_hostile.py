"""The gateway against careless or hostile clients, over real loopback HTTP: a client that leaves at the
last moment, credentials and control characters that must not reach the log, paths that try to leave
the prefix, connections that never send a request, and a stop that must keep to its bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.proxy import PROXY, build_app
from gateway_mw.proxy.logsafe import printable

from .processes import gunicorn_env, listening_at
from .support import SSE_HEAD, RawUpstream, chunked, raw_request, records, serving, settings, sse_chunk

GATEWAY_LOGGERS = ("gateway_mw", "gateway_mw.proxy", "aiohttp.server", "aiohttp.web", "asyncio")
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


class Gateway:
    """``python -m gateway_mw`` as a process on a free loopback port; its stderr kept in a file."""

    def __init__(self, process: subprocess.Popen[bytes], base: str, log: Path) -> None:
        self.process, self.base, self.log = process, base, log
        self.port = int(base.rsplit(":", 1)[1])

    def lines(self) -> list[str]:
        """The log so far, split at newlines only (a U+2028 in a line must not end it here)."""
        return self.log.read_bytes().decode("utf-8", "surrogateescape").split("\n")[:-1]

    def stop(self, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


DEMO_WARNING = (
    "WARNING",
    "no upstream (--upstream, GATEWAY_UPSTREAM): serving the embedded demo model, which answers every model "
    "name with the same canned text",
)


@contextlib.contextmanager
def gateway(tmp_path: Path, *args: str, env: dict[str, str] | None = None, preexec: object = None) -> Iterator[Gateway]:
    """The gateway as a process; a SIGTERM stops it at once (``--drain-delay 0``: what these tests
    look at is the stop itself, and its log)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "THINK_EXTRACT_", "AIOHTTP_"))}
    log = tmp_path / f"gateway-{len(list(tmp_path.iterdir()))}.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway_mw", "--port", "0", "--pace", "0", "--drain-delay", "0", *args],
            cwd=tmp_path,
            env=clean | (env or {}),
            stdout=subprocess.PIPE,
            stderr=err,
            preexec_fn=preexec,  # type: ignore[arg-type]
        )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().decode()
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert found, (first, log.read_text())
        yield Gateway(process, found.group(0), log)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(5)
        assert process.stdout is not None
        process.stdout.close()


async def exchange(port: int, raw: bytes, seconds: float = 60.0) -> bytes:
    """Send ``raw`` as it is; everything the gateway answers until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), seconds)
    finally:
        writer.close()


def logged(lines: list[str], name: str) -> list[tuple[str, str]]:
    """(level, message) of each line of logger ``name`` in the gateway's log format."""
    found = []
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[3].startswith(name + ": "):
            found.append((parts[2], parts[3][len(name) + 2 :]))
    return found


async def until(check: object, seconds: float = 60.0) -> None:
    """Wait until ``check()`` is true (bounded, for a test that would hang: not a measure of speed)."""
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
            await asyncio.wait_for(reader.readuntil(b"data: [DONE]\n\n"), 60)
            writer.close()  # the client has all it wants
            inflight = app[PROXY]._inflight.values()
            await until(lambda: all(r.transport is None or r.transport.is_closing() for r in inflight))  # seen go
            up.go.set()
            await asyncio.wait_for(up.closed.wait(), 60)
            counters = app[PROXY].counters
            await until(lambda: counters.client_disconnects > 0)
            await asyncio.sleep(0.1)  # anything aiohttp would log after the handler
    assert counters.client_disconnects == 1
    translated = (
        "chat: translated, reasoning into chat_reasoning_field=both"
        if middleware
        else "not translated: the middleware is off"
    )
    assert records(caplog, *GATEWAY_LOGGERS) == [
        (
            "gateway_mw.proxy",
            logging.DEBUG,
            "request left-1: POST /v1/chat/completions: the client left before the end of the answer",
        ),
        (
            "gateway_mw.proxy",
            logging.DEBUG,
            f"request left-1: POST /v1/chat/completions: 200, key -, model 'm', no family preset, "
            f"stream client_gone; {translated}",
        ),
    ]
    assert [r.exc_info for r in caplog.records if r.name in GATEWAY_LOGGERS] == [None, None]


@pytest.mark.parametrize("head_sent", [True, False], ids=["answering", "before-the-head"])
async def test_a_client_leaving_while_the_upstream_is_silent_still_gets_its_access_line(
    head_sent: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The disconnect watcher ends the request of a client that left while its upstream writes nothing;
    that request is logged like any other: its status, or 499 when no answer had started."""
    caplog.set_level(logging.INFO, logger="aiohttp.access")

    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        if head_sent:
            writer.write(SSE_HEAD + chunked(sse_chunk("thinking")))
            await writer.drain()
        await up.go.wait()  # silent until the test is over

    async with RawUpstream(respond) as up:
        s = settings(upstream=up.url)
        app = build_app(s)
        app[PROXY].disconnect_poll = 0.05
        async with serving(s, app) as base:
            reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
            body = b'{"model":"m","stream":true}'
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: silent-1\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            if head_sent:
                await asyncio.wait_for(reader.readuntil(b"\n\n"), 60)
            else:
                await until(lambda: up.requests)  # the request reached the upstream
            writer.close()
            counters = app[PROXY].counters
            await until(lambda: counters.client_disconnects > 0)
            await until(lambda: any(r.name == "aiohttp.access" for r in caplog.records))
            up.go.set()
    access = [r.getMessage() for r in caplog.records if r.name == "aiohttp.access"]
    assert [(line.split('"')[1], line.split('" ')[1].split(" ")[0], line.split()[-2]) for line in access] == [
        ("POST /v1/chat/completions HTTP/1.1", "200" if head_sent else "499", "request_id=silent-1")
    ]
    assert counters.client_disconnects == 1


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

    async with RawUpstream(respond) as up, serving(settings(upstream=up.url, forward_routes=("* **",))) as base:
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


# -- control characters in log lines ------------------------------------------------------------------

KEY = "sk-gw-hostile"
NEED_KEY = "refused: an API key is required: send Authorization: Bearer KEY or x-api-key: KEY"
ENCODED = ["/v1/%1b[31mred", "/v1/a%0dInjected", "/v1/%c2%85x", "/v1/%e2%80%a8x"]


@pytest.mark.parametrize("parser", ["c", "python"])
async def test_control_characters_a_client_sends_are_escaped_in_every_log_line(parser: str, tmp_path: Path) -> None:
    """The refusal, the upstream's failure and the access log: each request is one printable line.
    aiohttp's C parser refuses raw control bytes in the request target; its pure-Python one (no C
    extension, or AIOHTTP_NO_EXTENSIONS) lets them through to the handler."""

    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + chunked(sse_chunk("<think>partial")))
        await writer.drain()
        writer.transport.abort()

    env = {"CK": KEY, "THINK_EXTRACT_UPSTREAM_SERVER": "generic"}  # no GET /v1/models to this one-shot upstream
    env |= {"AIOHTTP_NO_EXTENSIONS": "1"} if parser == "python" else {}
    async with RawUpstream(respond) as up:
        args = ("--upstream", up.url, "--set", "upstream_server=generic", "--client-keys-env", "CK")
        with gateway(tmp_path, *args, env=env) as gw:
            for i, path in enumerate(ENCODED):
                answer = await exchange(
                    gw.port,
                    f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Request-Id: esc-{i}\r\n\r\n".encode(),
                )
                assert answer.startswith(b"HTTP/1.1 401 ")
            raw_path = b"/v1/\xe2\x80\xa8\xc2\x85x"
            answer = await exchange(
                gw.port, b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Request-Id: esc-raw\r\n\r\n" % raw_path
            )
            assert answer.startswith(b"HTTP/1.1 401 " if parser == "python" else b"HTTP/1.0 400 ")
            body = b'{"model":"m","stream":true}'
            answer = await exchange(
                gw.port,
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer %s\r\n"
                b"User-Agent: probe\xc2\x85\xe2\x80\xa8\xe2\x80\xae/1\r\nX-Request-Id: esc-drop\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (KEY.encode(), len(body), body),
            )
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
            await until(lambda: len(logged(gw.lines(), "aiohttp.access")) == 6)
            assert gw.stop() == 0
        lines = gw.lines()
    assert [line for line in lines if UNPRINTABLE.search(line)] == []
    refused = [("INFO", f"request esc-{i}: GET {path} {NEED_KEY}") for i, path in enumerate(ENCODED)]
    if parser == "python":
        refused.append(("INFO", f"request esc-raw: GET /v1/\\u2028\\x85x {NEED_KEY}"))
    else:
        refused.append(("INFO", "a request from 127.0.0.1 refused: 400 InvalidURLError; what it sent is not logged"))
    failed = (
        f"request esc-drop: POST /v1/chat/completions: upstream {up.url} failed mid-response: "
        "ClientPayloadError: Response payload is not completed: "
        "<TransferEncodingError: 400, message='Not enough data to satisfy transfer length header.'>"
    )
    assert logged(lines, "gateway_mw.proxy") == [
        *refused,
        ("WARNING", failed),
        ("INFO", "stopping: open requests get 30s"),
    ]
    access = [message.split('" ', 1)[1].split(" ") for _, message in logged(lines, "aiohttp.access")]
    assert [(fields[0], fields[-3:]) for fields in access] == [
        *[("401", ['"-"', f"request_id=esc-{i}", "key=-"]) for i in range(len(ENCODED))],
        ("401", ['"-"', "request_id=esc-raw", "key=-"])
        if parser == "python"
        else ("400", ['"-"', "request_id=-", "key=-"]),
        ("200", ['"probe\\x85\\u2028\\u202e/1"', "request_id=esc-drop", "key=unnamed"]),
    ]


@given(st.text())
def test_printable_text_holds_no_character_that_breaks_a_line_and_keeps_the_rest(text: str) -> None:
    shown = printable(text)
    assert UNPRINTABLE.search(shown) is None
    shown.encode("utf-8")  # no lone surrogate left: a UTF-8 log stream can write it
    if not UNPRINTABLE.search(text) and "\\" not in text:
        assert shown == text


# -- client keys never reach the log ------------------------------------------------------------------

SECRET = "sk-gw-never-logged"


@pytest.mark.parametrize("parser", ["c", "python"])
async def test_a_request_the_parser_refuses_gets_a_plain_400_and_one_line_without_its_bytes(
    parser: str, tmp_path: Path
) -> None:
    """aiohttp's parser quotes the offending header line in its error, which aiohttp logged with a
    traceback and sent back as the 400's body."""
    env = {"CK": KEY, "THINK_EXTRACT_UPSTREAM_SERVER": "generic"}  # no GET /v1/models to this one-shot upstream
    env |= {"AIOHTTP_NO_EXTENSIONS": "1"} if parser == "python" else {}
    bad = [
        b"x-api-key: " + SECRET.encode() + b"\x01\r\n",
        b"Authorization: Bearer " + SECRET.encode() + b"\x7f\r\n",
        b"x-api-key: " + SECRET.encode() + b"x" * 9000 + b"\r\n",  # past aiohttp's 8190-byte field limit
    ]
    with gateway(tmp_path, "--client-keys-env", "CK", env=env) as gw:
        answers = [await exchange(gw.port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + line + b"\r\n") for line in bad]
        await until(lambda: len(logged(gw.lines(), "aiohttp.access")) == len(bad))
        assert gw.stop() == 0
    lines = gw.lines()
    assert [answer.split(b"\r\n")[0] + answer.partition(b"\r\n\r\n")[2] for answer in answers] == [
        b"HTTP/1.0 400 Bad Request400: Bad Request"
    ] * len(bad)
    assert not any(SECRET in line for line in lines)
    classes = {
        "c": ["BadHttpMessage", "BadHttpMessage", "LineTooLong"],
        "python": ["InvalidHeader", "InvalidHeader", "LineTooLong"],
    }[parser]
    assert logged(lines, "gateway_mw.proxy") == [
        DEMO_WARNING,
        *[("INFO", f"a request from 127.0.0.1 refused: 400 {name}; what it sent is not logged") for name in classes],
        ("INFO", "stopping: open requests get 30s"),
    ]
    assert logged(lines, "aiohttp.server") == []
    assert [message.split(" ")[1:5] for _, message in logged(lines, "aiohttp.access")] == [
        ['"UNKNOWN', "/", 'HTTP/1.0"', "400"]
    ] * len(bad)


async def test_keys_in_the_query_are_not_accepted_and_the_access_log_shows_them_redacted(tmp_path: Path) -> None:
    query = (
        "api_key=sk-q1&x=1&Key=sk-q2&ACCESS%5FTOKEN=sk-q3;token=sk-q4&keys=kept&sig"
        "&access_key=sk-q5&apiKey[]=sk-q6&x-goog-api-key=sk-q7&session=sk-q8&jwt=sk-q9"
    )
    with gateway(tmp_path, "--client-keys-env", "CK", env={"CK": KEY}) as gw:
        alone = await exchange(
            gw.port, f"GET /v1/models?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
        )
        keyed = await exchange(
            gw.port,
            f"GET /v1/models?{query} HTTP/1.1\r\nHost: x\r\nx-api-key: {KEY}\r\nConnection: close\r\n\r\n".encode(),
        )
        await until(lambda: len(logged(gw.lines(), "aiohttp.access")) == 2)
        assert gw.stop() == 0
    lines = gw.lines()
    assert (alone.split(b"\r\n")[0], keyed.split(b"\r\n")[0]) == (b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 200 OK")
    redacted = (
        "api_key=***&x=1&Key=***&ACCESS%5FTOKEN=***;token=***&keys=kept&sig"
        "&access_key=***&apiKey[]=***&x-goog-api-key=***&session=***&jwt=***"
    )
    assert [message.split('"')[1] for _, message in logged(lines, "aiohttp.access")] == [
        f"GET /v1/models?{redacted} HTTP/1.1"
    ] * 2
    assert not any(f"sk-q{i}" in line for line in lines for i in range(1, 10))
    assert not any(KEY in line for line in lines)


# -- connections that never send their request ---------------------------------------------------------


async def closed(reader: asyncio.StreamReader) -> bytes:
    """What the gateway sends until it closes the connection (waited for at most 60 s, far less than
    aiohttp's own keep-alive of 75 s: a bound for a test that would hang, not a measure of speed). A
    reset is a close too: the kernel resets a connection closed with bytes it had not read yet (a client
    still sending)."""
    try:
        return await asyncio.wait_for(reader.read(), 60)
    except ConnectionResetError:
        return b""


async def held_for(port: int, first: bytes, drip: bool = False) -> tuple[float, bytes]:
    """Open a connection, send ``first`` (then, with ``drip``, one more byte every 0.1 s): the seconds
    until the gateway closes it, and what it answered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.monotonic()
    writer.write(first)

    async def dripping() -> None:
        with contextlib.suppress(ConnectionError):
            while True:
                await asyncio.sleep(0.1)
                writer.write(b"X")
                await writer.drain()

    dripper = asyncio.create_task(dripping()) if drip else None
    try:
        answer = await closed(reader)
        return time.monotonic() - start, answer
    finally:
        if dripper is not None:
            dripper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await dripper
        writer.close()


async def read_response(reader: asyncio.StreamReader) -> bytes:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
    return head + await reader.readexactly(length)


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


async def test_a_connection_that_does_not_send_its_request_head_in_time_is_closed(tmp_path: Path) -> None:
    with gateway(tmp_path, "--header-timeout", "0.5") as gw:
        silent, half, dripping = await asyncio.gather(
            held_for(gw.port, b""),
            held_for(gw.port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n"),
            held_for(gw.port, b"GET /v1/models HTTP/1.1\r\nX-Slow: ", drip=True),
        )
        # A kept-alive connection may stay idle between two requests (aiohttp's keep-alive timeout);
        # the next request's head is then timed from its first byte.
        reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
        writer.write(HEALTHZ)
        first = await read_response(reader)
        await asyncio.sleep(1.0)
        writer.write(HEALTHZ)
        second = await read_response(reader)
        writer.write(b"GET /healthz HTTP/1.1\r\n")
        start = time.monotonic()
        rest = await closed(reader)
        later = time.monotonic() - start
        writer.close()
        assert gw.stop() == 0
    assert [answer for _, answer in (silent, half, dripping)] == [b"", b"", b""]
    # Closed (not held for aiohttp's keep-alive), and not before the timeout: how much later depends
    # on the machine's load, and is not asserted.
    assert all(seconds >= 0.45 for seconds in (silent[0], half[0], dripping[0], later)), (
        silent,
        half,
        dripping,
        later,
    )
    assert [first.split(b"\r\n")[0], second.split(b"\r\n")[0], rest] == [b"HTTP/1.1 200 OK", b"HTTP/1.1 200 OK", b""]
    assert [r for r in logged(gw.lines(), "gateway_mw.proxy") if r[0] != "INFO"] == [DEMO_WARNING]


def low_descriptor_limit() -> None:
    """In the gateway's process: a soft limit of 64 open files."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))


async def test_out_of_descriptors_silent_connections_are_shed_healthz_answers_and_the_log_stays_short(
    tmp_path: Path,
) -> None:
    """Silent connections past the gateway's descriptors, twice; the second time it is stopped while
    asyncio's retries of the failed accepts are pending, a stream keeping it alive past them."""
    args = ("--header-timeout", "1", "--pace", "5", "--shutdown-timeout", "1.5")
    with gateway(tmp_path, *args, preexec=low_descriptor_limit) as gw:
        async with aiohttp.ClientSession() as session:
            body = {"model": "demo", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
            stream = await session.post(gw.base + "/v1/chat/completions", json=body)
            await asyncio.wait_for(stream.content.readuntil(b"\n\n"), 60)
            silent = [await asyncio.open_connection("127.0.0.1", gw.port) for _ in range(100)]
            await asyncio.sleep(0.3)
            # Answered once the silent connections have been shed (each after its header timeout).
            answer = await exchange(gw.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 60)
            silent += [await asyncio.open_connection("127.0.0.1", gw.port) for _ in range(100)]
            await asyncio.sleep(0.3)
            status = await asyncio.to_thread(gw.stop)
            stream.close()
        for _, writer in silent:
            writer.close()
    lines = gw.lines()
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b'{"status": "ok"}')
    assert status == 0
    assert [r for r in logged(lines, "gateway_mw.proxy") if r[0] != "INFO"] == [
        DEMO_WARNING,
        ("WARNING", "cannot accept connections: Too many open files; retrying every second"),
    ]
    assert ("INFO", "stopping: 1 open request cancelled after 1.5s") in logged(lines, "gateway_mw.proxy")
    assert [line for line in lines if "Traceback" in line or " ERROR " in line] == []


# -- a stop keeps to its bound -------------------------------------------------------------------------


async def test_sigterm_with_a_stream_that_never_ends_exits_within_shutdown_timeout(tmp_path: Path) -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD)
        await up.wait_closed_by_peer(writer, chunked(sse_chunk("more ")))  # until the gateway lets go

    async with RawUpstream(respond) as up:
        args = ("--upstream", up.url, "--set", "upstream_server=generic", "--shutdown-timeout", "1.5")
        with gateway(tmp_path, *args) as gw:
            async with aiohttp.ClientSession() as session:
                body = {"model": "m", "stream": True}
                resp = await session.post(gw.base + "/v1/chat/completions", json=body)
                assert resp.status == 200
                await asyncio.wait_for(resp.content.readuntil(b"\n\n"), 60)
                gw.process.send_signal(signal.SIGTERM)
                start = time.monotonic()
                with pytest.raises(aiohttp.ClientPayloadError):  # cut, not ended: the client knows
                    await asyncio.wait_for(resp.read(), 60)  # bounds for a stop that would never come
                status = await asyncio.to_thread(gw.process.wait, 60)
                took = time.monotonic() - start
            await asyncio.wait_for(up.closed.wait(), 60)  # the upstream was let go too
    assert status == 0
    assert took >= 1.5, took  # the open request had its 1.5 s (then was cancelled: logged below)
    lines = gw.lines()
    assert [r for r in logged(lines, "gateway_mw.proxy") if r[1].startswith("stopping")] == [
        ("INFO", "stopping: open requests get 1.5s"),
        ("INFO", "stopping: 1 open request cancelled after 1.5s"),
    ]
    assert [line for line in lines if "Traceback" in line or " ERROR " in line or " WARNING " in line] == []


async def test_under_gunicorn_a_refused_header_is_logged_without_its_bytes(tmp_path: Path) -> None:
    """aiohttp's gunicorn worker makes its own runner (not the gateway's): its connection handler
    logs a refused request to gunicorn's error log, which the gateway's logging setup filters."""
    gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or shutil.which("gunicorn")
    if gunicorn is None:
        pytest.skip("gunicorn is not installed (pip install -e '.[test]' installs it)")
    env = gunicorn_env(tmp_path, GATEWAY_PACE="0", GATEWAY_DEMO_MODEL="true", GATEWAY_CLIENT_KEYS_ENV="CK", CK=KEY)
    cmd = [gunicorn, "gateway_mw.proxy:app_factory()", "--worker-class", "aiohttp.GunicornWebWorker"]
    cmd += ["-w", "1", "--bind", "127.0.0.1:0", "--graceful-timeout", "3"]
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        server = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        port = int((await listening_at(log, server)).rsplit(":", 1)[1])
        for _ in range(150):
            with contextlib.suppress(OSError):
                if (await exchange(port, HEALTHZ.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))).startswith(
                    b"HTTP/1.1 200"
                ):
                    break
            assert server.poll() is None, log.read_text()
            await asyncio.sleep(0.2)
        line = b"x-api-key: " + SECRET.encode() + b"\x01\r\n"
        answer = await exchange(port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + line + b"\r\n")
        await until(lambda: "BadHttpMessage" in log.read_text())
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
    assert answer.startswith(b"HTTP/1.0 400 Bad Request\r\n")
    text = log.read_text()
    assert SECRET not in text and "Traceback" not in text
    assert [line.split("] ", 3)[-1] for line in text.splitlines() if "BadHttpMessage" in line] == [
        "Error handling request from 127.0.0.1: BadHttpMessage; what it sent is not logged"
    ]
