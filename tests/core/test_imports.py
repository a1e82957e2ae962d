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


# The library's install dependencies are aiohttp and msgspec; the gateway's (its extra) are these.
_GATEWAY_ONLY = ("prometheus_client", "gunicorn", "tomli", "tomllib", "redis")


def _without_gateway_extra(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run in a fresh interpreter where the gateway extra's modules cannot be imported."""
    block = f"import sys; sys.modules.update(dict.fromkeys({_GATEWAY_ONLY!r}));"
    return subprocess.run([sys.executable, "-c", block + code], capture_output=True, text=True)


def test_every_library_module_imports_with_aiohttp_and_msgspec_alone() -> None:
    root = pathlib.Path(gateway_mw.__file__).parent
    library = sorted(
        ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in root.rglob("*.py")
        if "proxy" not in path.relative_to(root).parts
    )
    code = f"import importlib; [importlib.import_module(m) for m in {library!r}]; print('imported', {len(library)})"
    done = _without_gateway_extra(code)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"imported {len(library)}\n", "")


def test_the_gateway_without_its_extra_says_which_extra_installs_it() -> None:
    code = (
        "from gateway_mw import setup, thinkextract_middleware\n"
        "from gateway_mw.extras import MissingExtra\n"
        "try:\n"
        "    import gateway_mw.proxy\n"
        "except MissingExtra as exc:\n"
        "    print(exc.name, exc, sep='|')\n"
    )
    done = _without_gateway_extra(code)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "prometheus_client|the gateway (gateway_mw.proxy, gateway-mw) needs prometheus_client, which is not"
        " installed: pip install 'gateway_mw[gateway]'\n",
        "",
    )


def test_the_command_without_the_gateway_extra_says_so_in_one_line() -> None:
    done = _without_gateway_extra("from gateway_mw.__main__ import main; sys.exit(main())")
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "gateway-mw: the gateway (gateway_mw.proxy, gateway-mw) needs prometheus_client, which is not installed:"
        " pip install 'gateway_mw[gateway]'\n",
    )


MAX_MODULE_LINES = 500


def test_no_module_of_the_package_is_longer_than_a_maintainer_reads_at_once() -> None:
    """One module per idea: a module past this many lines holds two, and is split by idea."""
    root = pathlib.Path(gateway_mw.__file__).parent
    lengths = {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in root.rglob("*.py")}
    assert {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES} == {}
