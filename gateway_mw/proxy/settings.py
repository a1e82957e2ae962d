"""The gateway's settings: one msgspec struct whose field types carry their own constraints.

Weakest first: built-in defaults, the ``--config`` TOML file (or ``GATEWAY_CONFIG``), environment
variables (``GATEWAY_*`` for the gateway, ``THINK_EXTRACT_*`` for the middleware), command-line
flags. Each value is checked by ``msgspec.convert`` against its field's annotated type; a rejected
value is reported with the field's ``description`` and the place it came from.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

import msgspec
from yarl import URL

from ..config import ModelProfile, ThinkExtractConfig, unknown_variable

__all__ = [
    "DEMO_CONFIG",
    "ENV_PREFIX",
    "PROXY_FIELDS",
    "TE_FIELDS",
    "Secret",
    "Settings",
    "SettingsError",
    "load_settings",
    "parser",
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


class Secret:
    """A credential: compared and sent, never shown (its ``repr`` is a mask)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other.value == self.value

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
    """Requests whose path starts with this are forwarded; the path is kept as it is."""
    upstream_key_env: EnvName | None = None
    """Name of an environment variable holding the upstream's API key, which then replaces the
    client's ``Authorization``/``x-api-key``."""
    connect_timeout: Seconds = 10.0
    read_timeout: Seconds = 300.0
    """Longest wait for the upstream's next bytes (its headers included)."""
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
    shutdown_timeout: Seconds = 30.0
    """On SIGTERM/SIGINT, how long open requests may go on before they are cancelled."""
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
    return next(str(m.description) for m in getattr(tp, "__metadata__", ()) if isinstance(m, msgspec.Meta))


def _check(name: str, value: object, where: str) -> Any:
    """``value`` for the proxy field ``name``, converted and validated by msgspec against its type."""
    tp = PROXY_FIELDS[name]
    if isinstance(value, str):
        value = value.strip()
        if name == "log_level":
            value = value.lower()
    try:
        checked = msgspec.convert(value, tp, strict=not isinstance(value, str))
    except msgspec.ValidationError:
        raise SettingsError(f"{where} is invalid: expected {_description(tp)}") from None
    if name == "upstream":
        checked = str(URL(checked))
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


def parser(prog: str = "gateway-mw") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="A streaming reverse proxy with gateway_mw: inline <think> reasoning moved into each "
        "API's native reasoning fields. Without --upstream it serves an embedded demo model.",
    )
    p.add_argument("--upstream", metavar="URL", help="model server base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", help="port to listen on (default 8080; 0 picks a free one)")
    p.add_argument("--prefix", help="forward requests under this path (default /v1/)")
    p.add_argument("--upstream-key-env", metavar="NAME", help="environment variable holding the upstream API key")
    p.add_argument("--connect-timeout", metavar="S", help="upstream connect timeout in seconds (default 10)")
    p.add_argument("--read-timeout", metavar="S", help="longest upstream silence in seconds (default 300)")
    p.add_argument("--pace", metavar="TOKENS_PER_S", help="demo model speed (default 30; 0 = no delay)")
    p.add_argument("--log-level", metavar="LEVEL", help="debug, info (default), warning, error or critical")
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
    p.add_argument("--client-keys-file", metavar="FILE", help="file of client keys, one per line")
    p.add_argument("--metrics-key", action="store_const", const="true", help="GET /metrics needs a client key too")
    p.add_argument(
        "--header-timeout",
        metavar="S",
        help="close a connection that has not sent a complete request head within S seconds (default 10)",
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
    return p


def _read_keys(settings: Settings, env: Mapping[str, str]) -> tuple[Secret, ...]:
    keys: list[str] = []
    if settings.client_keys_env is not None:
        found = env.get(settings.client_keys_env, "").replace(",", " ").split()
        if not found:
            raise SettingsError(f"client_keys_env: the variable {settings.client_keys_env} is not set or empty")
        keys += found
    if settings.client_keys_file is not None:
        path = settings.client_keys_file
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable as UTF-8 text"
            raise SettingsError(f"client_keys_file: {path}: {reason}") from None
        found = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
        if not found:
            raise SettingsError(f"client_keys_file: {path} holds no key")
        keys += found
    return tuple(Secret(key) for key in dict.fromkeys(keys))


def load_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None, prog: str = "gateway-mw"
) -> tuple[Settings, argparse.Namespace]:
    """Settings from defaults < ``--config`` file < environment < flags. Raises :class:`SettingsError`."""
    env = os.environ if environ is None else environ
    args = parser(prog).parse_args([] if argv is None else list(argv))
    proxy: dict[str, Any] = {}
    te: dict[str, Any] = {}

    config_file = args.config or env.get(ENV_PREFIX + "CONFIG")
    if config_file:
        proxy, te = _from_file(config_file)
    for name in PROXY_FIELDS:
        var = ENV_PREFIX + name.upper()
        if var in env:
            proxy[name] = _check(name, env[var], f"{var}={env[var]!r}")
    for var in env:
        unknown = unknown_variable(var)
        if unknown is not None:
            raise SettingsError(unknown)
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

    base = DEMO_CONFIG if proxy.get("upstream") is None else ThinkExtractConfig()
    try:
        config = base.replace(**te)
    except (ValueError, TypeError) as exc:
        raise SettingsError(f"think_extract settings are invalid: {exc}") from None
    settings = Settings(**proxy, think_extract=config, middleware=not args.no_middleware)
    if settings.upstream_key_env is not None:
        key = env.get(settings.upstream_key_env, "")
        if not key:
            raise SettingsError(f"upstream_key_env: the variable {settings.upstream_key_env} is not set or empty")
        settings = msgspec.structs.replace(settings, upstream_key=Secret(key))
    keys = _read_keys(settings, env)
    if keys:
        settings = msgspec.structs.replace(settings, client_keys=keys)
    return settings, args
