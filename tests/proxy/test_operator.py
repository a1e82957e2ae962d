"""The gateway's operator features over real loopback HTTP: the access log and the one-line warnings,
502/504 mapping, forwarded headers, client keys on every surface (through the official SDKs),
per-surface histograms, and metrics summed across two gunicorn workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
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
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from gateway_mw.proxy import PROXY, SettingsError, build_app, load_settings, main
from gateway_mw.proxy.auth import ClientKeys
from gateway_mw.proxy.demo_model import QUESTION, model_text, tokens

from .processes import gunicorn_env, listening_at
from .support import (
    SCRIPTED,
    SSE_HEAD,
    USER,
    RawUpstream,
    chunked,
    records,
    refused_port,
    samples,
    serving,
    settings,
    split,
    sse_chunk,
)

ROOT = Path(__file__).resolve().parents[2]


# -- logging ------------------------------------------------------------------------------------------


async def test_access_log_has_one_line_per_request_with_its_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with serving(settings()) as base, aiohttp.ClientSession() as session:
        body = {"model": "demo", "messages": USER}
        headers = {"X-Request-Id": "req-42", "User-Agent": "probe/1", "Authorization": "Bearer sk-secret-1"}
        async with session.post(base + "/v1/chat/completions", json=body, headers=headers) as resp:
            assert resp.status == 200 and resp.headers["X-Request-Id"] == "req-42"
            size = len(await resp.read())
        async with session.get(base + "/healthz", headers={"User-Agent": "probe/1"}) as resp:
            assert resp.status == 200
    lines = records(caplog, "aiohttp.access")
    assert [(name, level) for name, level, _ in lines] == [("aiohttp.access", logging.INFO)] * 2
    first, second = (text.split(" ") for _, _, text in lines)
    # %a "%r" %s %b %Tfs "%{User-Agent}i" request_id=%{X-Request-Id}o key=%{key_alias}o
    assert first[:5] + first[7:] == [
        "127.0.0.1",
        '"POST',
        "/v1/chat/completions",
        'HTTP/1.1"',
        "200",
        '"probe/1"',
        "request_id=req-42",
        "key=-",  # no client keys: no alias
    ]
    assert int(first[5]) > size and first[6].endswith("s") and float(first[6].removesuffix("s")) > 0
    assert second[:5] == ["127.0.0.1", '"GET', "/healthz", 'HTTP/1.1"', "200"]
    assert second[-2:] == ["request_id=-", "key=-"]  # /healthz is not forwarded: no id
    assert "sk-secret-1" not in caplog.text
    assert size > 0


def test_log_level_flag_and_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(["--log-level", "DEBUG"], {})[0].log_level == "debug"
    assert load_settings([], {"GATEWAY_LOG_LEVEL": "warning"})[0].log_level == "warning"
    assert load_settings([], {})[0].log_level == "info"
    with pytest.raises(SettingsError) as err:
        load_settings(["--log-level", "loud"], {})
    assert str(err.value) == "--log-level 'loud' is invalid: expected one of debug, info, warning, error, critical"
    assert load_settings(["--no-access-log", "--no-forwarded-headers"], {})[0] == settings(
        pace=30.0, access_log=False, forwarded_headers=False
    )


async def test_upstream_dropping_mid_stream_is_one_warning_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + chunked(sse_chunk("<think>partial")))
        await writer.drain()
        writer.transport.abort()

    async with (
        RawUpstream(respond) as up,
        serving(settings(upstream=up.url)) as base,
        aiohttp.ClientSession() as session,
    ):
        headers = {"X-Request-Id": "drop-1"}
        resp = await session.post(base + "/v1/chat/completions", json={"model": "m"}, headers=headers)
        with pytest.raises(aiohttp.ClientPayloadError):
            await resp.read()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelname, r.getMessage(), r.exc_info) for r in warnings] == [
        (
            "gateway_mw.proxy",
            "WARNING",
            f"request drop-1: POST /v1/chat/completions: upstream {up.url} failed mid-response: "
            "ClientPayloadError: Response payload is not completed: "
            "<TransferEncodingError: 400, message='Not enough data to satisfy transfer length header.'>",
            None,
        )
    ]


# -- failures map to 502 / 504 ------------------------------------------------------------------------


@contextlib.contextmanager
def unanswered_port() -> Any:
    """A port whose connections never complete: a listener with a full accept queue, never accepting."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(8):  # fill the queue; later handshakes get no answer
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield port
    finally:
        for filler in fillers:
            filler.close()
        server.close()


