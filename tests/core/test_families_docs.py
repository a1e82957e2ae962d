"""docs/models.md as written: its Python blocks run, its JSON before/after goes through the middleware,
and its family table names exactly the built-in families with their patterns."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.families import FAMILIES

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
ClientFor = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]


def fenced(lang: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(DOC.read_text()) if m.group(1) == lang]


@pytest.mark.parametrize("index", range(len(fenced("python"))))
def test_python_blocks_run(index: int) -> None:
    code = fenced("python")[index]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


async def test_json_before_and_after(aiohttp_client: ClientFor) -> None:
    upstream, before, after = (json.loads(block) for block in fenced("json"))

    async def handler(request: web.Request) -> web.Response:
        return web.json_response(upstream)

    results: list[Any] = []
    for config in (ThinkExtractConfig(families=False), ThinkExtractConfig()):
        app = web.Application()
        setup(app, config)
        app.router.add_post("/v1/chat/completions", handler)
        client = await aiohttp_client(app)
        resp = await client.post("/v1/chat/completions")
        results.append(await resp.json())
    assert results == [before, after]


def test_the_table_lists_every_family_with_its_patterns() -> None:
    text = DOC.read_text()
    table = text[text.index("| family | name patterns |") : text.index("### Left out")]
    rows = [line.split(" | ") for line in table.splitlines()[2:] if line.startswith("| ")]
    documented = [re.findall(r"`([^`]+)`", row[1]) for row in rows]
    assert sorted(map(sorted, documented)) == sorted(sorted(f.globs) for f in FAMILIES)


def test_the_earlier_turns_table_gives_each_family_its_form_and_scope() -> None:
    text = DOC.read_text()
    section = text[text.index("### Earlier turns") : text.index("### Reasoning controls")]
    rows = [line.strip("| ").split(" | ") for line in section.splitlines() if line.startswith("| ")][1:]
    documented = {name: (form.strip("`"), scope.strip("`")) for name, form, scope in rows}
    assert documented == {f.name: f.history for f in FAMILIES}
