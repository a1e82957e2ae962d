"""The gateway's command line: its flags, and what ``--help`` says of every setting."""

from __future__ import annotations

import argparse
import sys

from aiohttp import __version__ as aiohttp_version

from .. import __version__
from ..envtext import ENV_PREFIX as TE_PREFIX
from .schema import PROXY_FIELDS, Settings

__all__ = ["ENV_PREFIX", "PRECEDENCE", "flags", "parser"]

ENV_PREFIX = "GATEWAY_"

PRECEDENCE = "built-in defaults < the --config TOML file < environment variables < flags"


def flags(p: argparse.ArgumentParser) -> dict[str, str]:
    """The flag of each proxy setting, by the setting's name (``access_log``: ``--no-access-log``)."""
    return {action.dest: action.option_strings[0] for action in p._actions if action.dest in PROXY_FIELDS}


def _epilog(p: argparse.ArgumentParser) -> str:
    """What ``--help`` says of the variables: each setting's, with its flag and default."""
    defaults = Settings()
    flag_of = flags(p)
    rows = []
    for name in PROXY_FIELDS:
        default = getattr(defaults, name)
        if name == "forward_routes":
            shown = "the API surfaces' routes, GET models, Ollama's read-only routes (docs/deploy.md)"
        elif isinstance(default, bool):
            shown = str(default).lower()
        elif isinstance(default, float):
            shown = f"{default:g}"
        else:
            shown = "none" if default is None else str(default)
        rows.append((ENV_PREFIX + name.upper(), flag_of[name], shown))
    rows.append((ENV_PREFIX + "CONFIG", "--config", "none"))
    width = max(len(var) for var, _, _ in rows) + 2
    flag_width = max(len(flag) for _, flag, _ in rows) + 2
    lines = [
        f"settings, weakest first: {PRECEDENCE}.",
        "",
        "environment variables, each with its flag and its default:",
        *(f"  {var:<{width}}{flag:<{flag_width}}{shown}" for var, flag, shown in rows),
        f"  {TE_PREFIX + '<FIELD>':<{width}}--set FIELD=VALUE: any middleware setting (docs/configuration.md)",
        f"  {'PROMETHEUS_MULTIPROC_DIR':<{width}}an empty directory: /metrics sums every gunicorn worker",
        "",
        f"A {ENV_PREFIX}* or {TE_PREFIX}* variable that is no setting stops the gateway, naming the closest",
        "one. Switches take true or false. Under gunicorn (app_factory()), an upstream or",
        f"{ENV_PREFIX}DEMO_MODEL=true is required. Signals: SIGHUP reloads the client keys; SIGTERM fails",
        "/readyz for --drain-delay seconds while serving, then stops listening and lets open requests",
        "finish for --shutdown-timeout seconds; SIGINT (Ctrl-C) skips the delay.",
    ]
    return "\n".join(lines)


def parser(prog: str = "gateway-mw") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="A streaming reverse proxy with gateway_mw: inline <think> reasoning moved into each "
        "API's native reasoning fields. Without --upstream it serves an embedded demo model.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    python = ".".join(map(str, sys.version_info[:3]))
    version = f"%(prog)s {__version__} (aiohttp {aiohttp_version}, Python {python})"
    p.add_argument("--version", action="version", version=version)
    p.add_argument("--upstream", metavar="URL", help="model server base URL, e.g. http://127.0.0.1:8000")
    p.add_argument(
        "--demo-model",
        action="store_const",
        const="true",
        help="serve the embedded demo model: the default without --upstream, required for it under gunicorn",
    )
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", help="port to listen on (default 8080; 0 picks a free one)")
    p.add_argument("--prefix", help="where the upstream's API lives; relative routes are under it (default /v1/)")
    p.add_argument(
        "--forward-routes",
        metavar="ROUTES",
        help="the routes forwarded, e.g. 'POST chat/completions, GET models' ('* **': all under the prefix)",
    )
    p.add_argument(
        "--no-client-off",
        dest="allow_client_off",
        action="store_const",
        const="false",
        help="ignore a client's X-Think-Extract: off",
    )
    p.add_argument("--upstream-key-env", metavar="NAME", help="environment variable holding the upstream API key")
    p.add_argument("--connect-timeout", metavar="S", help="upstream connect timeout in seconds (default 10)")
    p.add_argument(
        "--read-timeout", metavar="S", help="longest silence of the upstream or of a request body (default 300 s)"
    )
    p.add_argument("--pace", metavar="TOKENS_PER_S", help="demo model speed (default 30; 0 = no delay)")
    p.add_argument(
        "--log-level",
        metavar="LEVEL",
        help="debug, info (default), warning, error or critical; debug adds one line per request on its translation",
    )
    p.add_argument(
        "--no-access-log", dest="access_log", action="store_const", const="false", help="no log line per request"
    )
    p.add_argument(
        "--no-forwarded-headers",
        dest="forwarded_headers",
        action="store_const",
        const="false",
        help="do not add X-Forwarded-For, X-Forwarded-Proto and Via upstream",
    )
    p.add_argument("--client-keys-env", metavar="NAME", help="environment variable holding the client keys")
    p.add_argument("--client-keys-file", metavar="FILE", help="file of client keys, one per line: KEY, or ALIAS KEY")
    p.add_argument("--metrics-key", action="store_const", const="true", help="GET /metrics needs a client key too")
    p.add_argument(
        "--header-timeout",
        metavar="S",
        help="close a connection that has not sent a complete request head within S seconds (default 10)",
    )
    p.add_argument(
        "--drain-delay", metavar="S", help="on SIGTERM, serve with /readyz failing for S seconds first (default 5)"
    )
    p.add_argument("--shutdown-timeout", metavar="S", help="how long open requests may finish on shutdown (default 30)")
    p.add_argument("--config", metavar="FILE", help="TOML file with [proxy] and [think_extract] tables")
    p.add_argument("--messages-policy", choices=["off", "unsigned", "redacted"], help="Anthropic messages policy")
    p.add_argument(
        "--set",
        metavar="FIELD=VALUE",
        action="append",
        default=[],
        help="any ThinkExtractConfig field, written as its THINK_EXTRACT_* variable (repeatable)",
    )
    p.add_argument("--no-middleware", action="store_true", help="proxy without gateway_mw (for comparisons)")
    p.add_argument("--demo", action="store_true", help="run one request per surface through the proxy, print, exit")
    p.epilog = _epilog(p)
    return p
