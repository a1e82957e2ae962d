"""The routes the gateway forwards (an allowlist, not every path under /v1/), and a gateway that does
not let clients turn the translation off."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.proxy import SettingsError, load_settings
from gateway_mw.proxy.routes import DEFAULT_FORWARD_ROUTES, parse_routes

from .support import serving as gateway
from .support import settings


class Upstream:
    """A model server that records every request reaching it and answers each with a small JSON body
    (a chat completion with inline reasoning on the chat route)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, request.path_qs, dict(request.headers)))
        if request.path.endswith("/chat/completions"):
            message = {"role": "assistant", "content": "<think>2+2 is 4</think>It is 4."}
            return web.json_response({"object": "chat.completion", "model": "m", "choices": [{"message": message}]})
        return web.json_response({"ok": True})

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        async with gateway(settings(), app) as url:
            yield url


FORWARDED = [
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/messages"),
    ("POST", "/v1/messages/count_tokens?beta=true"),  # Claude Code counts its context with it
    ("POST", "/v1/responses"),
    ("GET", "/v1/models"),
    ("POST", "/api/chat"),  # Ollama's native routes
    ("POST", "/api/generate"),
    ("GET", "/api/tags"),  # and the read-only ones its clients list and describe models with
    ("GET", "/api/version"),
    ("GET", "/api/ps"),
    ("POST", "/api/show"),
]
NOT_FOUND = [
    ("POST", "/v1/load_lora_adapter"),
    ("GET", "/v1/files"),
    ("POST", "/v1/files"),
    ("DELETE", "/v1/models/m"),
    ("POST", "/v1/embeddings"),
    ("POST", "/api/pull"),  # Ollama's write operations stay opt-in
    ("POST", "/api/push"),
    ("DELETE", "/api/delete"),
    ("POST", "/api/create"),
    ("POST", "/api/copy"),
    ("POST", "/api/blobs/sha256:abc"),
    ("GET", "/metrics/x"),
    ("POST", "/admin"),
]
WRONG_METHOD = [
    ("GET", "/v1/chat/completions", "POST"),
    ("DELETE", "/v1/messages", "POST"),
    ("POST", "/v1/models", "GET"),
]
OPENAI_404 = {
    "error": {
        "message": "this route is not served by the gateway",
        "type": "invalid_request_error",
        "param": None,
        "code": "not_found",
    }
}
OLLAMA_404 = {"error": "this route is not served by the gateway"}  # Ollama's clients read a string


async def test_the_default_routes_are_forwarded_and_nothing_else() -> None:
    upstream = Upstream()
    async with upstream.running() as up, gateway(settings(upstream=up)) as base, aiohttp.ClientSession() as session:
        for method, path in FORWARDED:
            async with session.request(method, base + path, json={} if method == "POST" else None) as resp:
                assert resp.status == 200, (method, path)
        refused = []
        for method, path in NOT_FOUND:
            async with session.request(method, base + path, json={} if method == "POST" else None) as resp:
                refused.append((resp.status, resp.headers.get("Allow"), await resp.json()))
        for method, path, _ in WRONG_METHOD:
            async with session.request(method, base + path) as resp:
                refused.append((resp.status, resp.headers.get("Allow"), await resp.json()))
    assert [(method, path) for method, path, _ in upstream.seen] == FORWARDED
    assert refused[: len(NOT_FOUND)] == [
        (404, None, OLLAMA_404 if path.startswith("/api/") else OPENAI_404) for _, path in NOT_FOUND
    ]
    assert refused[len(NOT_FOUND) :] == [
        (
            405,
            allow,
            {
                "error": {
                    "message": "this method is not allowed on this route",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "method_not_allowed",
                }
            }
            if "messages" not in path
            else {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "this method is not allowed on this route"},
            },
        )
        for _, path, allow in WRONG_METHOD
    ]


async def test_the_operator_widens_or_narrows_the_routes() -> None:
    upstream = Upstream()
    async with upstream.running() as up:
        s, _ = load_settings(
            ["--upstream", up, "--set", "upstream_server=generic"],
            {"GATEWAY_FORWARD_ROUTES": "POST chat/completions, POST embeddings, GET models/*, * /api/**"},
        )
        async with gateway(s) as base, aiohttp.ClientSession() as session:
            statuses = {}
            for method, path in [
                ("POST", "/v1/chat/completions"),
                ("POST", "/v1/embeddings"),
                ("GET", "/v1/models/qwen3"),
                ("GET", "/v1/models/a/b"),  # * stays within one segment
                ("GET", "/api/tags"),
                ("DELETE", "/api/delete"),
                ("POST", "/v1/responses"),  # no longer listed
            ]:
                async with session.request(method, base + path) as resp:
                    statuses[(method, path)] = resp.status
    assert statuses == {
        ("POST", "/v1/chat/completions"): 200,
        ("POST", "/v1/embeddings"): 200,
        ("GET", "/v1/models/qwen3"): 200,
        ("GET", "/v1/models/a/b"): 404,
        ("GET", "/api/tags"): 200,
        ("DELETE", "/api/delete"): 200,
        ("POST", "/v1/responses"): 404,
    }
    assert [path for _, path, _ in upstream.seen] == [
        "/v1/chat/completions",
        "/v1/embeddings",
        "/v1/models/qwen3",
        "/api/tags",
        "/api/delete",
    ]


