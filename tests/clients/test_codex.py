"""Codex CLI (``codex exec --json``) against the proxy, through a custom provider with ``wire_api = "responses"``.

Codex's reasoning place is the ``reasoning`` item of its JSON events (``item.completed``); its answer is
the ``agent_message`` item. It runs with a scratch ``CODEX_HOME`` whose ``config.toml`` points the
provider at the proxy and turns off analytics, feedback, telemetry export, update checks, web search,
history, and every feature that fetches something: plugins (remote ones, sharing), apps, skill search and
skill dependency installs, in-app updates, model discovery, the browser and computer use, the daemon,
tool suggestions and memories.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import Proxy, offline_env
from .expect import FINAL, TOOL, llama_accepts_reasoning_item, turn_for
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
    def __init__(self, binary: Path, base: str, home: Path, model: str = "demo") -> None:
        self.binary, self.home = binary, home
        (home / "codex").mkdir(parents=True, exist_ok=True)
        (home / "work").mkdir(exist_ok=True)
        (home / "codex" / "config.toml").write_text(CONFIG.format(base=base, model=model))

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


def test_agent_message_is_clean(codex: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream) -> None:
    """The part that works today, kept apart from the reasoning view below so it is proven either way."""
    events = Codex(codex, scripted_proxy.base, tmp_path).run("What is 2+2?")
    assert [i["text"] for i in items(events, "agent_message")] == [turn_for("scripted").answer]
    assert events[-1]["type"] == "turn.completed"


@pytest.mark.parametrize("upstream", ["demo", "scripted"])
def test_one_turn_shows_reasoning(
    upstream: str, codex: Path, tmp_path: Path, demo_proxy: Proxy, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    proxy = demo_proxy if upstream == "demo" else scripted_proxy
    turn = turn_for(upstream)
    events = Codex(codex, proxy.base, tmp_path).run("What is 2+2?")
    assert [i["text"] for i in items(events, "agent_message")] == [turn.answer]
    reasoning = [i["text"] for i in items(events, "reasoning")]
    if upstream == "demo":  # the demo model repeats the prompt Codex builds around the question
        assert len(reasoning) == 1 and reasoning[0].endswith(
            "What is 2+2? I am a demo model, so I plan a short answer."
        )
    else:
        assert reasoning == [turn.reasoning]


def _tool_loop(codex: Path, tmp_path: Path, proxy: Proxy, scripted: ScriptedUpstream) -> list[dict[str, Any]]:
    scripted.tools["exec_command"] = {"cmd": "echo gateway"}
    events = Codex(codex, proxy.base, tmp_path).run("Run echo gateway")
    assert [i["text"] for i in items(events, "agent_message")] == [TOOL.answer, FINAL.answer]
    assert len(items(events, "command_execution")) == 1
    return events


def test_tool_loop_replays_the_reasoning_item(
    codex: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    _tool_loop(codex, tmp_path, scripted_proxy, scripted)
    first, second = scripted.posts("/responses")
    assert first["include"] == ["reasoning.encrypted_content"]
    history = second["input"][len(first["input"]) :]
    assert [i["type"] for i in history] == ["reasoning", "message", "function_call", "function_call_output"]
    # Codex sends the item back as it received it, its id included, with no encrypted_content.
    (reasoning,) = history[:1]
    assert re.fullmatch(r"rs_[0-9a-f]{32}", reasoning["id"])
    assert "encrypted_content" in reasoning and reasoning["encrypted_content"] is None
    assert llama_accepts_reasoning_item(reasoning, TOOL.reasoning), reasoning


def test_tool_loop_shows_reasoning(
    codex: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    events = _tool_loop(codex, tmp_path, scripted_proxy, scripted)
    assert [i["text"] for i in items(events, "reasoning")] == [TOOL.reasoning, FINAL.reasoning]
