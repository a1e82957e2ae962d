"""The request side against hostile bodies, over real loopback HTTP through the gateway as ``gateway-mw``
serves it, on every surface the request side reads: a large body rewritten off the event loop, a body
that stops arriving, a compressed body, a lone surrogate escape, a value nested past any parser's
depth, and a client that leaves half way through its body.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway_mw import history, incoming, setup
from gateway_mw.config import Surface, ThinkExtractConfig
from gateway_mw.incoming import OFF_LOOP_BYTES
from gateway_mw.middleware import THINKEXTRACT_RECORD
from gateway_mw.proxy import PROXY, build_app
from gateway_mw.proxy.connections import GatewayRunner
from gateway_mw.proxy.routes import DEFAULT_FORWARD_ROUTES as FORWARDED
from gateway_mw.surfaces.registry import SURFACES as DEFINITIONS

from ..workers import worker_calls
from .support import SCRIPTED, RawUpstream, records, samples, serving, settings

LOGGERS = ("gateway_mw", "gateway_mw.proxy", "aiohttp.server", "aiohttp.web", "asyncio")
SURFACES: list[Surface] = list(DEFINITIONS)
"""Every surface (each has a request transform)."""


def path_of(surface: Surface) -> str:
    """The first forwarded path the gateway reads as ``surface``."""
    for suffix, routed in ThinkExtractConfig().routes.items():
        if routed == surface:
            return suffix if f"POST {suffix}" in FORWARDED else "/v1" + suffix
    raise AssertionError(surface)


def turn(surface: Surface, tool_result: str) -> dict[str, Any]:
    """A request whose history the gateway rewrites (an earlier answer's reasoning, sent back where
    the default plan moves it), with ``tool_result`` as the text of a tool's result."""
    if surface in ("chat", "ollama"):
        # Ollama reads `thinking` whatever the model: what its plan moves there is tags in the content
        said = (
            {"content": "<think>I call the tool.</think>"}
            if surface == "ollama"
            else {"content": "", "reasoning_content": "I call the tool."}
        )
        return {
            "model": "m",
            "messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", **said,
                 "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": tool_result},
            ],
        }  # fmt: skip
    if surface == "messages":
        return {
            "model": "m",
            "max_tokens": 16,
            "messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"},
                    {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": tool_result},
                ]},
            ],
        }  # fmt: skip
    assert surface == "responses"
    return {
        "model": "m",
        "input": [
            {"role": "user", "content": "Weather?"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "I call the tool."}]},
            {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": tool_result},
        ],
    }


def encoded(doc: Any) -> bytes:
    return json.dumps(doc).encode()  # ensure_ascii: a lone surrogate is written as its escape


OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"


async def answer_ok(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
    writer.write(OK_HEAD)
    await writer.drain()


async def post(base: str, path: str, body: bytes, **headers: str) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            base + path, data=body, headers={"Content-Type": "application/json", **headers}, auto_decompress=False
        ) as resp,
    ):
        return resp.status, await resp.read()


def upstream_body(up: RawUpstream) -> bytes:
    ((_, _, body),) = up.requests
    return body


def errors(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str]]:
    return [r for r in records(caplog, *LOGGERS) if r[1] >= logging.WARNING]


