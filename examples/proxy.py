"""A streaming reverse proxy with gateway_mw applied: the reference for wiring it into a gateway.

    python examples/proxy.py                                  # an embedded demo model behind it
    python examples/proxy.py --upstream http://127.0.0.1:8000  # a real model server (vLLM, llama.cpp…)
    python examples/proxy.py --demo                           # one request per surface, side by side

It is the ``gateway-mw`` command that ``pip install gateway_mw`` installs, run from the repository;
every flag is the same (``--help`` lists them). The gateway is assembled from the package:

* ``gateway_mw.setup(app, config)`` installs the middleware (:mod:`gateway_mw.proxy.app`);
* a handler streams each request on the forwarded routes (:mod:`gateway_mw.proxy.routes`) to the
  upstream and its answer back (:mod:`gateway_mw.proxy.forwarding`): the middleware translates
  whatever the handler writes;
* ``GET /healthz``, ``GET /readyz``, ``GET /metrics`` (:mod:`gateway_mw.proxy.metrics`), client keys
  (:mod:`gateway_mw.proxy.auth`), settings from a TOML file, the environment and flags
  (:mod:`gateway_mw.proxy.settings`).
"""

from __future__ import annotations

import sys

from gateway_mw.proxy import (
    DEMO_CONFIG,
    PROXY,
    TE_FIELDS,
    Counters,
    GatewayMetrics,
    Settings,
    SettingsError,
    ThinkExtractStats,
    app_factory,
    build_app,
    load_settings,
)
from gateway_mw.proxy import main as _main

__all__ = [
    "DEMO_CONFIG",
    "PROXY",
    "TE_FIELDS",
    "Counters",
    "GatewayMetrics",
    "Settings",
    "SettingsError",
    "ThinkExtractStats",
    "app_factory",
    "build_app",
    "load_settings",
    "main",
]


def main(argv: list[str] | None = None) -> int:
    """``gateway-mw``'s ``main``, with this file's name in its messages."""
    return _main(argv, prog="examples/proxy.py")


if __name__ == "__main__":
    sys.exit(main())
