"""Runs the Vercel AI SDK: ``aisdk.mjs`` makes one call (``generateText`` or ``streamText``) and prints
what the SDK shows."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .conftest import HERE, offline_env


def run(
    node_modules: Path,
    provider: str,
    base: str,
    mode: str,
    tools: bool = False,
    model: str = "demo",
    store: bool | None = None,
    reasoning: str | None = None,
    provider_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    args = json.dumps(
        {
            "provider": provider,
            "base": base,
            "mode": mode,
            "tools": tools,
            "model": model,
            "store": store,
            "reasoning": reasoning,
            "providerOptions": provider_options,
        }
    )
    env = offline_env()
    # ESM resolves bare imports from the script's own directory upwards: run a copy next to node_modules.
    script = node_modules.parent / "aisdk.mjs"
    if not script.exists():
        script.write_text((HERE / "aisdk.mjs").read_text())
    done = subprocess.run(["node", str(script), args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result