async def test_with_client_keys_an_unknown_route_is_a_401_first() -> None:
    """A client without a key learns nothing of which routes there are."""
    upstream = Upstream()
    async with upstream.running() as up:
        s, _ = load_settings(["--upstream", up, "--client-keys-env", "K"], {"K": "sk-1"})
        async with gateway(s) as base, aiohttp.ClientSession() as session:
            got = []
            for path, key in [("/v1/files", None), ("/v1/files", "sk-1"), ("/v1/models", None)]:
                headers = {"Authorization": f"Bearer {key}"} if key else {}
                async with session.get(base + path, headers=headers) as resp:
                    got.append(resp.status)
    assert got == [401, 404, 401]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "POST",
            "GATEWAY_FORWARD_ROUTES='POST' is invalid: expected a list of routes, each a method (or *) and a path "
            "(relative to the prefix, or absolute), separated by commas, like 'POST chat/completions, GET models'",
        ),
        (
            "post chat/completions",
            "GATEWAY_FORWARD_ROUTES='post chat/completions' is invalid: expected a list of routes, each a method "
            "(or *) and a path (relative to the prefix, or absolute), separated by commas, like "
            "'POST chat/completions, GET models'",
        ),
        (
            "GET /v1/a**",
            "GATEWAY_FORWARD_ROUTES='GET /v1/a**' is invalid: '**' must be a whole path segment: '/v1/a**'",
        ),
    ],
)
def test_a_bad_route_stops_the_gateway(value: str, message: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings([], {"GATEWAY_FORWARD_ROUTES": value})
    assert str(err.value) == message


def test_routes_from_the_toml_file_and_the_default(tmp_path: Any) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('[proxy]\nprefix = "/openai/v1/"\nforward_routes = ["POST chat/completions", "GET  /health"]\n')
    s, _ = load_settings(["--config", str(config)], {})
    assert s.forward_routes == ("POST chat/completions", "GET /health")
    assert parse_routes(s.forward_routes, s.prefix).entries == (
        ("POST", "/openai/v1/chat/completions"),
        ("GET", "/health"),
    )
    assert load_settings([], {})[0].forward_routes == DEFAULT_FORWARD_ROUTES


SEGMENT = st.text(alphabet="abcz-_.", min_size=1, max_size=6)


@given(segments=st.lists(SEGMENT, min_size=1, max_size=4), method=st.sampled_from(["GET", "POST", "PUT"]))
def test_a_route_matches_its_own_path_and_method_only(segments: list[str], method: str) -> None:
    path = "/v1/" + "/".join(segments)
    routes = parse_routes([f"{method} {'/'.join(segments)}"], "/v1/")
    assert routes.check(method, path) is None
    assert routes.check("PATCH", path) == (method,)
    assert routes.check(method, path + "/more") == ()
    assert routes.check(method, path[:-1]) == ()
    one_star = parse_routes([f"{method} {'/'.join(['*'] * len(segments))}"], "/v1/")
    assert one_star.check(method, path) is None and one_star.check(method, path + "/x") == ()
    assert parse_routes(["* **"], "/v1/").check(method, path) is None
    assert re.fullmatch(r"/v1/.*", path)


async def test_a_client_may_turn_the_translation_off_unless_the_operator_says_not() -> None:
    upstream = Upstream()
    raw = "<think>2+2 is 4</think>It is 4."
    async with upstream.running() as up, aiohttp.ClientSession() as session:
        got = []
        for allow in (True, False):
            async with (
                gateway(settings(upstream=up, allow_client_off=allow)) as base,
                session.post(
                    base + "/v1/chat/completions", json={"model": "m"}, headers={"X-Think-Extract": "off"}
                ) as resp,
            ):
                got.append((await resp.json())["choices"][0]["message"])
    assert got == [
        {"role": "assistant", "content": raw},
        {"role": "assistant", "content": "It is 4.", "reasoning_content": "2+2 is 4", "reasoning": "2+2 is 4"},
    ]
    sent = [headers.get("X-Think-Extract") for _, _, headers in upstream.seen]
    assert sent == ["off", None]  # ignored is not forwarded either
    s, _ = load_settings(["--no-client-off"], {})
    assert (s.allow_client_off, load_settings([], {"GATEWAY_ALLOW_CLIENT_OFF": "false"})[0].allow_client_off) == (
        False,
        False,
    )
