"""The ways in: ``setup()`` gives the whole product (config, stats, the reasoning record, given as an
object or as its store's spec), and a middleware installed without it says that it keeps no record."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from gateway_mw import (
    THINKEXTRACT_CONFIG,
    THINKEXTRACT_RECORD,
    THINKEXTRACT_STATS,
    ThinkExtractConfig,
    setup,
    thinkextract_middleware,
)
from gateway_mw.record import MemoryRecord, SqliteRecord

from ..chatwire import completion

ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]
ROUTE = "/v1/chat/completions"
CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
ASKED = {"model": "m", "messages": [{"role": "user", "content": "Weather?"}]}
NO_RECORD = (
    "gateway_mw: no reasoning record: reasoning_store is {}, but only gateway_mw.setup() opens a store; this"
    " middleware was installed without it, so reasoning a client does not send back is not restored. Use"
    " setup(app, config), set app[THINKEXTRACT_RECORD], or set reasoning_store to 'off'"
)


async def _answer(request: web.Request) -> web.Response:
    await request.read()
    return web.json_response(completion("<think>Look it up.</think>Let me look.", tool_calls=[CALL]))


def _app() -> web.Application:
    app = web.Application()
    app.router.add_post(ROUTE, _answer)
    return app


async def _ask(client: TestClient[web.Request, web.Application], times: int = 1) -> None:
    for _ in range(times):
        async with client.post(ROUTE, json=ASKED) as resp:
            assert (resp.status, (await resp.json())["choices"][0]["message"]["reasoning_content"]) == (
                200,
                "Look it up.",
            )


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gateway_mw" and r.levelno >= logging.WARNING]


@pytest.mark.parametrize(("store", "kind"), [("memory", "memory"), ("sqlite:/var/lib/x.db", "sqlite")])
async def test_a_middleware_without_setup_says_once_that_it_keeps_no_record(
    aiohttp_client: ClientFactory, caplog: pytest.LogCaptureFixture, store: str, kind: str
) -> None:
    app = _app()
    app.middlewares.append(thinkextract_middleware)
    app[THINKEXTRACT_CONFIG] = ThinkExtractConfig(reasoning_store=store)
    client = await aiohttp_client(app)
    await _ask(client, times=2)
    assert THINKEXTRACT_RECORD not in app
    assert _warnings(caplog) == [NO_RECORD.format(kind)]


async def test_a_redis_store_is_named_by_its_kind_only(
    aiohttp_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = _app()
    app.middlewares.append(thinkextract_middleware)
    app[THINKEXTRACT_CONFIG] = ThinkExtractConfig(reasoning_store="redis://user:secret@host:6379/0")
    await _ask(await aiohttp_client(app))
    assert _warnings(caplog) == [NO_RECORD.format("redis")]


async def test_a_middleware_without_setup_and_the_record_off_says_nothing(
    aiohttp_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = _app()
    app.middlewares.append(thinkextract_middleware)
    app[THINKEXTRACT_CONFIG] = ThinkExtractConfig(reasoning_store="off")
    await _ask(await aiohttp_client(app))
    assert _warnings(caplog) == []


async def test_setup_opens_the_configured_record_and_says_nothing(
    aiohttp_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = _app()
    stats = setup(app, ThinkExtractConfig())
    client = await aiohttp_client(app)
    await _ask(client)
    record = app[THINKEXTRACT_RECORD]
    await record.drain()
    assert (type(record), record.counts.written, app[THINKEXTRACT_STATS] is stats) == (MemoryRecord, 3, True)
    assert _warnings(caplog) == []


async def test_setup_opens_a_store_given_by_its_spec_and_says_so_in_the_config(
    aiohttp_client: ClientFactory, tmp_path: Path
) -> None:
    app = _app()
    spec = f"sqlite:{tmp_path / 'record.db'}"
    setup(app, ThinkExtractConfig(), record=spec)
    client = await aiohttp_client(app)
    record = app[THINKEXTRACT_RECORD]
    # The first write (its thread and connection made) under the default bounds: on a busy machine
    # it took longer than a read may, and was dropped while writes shared the read's bound.
    await _ask(client)
    await record.drain()
    # The answer's reasoning, kept under its call's id, its text and the conversation before it.
    assert (type(record), app[THINKEXTRACT_CONFIG].reasoning_store, record.counts.written) == (SqliteRecord, spec, 3)
    await record.put(b"scope", {"key": b"entry"})
    assert await record.get(b"scope", ["key"]) == {"key": b"entry"}
    await client.close()  # the application's end: the record setup() opened is closed
    assert await record.get(b"scope", ["key"]) == {}


async def test_setup_uses_a_record_given_as_an_object_and_leaves_it_open(aiohttp_client: ClientFactory) -> None:
    app = _app()
    given = MemoryRecord()
    setup(app, ThinkExtractConfig(reasoning_store="off"), record=given)
    client = await aiohttp_client(app)
    await _ask(client)
    await given.drain()
    assert (app[THINKEXTRACT_RECORD] is given, given.counts.written) == (True, 3)
    await client.close()  # the caller's record outlives the application
    await given.put(b"scope", {"key": b"entry"})
    assert await given.get(b"scope", ["key"]) == {"key": b"entry"}


def test_setup_refuses_a_store_it_cannot_read_and_leaves_the_application_untouched() -> None:
    app = web.Application()
    with pytest.raises(ValueError, match="reasoning_store must be"):
        setup(app, ThinkExtractConfig(), record="postgres://db")
    assert (list(app.middlewares), dict(app)) == ([], {})


def test_setup_with_the_record_off_installs_none() -> None:
    app = web.Application()
    setup(app, ThinkExtractConfig(), record="off")
    assert (THINKEXTRACT_RECORD in app, app[THINKEXTRACT_CONFIG].reasoning_store) == (False, "off")
