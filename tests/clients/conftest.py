"""Fixtures of the real-client suite: the example proxy as a subprocess, the scripted upstream, the clients.

Every process here talks to 127.0.0.1 only: the proxy and the upstreams listen on loopback, every client
gets its base URL on loopback and every switch that stops its own outbound traffic, and the proxy
variables of every client point at a loopback trap that refuses and records any request for another
address: a test after which the trap holds a request fails.

Every test here is marked ``clients``: the README's test command, which needs nothing outside Python,
leaves them to CI (``python -m pytest -m clients``). A client that is not installed skips its tests
with the reason; with ``GATEWAY_MW_CLIENTS_REQUIRED=1`` (set by ``.ci/run`` after
``.ci/clients-install``) that is a failure instead.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .llama import LlamaServer
from .scripted import ScriptedUpstream
from .thinking import Thinking

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LLAMA_CPP_PYTHON = os.environ.get("GATEWAY_MW_LLAMA_CPP_PYTHON", "0.3.36")  # as in .ci/clients-llama-server


class OutboundTrap:
    """A loopback port that every subprocess and in-process client gets as its HTTP(S) proxy: a request
    for any address but 127.0.0.1 lands here, is recorded (its request line) and refused."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._serve, name="outbound-trap", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    line = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    line = "(no request line)"
                self.attempts.append(line)


TRAP = OutboundTrap()


def require(condition: object, reason: str) -> None:
    """Skip with ``reason`` unless ``condition``; in CI (``GATEWAY_MW_CLIENTS_REQUIRED=1``) fail instead."""
    if condition:
        return
    if os.environ.get("GATEWAY_MW_CLIENTS_REQUIRED") == "1":
        pytest.fail(f"{reason} (GATEWAY_MW_CLIENTS_REQUIRED=1: .ci/clients-install should have provided it)")
    pytest.skip(reason)


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gateway_mw"


def js_clients_dir() -> Path:
    """Where ``.ci/clients-install`` put the JavaScript clients (the same key it computes)."""
    if os.environ.get("GATEWAY_MW_CLIENTS_DIR"):
        return Path(os.environ["GATEWAY_MW_CLIENTS_DIR"])
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        if (HERE / name).exists():
            digest.update((HERE / name).read_bytes())
    return cache_root() / "clients" / digest.hexdigest()[:16]


def offline_env(**extra: str) -> dict[str, str]:
    """The environment for a client subprocess: no way off this machine, no user configuration."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[name] = TRAP.url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    for name in list(env):
        if name.startswith(("OPENAI_", "ANTHROPIC_", "CLAUDE_", "CODEX_", "LITELLM_", "LANGCHAIN_", "LANGSMITH_")):
            del env[name]
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proxy:
    """``examples/proxy.py`` on a free loopback port, in front of the demo model or ``upstream``."""

    def __init__(self, upstream: str | None, *flags: str) -> None:
        cmd = [sys.executable, str(ROOT / "examples" / "proxy.py"), "--port", "0", "--pace", "0"]
        if upstream:
            cmd += ["--upstream", upstream, "--messages-policy", "unsigned", *flags]
        else:
            cmd += list(flags)
        env = offline_env()
        env.pop("PYTHONPATH", None)
        self.process = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.process.stdout is not None
        self.output: list[str] = []
        match = None
        while match is None:  # log lines (what it found of the upstream) may come before the banner
            line = self.process.stdout.readline()
            self.output.append(line)
            match = re.match(r"gateway_mw proxy on (http://127\.0\.0\.1:\d+) ", line)
            if not line:
                self.process.kill()
                raise RuntimeError(f"examples/proxy.py did not start: {''.join(self.output)}")
        self.base = match.group(1)
        # Keep reading its output so that it never blocks on a full pipe (and a failing test can show it).
        self._drain = threading.Thread(target=self.output.extend, args=(self.process.stdout,), daemon=True)
        self._drain.start()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._drain.join(10)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.clients)


@pytest.fixture(scope="session")
def scripted_upstream() -> Iterator[ScriptedUpstream]:
    upstream = ScriptedUpstream()
    upstream.start()
    yield upstream
    upstream.stop()


@pytest.fixture
def scripted(scripted_upstream: ScriptedUpstream) -> ScriptedUpstream:
    """The scripted upstream with an empty log; it calls ``get_weather`` when offered (a test may add tools)."""
    scripted_upstream.requests.clear()
    scripted_upstream.tools = {"get_weather": {"city": "Paris"}}
    return scripted_upstream


@pytest.fixture(scope="session")
def demo_proxy() -> Iterator[Proxy]:
    proxy = Proxy(None)
    yield proxy
    proxy.stop()


@pytest.fixture(scope="session")
def scripted_proxy(scripted_upstream: ScriptedUpstream) -> Iterator[Proxy]:
    """The proxy in front of the scripted upstream, its request side off (``history_reasoning=pass``):
    what the upstream receives is what each client sends back (test_roundtrip.py has it on)."""
    proxy = Proxy(scripted_upstream.base, "--set", "history_reasoning=pass")
    yield proxy
    proxy.stop()


@pytest.fixture(scope="session")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JavaScript clients, linked into a scratch directory where the suite's scripts run from (Node
    resolves a script's imports from the directories above it)."""
    path = js_clients_dir() / "node_modules"
    require(shutil.which("node"), "node is not installed")
    require(path.is_dir(), f"the JavaScript clients are not installed ({path} is missing): run .ci/clients-install")
    scratch = tmp_path_factory.mktemp("js") / "node_modules"
    scratch.symlink_to(path, target_is_directory=True)
    return scratch


