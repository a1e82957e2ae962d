"""The gateway's settings: one msgspec struct whose field types carry their own constraints.

Weakest first: built-in defaults, the ``--config`` TOML file (or ``GATEWAY_CONFIG``), environment
variables (``GATEWAY_*`` for the gateway, ``THINK_EXTRACT_*`` for the middleware), command-line
flags. Each value is checked by ``msgspec.convert`` against its field's annotated type; a rejected
value is reported with the field's ``description`` and the place it came from. A ``GATEWAY_*`` or
``THINK_EXTRACT_*`` variable that is no setting is an error too, naming the closest one.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

import msgspec
from aiohttp import __version__ as aiohttp_version
from yarl import URL

from .. import __version__
from ..config import ModelProfile, ThinkExtractConfig, unknown_variable
from .routes import DEFAULT_ROUTES, parse_routes

__all__ = [
    "DEMO_CONFIG",
    "ENV_PREFIX",
    "PROXY_FIELDS",
    "TE_FIELDS",
    "UNNAMED",
    "Secret",
    "Settings",
    "SettingsError",
    "flags",
    "load_settings",
    "parser",
    "read_client_keys",
    "require_upstream",
    "unknown_gateway_variable",
]

DEMO_CONFIG = ThinkExtractConfig(
    messages_policy="unsigned",
    profiles=(ModelProfile(match="demo-r1*", start_with_reasoning=True),),
    upstream_server="generic",
)
"""Middleware defaults with the demo model: every surface translated, ``demo-r1`` starts inside its
reasoning, and the model is no server to ask about (``generic``). Any ``THINK_EXTRACT_*`` variable,
``[think_extract]`` key or ``--set`` overrides them."""

ENV_PREFIX = "GATEWAY_"
TE_PREFIX = "THINK_EXTRACT_"
TE_FIELDS = tuple(ThinkExtractConfig.__struct_fields__)


class SettingsError(ValueError):
    """An invalid setting; the message names it."""


UNNAMED = "unnamed"
"""The alias of a client key that the key file does not name (and of every key from a variable)."""


class Secret:
    """A credential: compared and sent, never shown (its ``repr`` is a mask). A client key has an
    ``alias``, the name the operator gave it in the key file: what logs and metrics show of it."""

    __slots__ = ("alias", "value")

    def __init__(self, value: str, alias: str = UNNAMED) -> None:
        self.value = value
        self.alias = alias

    def __repr__(self) -> str:
        return "Secret('***')" if self.alias == UNNAMED else f"Secret('***', alias={self.alias!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and (other.value, other.alias) == (self.value, self.alias)

    def __hash__(self) -> int:
        return hash(self.value)


def _meta(description: str, **constraints: Any) -> msgspec.Meta:
    return msgspec.Meta(description=description, **constraints)


Url = Annotated[
    str,
    _meta("an http:// or https:// URL with a host", pattern=r"^https?://[^/?#@\s]+(/[^?#\s]*)?$"),
]
Text = Annotated[str, _meta("a non-empty string", min_length=1)]
Port = Annotated[int, _meta("an integer from 0 to 65535", ge=0, le=65535)]
Prefix = Annotated[str, _meta("a path that starts and ends with '/', like /v1/", pattern=r"^/(.*/)?$")]
EnvName = Annotated[str, _meta("the name of an environment variable", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Path = Annotated[str, _meta("a file path", min_length=1)]
Seconds = Annotated[float, _meta("a number of seconds > 0", gt=0)]
Delay = Annotated[float, _meta("a number of seconds >= 0", ge=0)]
Route = Annotated[
    str,
    _meta(
        "a list of routes, each a method (or *) and a path (relative to the prefix, or absolute), "
        "separated by commas, like 'POST chat/completions, GET models'",
        pattern=r"^(\*|[A-Z]+) +/?[^\s?#]*$",
    ),
]
Pace = Annotated[float, _meta("a number of tokens per second >= 0", ge=0)]
Switch = Annotated[bool, _meta("true or false")]
LogLevel = Annotated[
    Literal["debug", "info", "warning", "error", "critical"],
    _meta("one of debug, info, warning, error, critical"),
]


class Settings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Everything the gateway reads. Frozen: derive variants with ``msgspec.structs.replace``."""

    upstream: Url | None = None
    """Base URL of the model server; ``None`` starts the embedded demo model."""
    host: Text = "127.0.0.1"
    port: Port = 8080
    prefix: Prefix = "/v1/"
    """Where the upstream's API lives: the routes of ``forward_routes`` that do not start with ``/``
    are under it. The path is forwarded as it is."""
    forward_routes: tuple[Route, ...] = DEFAULT_ROUTES
    """The routes forwarded to the upstream, each ``METHOD PATH``: anything else is answered 404
    (405 for another method of a forwarded path). ``*`` matches one path segment, ``**`` any rest;
    a method of ``*`` is any method. ``* **`` forwards everything under the prefix."""
    allow_client_off: Switch = True
    """Honour a client's ``X-Think-Extract: off`` (raw model output). ``false`` ignores the header."""
    demo_model: Switch = False
    """Serve the embedded demo model (no upstream). ``gateway-mw`` does without an upstream anyway;
    under gunicorn, and in the container, it must be asked for."""
    upstream_key_env: EnvName | None = None
    """Name of an environment variable holding the upstream's API key, which then replaces the
    client's ``Authorization``/``x-api-key``."""
    connect_timeout: Seconds = 10.0
    read_timeout: Seconds = 300.0
    """Longest wait for the upstream's next bytes (its headers included), and for a request body's
    next bytes (then 408)."""
    pace: Pace = 30.0
    """Demo model speed in tokens per second (0: as fast as possible)."""
    log_level: LogLevel = "info"
    access_log: Switch = True
    """One line per request (aiohttp's access log, logger ``aiohttp.access``)."""
    forwarded_headers: Switch = True
    """Add ``X-Forwarded-For``, ``X-Forwarded-Proto`` and ``Via`` to what goes upstream."""
    client_keys_env: EnvName | None = None
    """Name of an environment variable holding the client keys (separated by commas or spaces)."""
    client_keys_file: Path | None = None
    """A file of client keys, one per line (blank lines and ``#`` comments ignored)."""
    metrics_key: Switch = False
    """``GET /metrics`` needs a client key too."""
    header_timeout: Seconds = 10.0
    """How long a client may take to send a request's head (line and headers): from the connection's
    opening, or from a later request's first byte. A connection that has not sent it by then is closed."""
    drain_delay: Delay = 5.0
    """On SIGTERM, how long the gateway goes on serving, ``/readyz`` failing, before it stops
    listening: time for load balancers to take it out of rotation."""
    shutdown_timeout: Seconds = 30.0
    """Once the gateway stops listening, how long open requests may go on before they are cancelled."""
    think_extract: ThinkExtractConfig = msgspec.field(default_factory=ThinkExtractConfig)
    middleware: bool = True
    """``False`` serves the same proxy without gateway_mw (for comparisons)."""
    upstream_key: Secret | None = None
    client_keys: tuple[Secret, ...] = ()


