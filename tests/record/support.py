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
        self.stubborn: float | asyncio.Event = 0.0  # once cancelled, go on (seconds, or until set), then fail
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
                if isinstance(self.stubborn, asyncio.Event):
                    await self.stubborn.wait()
                else:
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
    be stopped, started again on the same port, paused and resumed.

    A port free when chosen may be taken before the server binds it (another test suite running at
    the same time): the first start then tries another one. Only a server that says it is this one (its
    process id) counts as started."""

    def __init__(self, executable: str, directory: Path) -> None:
        self.executable = executable
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.started = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        for _ in range(20):
            try:
                self._start()
            except PortTaken:
                if self.started:
                    raise
                self.port = free_port()
            else:
                self.started = True
                return
        raise RuntimeError("redis-server found no free port in 20 tries")

    def _start(self) -> None:
        assert self.process is None
        path = self.directory / "redis.log"
        before = path.stat().st_size if path.exists() else 0
        log = open(path, "ab")  # noqa: SIM115 - the server writes it until stopped
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
        deadline = time.monotonic() + 60  # a bound for a hang: a busy machine starts a process slowly
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                said = path.read_bytes()[before:].decode(errors="replace")
                if "Address already in use" in said:
                    raise PortTaken(self.port)
                raise RuntimeError(f"redis-server exited: {said[-2000:]}")
            if self.ping():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("redis-server did not answer within 60 s")

    def ping(self) -> bool:
        """Whether this server (not another process on its port) answers."""
        assert self.process is not None
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"INFO server\r\n")
                answer = b""
                while b"\r\n" not in answer:
                    answer += s.recv(65536) or b"\r\n"
                head, _, text = answer.partition(b"\r\n")
                if not head.startswith(b"$"):  # an error: loading, or not Redis
                    return False
                while len(text) < int(head[1:]) + 2:
                    more = s.recv(65536)
                    if not more:
                        return False
                    text += more
                return b"\r\nprocess_id:%d\r\n" % self.process.pid in text
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


class PortTaken(Exception):
    """The port was taken by another process before the server could bind it."""


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
