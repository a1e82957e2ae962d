"""The gateway as processes: ``python -m gateway_mw``, or gunicorn with the gateway's configuration and
two workers, on a loopback port of the kernel's choice, their output kept in a file.

No port is chosen beforehand (another process, another test suite, could take it meanwhile): each is
started on port 0 and its address read from what it prints."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest

CLEAN = ("GATEWAY_", "THINK_EXTRACT_", "PROMETHEUS_", "WEB_CONCURRENCY")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any gateway setting, plus ``extra``."""
    return {k: v for k, v in os.environ.items() if not k.startswith(CLEAN)} | extra


def gunicorn_env(home: Path, **extra: str) -> dict[str, str]:
    """:func:`clean_env` for gunicorn: a home of its own, for gunicorn (25 and later) makes its control
    socket at ``$XDG_RUNTIME_DIR/gunicorn.ctl`` or ``~/.gunicorn/gunicorn.ctl``, one path for every
    gunicorn of the user, and each removes the other's."""
    env = clean_env(HOME=str(home), **extra)
    env.pop("XDG_RUNTIME_DIR", None)
    return env


async def listening_at(log: Path, process: subprocess.Popen[bytes], timeout: float = 60.0) -> str:
    """The base URL gunicorn, bound to port 0, says it listens at in its ``log``."""
    deadline = time.monotonic() + timeout
    while True:
        found = re.search(r"Listening at: (http://127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"gunicorn says no address:\n{log.read_text(errors='replace')}")
        await asyncio.sleep(0.05)


def gunicorn_path() -> str:
    found = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or shutil.which("gunicorn")
    if found is None:
        pytest.skip("gunicorn is not installed (pip install -e '.[test]' installs it)")
    return found


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    base: str
    log: Path
    workers: list[int] = field(default_factory=list)

    def text(self) -> str:
        return self.log.read_bytes().decode("utf-8", "replace")

    def lines(self) -> list[str]:
        return self.text().splitlines()

    def signal(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    async def wait(self, timeout: float) -> int:
        return await asyncio.to_thread(self.process.wait, timeout)

    async def until_logged(self, pattern: str, count: int = 1, timeout: float = 60.0) -> None:
        """Until ``pattern`` (a regular expression) is in ``count`` lines of the log."""
        deadline = time.monotonic() + timeout
        while len([line for line in self.lines() if re.search(pattern, line)]) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not logged {count} times within {timeout}s:\n{self.text()}")
            await asyncio.sleep(0.05)


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return sorted(int(p) for p in out)


async def _until_up(running: Running, workers: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(running.base + "/healthz") as resp:
                    running.workers = children(running.process.pid) if workers else []
                    if resp.status == 200 and len(running.workers) == workers:
                        return
            if running.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the gateway did not come up:\n{running.text()}")
            await asyncio.sleep(0.1)


async def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)  # at once: no drain delay
        try:
            await asyncio.to_thread(process.wait, 20)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait, 5)


@contextlib.asynccontextmanager
async def gunicorn(tmp_path: Path, env: dict[str, str], *args: str, workers: int = 2) -> AsyncIterator[Running]:
    """``gunicorn -c python:gateway_mw.proxy.gunicorn_conf -w 2`` with ``env`` (and no other gateway
    setting); SIGINT stops it at the end if the test did not."""
    log = tmp_path / f"gunicorn-{time.monotonic_ns()}.log"
    cmd = [gunicorn_path(), "-c", "python:gateway_mw.proxy.gunicorn_conf", "-w", str(workers), *args]
    with log.open("wb") as out:
        process = subprocess.Popen(
            cmd, cwd=tmp_path, env=gunicorn_env(tmp_path, GATEWAY_PORT="0", **env), stdout=out, stderr=subprocess.STDOUT
        )
    running = Running(process, "", log)
    try:
        running.base = await listening_at(log, process)
        await _until_up(running, workers)
        yield running
    finally:
        await _stop(process)


@contextlib.asynccontextmanager
async def gateway_mw(tmp_path: Path, env: dict[str, str], *args: str) -> AsyncIterator[Running]:
    """``python -m gateway_mw --port 0`` with ``env``; its stderr in the log, its banner read for the
    address."""
    log = tmp_path / f"gateway-{time.monotonic_ns()}.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway_mw", "--port", "0", *args],
            cwd=tmp_path,
            env=clean_env(**env),
            stdout=subprocess.PIPE,
            stderr=err,
        )
    try:
        assert process.stdout is not None
        first = (await asyncio.to_thread(process.stdout.readline)).decode()
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert found, (first, log.read_text())
        running = Running(process, found.group(0), log)
        await _until_up(running, 0)
        yield running
    finally:
        await _stop(process)
        if process.stdout is not None:
            process.stdout.close()
