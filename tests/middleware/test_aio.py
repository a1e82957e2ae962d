"""The private parts of aiohttp's request that ``gateway_mw.aio`` uses: still there, and still doing
what the middleware relies on. A failure here names the attribute an aiohttp release renamed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.helpers import reify
from aiohttp.test_utils import TestClient
from aiohttp.typedefs import Handler
from multidict import CIMultiDict

from gateway_mw import aio

ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]


@pytest.mark.parametrize("name", aio.PRIVATE_ATTRIBUTES)
def test_each_private_attribute_is_one_aiohttp_declares(name: str) -> None:
    assert name in web.BaseRequest.ATTRS, (
        f"aiohttp {aiohttp.__version__} no longer has BaseRequest.{name}, which gateway_mw.aio reads or sets:"
        " find what replaced it and change gateway_mw/aio.py"
    )


def test_content_is_a_cached_property_of_the_request() -> None:
    assert isinstance(vars(web.BaseRequest).get(aio.CACHED_CONTENT), reify), (
        f"aiohttp {aiohttp.__version__}: BaseRequest.{aio.CACHED_CONTENT} is no longer a reify kept in _cache,"
        " where gateway_mw.aio.hand_over replaces it"
    )


async def test_a_handed_over_body_is_what_every_way_of_reading_returns(
    aiohttp_client: ClientFactory,
) -> None:
    seen: dict[str, object] = {}

    async def handler(request: web.Request) -> web.Response:
        seen["stream before"] = aio.raw_payload(request) is request.content
        seen["read before"] = aio.read_already(request)
        aio.hand_over(request, b'{"new": true}')
        seen["read already"] = aio.read_already(request)
        seen["content"] = await request.content.read()
        seen["raw"] = aio.raw_payload(request) is request.content
        seen["read"] = await request.read()
        seen["json"] = await request.json()
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/", handler)
    client = await aiohttp_client(app)
    async with client.post("/", data=b'{"old": true}') as resp:
        assert (resp.status, await resp.text()) == (200, "ok")
    assert seen == {
        "stream before": True,
        "read before": None,
        "read already": b'{"new": true}',
        "content": b'{"new": true}',
        "raw": True,
        "read": b'{"new": true}',
        "json": {"new": True},
    }


class _Tagging(AbstractStreamWriter):
    """A writer that upper-cases what goes through it, around the connection's own."""

    def __init__(self, inner: AbstractStreamWriter) -> None:
        self.inner = inner

    async def write(self, chunk: bytes | bytearray | memoryview) -> None:
        await self.inner.write(bytes(chunk).upper())

    async def write_eof(self, chunk: bytes = b"") -> None:
        await self.inner.write_eof(chunk.upper())

    async def drain(self) -> None:
        await self.inner.drain()

    def enable_compression(self, encoding: str = "deflate", strategy: int | None = None) -> None:
        self.inner.enable_compression(encoding, strategy)

    def enable_chunking(self) -> None:
        self.inner.enable_chunking()

    async def write_headers(self, status_line: str, headers: CIMultiDict[str]) -> None:
        await self.inner.write_headers(status_line, headers)

    def send_headers(self) -> None:
        self.inner.send_headers()


async def test_a_swapped_writer_is_what_the_response_goes_out_through(
    aiohttp_client: ClientFactory,
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        original = request.writer
        replaced = aio.swap_writer(request, _Tagging(original))
        assert replaced is original
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b"through the swapped writer")
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_get("/", handler)
    client = await aiohttp_client(app)
    async with client.get("/") as resp:
        assert (resp.status, await resp.read()) == (200, b"THROUGH THE SWAPPED WRITER")


async def test_an_applications_setting_is_what_config_dict_gives(aiohttp_client: ClientFactory) -> None:
    """:func:`aio.app_setting` gives what ``request.config_dict.get`` gives, for a key set on the
    application that handles the request, on the one around it, on both, on neither, or set to
    ``None``, in a middleware of either application and in the handler."""
    keys = {name: web.AppKey(name, object) for name in ("outer", "inner", "both", "neither", "none")}
    seen: list[tuple[object, object]] = []

    def compare(request: web.Request) -> None:
        seen.extend((aio.app_setting(request, key), request.config_dict.get(key)) for key in keys.values())

    @web.middleware
    async def look(request: web.Request, handler: Handler) -> web.StreamResponse:
        compare(request)
        return await handler(request)

    async def handler(request: web.Request) -> web.Response:
        compare(request)
        return web.Response(text="ok")

    outer, inner = web.Application(middlewares=[look]), web.Application(middlewares=[look])
    outer[keys["outer"]], outer[keys["both"]], inner[keys["both"]], inner[keys["inner"]] = 1, 2, 3, 4
    inner[keys["none"]], outer[keys["none"]] = None, 5
    inner.router.add_post("/x", handler)
    outer.router.add_post("/x", handler)
    outer.add_subapp("/sub", inner)
    client = await aiohttp_client(outer)
    for path in ("/x", "/sub/x"):
        async with client.post(path, data=b"{}") as resp:
            assert (resp.status, await resp.text()) == (200, "ok")
    assert [mine for mine, _ in seen] == [theirs for _, theirs in seen]
    assert [mine for mine, _ in seen][-5:] == [1, 4, 3, None, None]  # the handler's, in the sub-application