UNREACHABLE_CHAT = {
    "error": {
        "message": "the upstream model server is unreachable",
        "type": "server_error",
        "param": None,
        "code": "upstream_unreachable",
    }
}
UNREACHABLE_MESSAGES = {
    "type": "error",
    "error": {"type": "api_error", "message": "the upstream model server is unreachable"},
}


@pytest.mark.parametrize(
    ("path", "expected"), [("/v1/chat/completions", UNREACHABLE_CHAT), ("/v1/messages", UNREACHABLE_MESSAGES)]
)
async def test_connect_timeout_is_a_502_and_a_warning(
    path: str, expected: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with unanswered_port() as port:
        s = settings(upstream=f"http://127.0.0.1:{port}", connect_timeout=0.3)
        app = build_app(s)
        async with serving(s, app) as base, aiohttp.ClientSession() as session:
            start = time.monotonic()
            async with session.post(base + path, json={"model": "m"}, headers={"X-Request-Id": "ct-1"}) as resp:
                assert (resp.status, await resp.json()) == (502, expected)
            assert time.monotonic() - start >= 0.3  # not before the connect timeout (nothing ever answers)
    assert records(caplog, "gateway_mw.proxy") == [
        (
            "gateway_mw.proxy",
            logging.WARNING,
            f"request ct-1: upstream http://127.0.0.1:{port}: no connection within 0.3s",
        )
    ]
    counters = app[PROXY].counters
    assert (counters.upstream_connect_errors, counters.upstream_timeouts) == (1, 0)


async def test_refused_is_a_502_and_read_timeout_a_504_each_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with refused_port() as down_port:
        down = f"http://127.0.0.1:{down_port}"

        async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
            await up.wait_closed_by_peer(writer)  # never answers

        async with RawUpstream(respond) as up:
            refused, silent = build_app(settings(upstream=down)), build_app(settings(upstream=up.url, read_timeout=0.3))
            async with (
                serving(settings(), refused) as a,
                serving(settings(), silent) as b,
                aiohttp.ClientSession() as s,
            ):
                async with s.post(a + "/v1/responses", json={}, headers={"X-Request-Id": "r-502"}) as resp:
                    assert (resp.status, (await resp.json())["error"]["code"]) == (502, "upstream_unreachable")
                    assert resp.headers["X-Request-Id"] == "r-502"
                async with s.post(b + "/v1/responses", json={}) as resp:
                    assert (resp.status, (await resp.json())["error"]["code"]) == (504, "upstream_timeout")
                    generated = resp.headers["X-Request-Id"]
        assert records(caplog, "gateway_mw.proxy") == [
            (
                "gateway_mw.proxy",
                logging.WARNING,
                f"request r-502: upstream {down} unreachable: Connect call failed ('127.0.0.1', {down_port})",
            ),
            ("gateway_mw.proxy", logging.WARNING, f"request {generated}: upstream {up.url}: no answer within 0.3s"),
        ]
        access = [text.split(" ")[-2] for _, _, text in records(caplog, "aiohttp.access")]
        assert access == ["request_id=r-502", f"request_id={generated}"]
        assert (refused[PROXY].counters.upstream_connect_errors, silent[PROXY].counters.upstream_timeouts) == (1, 1)


# -- forwarded headers --------------------------------------------------------------------------------


@pytest.mark.parametrize("forwarded", [True, False])
async def test_forwarded_headers_are_added_as_proxies_do_and_can_be_turned_off(forwarded: bool) -> None:
    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nVia: 1.1 model-lb\r\nContent-Length: 2\r\n\r\n{}"
        )

    sent = {
        "X-Forwarded-For": "203.0.113.7",
        "X-Forwarded-Proto": "https",
        "Via": "1.1 edge",
        "X-Request-Id": "fw-1",
    }
    async with (
        RawUpstream(respond) as up,
        serving(settings(upstream=up.url, forwarded_headers=forwarded)) as base,
        aiohttp.ClientSession() as session,
        session.get(base + "/v1/models", headers=sent) as resp,
    ):
        assert resp.status == 200
        via = resp.headers.getall("Via")
    got = {k: v for k, v in up.requests[0][1] if k in ("X-Forwarded-For", "X-Forwarded-Proto", "Via", "X-Request-Id")}
    if forwarded:
        assert got == {
            "X-Forwarded-For": "203.0.113.7, 127.0.0.1",
            "X-Forwarded-Proto": "https",  # the client's (an edge that terminated TLS) is kept
            "Via": "1.1 edge, 1.1 gateway-mw",
            "X-Request-Id": "fw-1",
        }
        assert via == ["1.1 model-lb, 1.1 gateway-mw"]
    else:
        assert got == sent
        assert via == ["1.1 model-lb"]