def _plain(tp: Any) -> Any:
    """``X | None`` → ``X``: what a given value must be."""
    if get_origin(tp) is not Annotated:
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


_HINTS = get_type_hints(Settings, include_extras=True)
_SECRETS = ("think_extract", "middleware", "upstream_key", "client_keys")
PROXY_FIELDS: dict[str, Any] = {
    name: _plain(_HINTS[name]) for name in Settings.__struct_fields__ if name not in _SECRETS
}
"""The ``[proxy]`` keys, ``GATEWAY_*`` variables and flags, with the type each value must have."""


def _description(tp: Any) -> str:
    if get_origin(tp) is tuple:
        tp = get_args(tp)[0]
    return next(str(m.description) for m in getattr(tp, "__metadata__", ()) if isinstance(m, msgspec.Meta))


def _check(name: str, value: object, where: str) -> Any:
    """``value`` for the proxy field ``name``, converted and validated by msgspec against its type."""
    tp = PROXY_FIELDS[name]
    if isinstance(value, str):
        value = value.strip()
        if name == "log_level":
            value = value.lower()
        elif name == "forward_routes":
            value = [" ".join(item.split()) for item in value.split(",") if item.strip()]
    elif name == "forward_routes" and isinstance(value, list):
        value = [" ".join(item.split()) if isinstance(item, str) else item for item in value]
    try:
        checked = msgspec.convert(value, tp, strict=not isinstance(value, str))
    except msgspec.ValidationError:
        hint = ""
        if name == "port" and isinstance(value, str) and re.match(r"(tcp|udp|sctp)://", value):
            # Kubernetes sets <SERVICE>_PORT=tcp://… for every Service: one named "gateway" clashes.
            hint = " (a Kubernetes service link? set enableServiceLinks: false in the pod spec)"
        raise SettingsError(f"{where} is invalid: expected {_description(tp)}{hint}") from None
    if name == "upstream":
        checked = str(URL(checked))
    elif name == "forward_routes":
        try:
            parse_routes(checked, "/v1/")
        except ValueError as exc:
            raise SettingsError(f"{where} is invalid: {exc}") from None
    return checked


