"""The gateway's settings, layered: weakest first, built-in defaults, the ``--config`` TOML file (or
``GATEWAY_CONFIG``), environment variables (``GATEWAY_*`` for the gateway, ``THINK_EXTRACT_*`` for
the middleware), command-line flags.

Every value, whatever its source, is checked by msgspec against its field's annotated type
(:mod:`.schema` for the gateway's, :mod:`gateway_mw.config` for the middleware's); a rejected value
is reported with the words of the type's description and the place it came from. A ``GATEWAY_*``
or ``THINK_EXTRACT_*`` variable that is no setting is an error too, naming the closest one.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ..config import FIELD_TYPES, ThinkExtractConfig, unknown_variable
from ..envtext import ENV_PREFIX as TE_PREFIX
from ..envtext import read_value
from ..fieldcheck import convert
from .cli import ENV_PREFIX, flags, parser
from .keys import read_client_keys, upper_name, variable_named
from .schema import DEMO_CONFIG, PROXY_FIELDS, TE_FIELDS, UNNAMED, Secret, Settings, SettingsError, check_value

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


def _te_value(name: str, raw: str, where: str) -> Any:
    """One ``ThinkExtractConfig`` field from its ``THINK_EXTRACT_*`` text; ``where`` names the
    setting in errors (``THINK_EXTRACT_STREAM_MODE='x'``, ``--set stream_mode=x``)."""
    if name not in FIELD_TYPES:
        raise SettingsError(f"{where}: unknown field {name!r}; fields: {', '.join(TE_FIELDS)}")
    try:
        return read_value(name, FIELD_TYPES[name], raw, where)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


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
    proxy: dict[str, Any] = {}
    for key, value in data.get("proxy", {}).items():
        if key not in PROXY_FIELDS:
            raise SettingsError(f"--config {path}: [proxy] unknown key {key!r}; keys: {', '.join(PROXY_FIELDS)}")
        proxy[key] = check_value(key, value, f"--config {path}: [proxy] {key} = {_shown(key, value)}")
    te: dict[str, Any] = {}
    for key, value in data.get("think_extract", {}).items():
        if key not in FIELD_TYPES:
            raise SettingsError(f"--config {path}: [think_extract] unknown key {key!r}; keys: {', '.join(TE_FIELDS)}")
        try:
            te[key] = convert(value, FIELD_TYPES[key], f"--config {path}: [think_extract] {key} = {value!r}")
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
    return proxy, te


_SERVICE_LINK = re.compile(r"[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_\d+_(TCP|UDP|SCTP)(_[A-Z]+)?)")
_KNOWN = frozenset({ENV_PREFIX + name.upper() for name in PROXY_FIELDS} | {ENV_PREFIX + "CONFIG"})


def _shown(name: str, value: object) -> str:
    """``value`` of setting ``name`` as an error quotes it; not at all where it may hold a key written
    by mistake: a key where its variable's name belongs (no upper-case name), an address with
    credentials or a query."""
    if name in ("upstream_key_env", "client_keys_env"):
        shown = upper_name(value)
    elif name == "upstream":
        shown = isinstance(value, str) and "@" not in value and "?" not in value
    else:
        shown = True
    return repr(value) if shown else "(its value not shown)"


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
            proxy[name] = check_value(name, env[var], f"{var}={_shown(name, env[var])}")
    for name in TE_FIELDS:
        var = TE_PREFIX + name.upper()
        if var in env:
            te[name] = _te_value(name, env[var], f"{var}={env[var]!r}")
    for name in PROXY_FIELDS:
        raw = getattr(args, name)
        if raw is not None:
            flag = "--" + name.replace("_", "-")
            proxy[name] = check_value(name, raw, f"{flag} {_shown(name, raw)}")
    if args.messages_policy is not None:
        te["messages_policy"] = args.messages_policy
    for item in args.set:
        name, eq, raw = item.partition("=")
        if not eq:
            raise SettingsError(f"--set {item!r}: expected FIELD=VALUE")
        te[name.strip()] = _te_value(name.strip(), raw, f"--set {item}")

    base = DEMO_CONFIG if proxy.get("upstream") is None else ThinkExtractConfig()
    try:
        config = base.replace(**te)
        settings = Settings(**proxy, think_extract=config, middleware=not args.no_middleware)
    except ValueError as exc:  # the checks across fields
        raise SettingsError(str(exc)) from None
    if settings.upstream_key_env is not None:
        key = env.get(settings.upstream_key_env, "")
        if not key:
            raise SettingsError(
                f"upstream_key_env: the variable {variable_named(settings.upstream_key_env)} is not set or empty"
            )
        settings = msgspec.structs.replace(settings, upstream_key=Secret(key))
    keys = read_client_keys(settings, env)
    if keys:
        settings = msgspec.structs.replace(settings, client_keys=keys)
    return settings, args