# -- client keys --------------------------------------------------------------------------------------

KEYS = ("sk-gw-alpha", "sk-gw-beta")


@pytest.fixture
async def keyed(tmp_path: Path) -> AsyncIterator[tuple[str, list[Any]]]:
    """The gateway with two client keys (one from a variable, one from a file), an upstream key, and a
    scripted upstream that records every request's headers; (base URL, recorded headers)."""
    seen: list[Any] = []
    model = build_app(settings())

    keyfile = tmp_path / "keys"
    keyfile.write_text(f"# gateway clients\n\n{KEYS[1]}\n")
    env = {"CLIENT_KEYS": KEYS[0], "UPSTREAM_KEY": "sk-upstream"}
    argv = ["--client-keys-env", "CLIENT_KEYS", "--client-keys-file", str(keyfile), "--metrics-key"]
    argv += ["--upstream-key-env", "UPSTREAM_KEY", "--set", "upstream_server=generic"]

    async def record(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.headers))
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method,
                demo + request.path_qs,
                data=await request.read(),
                headers={"Content-Type": "application/json"},
            ) as r,
        ):
            return web.Response(body=await r.read(), status=r.status, content_type=r.content_type)

    recorder = web.Application()
    recorder.router.add_route("*", "/{tail:.*}", record)
    async with serving(settings(), model) as demo, serving(settings(), recorder) as upstream:
        s, _ = load_settings([*argv, "--upstream", upstream], env)
        s = msgspec.structs.replace(s, think_extract=SCRIPTED)
        assert [k.value for k in s.client_keys] == list(KEYS) and "sk-gw" not in repr(s)
        async with serving(s) as base:
            yield base, seen


def oai(base: str, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0)


def claude(base: str, key: str, header: str = "x-api-key") -> anthropic.AsyncAnthropic:
    if header == "x-api-key":
        return anthropic.AsyncAnthropic(base_url=base, api_key=key, max_retries=0)
    return anthropic.AsyncAnthropic(base_url=base, auth_token=key, max_retries=0)


OPENAI_401 = {
    "missing": "an API key is required: send Authorization: Bearer KEY or x-api-key: KEY",
    "wrong": "the API key is not valid for this gateway",
}