def _parse_te(name: str, raw: str, where: str) -> Any:
    """One ``ThinkExtractConfig`` field from its ``THINK_EXTRACT_*`` string form; ``where`` names
    the setting in errors (``THINK_EXTRACT_STREAM_MODE='x'``, ``--set stream_mode=x``)."""
    if name not in TE_FIELDS:
        raise SettingsError(f"{where}: unknown field {name!r}; fields: {', '.join(TE_FIELDS)}")
    var = TE_PREFIX + name.upper()
    try:
        parsed = ThinkExtractConfig.from_env({var: raw})
    except ValueError as exc:
        reason = str(exc).removeprefix(f"{var}={raw!r} is invalid: ")
        raise SettingsError(f"{where} is invalid: {reason}") from None
    return getattr(parsed, name)


def _read_toml(path: str) -> dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
        except ModuleNotFoundError:
            raise SettingsError(f"--config {path}: reading TOML needs Python 3.11+ or the tomli package") from None
    try:
        with open(path, "rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
    except OSError as exc:
        raise SettingsError(f"--config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"--config {path}: not valid TOML: {exc}") from None
    unknown = set(data) - {"proxy", "think_extract"}
    if unknown:
        raise SettingsError(f"--config {path}: unknown table(s) {sorted(unknown)}; expected [proxy], [think_extract]")
    return data


def _from_file(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    data = _read_toml(path)
    proxy_table, te_table = data.get("proxy", {}), data.get("think_extract", {})
    proxy: dict[str, Any] = {}
    for key, value in proxy_table.items():
        if key not in PROXY_FIELDS:
            raise SettingsError(f"--config {path}: [proxy] unknown key {key!r}; keys: {', '.join(PROXY_FIELDS)}")
        proxy[key] = _check(key, value, f"--config {path}: [proxy] {key} = {value!r}")
    try:
        parsed = msgspec.convert(te_table, ThinkExtractConfig)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"--config {path}: [think_extract] {exc}") from None
    return proxy, {key: getattr(parsed, key) for key in te_table}


_PRECEDENCE = "built-in defaults < the --config TOML file < environment variables < flags"


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
        f"settings, weakest first: {_PRECEDENCE}.",
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


_ALIAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _key_file(path: str) -> list[Secret]:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable as UTF-8 text"
        raise SettingsError(f"client_keys_file: {path}: {reason}") from None
    found = []
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) > 2:  # never quote the line: it holds a key
            raise SettingsError(f"client_keys_file: {path}, line {number}: expected KEY or ALIAS KEY")
        if len(words) == 2 and not _ALIAS.fullmatch(words[0]):
            raise SettingsError(
                f"client_keys_file: {path}, line {number}: an alias is 1 to 64 letters, digits, '.', '_' or '-'"
            )
        found.append(Secret(words[-1], words[0]) if len(words) == 2 else Secret(words[0]))
    if not found:
        raise SettingsError(f"client_keys_file: {path} holds no key")
    return found


def read_client_keys(settings: Settings, env: Mapping[str, str]) -> tuple[Secret, ...]:
    """The client keys of ``client_keys_env`` and ``client_keys_file``, read now (at startup, and
    again on SIGHUP). A key listed twice keeps its alias; two different aliases are an error."""
    keys: list[Secret] = []
    if settings.client_keys_env is not None:
        found = env.get(settings.client_keys_env, "").replace(",", " ").split()
        if not found:
            raise SettingsError(f"client_keys_env: the variable {settings.client_keys_env} is not set or empty")
        keys += [Secret(key) for key in found]
    if settings.client_keys_file is not None:
        keys += _key_file(settings.client_keys_file)
    unique: dict[str, Secret] = {}
    for key in keys:
        seen = unique.get(key.value)
        if seen is None or seen.alias == UNNAMED:
            unique[key.value] = key
        elif key.alias not in (UNNAMED, seen.alias):
            raise SettingsError(f"client keys: one key has two aliases, {seen.alias} and {key.alias}")
    return tuple(unique.values())


_SERVICE_LINK = re.compile(r"[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_\d+_(TCP|UDP|SCTP)(_[A-Z]+)?)")
_KNOWN = frozenset({ENV_PREFIX + name.upper() for name in PROXY_FIELDS} | {ENV_PREFIX + "CONFIG"})


def unknown_gateway_variable(var: str, value: str) -> str | None:
    """Why ``var`` is wrong, if it is a ``GATEWAY_*`` name that no setting has; else ``None``.

    Not settings, and so never reported: ``GATEWAY_MW_*`` (the project's own tools' variables, and
    what Kubernetes sets for a Service named ``gateway-mw``), and any other Kubernetes service link
    (``GATEWAY_REDIS_SERVICE_HOST``, ``GATEWAY_REDIS_PORT=tcp://…``).
    """
    if not var.startswith(ENV_PREFIX) or var in _KNOWN or var.startswith(ENV_PREFIX + "MW_"):
        return None
    if _SERVICE_LINK.fullmatch(var) or (var.endswith("_PORT") and re.match(r"(tcp|udp|sctp)://", value)):
        return None
    close = difflib.get_close_matches(var, sorted(_KNOWN), n=1, cutoff=0.6)
    if close:
        return f"{var} is not a setting; did you mean {close[0]}?"
    return f"{var} is not a setting; the settings are {', '.join(sorted(_KNOWN))}"


def require_upstream(settings: Settings) -> None:
    """Under gunicorn and in the container: an upstream, or the demo model asked for by name."""
    if settings.upstream is None and not settings.demo_model:
        raise SettingsError(
            f"no upstream: set {ENV_PREFIX}UPSTREAM to the model server's URL "
            f"(or {ENV_PREFIX}DEMO_MODEL=true for the embedded demo model, which answers every model name)"
        )


def load_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None, prog: str = "gateway-mw"
) -> tuple[Settings, argparse.Namespace]:
    """Settings from defaults < ``--config`` file < environment < flags. Raises :class:`SettingsError`."""
    env = os.environ if environ is None else environ
    args = parser(prog).parse_args([] if argv is None else list(argv))
    proxy: dict[str, Any] = {}
    te: dict[str, Any] = {}

    for var in sorted(env):
        unknown = unknown_variable(var) or unknown_gateway_variable(var, env[var])
        if unknown is not None:
            raise SettingsError(unknown)
    config_file = args.config or env.get(ENV_PREFIX + "CONFIG")
    if config_file:
        proxy, te = _from_file(config_file)
    for name in PROXY_FIELDS:
        var = ENV_PREFIX + name.upper()
        if var in env:
            proxy[name] = _check(name, env[var], f"{var}={env[var]!r}")
    for name in TE_FIELDS:
        var = TE_PREFIX + name.upper()
        if var in env:
            te[name] = _parse_te(name, env[var], f"{var}={env[var]!r}")
    for name in PROXY_FIELDS:
        raw = getattr(args, name)
        if raw is not None:
            flag = "--" + name.replace("_", "-")
            proxy[name] = _check(name, raw, f"{flag} {raw!r}")
    if args.messages_policy is not None:
        te["messages_policy"] = args.messages_policy
    for item in args.set:
        name, eq, raw = item.partition("=")
        if not eq:
            raise SettingsError(f"--set {item!r}: expected FIELD=VALUE")
        te[name.strip()] = _parse_te(name.strip(), raw, f"--set {item}")

    if proxy.get("upstream") is not None and proxy.get("demo_model"):
        raise SettingsError("upstream and demo_model are both set: the demo model stands in for an upstream")
    base = DEMO_CONFIG if proxy.get("upstream") is None else ThinkExtractConfig()
    try:
        config = base.replace(**te)
    except (ValueError, TypeError) as exc:
        raise SettingsError(f"think_extract settings are invalid: {exc}") from None
    settings = Settings(**proxy, think_extract=config, middleware=not args.no_middleware)
    try:
        parse_routes(settings.forward_routes, settings.prefix)
    except ValueError as exc:
        raise SettingsError(f"forward_routes: {exc}") from None
    if settings.upstream_key_env is not None:
        key = env.get(settings.upstream_key_env, "")
        if not key:
            raise SettingsError(f"upstream_key_env: the variable {settings.upstream_key_env} is not set or empty")
        settings = msgspec.structs.replace(settings, upstream_key=Secret(key))
    keys = read_client_keys(settings, env)
    if keys:
        settings = msgspec.structs.replace(settings, client_keys=keys)
    return settings, args