@pytest.fixture(autouse=True)
def _no_way_off_this_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The in-process clients (LangChain, LiteLLM) read the same proxy variables as the subprocesses; no
    test may leave a request for another address behind it."""
    for name in list(os.environ):
        if name.startswith(("LANGCHAIN_", "LANGSMITH_", "LITELLM_")):
            monkeypatch.delenv(name)
    for name, value in offline_env(LITELLM_LOCAL_MODEL_COST_MAP="True", LANGSMITH_TRACING="false").items():
        if name.lower().endswith("_proxy") or name.startswith(("LITELLM_", "LANGSMITH_")):
            monkeypatch.setenv(name, value)
    before = len(TRAP.attempts)
    yield
    assert TRAP.attempts[before:] == [], "a client tried to reach an address off this machine"


def _binary(node_modules: Path, name: str, what: str) -> Path:
    path = node_modules / ".bin" / name
    require(path.exists(), f"{what} is not installed ({path} is missing): run .ci/clients-install")
    return path


@pytest.fixture(scope="session")
def claude(node_modules: Path) -> Path:
    return _binary(node_modules, "claude", "Claude Code")


@pytest.fixture(scope="session")
def codex(node_modules: Path) -> Path:
    return _binary(node_modules, "codex", "Codex")


@pytest.fixture(scope="session")
def unmirrored_proxy(scripted_upstream: ScriptedUpstream) -> Iterator[Proxy]:
    """The proxy with ``chat_mirror_reasoning=false``, in front of the scripted upstream (its request side
    off, as :func:`scripted_proxy`): an upstream's own chat reasoning field reaches the client as it came,
    so a test reads which name each client reads."""
    proxy = Proxy(scripted_upstream.base, "--set", "chat_mirror_reasoning=false", "--set", "history_reasoning=pass")
    yield proxy
    proxy.stop()


@pytest.fixture(scope="session")
def summary_proxy(scripted_upstream: ScriptedUpstream) -> Iterator[Proxy]:
    """The proxy with ``responses_reasoning_format=summary``, in front of the scripted upstream (its
    request side off, as :func:`scripted_proxy`)."""
    proxy = Proxy(
        scripted_upstream.base, "--set", "responses_reasoning_format=summary", "--set", "history_reasoning=pass"
    )
    yield proxy
    proxy.stop()


def llama_server_binary() -> Path:
    """The llama-server binary ``.ci/clients-llama-server`` built, and the modules the suite builds its model with."""
    binary = Path(
        os.environ.get("GATEWAY_MW_LLAMA_SERVER")
        or cache_root() / "llama-server" / LLAMA_CPP_PYTHON / "bin" / "llama-server"
    )
    require(binary.exists(), f"llama-server is not built ({binary} is missing): run .ci/clients-llama-server")
    for module in ("gguf", "tokenizers", "numpy"):
        try:
            __import__(module)
        except ImportError:
            require(False, f"{module} is not installed: pip install -e '.[clients]'")
    return binary


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = LlamaServer(llama_server_binary(), tmp_path_factory.mktemp("llama"), free_port(), offline_env())
    yield server
    server.stop()


@pytest.fixture(scope="session")
def thinker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Thinking]:
    """llama-server thinking long where it thinks, for the budgets' tests (a server of its own: the
    suite's shared one forces a short reasoning on every request)."""
    server = Thinking(llama_server_binary(), tmp_path_factory.mktemp("budget"), free_port(), offline_env())
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llama_proxy(llama_server: LlamaServer) -> Iterator[Proxy]:
    proxy = Proxy(llama_server.base)
    yield proxy
    proxy.stop()
