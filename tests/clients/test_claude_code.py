"""Claude Code headless (``claude -p … --output-format stream-json --verbose``) against the proxy.

Claude Code's reasoning place is the ``thinking`` block of its ``assistant`` events (it drops thinking
blocks that arrive without a signature); its answer is the ``result`` event's ``result``. It runs with a
scratch ``HOME`` and config directory, a dummy key, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` and
telemetry, error reporting and the auto-updater off.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import HERE, Proxy
from .drive_claude_code import ClaudeCode, shown
from .expect import FINAL, TOOL, turn_for
from .scripted import ScriptedUpstream


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
