"""Every command and code block in the README and the newcomer docs runs as written.

Python blocks run in a fresh interpreter, next to a live ``examples/proxy.py`` on the demo model (its
documented address ``http://127.0.0.1:8080`` replaced by the test's free port); TOML blocks load
through the proxy's own settings loader; shell commands run (``curl``), parse (``examples/proxy.py``
flags) or are mapped to the test that runs them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: the test extra installs tomli
    import tomli as tomllib  # type: ignore[no-redef]

from examples import demo_model, proxy

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    "README.md",
    "docs/index.md",
    "docs/quickstart.md",
    "docs/architecture.md",
    "docs/deploy.md",
    "docs/limitations.md",
    "docs/middleware.md",
    "docs/configuration.md",
    "docs/scanner.md",
    "docs/chat.md",
    "docs/messages.md",
    "docs/responses.md",
    "docs/ollama.md",
    "docs/conversations.md",
    "docs/models.md",
]
DOCUMENTED = "http://127.0.0.1:8080"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)

# Shell commands the docs show that this module does not run itself, and what runs them.
COVERED_ELSEWHERE = {
    "python3 -m venv .venv && . .venv/bin/activate": ".ci/run (makes the virtual environment)",
    "pip install -e '.[gateway]' && python examples/proxy.py": ".ci/run (the README smoke test)",
    "pip install -e '.[test]' && python -m pytest -q -n auto": ".ci/run",
    "python examples/proxy.py --demo": "tests/proxy/test_proxy.py::test_demo_mode_exits_0_with_every_surface_shown",
    "gateway-mw --demo": ".ci/installed (the wheel installed outside the checkout)",
    "pip install '.[gateway]'": ".ci/installed (pip install of the wheel with the gateway extra)",
    "python -m pip wheel --no-deps --wheel-dir dist .": ".ci/installed (the same command, into a temporary directory)",
    "pip install 'dist/gateway_mw-0.1.0-py3-none-any.whl[gateway]'": (
        ".ci/installed (installs the wheel it built, with the gateway extra)"
    ),
    "GATEWAY_UPSTREAM=http://127.0.0.1:8000 GATEWAY_HOST=0.0.0.0 gunicorn -c python:gateway_mw.proxy.gunicorn_conf "
    "-w 4": "tests/proxy/test_metrics.py::test_two_gunicorn_workers_count_by_status_key_outcome_and_tokens",
    "PROMETHEUS_MULTIPROC_DIR=/tmp/gateway-metrics GATEWAY_UPSTREAM=http://127.0.0.1:8000 gunicorn -c "
    "python:gateway_mw.proxy.gunicorn_conf -w 4": (
        "tests/proxy/test_metrics.py::test_two_gunicorn_workers_count_by_status_key_outcome_and_tokens"
    ),
    "podman build --format docker -t gateway-mw .": ".ci/container (on BASE_IMAGE, or a base it makes)",
    "podman run --rm -p 8080:8080 -e GATEWAY_UPSTREAM=http://model-server:8000 gateway-mw": (
        ".ci/container (runs the image it built, on the demo model)"
    ),
    "kubectl create secret generic gateway-client-keys --from-file=keys=./keys": (
        "not run here (needs a cluster); .ci/container validates deploy/example/client-keys.yaml, the same Secret"
    ),
    "kubectl apply -f deploy/": "not run here (needs a cluster); .ci/container validates every file of deploy/",
}


def blocks(lang: str) -> list[tuple[str, str]]:
    return [
        (name, found.group(2))
        for name in DOCS
        for found in FENCE.finditer((ROOT / name).read_text())
        if found.group(1) == lang
    ]


def commands() -> list[tuple[str, str]]:
    """Every shell command (continuation lines joined) of every ``sh`` block."""
    return [
        (name, " ".join(command.split()))
        for name, text in blocks("sh")
        for command in text.replace("\\\n", " ").splitlines()
        if command.strip()
    ]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "THINK_EXTRACT_"))}


@pytest.fixture(scope="module")
def live_proxy() -> Iterator[str]:
    """``python examples/proxy.py`` on a free port, the demo model without delay (nor a drain delay when
    stopped); its base URL."""
    server = subprocess.Popen(
        [sys.executable, "examples/proxy.py", "--port", "0", "--pace", "0", "--drain-delay", "0"],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert found, first
        yield found.group(0)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


def test_the_docs_have_blocks_to_check() -> None:
    assert len(blocks("python")) >= 6 and len(blocks("toml")) >= 1 and len(commands()) >= 8


@pytest.mark.parametrize(("doc", "code"), blocks("python"), ids=lambda v: v.split("\n")[0][:40])
def test_python_block_runs(doc: str, code: str, live_proxy: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code.replace(DOCUMENTED, live_proxy)],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{doc}:\n{code}\n{done.stderr}"


@pytest.mark.parametrize(("doc", "text"), blocks("toml"))
def test_toml_block_loads(doc: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    settings, _ = proxy.load_settings(["--config", str(path)], {"UPSTREAM_API_KEY": "sk-test"})
    written = tomllib.loads(text)
    served = written.get("proxy", {})
    assert {key: getattr(settings, key) for key in served} == served
    extract = dict(written.get("think_extract", {}))
    if "profiles" in extract:
        assert [p.match for p in settings.think_extract.profiles] == [p["match"] for p in extract.pop("profiles")]
    assert {key: getattr(settings.think_extract, key) for key in extract} == extract


@pytest.mark.parametrize(("doc", "command"), commands())
def test_shell_command_runs_or_is_covered(doc: str, command: str, live_proxy: str) -> None:
    if command in COVERED_ELSEWHERE:
        return
    argv = shlex.split(command)
    env = {}
    while argv and re.fullmatch(r"[A-Z_]+=.*", argv[0]):  # VAR=value before the command
        name, _, value = argv.pop(0).partition("=")
        env[name] = value
    program = 2 if argv[:2] == ["python", "examples/proxy.py"] else 1 if argv[:1] == ["gateway-mw"] else 0
    if program:
        if "CLIENT_KEYS" in argv and "CLIENT_KEYS" not in env:
            env["CLIENT_KEYS"] = "sk-example"  # the variable the docs tell the reader to set
        settings, _ = proxy.load_settings(argv[program:], env)  # the flags as documented are valid
        assert settings.upstream is not None
        return
    assert argv[0] == "curl", f"{doc}: a command nothing runs: {command}"
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    done = subprocess.run(
        [arg.replace(DOCUMENTED, live_proxy) for arg in argv], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    # The documented request streams demo-r1's answer: the reasoning and the answer each in their field.
    joined: dict[str, str] = {}
    for line in done.stdout.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                for key, value in choice["delta"].items():
                    if key != "role":
                        joined[key] = joined.get(key, "") + value
    reasoning, _, answer = demo_model.model_text("demo-r1", demo_model.QUESTION).partition("</think>")
    assert joined == {"content": answer, "reasoning_content": reasoning, "reasoning": reasoning}
