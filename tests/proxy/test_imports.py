"""The gateway imports at startup everything a translation needs: a module imported on the first
request reads the disk then, and under file-descriptor pressure (a busy gateway near its limit) that
import fails and the stream goes out untranslated."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from typing import Any

import aiohttp

# Runs the installed gateway (``gateway-mw``'s main) with an audit hook that reports every module
# found on disk, each on its own line of standard output, where the startup banner is printed too.
LAUNCH = """
import sys
def hook(event, args):
    if event == "import":
        print("IMPORTED", args[0], flush=True)
sys.addaudithook(hook)
from gateway_mw.proxy import main
sys.exit(main(sys.argv[1:]))
"""

# Every surface, streamed and not, and models whose names pick a family preset (harmony, injected
# open tags), so that every path a first request can take is taken.
MODELS = ["demo-r1", "demo", "gpt-oss-20b", "deepseek-r1", "qwen3-8b"]


async def ask_everything(base: str) -> list[int]:
    statuses: list[int] = []
    question: Any = [{"role": "user", "content": "What is 2+2?"}]
    async with aiohttp.ClientSession() as session:
        for model in MODELS:
            for stream in (True, False):
                requests = [
                    ("/v1/chat/completions", {"model": model, "stream": stream, "messages": question}),
                    ("/v1/messages", {"model": model, "stream": stream, "max_tokens": 64, "messages": question}),
                    ("/v1/responses", {"model": model, "stream": stream, "input": "What is 2+2?"}),
                ]
                for path, body in requests:
                    async with session.post(base + path, json=body) as resp:
                        await resp.read()
                        statuses.append(resp.status)
    return statuses


async def test_no_module_is_imported_after_startup() -> None:
    cmd = [sys.executable, "-c", LAUNCH, "--port", "0", "--pace", "0", "--drain-delay", "0"]
    cmd += ["--messages-policy", "unsigned"]
    gateway = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert gateway.stdout is not None
    try:
        while True:
            line = await asyncio.to_thread(gateway.stdout.readline)
            assert line, "the gateway stopped before it served"
            found = re.match(r"gateway_mw proxy on (http://127\.0\.0\.1:\d+) ", line)
            if found:
                break
        statuses = await ask_everything(found.group(1))
    finally:
        gateway.terminate()
        rest, _ = await asyncio.to_thread(gateway.communicate, timeout=30)
    assert set(statuses) == {200}, statuses
    late = [line.split()[1] for line in rest.splitlines() if line.startswith("IMPORTED ")]
    assert late == [], json.dumps(late)
