"""Runs Claude Code headless (``claude -p … --output-format stream-json --verbose``) and reads what it shows.

It runs with a scratch ``HOME`` and config directory, a dummy key, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``
and telemetry, error reporting and the auto-updater off.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .conftest import offline_env


class ClaudeCode:
    """``settings`` are more environment variables of Claude Code's own (``MAX_THINKING_TOKENS``…)."""

    def __init__(
        self, binary: Path, base: str, home: Path, model: str = "demo", settings: Mapping[str, str] | None = None
    ) -> None:
        self.binary, self.base, self.home, self.model = binary, base, home, model
        self.settings = dict(settings or {})
        (home / "work").mkdir(parents=True, exist_ok=True)

    def run(self, prompt: str, *flags: str) -> list[dict[str, Any]]:
        env = offline_env(
            HOME=str(self.home),
            CLAUDE_CONFIG_DIR=str(self.home / ".claude"),
            ANTHROPIC_BASE_URL=self.base,
            ANTHROPIC_API_KEY="unused",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
            DISABLE_ERROR_REPORTING="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_BUG_COMMAND="1",
            **self.settings,
        )
        cmd = [str(self.binary), "-p", prompt, "--output-format", "stream-json", "--verbose", "--model", self.model]
        cmd += ["--allowedTools", "Read", *flags]
        done = subprocess.run(cmd, cwd=self.home / "work", env=env, capture_output=True, text=True, timeout=180)
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
        return events


def shown(events: list[dict[str, Any]]) -> tuple[list[str], list[str], list[str], str]:
    """(thinking texts, their signatures, text blocks, the result) across the run's assistant events."""
    blocks = [b for e in events if e.get("type") == "assistant" for b in e["message"]["content"]]
    thinking = [b["thinking"] for b in blocks if b["type"] == "thinking"]
    signatures = [b["signature"] for b in blocks if b["type"] == "thinking"]
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    (result,) = [e for e in events if e.get("type") == "result"]
    assert result["subtype"] == "success" and result["is_error"] is False, result
    return thinking, signatures, texts, result["result"]
