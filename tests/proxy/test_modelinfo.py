"""What the gateway asks an Ollama upstream of a model (``/api/show``, ``/api/version``) for the
reasoning controls: once per model however many requests ask at once, kept and bounded, every
failure "not known" (never a failed request) and asked again only after a while, with the gateway's
upstream key and nothing secret in the log."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.controls import ModelInfo
from gateway_mw.middleware import THINKEXTRACT_MODEL_INFO
from gateway_mw.proxy import PROXY, build_app
from gateway_mw.proxy.modelinfo import NAME_CHARS, OllamaModels, thinking_of, version_of
from gateway_mw.proxy.schema import Secret

from .ollama_fake import fake_ollama
from .support import SCRIPTED, refused_port, serving, settings, until


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def asking(url: str, **options: Any) -> AsyncIterator[OllamaModels]:
    async with aiohttp.ClientSession() as session:
        models = OllamaModels(session, url, {"Authorization": "Bearer sk-upstream-1"}, **options)
        try:
            yield models
        finally:
            await models.close()


def show(capabilities: Any) -> bytes:
    return msgspec.json.encode({"model_info": {"general.architecture": "x"}, "capabilities": capabilities})


@pytest.mark.parametrize(
    ("body", "thinking"),
    [
        (show(["completion", "tools", "thinking"]), True),
        (show(["completion", "vision"]), False),
        (show([]), False),
        (show(None), None),  # no capabilities said: a server from before they were reported
        (b'{"license": "MIT", "model_info": {}}', None),
        (show("thinking"), None),
        (show([1, {"thinking": True}]), False),
        (b"<html>502 Bad Gateway</html>", None),
        (b"[]", None),
    ],
)
def test_the_show_answer_says_whether_the_model_can_think(body: bytes, thinking: bool | None) -> None:
    assert thinking_of(body) is thinking


@pytest.mark.parametrize(
    ("version", "parsed"),
    [
        ("0.12.4", (0, 12, 4)),
        ("0.17.7", (0, 17, 7)),
        ("0.22.0-rc1", (0, 22, 0)),
        ("v0.9.0", (0, 9, 0)),
        ("0.12.4+g1a2b3c", (0, 12, 4)),
        ("0.12", (0, 12)),
        ("0.12.x", (0, 12)),
        (" 1.0.0 ", (1, 0, 0)),
        ("0.0.0", None),  # built from source without a version: not known
        ("dev", None),
        ("", None),
        ("٠.١٢.٤", None),  # digits, but not ASCII ones
        (12, None),
        (None, None),
    ],
)
def test_the_version_answer_is_read_as_numbers(version: Any, parsed: tuple[int, ...] | None) -> None:
    assert version_of(msgspec.json.encode({"version": version})) == parsed


@given(
    st.lists(st.integers(0, 10**6), min_size=1, max_size=5).filter(any),
    st.sampled_from(["", "-rc1", "-rc.2", "+build.5", "-0.ga1b2c3d"]),
)
def test_any_release_number_reads_back_whatever_its_suffix(numbers: list[int], suffix: str) -> None:
    text = ".".join(map(str, numbers)) + suffix
    assert version_of(msgspec.json.encode({"version": text})) == tuple(numbers)


@given(st.binary(max_size=200))
def test_any_answer_is_read_or_not_known_never_an_error(body: bytes) -> None:
    thinking = thinking_of(body)
    version = version_of(body)
    assert thinking in (True, False, None)
    assert version is None or (isinstance(version, tuple) and all(isinstance(n, int) for n in version))


async def test_one_call_per_model_however_many_requests_ask_at_once() -> None:
    async with fake_ollama() as fake, asking(fake.url) as models:
        fake.release.clear()  # no answer until every caller asks
        callers = [asyncio.create_task(models(name)) for name in ["qwen3:8b", "llama3.2:3b"] * 50]
        await until(lambda: len(fake.shows) == 2 and fake.versions == 1)  # all 100 asked before these came
        fake.release.set()
        got = await asyncio.gather(*callers)
        assert got == [ModelInfo(True, (0, 12, 4)), ModelInfo(False, (0, 12, 4))] * 50
        assert await models("qwen3:8b") == ModelInfo(True, (0, 12, 4))  # kept: not asked again
        assert (fake.shows, fake.versions) == ({"qwen3:8b": 1, "llama3.2:3b": 1}, 1)
        assert [h.get("Authorization") for h in fake.headers] == ["Bearer sk-upstream-1"] * 3
        assert [h.get("Accept-Encoding") for h in fake.headers] == ["identity"] * 3


async def test_a_caller_that_leaves_does_not_take_the_answer_from_the_others() -> None:
    async with fake_ollama() as fake, asking(fake.url) as models:
        fake.release.clear()
        leaving = asyncio.create_task(models("qwen3:8b"))
        staying = asyncio.create_task(models("qwen3:8b"))
        await until(lambda: fake.shows["qwen3:8b"] == 1 and fake.versions == 1)
        leaving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await leaving
        fake.release.set()
        assert await staying == ModelInfo(True, (0, 12, 4))
        assert (fake.shows, fake.versions) == ({"qwen3:8b": 1}, 1)


async def test_an_answer_is_kept_for_a_while_then_asked_again() -> None:
    clock = Clock()
    async with fake_ollama() as fake, asking(fake.url, keep=600.0, retry=30.0, clock=clock) as models:
        assert await models("gemma3:4b") == ModelInfo(False, (0, 12, 4))
        clock.now += 599.0
        fake.models["gemma3:4b"] = ["completion", "thinking"]  # pulled again: now it thinks
        fake.version = "0.17.7"
        assert await models("gemma3:4b") == ModelInfo(False, (0, 12, 4))
        assert (fake.shows, fake.versions) == ({"gemma3:4b": 1}, 1)
        clock.now += 1.0
        assert await models("gemma3:4b") == ModelInfo(True, (0, 17, 7))
        assert (fake.shows, fake.versions) == ({"gemma3:4b": 2}, 2)


async def test_at_most_size_models_are_kept_the_least_recently_asked_forgotten() -> None:
    async with fake_ollama() as fake, asking(fake.url, size=2) as models:
        for name in ["qwen3:8b", "llama3.2:3b", "qwen3:8b", "gemma3:4b"]:
            await models(name)
        assert len(models.thinking) == 2
        assert await models("qwen3:8b") == ModelInfo(True, (0, 12, 4))  # kept: asked last but one
        assert await models("llama3.2:3b") == ModelInfo(False, (0, 12, 4))  # forgotten: asked again
        assert fake.shows == {"qwen3:8b": 1, "llama3.2:3b": 2, "gemma3:4b": 1}
        assert len(models.thinking) == 2


async def test_client_model_names_beyond_any_servers_are_not_asked_nor_kept() -> None:
    async with fake_ollama() as fake, asking(fake.url) as models:
        assert await models("x" * (NAME_CHARS + 1)) == ModelInfo(None, (0, 12, 4))
        assert await models("") == ModelInfo(None, (0, 12, 4))
        assert (fake.shows, len(models.thinking)) == ({}, 0)


async def test_a_failed_ask_is_not_known_and_asked_again_only_after_a_while() -> None:
    clock = Clock()
    async with fake_ollama() as fake, asking(fake.url, keep=600.0, retry=30.0, clock=clock) as models:
        fake.show_status = 500
        assert await models("qwen3:8b") == ModelInfo(None, (0, 12, 4))
        assert await models("no-such-model") == ModelInfo(None, (0, 12, 4))  # Ollama's 404
        fake.show_status = 200
        clock.now += 29.0
        assert await models("qwen3:8b") == ModelInfo(None, (0, 12, 4))
        assert fake.shows == {"qwen3:8b": 1, "no-such-model": 1}
        clock.now += 1.0
        assert await models("qwen3:8b") == ModelInfo(True, (0, 12, 4))
        assert fake.shows == {"qwen3:8b": 2, "no-such-model": 1}


async def test_an_upstream_that_does_not_answer_in_time_is_not_known() -> None:
    async with fake_ollama() as fake, asking(fake.url, timeout=0.2) as models:
        fake.never_answer = True
        assert await models("qwen3:8b") == ModelInfo(None, (0, 12, 4))


async def test_an_upstream_that_cannot_be_reached_is_not_known() -> None:
    with refused_port() as port:
        async with asking(f"http://127.0.0.1:{port}") as models:
            assert await models("qwen3:8b") == ModelInfo(None, None)


async def test_a_version_that_cannot_be_read_is_not_known() -> None:
    async with fake_ollama(version={"major": 0}) as fake, asking(fake.url) as models:
        assert await models("qwen3:8b") == ModelInfo(True, None)


async def test_the_gateway_asks_an_ollama_upstream_with_its_key_and_logs_no_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with fake_ollama() as fake:
        s = settings(
            upstream=fake.url,
            upstream_key=Secret("sk-upstream-2"),
            think_extract=SCRIPTED.replace(upstream_server="ollama"),
        )
        app = build_app(s)
        async with serving(s, app):
            source = app[THINKEXTRACT_MODEL_INFO]
            assert await source("deepseek-r1:8b") == ModelInfo(True, (0, 12, 4))
            fake.show_status = 503
            assert await source("llama3.2:3b") == ModelInfo(None, (0, 12, 4))
    assert [h.get("Authorization") for h in fake.headers] == ["Bearer sk-upstream-2"] * 3
    assert (fake.shows, fake.versions) == ({"deepseek-r1:8b": 1, "llama3.2:3b": 1}, 1)
    assert any("/api/show answered 503" in r.getMessage() for r in caplog.records)
    assert not any("sk-upstream" in r.getMessage() or "llama3.2" in r.getMessage() for r in caplog.records)


async def test_the_gateway_asks_once_the_upstream_said_it_is_ollama_and_no_other_server() -> None:
    async with fake_ollama() as fake:
        s = settings(upstream=fake.url, think_extract=SCRIPTED.replace(upstream_server="auto"))
        app = build_app(s)
        async with serving(s, app):
            await until(lambda: app[PROXY].server is not None)  # GET /v1/models: owned_by "library"
            assert app[PROXY].server == "ollama"
            assert await app[THINKEXTRACT_MODEL_INFO]("qwen3:8b") == ModelInfo(True, (0, 12, 4))
        for server in ("vllm", "llamacpp", "generic"):
            s = settings(upstream=fake.url, think_extract=SCRIPTED.replace(upstream_server=server))
            app = build_app(s)
            async with serving(s, app):
                assert await app[THINKEXTRACT_MODEL_INFO]("qwen3:8b") is None
    assert (fake.shows, fake.versions) == ({"qwen3:8b": 1}, 1)


async def test_the_demo_model_is_not_asked() -> None:
    s = settings()
    app = build_app(s)
    async with serving(s, app):
        assert await app[THINKEXTRACT_MODEL_INFO]("demo") is None


def test_a_gateway_without_the_middleware_sets_no_source() -> None:
    assert THINKEXTRACT_MODEL_INFO not in build_app(settings(middleware=False))


async def test_an_ask_cancelled_by_the_stop_is_asked_again_not_given_as_a_cancellation() -> None:
    async with fake_ollama() as fake, asking(fake.url) as models:
        fake.release.clear()
        first = asyncio.create_task(models("qwen3:8b"))
        await until(lambda: fake.shows["qwen3:8b"] == 1 and fake.versions == 1)
        await models.close()
        with pytest.raises(asyncio.CancelledError):
            await first
        fake.release.set()
        assert await models("qwen3:8b") == ModelInfo(True, (0, 12, 4))
        assert (fake.shows, fake.versions) == ({"qwen3:8b": 2}, 2)
