"""Claude Code headless (``claude -p … --output-format stream-json --verbose``) against the proxy.

Claude Code's reasoning place is the ``thinking`` block of its ``assistant`` events (it drops thinking
blocks that arrive without a signature); its answer is the ``result`` event's ``result``. It runs with a
scratch ``HOME`` and config directory, a dummy key, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` and
telemetry, error reporting and the auto-updater off.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import HERE, Proxy, offline_env
from .expect import FINAL, TOOL, turn_for
from .scripted import ScriptedUpstream


class ClaudeCode:
    def __init__(self, binary: Path, base: str, home: Path, model: str = "demo") -> None:
        self.binary, self.base, self.home, self.model = binary, base, home, model
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


def same_reasoning(thinking: list[str], expected: str) -> bool:
    """One thinking block with ``expected``. The demo model repeats the user's message, which Claude Code
    prefixes with its own ``<system-reminder>`` text: that part is Claude Code's and not compared."""
    if len(thinking) != 1:
        return False
    if expected.startswith("The user asks: "):
        head, tail = expected.split("What is 2+2?")
        return thinking[0].startswith(head) and thinking[0].endswith("What is 2+2?" + tail)
    return thinking[0] == expected


@pytest.mark.parametrize("upstream", ["demo", "scripted"])
def test_one_turn_then_continue(
    upstream: str, claude: Path, tmp_path: Path, demo_proxy: Proxy, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    proxy = demo_proxy if upstream == "demo" else scripted_proxy
    turn = turn_for(upstream)
    cc = ClaudeCode(claude, proxy.base, tmp_path)
    thinking, signatures, texts, result = shown(cc.run("What is 2+2?"))
    assert (same_reasoning(thinking, turn.reasoning), texts, result) == (True, [turn.answer], turn.answer)
    assert len(signatures) == 1 and signatures[0].startswith("gw1:")

    # The second turn (--continue) sends the first turn's thinking block back with its signature.
    thinking2, _, texts2, result2 = shown(cc.run("What is 2+2?", "--continue"))
    assert (same_reasoning(thinking2, turn.reasoning), texts2, result2) == (True, [turn.answer], turn.answer)
    if upstream == "scripted":
        last = scripted.posts("/messages")[-1]
        replayed = [m for m in last["messages"] if m["role"] == "assistant"]
        assert [[b for b in m["content"] if b["type"] in ("thinking", "redacted_thinking")] for m in replayed] == [
            [{"type": "thinking", "thinking": turn.reasoning, "signature": signatures[0]}]
        ]


def test_tool_loop_replays_signed_thinking(
    claude: Path, tmp_path: Path, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    scripted.tools["Read"] = {"file_path": str(HERE / "scripted.py"), "limit": 3}
    cc = ClaudeCode(claude, scripted_proxy.base, tmp_path)
    events = cc.run("Show me the first lines of scripted.py")
    thinking, signatures, texts, result = shown(events)
    assert thinking == [TOOL.reasoning, FINAL.reasoning]
    assert texts == [TOOL.answer, FINAL.answer]
    assert result == FINAL.answer
    tool_results = [
        b
        for e in events
        if e.get("type") == "user"
        for b in e["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert len(tool_results) == 1 and "A scripted model server" in json.dumps(tool_results[0])

    # The request that carries the tool result replays the signed thinking block before the tool call.
    second = next(b for b in scripted.posts("/messages") if "tool_result" in json.dumps(b["messages"]))
    assistant = [m for m in second["messages"] if m["role"] == "assistant"]
    blocks = [{k: v for k, v in b.items() if k != "cache_control"} for m in assistant for b in m["content"]]
    assert blocks == [
        {"type": "thinking", "thinking": TOOL.reasoning, "signature": signatures[0]},
        {"type": "text", "text": TOOL.answer},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "Read",
            "input": {"file_path": str(HERE / "scripted.py"), "limit": 3},
        },
    ]
