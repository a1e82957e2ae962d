"""Runs the OpenAI Agents SDKs on their chat completions model: the JavaScript one (``@openai/agents``,
``OpenAIChatCompletionsModel``) through ``agents.mjs`` in a subprocess, the Python one (``openai-agents``,
``OpenAIChatCompletionsModel``) in process. Each run asks one question, one turn, tracing off."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from .conftest import HERE, offline_env, require


def run_js(node_modules: Path, base: str, model: str, stream: bool, tools: bool = False) -> dict[str, Any]:
    """What ``@openai/agents`` shows: ``{output, reasoning: [each reasoning item's text], items: [types],
    deltas: [each streamed reasoning item's text] (stream only)}``; with ``tools``, a get_weather tool
    and up to three turns."""
    require((node_modules / "@openai" / "agents").is_dir(), "@openai/agents is not installed: run .ci/clients-install")
    args = json.dumps({"base": base, "model": model, "stream": stream, "tools": tools})
    # ESM resolves bare imports from the script's own directory upwards: run a copy next to node_modules.
    script = node_modules.parent / "agents.mjs"
    if not script.exists():
        script.write_text((HERE / "agents.mjs").read_text())
    done = subprocess.run(["node", str(script), args], capture_output=True, text=True, env=offline_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_python(base: str, model: str, stream: bool) -> dict[str, Any]:
    """What ``openai-agents`` shows: ``{output, summary: [[…]], content: [[…]]}`` (per reasoning item, the
    text of its summary parts and of its content parts), and for a stream ``events``: the types of the
    reasoning delta events it emitted, with their text joined."""
    try:
        from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
        from openai import AsyncOpenAI
    except ImportError as exc:
        require(False, f"openai-agents is not installed ({exc}): pip install -e '.[clients]'")
    set_tracing_disabled(True)

    async def go() -> dict[str, Any]:
        client = AsyncOpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
        agent = Agent(name="assistant", instructions="Answer briefly.", model=OpenAIChatCompletionsModel(model, client))
        events: dict[str, str] = {}
        if stream:
            result: Any = Runner.run_streamed(agent, "What is 2+2?", max_turns=1)
            async for event in result.stream_events():
                kind = getattr(event.data, "type", "") if event.type == "raw_response_event" else ""
                if kind.startswith("response.reasoning") and kind.endswith(".delta"):
                    events[kind] = events.get(kind, "") + event.data.delta
        else:
            result = await Runner.run(agent, "What is 2+2?", max_turns=1)
        items = [i.raw_item for i in result.new_items if i.type == "reasoning_item"]
        return {
            "output": result.final_output,
            "summary": [[s.text for s in item.summary] for item in items],
            "content": [[c.text for c in item.content or []] for item in items],
            "events": events if stream else None,
        }

    return asyncio.run(go())
