"""Starting the gateway as a new operator does: no silent demo model, misspelt variables named, a bad
setting under gunicorn as one line, ``--version``, ``--help`` with the variables, and a banner whose
snippets work as printed when client keys are on."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from gateway_mw import __version__
from gateway_mw.proxy import DEMO_CONFIG, Settings, SettingsError, banner, load_settings
from gateway_mw.proxy.app import app_factory
from gateway_mw.proxy.settings import PROXY_FIELDS, Secret, flags, parser

from .processes import clean_env, gateway_mw, gunicorn_env, gunicorn_path

GATEWAY = [sys.executable, "-m", "gateway_mw"]
NO_UPSTREAM = (
    "no upstream: set GATEWAY_UPSTREAM to the model server's URL (or GATEWAY_DEMO_MODEL=true for the embedded "
    "demo model, which answers every model name)"
)


async def test_gateway_mw_without_an_upstream_says_so_on_its_first_log_line(tmp_path: Path) -> None:
    async with gateway_mw(tmp_path, {}, "--pace", "0") as gw:
        first = gw.lines()[0]
    assert first.split(" ", 2)[2] == (
        "WARNING gateway_mw.proxy: no upstream (--upstream, GATEWAY_UPSTREAM): serving the embedded demo model, "
        "which answers every model name with the same canned text"
    )


def test_app_factory_refuses_to_start_without_an_upstream(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in os.environ.keys() - clean_env().keys():  # no gateway setting of this process
        monkeypatch.delenv(name)
    with pytest.raises(SystemExit) as stop:
        app_factory()
    assert (stop.value.code, capsys.readouterr()) == (4, ("", f"gateway-mw: error: {NO_UPSTREAM}\n"))
    monkeypatch.setenv("GATEWAY_DEMO_MODEL", "true")
    assert app_factory() is not None  # asked for by name, the demo model is served


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, NO_UPSTREAM),
        (
            {"GATEWAY_UPSTREM": "http://127.0.0.1:8000"},
            "GATEWAY_UPSTREM is not a setting; did you mean GATEWAY_UPSTREAM?",
        ),
        (
            {"GATEWAY_UPSTREAM": "http://127.0.0.1:8000", "GATEWAY_READ_TIMEOUT": "soon"},
            "GATEWAY_READ_TIMEOUT='soon' is invalid: expected a number of seconds > 0",
        ),
    ],
)
def test_a_bad_setting_under_gunicorn_is_one_line_and_a_nonzero_exit(
    env: dict[str, str], message: str, tmp_path: Path
) -> None:
    """With the gateway's gunicorn configuration, checked once in the master before any worker; with
    aiohttp's worker alone, by the first worker to fail, and gunicorn stops."""
    gunicorn = gunicorn_path()
    conf = subprocess.run(
        [gunicorn, "-c", "python:gateway_mw.proxy.gunicorn_conf", "-w", "2"],
        env=gunicorn_env(tmp_path, GATEWAY_PORT="0", **env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (conf.returncode, conf.stdout, conf.stderr) == (2, "", f"gateway-mw: error: {message}\n")

    cmd = [gunicorn, "gateway_mw.proxy:app_factory()", "--worker-class", "aiohttp.GunicornWebWorker"]
    plain = subprocess.run(
        [*cmd, "-w", "2", "--bind", "127.0.0.1:0"],
        env=gunicorn_env(tmp_path, **env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    ours = [line for line in plain.stderr.splitlines() if not line.startswith("[")]
    assert plain.returncode == 4  # gunicorn's "application failed to load"
    assert ours == [f"gateway-mw: error: {message}"]  # the first worker to fail says it, the others wait
    assert "Traceback" not in plain.stderr and len(plain.stderr.splitlines()) < 20


# An application for gunicorn whose workers come to the gateway's settings one at a time: the first at
# once, each other one only once the one before has exited (its lock is free then) — as on a busy
# machine, where a worker may start seconds after another. gunicorn's SIGTERM, when the first has
# exited, reaches them while they wait, as it reaches a worker still loading.
ONE_AT_A_TIME = """
import fcntl, os
import gateway_mw.proxy

def app_factory():
    turn = os.open("turn.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(turn, fcntl.LOCK_EX)
    return gateway_mw.proxy.app_factory()
"""


@pytest.mark.parametrize("workers", [2, 3])
def test_a_bad_setting_is_one_line_when_the_other_workers_fail_after_the_first_has_exited(
    workers: int, tmp_path: Path
) -> None:
    """The first worker's claim outlives it: a worker that fails later says nothing, and ends at once
    (no wait for a SIGTERM it may have had while loading: gunicorn would wait its graceful timeout)."""
    (tmp_path / "one_at_a_time.py").write_text(ONE_AT_A_TIME)
    cmd = [gunicorn_path(), "one_at_a_time:app_factory()", "--worker-class", "aiohttp.GunicornWebWorker"]
    plain = subprocess.run(
        [*cmd, "-w", str(workers), "--bind", "127.0.0.1:0", "--graceful-timeout", "600"],
        env=gunicorn_env(tmp_path, GATEWAY_READ_TIMEOUT="soon", GATEWAY_UPSTREAM="http://127.0.0.1:8000"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    ours = [line for line in plain.stderr.splitlines() if not line.startswith("[")]
    assert ours == ["gateway-mw: error: GATEWAY_READ_TIMEOUT='soon' is invalid: expected a number of seconds > 0"]
    assert plain.returncode == 4, plain.stderr
    assert "Traceback" not in plain.stderr and "SIGKILL" not in plain.stderr, plain.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GATEWAY_UPSTREM": "http://x:1"}, "GATEWAY_UPSTREM is not a setting; did you mean GATEWAY_UPSTREAM?"),
        (
            {"GATEWAY_CLIENT_KEY_FILE": "/k"},
            "GATEWAY_CLIENT_KEY_FILE is not a setting; did you mean GATEWAY_CLIENT_KEYS_FILE?",
        ),
        ({"GATEWAY_DRAIN": "5"}, "GATEWAY_DRAIN is not a setting; did you mean GATEWAY_DRAIN_DELAY?"),
        (
            {"GATEWAY_PORT": "tcp://10.0.0.7:80"},
            "GATEWAY_PORT='tcp://10.0.0.7:80' is invalid: expected an integer from 0 to 65535 (a Kubernetes service "
            "link? set enableServiceLinks: false in the pod spec)",
        ),
    ],
)
def test_an_unknown_gateway_variable_is_named_with_the_closest_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings([], env)
    assert str(err.value) == message
    stop = subprocess.run(GATEWAY, env=clean_env(**env), capture_output=True, text=True, timeout=60)
    assert (stop.returncode, stop.stdout, stop.stderr) == (2, "", f"python -m gateway_mw: error: {message}\n")


def test_variables_that_are_not_the_gateways_are_left_alone() -> None:
    """The project's own tools' variables, and what Kubernetes sets for Services (gateway-mw's own, or
    a gateway-redis next to it)."""
    env = {
        "GATEWAY_MW_CLIENTS_DIR": "/x",
        "GATEWAY_MW_SERVICE_HOST": "10.0.0.5",
        "GATEWAY_MW_PORT": "tcp://10.0.0.5:80",
        "GATEWAY_REDIS_SERVICE_HOST": "10.0.0.6",
        "GATEWAY_REDIS_SERVICE_PORT": "6379",
        "GATEWAY_REDIS_PORT": "tcp://10.0.0.6:6379",
        "GATEWAY_REDIS_PORT_6379_TCP_ADDR": "10.0.0.6",
        "GATEWAY_REDIS_PORT_6379_TCP_PROTO": "tcp",
    }
    assert load_settings([], env)[0] == load_settings([], {})[0]


def test_version() -> None:
    import aiohttp

    got = subprocess.run([*GATEWAY, "--version"], capture_output=True, text=True, timeout=60)
    python = ".".join(map(str, sys.version_info[:3]))
    assert (got.returncode, got.stdout) == (
        0,
        f"python -m gateway_mw {__version__} (aiohttp {aiohttp.__version__}, Python {python})\n",
    )


def test_help_lists_every_variable_and_the_precedence() -> None:
    got = subprocess.run([*GATEWAY, "--help"], capture_output=True, text=True, timeout=60, env=clean_env(COLUMNS="100"))
    assert got.returncode == 0
    text = got.stdout
    assert (
        "settings, weakest first: built-in defaults < the --config TOML file < environment variables < flags." in text
    )
    rows = dict(re.findall(r"^  (GATEWAY_[A-Z_]+) +(--[a-z-]+) ", text, re.MULTILINE))
    variables = {f"GATEWAY_{name.upper()}": flag for name, flag in flags(parser()).items()}
    assert len(variables) == len(PROXY_FIELDS)
    assert rows == variables | {"GATEWAY_CONFIG": "--config"}
    assert "THINK_EXTRACT_<FIELD>" in text and "PROMETHEUS_MULTIPROC_DIR" in text
    for flag in rows.values():
        assert re.search(rf"^  {flag}\b", text, re.MULTILINE), flag  # every variable's flag is a real flag


def test_the_banners_snippets_carry_the_key_placeholder_when_keys_are_on() -> None:
    base = "http://127.0.0.1:8080"
    open_ = msgspec.structs.replace(Settings(think_extract=DEMO_CONFIG))
    keyed = msgspec.structs.replace(open_, client_keys=(Secret("sk-real", "team-a"),))
    plain, locked = banner(base, open_), banner(base, keyed)
    assert "YOUR-KEY" not in plain and plain.count('api_key="unused"') == 2
    curls = [line for line in locked.splitlines() if line.lstrip().startswith("curl ")]
    assert [re.findall(r"-H '((?:Authorization|x-api-key)[^']*)'", line) for line in curls] == [
        ["Authorization: Bearer YOUR-KEY"],
        ["x-api-key: YOUR-KEY"],
        ["Authorization: Bearer YOUR-KEY"],
    ]
    assert locked.count('api_key="YOUR-KEY"') == 2 and "sk-real" not in locked


async def test_the_keyed_banners_curl_commands_work_as_printed_with_a_key(tmp_path: Path) -> None:
    keyfile = tmp_path / "keys"
    keyfile.write_text("team-a sk-real-1\n")
    async with gateway_mw(tmp_path, {}, "--pace", "0", "--client-keys-file", str(keyfile)) as gw:
        assert gw.process.stdout is not None
        printed = ""
        while "Ctrl-C stops it." not in printed:
            printed += gw.process.stdout.read1(65536).decode()  # type: ignore[attr-defined]
        commands = re.findall(r"^  (curl .*?)(?=\n\n)", printed, re.MULTILINE | re.DOTALL)
        assert len(commands) == 3
        for command in commands:
            line = (
                command.replace("\\\n", " ").replace("YOUR-KEY", "sk-real-1").replace('"stream":true', '"stream":false')
            )
            answer = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=60)
            body = json.loads(answer.stdout)
            assert body.get("error") is None and body.get("type") != "error", body
            without = subprocess.run(
                ["sh", "-c", line.replace("sk-real-1", "sk-wrong")], capture_output=True, text=True
            )
            assert "invalid_api_key" in without.stdout or "authentication_error" in without.stdout
