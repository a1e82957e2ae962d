"""The reasoning controls through the gateway to an Ollama upstream: what the upstream receives once
the gateway asked it of the model, the debug line that says what was read and written, and the
metric of controls summed over gunicorn's workers."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from .ollama_fake import fake_ollama
from .processes import gunicorn
from .support import SCRIPTED, records, samples, serving, settings

MESSAGES = [{"role": "user", "content": "2+2?"}]
CONTROLS = "gateway_mw_reasoning_controls_total"


async def chat(base: str, rid: str, **body: Any) -> int:
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session,
        session.post(base + "/api/chat", json=body, headers={"X-Request-Id": rid}) as resp,
    ):
        await resp.read()
        return resp.status


async def test_a_level_to_an_ollama_model_that_cannot_think_is_not_sent(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway_mw.proxy")
    async with fake_ollama() as fake:
        s = settings(upstream=fake.url, think_extract=SCRIPTED.replace(upstream_server="ollama"))
        async with serving(s) as base:
            sent = [
                ("r-1", {"model": "llama3.2:3b", "think": "high", "messages": MESSAGES, "stream": False}),
                ("r-2", {"model": "llama3.2:3b", "think": True, "messages": MESSAGES, "stream": False}),
                ("r-3", {"model": "qwen3:8b", "think": "high", "messages": MESSAGES, "stream": False}),
                ("r-4", {"model": "qwen3:8b", "think": False, "messages": MESSAGES, "stream": False}),
                ("r-5", {"model": "qwen3:8b", "messages": MESSAGES, "stream": False}),
            ]
            statuses = [await chat(base, rid, **body) for rid, body in sent]
    assert statuses == [200] * 5
    assert fake.chats == [
        {"model": "llama3.2:3b", "messages": MESSAGES, "stream": False},  # Ollama would answer 400
        {"model": "llama3.2:3b", "messages": MESSAGES, "stream": False},
        {"model": "qwen3:8b", "think": True, "messages": MESSAGES, "stream": False},  # levels from 0.17.7
        {"model": "qwen3:8b", "think": False, "messages": MESSAGES, "stream": False},
        {"model": "qwen3:8b", "messages": MESSAGES, "stream": False},
    ]
    assert (fake.shows, fake.versions) == ({"llama3.2:3b": 1, "qwen3:8b": 1}, 1)  # once per model
    lines = [message for _, level, message in records(caplog, "gateway_mw.proxy") if level == logging.DEBUG]
    llama = "200, key -, model 'llama3.2:3b', no family preset"
    qwen = "200, key -, model 'qwen3:8b', family preset 'Qwen3 hybrid'"
    assert lines == [
        f"request r-1: POST /api/chat: {llama}, control effort high (think) -> think removed (the model cannot "
        "think), unsupported; ollama: translated, reasoning into thinking",
        f"request r-2: POST /api/chat: {llama}, control on (think) -> think removed (the model cannot think), "
        "unsupported; ollama: translated, reasoning into thinking",
        f"request r-3: POST /api/chat: {qwen}, control effort high (think) -> think=true, nearest; "
        "ollama: translated, reasoning into thinking",
        f"request r-4: POST /api/chat: {qwen}, control off (think) -> nothing written, applied; "
        "ollama: translated, reasoning into thinking",
        f"request r-5: POST /api/chat: {qwen}; ollama: translated, reasoning into thinking",
    ]


async def test_an_ollama_that_cannot_say_fails_no_request() -> None:
    async with fake_ollama() as fake:
        fake.show_status = 500
        s = settings(upstream=fake.url, think_extract=SCRIPTED.replace(upstream_server="ollama"))
        async with serving(s) as base:
            statuses = [
                await chat(base, f"f-{i}", model="gemma3:4b", think=True, messages=MESSAGES, stream=False)
                for i in range(3)
            ]
    assert statuses == [200] * 3
    assert fake.chats == [{"model": "gemma3:4b", "think": True, "messages": MESSAGES, "stream": False}] * 3
    assert (fake.shows, fake.versions) == ({"gemma3:4b": 1}, 1)  # not asked again by every request


async def scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session,
        session.get(base + "/metrics") as resp,
    ):
        return samples(await resp.text())


def controls(got: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: value for (name, labels), value in got.items() if name == CONTROLS}


def per_worker(metrics_dir: Path, tmp_path: Path) -> list[float]:
    """Each worker's own count of controls, read from its file alone."""
    counts = []
    for db in sorted(metrics_dir.glob("counter_*.db")):
        alone = tmp_path / f"{db.stem}-{time.monotonic_ns()}"
        alone.mkdir()
        shutil.copy(db, alone / db.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))
        counts.append(sum(controls(samples(generate_latest(registry).decode())).values()))
    return counts


async def test_two_gunicorn_workers_count_controls_together(tmp_path: Path) -> None:
    metrics_dir = tmp_path / "metrics"
    async with fake_ollama() as fake:
        env = {
            "GATEWAY_UPSTREAM": fake.url,
            "THINK_EXTRACT_UPSTREAM_SERVER": "ollama",
            "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        }
        async with gunicorn(tmp_path, env) as gw:
            n = 0
            for _ in range(200):  # waves until both workers have served some (the kernel picks)
                body = {"model": "qwen3:8b", "think": False, "messages": MESSAGES, "stream": False}
                statuses = await asyncio.gather(*(chat(gw.base, f"g-{n + i}", **body) for i in range(6)))
                assert statuses == [200] * 6
                n += 6
                served = per_worker(metrics_dir, tmp_path)
                if len(served) == 2 and all(count > 0 for count in served):
                    break
            assert await chat(gw.base, "g-x", model="gemma3:4b", messages=MESSAGES, stream=False) == 200
            # A worker counts a request once its answer is sent: the client may have it a moment before.
            for _ in range(600):  # a bound for a hang, not a speed
                if sum(controls(await scrape(gw.base)).values()) == n + 1:
                    break
                await asyncio.sleep(0.1)
            scrapes = [controls(await scrape(gw.base)) for _ in range(4)]  # either worker answers for both
    assert (
        scrapes
        == [
            {
                (("intent", "off"), ("outcome", "applied"), ("surface", "ollama")): n,
                (("intent", "default"), ("outcome", "unchanged"), ("surface", "ollama")): 1,
            }
        ]
        * 4
    )
