"""The sans-I/O core must import without the aiohttp adapter."""

import ast
import pathlib
import subprocess
import sys

import gateway_mw


def test_the_core_imports_without_aiohttp() -> None:
    code = (
        "import sys, gateway_mw.scanner, gateway_mw.sse, gateway_mw.pipeline, gateway_mw.surfaces;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'aiohttp' or m == 'gateway_mw.middleware'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_adapter_names_load_on_use() -> None:
    import gateway_mw
    from gateway_mw import middleware

    assert gateway_mw.THINKEXTRACT_CONFIG is middleware.THINKEXTRACT_CONFIG
    assert gateway_mw.thinkextract_middleware is middleware.thinkextract_middleware


def _imports_of(path: pathlib.Path, module: str, modules: set[str]) -> set[str]:
    """The gateway_mw modules ``module`` imports, wherever in it (functions too, and under
    ``TYPE_CHECKING``: a cycle the type checker needs is a cycle of ideas all the same)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                source = ".".join([*base, node.module] if node.module else base)
                for alias in node.names:
                    if f"{source}.{alias.name}" in modules:
                        found.add(f"{source}.{alias.name}")
                    elif not module.startswith(source + "."):  # a package runs before its modules anyway
                        found.add(source)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            for inner in (getattr(node, field, None) for field in ("body", "orelse", "finalbody", "handlers")):
                if isinstance(inner, list):
                    visit([n for n in inner if isinstance(n, ast.stmt)])
                    visit([s for h in inner if isinstance(h, ast.ExceptHandler) for s in h.body])

    visit(ast.parse(path.read_text()).body)
    return found


def test_no_module_of_the_package_imports_itself_back_through_others() -> None:
    root = pathlib.Path(gateway_mw.__file__).parent
    paths = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    modules = set(paths)
    graph = {m: {i for i in _imports_of(p, m, modules) if i in modules and i != m} for m, p in paths.items()}

    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
        return seen

    assert sorted(m for m in modules if m in reaches(m)) == []
