"""docs/api.md lists exactly the public names: ``gateway_mw.__all__``, and names that exist in the
other public modules."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import gateway_mw

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SECTION = re.compile(r"^## `([\w.]+)`$", re.MULTILINE)
ENTRY = re.compile(r"^\* `(\w+)` — \S", re.MULTILINE)


def _listed() -> dict[str, list[str]]:
    """The names each section of the page lists, by module; every bullet must be one name's line."""
    text = PAGE.read_text()
    heads = list(SECTION.finditer(text))
    listed = {}
    for head, after in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end() : after.start() if after else len(text)]
        bullets = [line for line in body.splitlines() if line.startswith("* ")]
        names = ENTRY.findall(body)
        assert len(names) == len(bullets), f"docs/api.md, {head.group(1)}: a bullet that is not one name's line"
        listed[head.group(1)] = names
    return listed


def test_the_page_lists_exactly_the_package_s_all() -> None:
    names = _listed()["gateway_mw"]
    assert sorted(names) == sorted(gateway_mw.__all__)
    assert len(names) == len(set(names))


def test_every_name_the_page_lists_exists_where_it_says() -> None:
    listed = _listed()
    assert sorted(listed) == ["gateway_mw", "gateway_mw.proxy", "gateway_mw.record", "gateway_mw.record.redis"]
    missing = [
        f"{module}.{name}"
        for module, names in listed.items()
        for name in names
        # a name of the module, or a module of its own (read by a program: importing it runs it)
        if not hasattr(importlib.import_module(module), name) and importlib.util.find_spec(f"{module}.{name}") is None
    ]
    assert missing == []


def test_every_public_name_of_the_package_resolves() -> None:
    assert [name for name in gateway_mw.__all__ if getattr(gateway_mw, name, None) is None] == []
