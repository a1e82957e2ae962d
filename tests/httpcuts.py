"""One upstream body, written in two pieces cut at every byte offset, through a real app."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.test_utils import TestClient

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def bytes_at_every_cut(
    client_for: Callable[[Handler], Awaitable[TestClient[web.Request, web.Application]]],
    route: str,
    body: bytes,
) -> set[bytes]:
    """The distinct bodies a client receives when ``body`` is written as ``body[:cut]``, ``body[cut:]``
    for every ``cut``: a translation that does not depend on where the network cut gives one."""
    cut = 0

    async def split_writer(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(body[:cut])
        await resp.write(body[cut:])
        return resp

    client = await client_for(split_writer)
    outputs = set()
    for cut in range(len(body) + 1):  # noqa: B007  (read by the handler)
        resp = await client.post(route)
        outputs.add(await resp.read())
    return outputs
