"""The controls are sans-I/O: neither they nor what they import (followed through the package's
modules) reach aiohttp, the history side, the surfaces or the middleware."""

from __future__ import annotations

import ast
import pathlib

import gateway_mw

ROOT = pathlib.Path(gateway_mw.__file__).parent
FORBIDDEN = ("aiohttp", "gateway_mw.history", "gateway_mw.surfaces", "gateway_mw.middleware", "gateway_mw.incoming")


def _path(module: str) -> pathlib.Path | None:
    parts = module.split(".")[1:]
    for path in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


def _imports(module: str) -> set[str]:
    path = _path(module)
    assert path is not None, module
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join([*base, node.module] if node.module else base)
            for alias in node.names:
                name = f"{source}.{alias.name}"
                found.add(name if _path(name) is not None and name.startswith("gateway_mw.") else source)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_controls_reach_no_i_o_and_no_surface() -> None:
    seen: set[str] = set()
    todo = ["gateway_mw.controls"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(m for m in _imports(module) if m.startswith("gateway_mw.") and m not in seen)
    reached = sorted(m for m in seen | {i for m in seen for i in _imports(m)} if m.startswith(FORBIDDEN))
    assert reached == []
    assert "gateway_mw.controls.write" in seen  # the walk followed the package's modules