@pytest.mark.parametrize("key", ["wrong", "missing"])
async def test_wrong_or_missing_key_is_a_401_in_each_surfaces_shape(
    keyed: tuple[str, list[Any]], key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    base, seen = keyed
    presented = "sk-gw-alphx" if key == "wrong" else ""
    message = OPENAI_401[key]
    openai_body = {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}
    }
    async with aiohttp.ClientSession() as session:
        for path in ("/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/models"):
            headers = {"Authorization": f"Bearer {presented}"} if presented else {}
            async with session.post(base + path, json={"model": "demo"}, headers=headers) as resp:
                body = await resp.json()
                assert (resp.status, resp.headers["WWW-Authenticate"]) == (401, 'Bearer realm="gateway-mw"')
            if path == "/v1/messages":
                assert body == {"type": "error", "error": {"type": "authentication_error", "message": message}}
            else:
                assert body == openai_body
    if presented:  # the SDKs raise their own authentication errors (they need some key to send)
        async with oai(base, presented) as client:
            with pytest.raises(openai.AuthenticationError) as oe:
                await client.chat.completions.create(model="demo", messages=USER)
            with pytest.raises(openai.AuthenticationError) as re:
                await client.responses.create(model="demo", input=QUESTION)
        assert (oe.value.code, re.value.body) == ("invalid_api_key", openai_body["error"])
        async with claude(base, presented) as ant:
            with pytest.raises(anthropic.AuthenticationError) as ae:
                await ant.messages.create(model="demo", max_tokens=9, messages=USER)
        assert ae.value.body == {"type": "error", "error": {"type": "authentication_error", "message": message}}
    assert seen == []  # nothing reached the upstream
    assert presented == "" or presented not in caplog.text


