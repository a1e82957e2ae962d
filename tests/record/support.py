"""Helpers of the record tests: a clock to move by hand, a backend that fails or hangs on demand, a
redis-server on loopback, and Python run in another process."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gateway_mw.record import RecordBase

ROOT = Path(__file__).resolve().parents[2]
REDIS_REQUIRED = "GATEWAY_MW_REDIS_REQUIRED"


class Clock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ScriptedRecord(RecordBase):
    """A backend in a dict whose operations fail, hang or wait for a gate when a test says so."""

    kind = "scripted"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.data: dict[bytes, bytes] = {}
        self.error: Exception | None = None
        self.write_error: Exception | None = None  # writes alone fail (a read-only replica)
        self.hang = False
        self.stubborn = 0.0  # once cancelled, go on this many seconds, then fail
        self.gate: asyncio.Event | None = None
        self.closed = False

    async def _act(self) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.hang or self.stubborn:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if not self.stubborn:
                    raise
                await asyncio.sleep(self.stubborn)
                raise ConnectionError("ended late") from None
        if self.error is not None:
            raise self.error

    async def _fetch(self, skeys: list[bytes]) -> list[bytes | None]:
        await self._act()
        return [self.data.get(skey) for skey in skeys]

    async def _store(self, items: list[tuple[bytes, bytes]]) -> None:
        await self._act()
        if self.write_error is not None:
            raise self.write_error
        self.data.update(items)

    async def _close(self) -> None:
        self.closed = True


def record_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "gateway_mw.record" and r.levelno == logging.WARNING]


def skip_or_fail(reason: str) -> None:
    """Skip with ``reason``; where the environment says Redis is required (CI), fail instead."""
    if os.environ.get(REDIS_REQUIRED) == "1":
        pytest.fail(f"{reason} ({REDIS_REQUIRED}=1: .ci/run installs redis-server and the test extra)")
    pytest.skip(f"{reason}; set {REDIS_REQUIRED}=1 to make this a failure")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RedisServer:
    """One ``redis-server`` on a free loopback port, without persistence, in its own directory; it can
    be stopped, started again on the same port, paused and resumed."""

    def __init__(self, executable: str, directory: Path) -> None:
        self.executable = executable
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.process is None
        log = open(self.directory / "redis.log", "ab")  # noqa: SIM115 - the server writes it until stopped
        with log:
            self.process = subprocess.Popen(
                [
                    self.executable,
                    "--port", str(self.port),
                    "--bind", "127.0.0.1",
                    "--save", "",
                    "--appendonly", "no",
                    "--dir", str(self.directory),
                    "--daemonize", "no",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {(self.directory / 'redis.log').read_text()[-2000:]}")
            if self.ping():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("redis-server did not answer PING within 15 s")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        process.send_signal(signal.SIGCONT)  # a paused server cannot act on SIGTERM
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


def redis_executable() -> str:
    found = shutil.which("redis-server")
    if found is None:
        skip_or_fail("redis-server is not installed (Debian: apt-get install redis-server)")
        raise AssertionError("unreachable")
    return found


def run_python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter (another process), from the checkout; fails the test on error."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done


def start_python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
