"""Runs the Codex CLI (``codex exec --json``) through a custom provider with ``wire_api = "responses"``, and
reads the items it shows.

It runs with a scratch ``CODEX_HOME`` whose ``config.toml`` points the provider at the proxy and turns off
analytics, feedback, telemetry export, update checks, web search, history, and every feature that fetches
something.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .conftest import Proxy, offline_env
from .expect import FINAL, TOOL
from .scripted import ScriptedUpstream

CONFIG = """\
model = "{model}"
model_provider = "gateway"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false
web_search = "disabled"

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[history]
persistence = "none"

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
skill_search = false
skill_mcp_dependency_install = false
in_app_updates = false
api_key_model_discovery = false
browser_use = false
browser_use_external = false
in_app_browser = false
computer_use = false
daemon_auto_start = false
tool_suggest = false
memories = false

[model_providers.gateway]
name = "gateway"
base_url = "{base}/v1"
wire_api = "responses"
env_key = "GATEWAY_MW_TEST_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


class Codex:
    """``settings`` are more top-level lines of its ``config.toml`` (``model_reasoning_effort = "high"``…)."""

    def __init__(self, binary: Path, base: str, home: Path, model: str = "demo", *settings: str) -> None:
        self.binary, self.home = binary, home
        (home / "codex").mkdir(parents=True, exist_ok=True)
        (home / "work").mkdir(exist_ok=True)
        config = "".join(f"{line}\n" for line in settings) + CONFIG.format(base=base, model=model)
        (home / "codex" / "config.toml").write_text(config)

    def run(self, prompt: str, *resume: str) -> list[dict[str, Any]]:
        env = offline_env(CODEX_HOME=str(self.home / "codex"), HOME=str(self.home), GATEWAY_MW_TEST_KEY="unused")
        cmd = [str(self.binary), "exec", *resume, "--json", "--skip-git-repo-check", prompt]
        done = subprocess.run(
            cmd, cwd=self.home / "work", env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def items(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["item"] for e in events if e.get("type") == "item.completed" and e["item"]["type"] == kind]


def tool_loop(codex: Path, tmp_path: Path, proxy: Proxy, scripted: ScriptedUpstream) -> list[dict[str, Any]]:
    scripted.tools["exec_command"] = {"cmd": "echo gateway"}
    events = Codex(codex, proxy.base, tmp_path).run("Run echo gateway")
    assert [i["text"] for i in items(events, "agent_message")] == [TOOL.answer, FINAL.answer]
    assert len(items(events, "command_execution")) == 1
    return events