# -- 1. a large body is rewritten off the event loop -----------------------------------------------------


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_large_body_is_rewritten_in_a_worker_thread_while_the_gateway_answers_others(
    surface: Surface, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transform of a body over ``OFF_LOOP_BYTES`` is held in its thread by an event: meanwhile
    ``/healthz`` is answered over HTTP, which it could not be were the transform on the loop."""
    loop_thread = threading.current_thread()
    entered, release = threading.Event(), threading.Event()
    seen: list[threading.Thread] = []
    transform = DEFINITIONS[surface].transform_history

    def held(read: Any, plan: history.Plan, recall: history.Recall) -> bytes | None:
        seen.append(threading.current_thread())
        entered.set()
        if threading.current_thread() is not loop_thread:  # on the loop, waiting would only deadlock
            release.wait(10)
        return transform(read, plan, recall)

    monkeypatch.setattr(DEFINITIONS[surface], "transform_history", held)
    body = encoded(turn(surface, "sunny " * (OFF_LOOP_BYTES // 6 + 1)))
    assert len(body) > OFF_LOOP_BYTES
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url)) as base:
        sent = asyncio.create_task(post(base, path_of(surface), body))
        assert await asyncio.to_thread(entered.wait, 10)
        async with aiohttp.ClientSession() as session, session.get(base + "/healthz") as health:
            healthy = (health.status, await health.json())
        release.set()
        assert await asyncio.wait_for(sent, 10) == (200, b"ok")
    assert healthy == (200, {"status": "ok"})
    assert [thread is loop_thread for thread in seen] == [False]
    assert upstream_body(up) != body  # rewritten all the same


def _threads_of_transform(surface: Surface, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each call of ``surface``'s history transform from now on runs on the calling thread."""
    loop_thread = threading.current_thread()
    on_loop: list[bool] = []
    transform = DEFINITIONS[surface].transform_history

    def noted(read: Any, plan: history.Plan, recall: history.Recall) -> bytes | None:
        on_loop.append(threading.current_thread() is loop_thread)
        return transform(read, plan, recall)

    monkeypatch.setattr(DEFINITIONS[surface], "transform_history", noted)
    return on_loop


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_history_of_a_megabyte_in_few_turns_is_rewritten_on_the_loop(
    surface: Surface, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few milliseconds of work stay on the event loop: in a worker thread they would hold the loop
    all the same (Python's lock passes at its switch interval, 5 ms) and cost the hand-overs."""
    on_loop = _threads_of_transform(surface, monkeypatch)
    body = encoded(turn(surface, "sunny " * 170_000))
    assert len(body) > 1_000_000
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url)) as base:
        assert await post(base, path_of(surface), body) == (200, b"ok")
    assert on_loop == [True]
    assert upstream_body(up) != body  # rewritten all the same


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_smaller_history_of_many_short_turns_is_rewritten_in_a_worker_thread(
    surface: Surface, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each message costs about as much as 2 KiB of text (``MESSAGE_WORK``): a quarter of a megabyte
    of short turns is more work than a megabyte of long ones, and goes to a worker thread."""
    on_loop = _threads_of_transform(surface, monkeypatch)
    sent_to_worker = worker_calls(monkeypatch)
    doc = turn(surface, "sunny")
    key = "input" if surface == "responses" else "messages"
    asked = {"role": "user", "content": "And then?"}
    doc[key] = [*doc[key], *(dict(asked, content=f"And then {i}?") for i in range(6_000))]
    body = encoded(doc)
    assert len(body) < OFF_LOOP_BYTES // 4 and len(body) + incoming.MESSAGE_WORK * 6_000 > OFF_LOOP_BYTES
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url)) as base:
        assert await post(base, path_of(surface), body) == (200, b"ok")
    assert on_loop == [False]
    # its reading measured for the scope's next request there too (every decoded value, afresh)
    assert sent_to_worker[:2] == ["Request", "_planned"] and sent_to_worker[-1] == "keep"
    assert upstream_body(up) != body


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_large_history_with_a_lone_surrogate_escape_is_read_again_in_a_worker_thread(
    surface: Surface, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone surrogate escape keeps the decoder from reading the body: it is read again with the
    escape masked, whole, and that read (its messages unknown until then) runs where a large body's
    first read ran, in a worker thread; the escape goes on as the client spelled it."""
    on_loop = _threads_of_transform(surface, monkeypatch)
    doc = turn(surface, "sunny")
    key = "input" if surface == "responses" else "messages"
    asked = {"role": "user", "content": "And then?"}
    doc[key] = [dict(asked, content="cut \ud83d"), *doc[key], *(dict(asked, content=f"{i}?") for i in range(9_000))]
    body = encoded(doc)  # the lone half written as its escape
    assert b"cut \\ud83d" in body and len(body) > 256 << 10
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url)) as base:
        assert await post(base, path_of(surface), body) == (200, b"ok")
    assert on_loop == [False]
    sent = upstream_body(up)
    assert sent != body and b"cut \\ud83d" in sent  # rewritten, the client's escape as it came