@pytest.mark.parametrize("header", ["x-api-key", "authorization"])
async def test_right_key_passes_on_every_surface_and_never_goes_upstream(
    keyed: tuple[str, list[Any]], header: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    base, seen = keyed
    reasoning, answer = split("demo-r1")
    async with oai(base, KEYS[0]) as client:
        chat = await client.chat.completions.create(model="demo-r1", messages=USER)
        async with client.responses.stream(model="demo-r1", input=QUESTION) as s:
            response = await s.get_final_response()
    assert chat.choices[0].message.model_dump(exclude_none=True) == {
        "role": "assistant",
        "content": answer,
        "reasoning_content": reasoning,
        "reasoning": reasoning,
    }
    assert [item.type for item in response.output] == ["reasoning", "message"] and response.output_text == answer
    async with claude(base, KEYS[1], header) as ant:
        message = await ant.messages.create(model="demo", max_tokens=64, messages=USER)
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[1].model_dump()["text"] == split("demo")[1]
    assert len(seen) == 3
    for headers in seen:
        creds = {k.lower(): v for k, v in headers.items() if k.lower() in ("authorization", "x-api-key")}
        assert creds in ({"authorization": "Bearer sk-upstream"}, {"x-api-key": "sk-upstream"})
    assert not any(key in caplog.text for key in KEYS)


async def test_healthz_is_open_and_metrics_need_a_key_when_asked(keyed: tuple[str, list[Any]]) -> None:
    base, _ = keyed
    async with aiohttp.ClientSession() as session:
        async with session.get(base + "/healthz") as resp:
            assert (resp.status, await resp.json()) == (200, {"status": "ok"})
        async with session.get(base + "/metrics") as resp:
            assert resp.status == 401
        async with session.get(base + "/metrics", headers={"x-api-key": KEYS[1]}) as resp:
            assert resp.status == 200
            got = samples(await resp.text())
    assert got[("gateway_proxy_client_auth_failures_total", ())] == 1


async def test_metrics_open_without_the_flag(tmp_path: Path) -> None:
    s, _ = load_settings(["--client-keys-env", "K"], {"K": "a, b  c"})
    assert [k.value for k in s.client_keys] == ["a", "b", "c"]
    async with serving(msgspec.structs.replace(s, pace=0.0)) as base, aiohttp.ClientSession() as session:
        async with session.get(base + "/metrics") as resp:
            assert resp.status == 200
        async with session.get(base + "/v1/models") as resp:
            assert resp.status == 401


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--client-keys-env", "NOPE"], {}, "client_keys_env: the variable NOPE is not set or empty"),
        (
            ["--client-keys-file", "/nonexistent/keys"],
            {},
            "client_keys_file: /nonexistent/keys: No such file or directory",
        ),
        (
            ["--client-keys-env", "1X"],
            {},
            "--client-keys-env '1X' is invalid: expected the name of an environment variable",
        ),
    ],
)
def test_bad_client_key_settings(argv: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(argv, env)
    assert str(err.value) == message


def test_empty_key_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text("# nobody yet\n\n")
    with pytest.raises(SettingsError) as err:
        load_settings(["--client-keys-file", str(path)], {})
    assert str(err.value) == f"client_keys_file: {path} holds no key"


def test_unknown_think_extract_variable_stops_the_gateway(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith(("GATEWAY_", "THINK_EXTRACT_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("THINK_EXTRACT_STREAMMODE", "buffered")
    assert main([]) == 2
    assert capsys.readouterr() == (
        "",
        "gateway-mw: error: THINK_EXTRACT_STREAMMODE is not a setting; did you mean THINK_EXTRACT_STREAM_MODE?\n",
    )


# -- metrics ------------------------------------------------------------------------------------------


async def test_latency_and_ttfb_histograms_per_surface() -> None:
    app = build_app(settings())
    async with serving(settings(), app) as base, aiohttp.ClientSession() as session:
        for path, body in [
            ("/v1/chat/completions", {"model": "demo", "messages": USER, "stream": True}),
            ("/v1/chat/completions", {"model": "demo", "messages": USER}),
            ("/v1/messages", {"model": "demo", "max_tokens": 9, "messages": USER}),
            ("/v1/responses", {"model": "demo", "input": QUESTION}),
            ("/v1/models", None),
        ]:
            async with session.request("POST" if body else "GET", base + path, json=body) as resp:
                assert resp.status == 200
                await resp.read()
        async with session.get(base + "/metrics") as resp:
            got = samples(await resp.text())
    counts = {
        (name, labels): value
        for (name, labels), value in got.items()
        if name.endswith("_count") and name.startswith("gateway_proxy_")
    }
    per_surface = {"chat": 2.0, "messages": 1.0, "responses": 1.0, "other": 1.0}
    assert counts == {
        **{("gateway_proxy_request_duration_seconds_count", (("surface", k),)): v for k, v in per_surface.items()},
        **{("gateway_proxy_time_to_first_byte_seconds_count", (("surface", k),)): v for k, v in per_surface.items()},
    }
    for surface in per_surface:
        label = (("surface", surface),)
        assert got[("gateway_proxy_time_to_first_byte_seconds_sum", label)] > 0
        assert (
            got[("gateway_proxy_time_to_first_byte_seconds_sum", label)]
            <= got[("gateway_proxy_request_duration_seconds_sum", label)]
        )
    totals = {k: v for k, v in got.items() if k[0].endswith("_total") and k[0].startswith("gateway_proxy_")}
    prompt, completion = len(tokens(QUESTION)), len(tokens(model_text("demo", QUESTION)))
    anonymous = (("key", "-"), ("status", "200"))
    assert totals == {
        ("gateway_proxy_requests_total", (*anonymous, ("surface", "chat"))): 2.0,
        ("gateway_proxy_requests_total", (*anonymous, ("surface", "messages"))): 1.0,
        ("gateway_proxy_requests_total", (*anonymous, ("surface", "responses"))): 1.0,
        ("gateway_proxy_requests_total", (*anonymous, ("surface", "other"))): 1.0,
        ("gateway_proxy_streams_total", (("outcome", "completed"), ("surface", "chat"))): 1.0,
        # The chat stream did not ask for usage (stream_options): the three JSON bodies carry it.
        ("gateway_proxy_tokens_total", (("key", "-"), ("kind", "prompt"), ("surface", "chat"))): prompt,
        ("gateway_proxy_tokens_total", (("key", "-"), ("kind", "completion"), ("surface", "chat"))): completion,
        ("gateway_proxy_tokens_total", (("key", "-"), ("kind", "prompt"), ("surface", "messages"))): prompt,
        ("gateway_proxy_tokens_total", (("key", "-"), ("kind", "completion"), ("surface", "messages"))): completion,
        ("gateway_proxy_tokens_total", (("key", "-"), ("kind", "prompt"), ("surface", "responses"))): prompt,
        ("gateway_proxy_tokens_total", (("key", "-"), ("kind", "completion"), ("surface", "responses"))): completion,
        ("gateway_proxy_tokens_total", (("key", "-"), ("kind", "reasoning"), ("surface", "responses"))): 0.0,
        ("gateway_proxy_upstream_connect_errors_total", ()): 0.0,
        ("gateway_proxy_upstream_timeouts_total", ()): 0.0,
        ("gateway_proxy_upstream_dropped_total", ()): 0.0,
        ("gateway_proxy_client_disconnects_total", ()): 0.0,
        ("gateway_proxy_client_auth_failures_total", ()): 0.0,
    }
    reasoning = len(model_text("demo", QUESTION).removeprefix("<think>").partition("</think>")[0])
    translated = {
        k: v for k, v in got.items() if k[0] in ("thinkextract_translated_total", "thinkextract_reasoning_chars_total")
    }
    assert translated == {
        ("thinkextract_translated_total", (("surface", "chat"),)): 2.0,
        ("thinkextract_translated_total", (("surface", "messages"),)): 1.0,
        ("thinkextract_translated_total", (("surface", "responses"),)): 1.0,
        ("thinkextract_reasoning_chars_total", (("surface", "chat"),)): 2.0 * reasoning,
        ("thinkextract_reasoning_chars_total", (("surface", "messages"),)): 1.0 * reasoning,
        ("thinkextract_reasoning_chars_total", (("surface", "responses"),)): 1.0 * reasoning,
        ("thinkextract_translated_total", (("surface", "ollama"),)): 0.0,
        ("thinkextract_reasoning_chars_total", (("surface", "ollama"),)): 0.0,
    }


async def test_two_gunicorn_workers_metrics_add_up(tmp_path: Path) -> None:
    """Multiprocess mode: whichever worker answers a scrape, it reports the requests of both."""
    gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or shutil.which("gunicorn")
    if gunicorn is None:
        pytest.skip("gunicorn is not installed (pip install -e '.[test]' installs it)")
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    env = gunicorn_env(
        tmp_path, GATEWAY_PACE="200", GATEWAY_DEMO_MODEL="true", PROMETHEUS_MULTIPROC_DIR=str(metrics_dir)
    )
    cmd = [gunicorn, "gateway_mw.proxy:app_factory()", "--worker-class", "aiohttp.GunicornWebWorker"]
    cmd += ["-w", "2", "--bind", "127.0.0.1:0", "--graceful-timeout", "3"]
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        server = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = await listening_at(log, server)
        deadline = time.monotonic() + 60
        async with aiohttp.ClientSession() as session:
            while True:
                workers = subprocess.run(
                    ["pgrep", "-P", str(server.pid)], capture_output=True, text=True
                ).stdout.split()
                with contextlib.suppress(aiohttp.ClientConnectionError):
                    async with session.get(base + "/healthz") as resp:
                        if resp.status == 200 and len(workers) == 2:
                            break
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not come up:\n{log.read_text()}")
                await asyncio.sleep(0.2)
            await asyncio.sleep(0.5)  # the second worker has its app too

            async def one() -> None:  # a new connection each, so that either worker may take it
                async with (
                    aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s,
                    s.post(
                        base + "/v1/chat/completions", json={"model": "demo", "stream": True, "messages": USER}
                    ) as r,
                ):
                    assert r.status == 200
                    await r.read()

            def per_worker() -> dict[str, float]:
                """Each worker's own request count, read from its file alone."""
                counts = {}
                for db in sorted(metrics_dir.glob("counter_*.db")):
                    alone = tmp_path / f"{db.stem}-{time.monotonic_ns()}"
                    alone.mkdir()
                    shutil.copy(db, alone / db.name)
                    registry = CollectorRegistry()
                    MultiProcessCollector(registry, path=str(alone))
                    got = samples(generate_latest(registry).decode())
                    counts[db.stem] = sum(v for (name, _), v in got.items() if name == "gateway_proxy_requests_total")
                return counts

            # Waves of concurrent requests until both workers have served some: which worker accepts a
            # connection is the kernel's choice, and one may take a whole wave.
            n = 0
            for _ in range(200):  # until both have: a busy machine may leave one worker idle for long
                await asyncio.gather(*(one() for _ in range(8)))
                n += 8
                served = per_worker()
                if len(served) == 2 and all(count > 0 for count in served.values()):
                    break
            scrapes = []
            for _ in range(6):
                async with (
                    aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s,
                    s.get(base + "/metrics") as resp,
                ):
                    scrapes.append(samples(await resp.text()))
        counts = per_worker()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
    assert len(counts) == 2 and sum(counts.values()) == n, counts
    assert all(count > 0 for count in counts.values()), f"one worker served everything: {counts}"
    chat = (("surface", "chat"),)
    for got in scrapes:
        assert got[("gateway_proxy_requests_total", (("key", "-"), ("status", "200"), *chat))] == n
        assert got[("thinkextract_translated_total", chat)] == n
        assert got[("gateway_proxy_request_duration_seconds_count", chat)] == n
        assert got[("gateway_proxy_time_to_first_byte_seconds_count", chat)] == n


# -- shutdown -----------------------------------------------------------------------------------------


async def test_sigterm_lets_an_open_stream_finish_then_exits_0(tmp_path: Path) -> None:
    """``python -m gateway_mw`` stops as ``web.run_app`` does: no new connections, open requests finish."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "THINK_EXTRACT_", "PROMETHEUS_"))}
    cmd = [sys.executable, "-m", "gateway_mw", "--port", "0", "--pace", "60", "--shutdown-timeout", "10"]
    server = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        first = await asyncio.to_thread(server.stdout.readline)
        base = first.split(" ")[3]
        assert base.startswith("http://127.0.0.1:"), first
        reasoning, answer = split("demo-r1")
        async with oai(base, "unused") as client, client.chat.completions.stream(model="demo-r1", messages=USER) as s:
            async for event in s:
                if event.type == "chunk":
                    server.send_signal(signal.SIGTERM)  # mid-stream
                    break
            final = await s.get_final_completion()
        assert final.choices[0].message.model_dump(exclude_none=True) == {
            "role": "assistant",
            "content": answer,
            "reasoning_content": reasoning,
            "reasoning": reasoning,
        }
        assert await asyncio.to_thread(server.wait, 15) == 0
        with pytest.raises(aiohttp.ClientConnectionError):  # and it listens no more
            async with aiohttp.ClientSession() as session, session.get(base + "/healthz"):
                pass
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(5)
        if server.stdout is not None:
            server.stdout.close()
        if server.stderr is not None:
            server.stderr.close()


# -- invariants ---------------------------------------------------------------------------------------

KEY_TEXT = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF, exclude_categories=("Cs",)), min_size=1)


@given(keys=st.lists(KEY_TEXT, min_size=1, max_size=5), probe=KEY_TEXT)
def test_a_key_is_accepted_exactly_when_it_is_one_of_the_keys(keys: list[str], probe: str) -> None:
    accepted = ClientKeys(keys)
    assert all(accepted.alias(key) is not None for key in keys)
    assert (accepted.alias(probe) is not None) == (probe in keys)
    assert repr(accepted) == f"ClientKeys(<{len(keys)} keys>)"  # the keys themselves never shown


@given(port=st.integers(min_value=-(10**6), max_value=10**6))
def test_a_port_is_valid_exactly_from_0_to_65535(port: int) -> None:
    if 0 <= port <= 65535:
        assert load_settings(["--port", str(port)], {})[0].port == port
    else:
        with pytest.raises(SettingsError):
            load_settings(["--port", str(port)], {})
