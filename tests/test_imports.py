"""The sans-I/O core must import without the aiohttp adapter."""

import subprocess
import sys


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
