"""``THINK_EXTRACT_*`` as a bare middleware reads it: a bad value never fails routes it does not
translate; misspelled names and profiles that are not JSON are reported as such."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from gateway_mw import ThinkExtractConfig, middleware, thinkextract_middleware

ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]

COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "<think>2+2</think>4"}, "finish_reason": "stop"}
    ],
}


@pytest.fixture
def fresh_env_config() -> Iterator[None]:
    middleware._env_config.cache_clear()
    middleware._env_routes.cache_clear()
    yield
    middleware._env_config.cache_clear()
    middleware._env_routes.cache_clear()


async def answer(request: web.Request) -> web.Response:
    return web.json_response(COMPLETION)


def bare_app() -> web.Application:
    app = web.Application(middlewares=[thinkextract_middleware])
    app.router.add_post("/v1/chat/completions", answer)
    app.router.add_post("/v1/embeddings", answer)
    app.router.add_post("/api/things", answer)
    app.router.add_get("/v1/chat/completions", answer)
    return app


@pytest.mark.usefixtures("fresh_env_config")
async def test_bad_variable_never_fails_an_untranslated_route(
    aiohttp_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("THINK_EXTRACT_STREAM_MODE", "batch")
    client = await aiohttp_client(bare_app())
    for path in ("/v1/embeddings", "/api/things"):
        resp = await client.post(path, json={})
        assert (resp.status, await resp.json()) == (200, COMPLETION)
    resp = await client.get("/v1/chat/completions")
    assert (resp.status, await resp.json()) == (200, COMPLETION)
    # The route it would translate fails, with the reason in the log (once).
    for _ in range(2):
        resp = await client.post("/v1/chat/completions", json={})
        assert (resp.status, await resp.text()) == (
            500,
            "gateway_mw: the THINK_EXTRACT_* configuration is invalid (see the log)",
        )
    errors = [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name == "gateway_mw"]
    assert errors == [
        (
            "gateway_mw",
            logging.ERROR,
            "gateway_mw: THINK_EXTRACT_STREAM_MODE='batch' is invalid: expected one of live, buffered; "
            "the routes it translates answer 500 until it is fixed",
        )
    ]


@pytest.mark.usefixtures("fresh_env_config")
async def test_bad_variable_keeps_custom_routes(aiohttp_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THINK_EXTRACT_ROUTES", "/api/things=chat")
    monkeypatch.setenv("THINK_EXTRACT_MAX_BODY_BYTES", "1MB")
    client = await aiohttp_client(bare_app())
    assert (await client.post("/v1/chat/completions", json={})).status == 200  # not a route it translates now
    assert (await client.post("/api/things", json={})).status == 500


@pytest.mark.usefixtures("fresh_env_config")
async def test_good_variables_still_apply(aiohttp_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THINK_EXTRACT_CHAT_REASONING_FIELD", "reasoning")
    client = await aiohttp_client(bare_app())
    body = await (await client.post("/v1/chat/completions", json={})).json()
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "4", "reasoning": "2+2"}


@pytest.mark.parametrize(
    ("var", "message"),
    [
        (
            "THINK_EXTRACT_STREAMMODE",
            "THINK_EXTRACT_STREAMMODE is not a setting; did you mean THINK_EXTRACT_STREAM_MODE?",
        ),
        (
            "THINK_EXTRACT_MESSAGE_POLICY",
            "THINK_EXTRACT_MESSAGE_POLICY is not a setting; did you mean THINK_EXTRACT_MESSAGES_POLICY?",
        ),
        (
            "THINK_EXTRACT_PROFILE",
            "THINK_EXTRACT_PROFILE is not a setting; did you mean THINK_EXTRACT_PROFILES?",
        ),
        (
            "THINK_EXTRACT_XYZZY",
            "THINK_EXTRACT_XYZZY is not a setting; the settings are "
            + ", ".join("THINK_EXTRACT_" + name.upper() for name in ThinkExtractConfig.__struct_fields__),
        ),
    ],
)
def test_unknown_name_is_reported_with_the_closest_valid_one(var: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        ThinkExtractConfig.from_env({var: "1", "OTHER_THING": "ignored"})
    assert str(err.value) == message


def test_profiles_that_are_not_json_say_so() -> None:
    with pytest.raises(ValueError) as err:
        ThinkExtractConfig.from_env({"THINK_EXTRACT_PROFILES": "{not json"})
    assert str(err.value) == (
        "THINK_EXTRACT_PROFILES='{not json' is invalid: not valid JSON "
        "(JSON is malformed: object keys must be strings (byte 1)); expected a JSON list of profiles"
    )