@pytest.mark.parametrize("surface", SURFACES)
async def test_an_agents_next_request_of_many_short_turns_is_read_and_rewritten_on_the_loop(
    surface: Surface, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same history and one turn more, from the same client: what the request before learned of
    the turns they share is taken (``CARRIED_WORK`` each: its keys digested the conversation as far
    as its latest turn, and the digest goes on from there), and only the new turn is read, so the
    work is a small part of reading it afresh, which went to a worker thread."""
    on_loop = _threads_of_transform(surface, monkeypatch)
    sent_to_worker = worker_calls(monkeypatch)
    doc = turn(surface, "sunny")
    key = "input" if surface == "responses" else "messages"
    asked = {"role": "user", "content": "And then?"}
    said = {"role": "assistant", "content": "Sure."}  # its turn's keys: the digest of all before it
    doc[key] = [*doc[key], *(dict(asked, content=f"And next {i}?") for i in range(6_000)), said]
    first = encoded(doc)
    assert first.endswith(b"]}") and len(first) > 256 << 10  # read in a worker thread, afresh
    more = first[:-2] + b',{"role": "user", "content": "And now?"}]}'
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url)) as base:
        assert await post(base, path_of(surface), first) == (200, b"ok")
        afresh = list(sent_to_worker)
        assert await post(base, path_of(surface), more) == (200, b"ok")
    (_, _, sent_first), (_, _, sent_more) = up.requests
    assert on_loop == [False, True]
    assert afresh[:2] == ["Request", "_planned"] and sent_to_worker == afresh  # nothing of the next request
    assert sent_more == sent_first[:-2] + b',{"role": "user", "content": "And now?"}]}'  # rewritten as before


# -- 2. a body that stops arriving -----------------------------------------------------------------------


@pytest.mark.parametrize("middleware", [True, False], ids=["middleware", "plain"])
@pytest.mark.parametrize("surface", SURFACES)
async def test_a_body_that_stops_arriving_is_answered_408_within_the_read_timeout_and_closed(
    surface: Surface, middleware: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    body = encoded(turn(surface, "sunny " * 100_000))
    async with RawUpstream(answer_ok) as up:
        s = settings(upstream=up.url, middleware=middleware, read_timeout=0.5)
        async with serving(s) as base:
            reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
            head = (
                f"POST {path_of(surface)} HTTP/1.1\r\nHost: x\r\nX-Request-Id: stalled-1\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            writer.write(head.encode() + body[: len(body) // 2])  # and then nothing, the socket open
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 10)  # until the gateway closes
            writer.close()
    status, _, rest = answer.partition(b"\r\n")
    headers, _, sent = rest.partition(b"\r\n\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout"
    assert b"Connection: close" in headers.split(b"\r\n")
    message = "the request body stopped arriving"
    if surface == "messages":
        assert json.loads(sent) == {"type": "error", "error": {"type": "timeout_error", "message": message}}
    elif surface == "ollama":  # Ollama's clients read error as a string
        assert json.loads(sent) == {"error": message}
    else:
        error = {"message": message, "type": "invalid_request_error", "param": None, "code": "request_timeout"}
        assert json.loads(sent) == {"error": error}
    assert up.requests == []
    line = f"request stalled-1: POST {path_of(surface)}: {message}"
    assert [r for r in records(caplog, *LOGGERS) if r[1] >= logging.INFO] == [("gateway_mw.proxy", logging.INFO, line)]


# -- 3. a compressed body --------------------------------------------------------------------------------


@pytest.mark.parametrize("middleware", [True, False], ids=["middleware", "plain"])
@pytest.mark.parametrize("surface", SURFACES)
async def test_a_gzip_body_goes_upstream_as_it_came_never_inflated(surface: Surface, middleware: bool) -> None:
    bomb = gzip.compress(encoded(turn(surface, "0" * 20_000_000)), 9)  # 20 MB once inflated
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url, middleware=middleware)) as base:
        assert await post(base, path_of(surface), bomb, **{"Content-Encoding": "gzip"}) == (200, b"ok")
    ((_, headers, body),) = up.requests
    got = {k.lower(): v for k, v in headers if k.lower() in ("content-encoding", "content-length")}
    assert (got, body) == ({"content-encoding": "gzip", "content-length": str(len(bomb))}, bomb)


# -- 4. a lone surrogate escape --------------------------------------------------------------------------

LONE = "\ud83d"  # JavaScript's string cut inside an emoji, which JSON.stringify writes as an escape
STAND_IN = "QQQQQQ"  # as long as the escape, and plain ASCII: a body any decoder reads


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_lone_surrogate_in_a_tool_result_leaves_only_that_string_as_it_was(surface: Surface) -> None:
    """The body with the lone escape is rewritten exactly as the same body with plain text in its
    place: that string goes as it came, every other turn as the plan says (SGLang, which refuses a
    ``redacted_thinking`` block, gets none)."""
    config = SCRIPTED.replace(upstream_server="sglang")
    plain, hostile = encoded(turn(surface, STAND_IN)), encoded(turn(surface, f"cut {LONE} here"))
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url, think_extract=config)) as base:
        assert await post(base, path_of(surface), plain) == (200, b"ok")
        rewritten = upstream_body(up)
        up.requests.clear()
        assert await post(base, path_of(surface), hostile) == (200, b"ok")
    assert rewritten != plain  # the plan changes this history
    assert upstream_body(up) == rewritten.replace(STAND_IN.encode(), b"cut \\ud83d here")
    assert b"redacted_thinking" not in rewritten


def test_a_body_whose_backslashes_could_be_taken_for_the_mask_goes_as_it_came() -> None:
    hostile = encoded({"model": "m", "messages": [{"role": "assistant", "content": "a\\d83d", "reasoning": LONE}]})
    assert history.surrogates.mask(hostile) is None
    paired = encoded({"model": "m", "messages": [{"role": "user", "content": "\U0001f600"}]})
    assert history.surrogates.mask(paired) is None


# -- 5. a value nested past any parser's depth -----------------------------------------------------------


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_value_nested_a_thousand_deep_is_forwarded_unchanged_and_quietly(
    surface: Surface, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    deep = b"[" * 1_000 + b'"bottom"' + b"]" * 1_000  # past the depth Python's own json writes, too
    body = encoded(turn(surface, "sunny") | {"metadata": "DEEP"}).replace(b'"DEEP"', deep)
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url)) as base:
        assert await post(base, path_of(surface), body) == (200, b"ok")
    assert upstream_body(up) == body
    assert errors(caplog) == []


# -- 5b. a number out of a double's range -----------------------------------------------------------------

OUT_OF_RANGE: dict[Surface, tuple[str, bytes, bytes]] = {
    "chat": (
        "vllm",
        b'{"model":"qwen3-8b","reasoning_effort":"none","messages":[{"role":"user","content":"q"},'
        b'{"role":1e400,"content":"x"},{"role":"user","content":"r"}]}',
        b'"chat_template_kwargs":{"enable_thinking":false}',
    ),
    "ollama": (
        "ollama",
        b'{"model":"qwen3-8b","reasoning_effort":"none","messages":[{"role":"user","content":"q"},'
        b'{"role":1e400,"content":"x"},{"role":"user","content":"r"}]}',
        b'"think":false',
    ),
    "messages": (
        "vllm",
        b'{"model":"qwen3-8b","thinking":{"type":"disabled"},"messages":[{"role":"user","content":"q"},'
        b'{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},'
        b'{"type":"tool_use","id":"t","name":"n","input":{"v":1e400}}]},'
        b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}',
        b'"chat_template_kwargs":{"enable_thinking":false}',
    ),
    "responses": (
        "llamacpp",
        b'{"model":"qwen3-8b","reasoning":{"effort":"none"},"input":[{"role":"user","content":"q"},'
        b'{"type":"function_call","call_id":"c","name":"n","arguments":"{}","x":1e400},'
        b'{"type":"function_call_output","call_id":"c","output":"r"},{"role":1e400,"content":"x"}]}',
        b'"chat_template_kwargs":{"enable_thinking":false}',
    ),
}
"""Per surface: a server, a body whose role or assistant-side message holds ``1e400`` (valid JSON,
which Python's parser reads as infinity and no decoder of doubles takes), and the control written."""


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_number_out_of_a_double_s_range_leaves_its_message_as_it_came_and_the_control_written(
    surface: Surface, caplog: pytest.LogCaptureFixture
) -> None:
    """The message that holds it goes on as it came (its role none, an assistant's content unread),
    the rest of the history is read, and the client's control is written: no error, no log of one
    (each such request failed the history's reading, its control lost, with a traceback logged)."""
    caplog.set_level(logging.DEBUG)
    server, body, control = OUT_OF_RANGE[surface]
    config = SCRIPTED.replace(upstream_server=server)
    async with RawUpstream(answer_ok) as up, serving(settings(upstream=up.url, think_extract=config)) as base:
        assert await post(base, path_of(surface), body) == (200, b"ok")
    sent = [body for line, _, body in up.requests if line.split()[1] == path_of(surface)]
    assert sent == [body[:-1] + b"," + control + b"}"]
    assert errors(caplog) == []


# -- 6. a client that leaves half way through its body ---------------------------------------------------


@pytest.mark.parametrize("middleware", [True, False], ids=["middleware", "plain"])
@pytest.mark.parametrize("surface", SURFACES)
async def test_a_client_that_leaves_mid_upload_is_a_499_and_no_error(
    surface: Surface, middleware: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = encoded(turn(surface, "sunny " * 100_000))
    async with RawUpstream(answer_ok) as up:
        s = settings(upstream=up.url, middleware=middleware)
        app = build_app(s)
        metrics = app[PROXY].metrics
        async with serving(s, app) as base:
            _, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
            head = (
                f"POST {path_of(surface)} HTTP/1.1\r\nHost: x\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            writer.write(head.encode() + body[: len(body) // 2])
            await writer.drain()
            await asyncio.sleep(0)
            writer.transport.abort()  # gone, half way through
            await until_counted(lambda: counted(metrics.exposition().decode(), surface))
            await asyncio.sleep(0.05)  # anything aiohttp would log after the handler
    assert counted(metrics.exposition().decode(), surface) == {"499": 1.0}
    assert app[PROXY].counters.client_disconnects == 1
    left = [m for _, _, m in records(caplog, "gateway_mw.proxy") if "the client left" in m]
    assert [m.split(": ", 1)[1] for m in left] == [
        f"POST {path_of(surface)}: the client left before the end of its body"
    ]
    assert errors(caplog) == []
    assert [r.exc_info for r in caplog.records if r.name in LOGGERS and r.exc_info] == []


def counted(exposition: str, surface: str) -> dict[str, float]:
    """The requests the gateway counted on ``surface``, by status."""
    return {
        dict(labels)["status"]: value
        for (name, labels), value in samples(exposition).items()
        if name == "gateway_proxy_requests_total" and dict(labels)["surface"] == surface
    }


async def until_counted(check: Callable[[], dict[str, float]], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if check():
            return
        await asyncio.sleep(0.01)


async def test_the_middleware_on_its_own_answers_a_body_timed_out_by_its_server_with_408() -> None:
    """An application of its own, served by the gateway's connections: the middleware's read of a body
    that stops arriving ends in aiohttp's 408, the connection closed, the handler never called."""
    called: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        called.append(await request.read())
        return web.json_response({})

    app = web.Application()
    setup(app, ThinkExtractConfig())
    app.router.add_post("/v1/chat/completions", handler)
    runner = GatewayRunner(app, body_timeout=0.3, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        reader, writer = await asyncio.open_connection("127.0.0.1", runner.addresses[0][1])
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)  # until the server closes
        writer.close()
    finally:
        await runner.cleanup()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert (head.split(b"\r\n")[0], body) == (b"HTTP/1.1 408 Request Timeout", b"the request body stopped arriving")
    assert b"Connection: close" in head.split(b"\r\n")
    assert called == []


async def test_the_record_entries_of_a_large_request_are_made_in_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the answer, what the record keeps is read from the request again (its turns are the
    keys): for a large one, in a worker thread; the entry is written all the same."""
    loop_thread = threading.current_thread()
    seen: list[threading.Thread] = []
    made: list[dict[str, history.Recalled]] = []
    entries = incoming.record_entries

    def watched(*args: Any) -> dict[str, history.Recalled]:
        seen.append(threading.current_thread())
        made.append(entries(*args))
        return made[-1]

    monkeypatch.setattr(incoming, "record_entries", watched)
    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "<think>Sunny.</think>It is."},
                     "finish_reason": "stop"}],
    }  # fmt: skip
    answer = json.dumps(completion).encode()

    async def respond(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(answer))
        writer.write(answer)
        await writer.drain()

    question = {"model": "m", "messages": [{"role": "user", "content": "Weather? " * (OFF_LOOP_BYTES // 9 + 1)}]}
    async with RawUpstream(respond) as up:
        s = settings(upstream=up.url)
        app = build_app(s)
        record = app[THINKEXTRACT_RECORD]
        async with serving(s, app) as base:
            status, _ = await post(base, "/v1/chat/completions", encoded(question))
            for _ in range(1_000):
                if record.counts.written:
                    break
                await asyncio.sleep(0.01)
    assert status == 200
    assert [len(keys) for keys in made] == [2]  # the answer's text in its conversation, and the conversation
    assert record.counts.written == 2
    assert [thread is loop_thread for thread in seen] == [False]


# -- an upstream whose answer the gateway cannot pass on as it came -------------------------------------


async def test_an_upstream_that_speaks_no_http_is_logged_without_the_query_or_its_bytes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An upstream that echoes the request (a wrong port): the client gets a 502, and the log line
    says what failed, not the request's query (a key in it) nor what the upstream sent."""

    async def echo(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(b"POST /v1/chat/completions?api_key=sk-query-1 HTTP/1.1\r\n\r\nUSER-CONTENT-1")
        await writer.drain()

    caplog.set_level(logging.DEBUG)
    async with (
        RawUpstream(echo) as up,
        serving(settings(upstream=up.url)) as base,
        aiohttp.ClientSession() as session,
        session.get(base + "/v1/models?api_key=sk-query-1") as resp,
    ):
        status = resp.status
    assert status == 502
    lines = records(caplog, *LOGGERS)
    assert [message.split(": ", 1)[1] for _, level, message in lines if level == logging.WARNING] == [
        f"upstream {up.url} failed before answering: ClientResponseError 400 (Bad status line)"
    ]
    assert not any("sk-query-1" in message or "USER-CONTENT" in message for _, _, message in lines)


@pytest.mark.parametrize("reason", [b"OK", b"O\x01K"])
@pytest.mark.parametrize("surface", ["chat", None])
async def test_an_upstream_header_with_a_control_character_is_dropped_and_the_answer_passes(
    surface: Surface | None, reason: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """aiohttp refuses to write a header (or a status line) holding a control character (a header
    injection): that header is left out, such a reason phrase left to aiohttp, and the rest of the
    answer reaches the client (it was a 500 and a traceback)."""

    async def answer(up: RawUpstream, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 " + reason + b"\r\nContent-Type: application/json\r\nX-Debug: a\x01b\r\nX-Kept: yes\r\n"
            b"Content-Length: 2\r\n\r\n{}"
        )
        await writer.drain()

    path, method = ("/v1/chat/completions", "POST") if surface == "chat" else ("/v1/models", "GET")
    async with (
        RawUpstream(answer) as up,
        serving(settings(upstream=up.url)) as base,
        aiohttp.ClientSession() as session,
        session.request(method, base + path, json={"model": "m", "messages": []}) as resp,
    ):
        got = (resp.status, resp.reason, "X-Debug" in resp.headers, resp.headers.get("X-Kept"), await resp.read())
    assert got == (200, "OK", False, "yes", b"{}")
    assert [r for r in records(caplog, *LOGGERS) if r[1] >= logging.ERROR] == []
