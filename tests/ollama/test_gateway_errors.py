"""The gateway's own errors on Ollama's routes are in Ollama's shape, ``{"error": "message"}``: its
clients read ``error`` as a string (the Go client, which the ``ollama`` CLI is, unmarshals it into a
string; the JavaScript client throws ``new ResponseError(message.error)``; the Python client keeps it
as ``ResponseError.error``)."""

from __future__ import annotations

import socket

import aiohttp
import ollama
import pytest

from ..proxy.support import serving, settings


async def test_an_unreachable_upstream_is_a_502_in_ollamas_shape() -> None:
    with socket.socket() as closed:  # bound, never listening: every connection is refused
        closed.bind(("127.0.0.1", 0))
        s = settings(upstream=f"http://127.0.0.1:{closed.getsockname()[1]}")
        async with serving(s) as base:
            client = ollama.AsyncClient(host=base)
            with pytest.raises(ollama.ResponseError) as raised:
                await client.chat(model="qwen3:8b", messages=[{"role": "user", "content": "2+2?"}], stream=False)
            async with aiohttp.ClientSession() as session, session.post(base + "/api/generate", json={}) as resp:
                generate = (resp.status, await resp.json())
    assert (raised.value.status_code, raised.value.error) == (502, "the upstream model server is unreachable")
    assert generate == (502, {"error": "the upstream model server is unreachable"})


async def test_a_wrong_method_on_an_ollama_route_is_a_405_in_ollamas_shape() -> None:
    async with (
        serving(settings(upstream="http://127.0.0.1:9")) as base,
        aiohttp.ClientSession() as session,
        session.get(base + "/api/chat") as resp,
    ):
        got = (resp.status, resp.headers.get("Allow"), await resp.json())
    assert got == (405, "POST", {"error": "this method is not allowed on this route"})
