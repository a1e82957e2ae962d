"""The gateway's settings: one msgspec struct whose field types carry their own constraints and the
words that describe them, checked by msgspec (:mod:`gateway_mw.fieldcheck`) like the middleware's.

The fields come in groups: where the upstream is and how it is reached; where the gateway listens
and what it forwards; who may use it; logs; the demo model; the middleware's own settings.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec
from yarl import URL

from ..config import ModelProfile, ThinkExtractConfig
from ..fieldcheck import check, convert, field_types, twin
from .routes import DEFAULT_FORWARD_ROUTES, parse_routes

__all__ = [
    "DEMO_CONFIG",
    "PROXY_FIELDS",
    "TE_FIELDS",
    "UNNAMED",
    "Secret",
    "Settings",
    "SettingsError",
    "check_value",
]

DEMO_CONFIG = ThinkExtractConfig(
    messages_policy="unsigned",
    profiles=(ModelProfile(match="demo-r1*", start_with_reasoning=True),),
    upstream_server="generic",
)
"""Middleware defaults with the demo model: every surface translated, ``demo-r1`` starts inside its
reasoning, and the model is no server to ask about (``generic``). Any ``THINK_EXTRACT_*`` variable,
``[think_extract]`` key or ``--set`` overrides them."""

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
NonEmpty = Annotated[str, _meta("a non-empty string", min_length=1)]
Port = Annotated[int, _meta("an integer from 0 to 65535", ge=0, le=65535)]
Prefix = Annotated[str, _meta("a path that starts and ends with '/', like /v1/", pattern=r"^/(.*/)?$")]
EnvName = Annotated[str, _meta("the name of an environment variable", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Path = Annotated[str, _meta("a file path", min_length=1)]
Seconds = Annotated[float, _meta("a number of seconds > 0", gt=0)]
Delay = Annotated[float, _meta("a number of seconds >= 0", ge=0)]
Route = Annotated[
    str, _meta("a method (or *) and a path, like 'POST chat/completions'", pattern=r"^(\*|[A-Z]+) +/?[^\s?#]*$")
]
Routes = Annotated[
    tuple[Route, ...],
    _meta(
        "a list of routes, each a method (or *) and a path (relative to the prefix, or absolute), "
        "separated by commas, like 'POST chat/completions, GET models'"
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

    # -- the upstream, and how it is reached
    upstream: Url | None = None
    """Base URL of the model server; ``None`` starts the embedded demo model."""
    upstream_key_env: EnvName | None = None
    """Name of an environment variable holding the upstream's API key, which then replaces the
    client's ``Authorization``/``x-api-key``."""
    connect_timeout: Seconds = 10.0
    read_timeout: Seconds = 300.0
    """Longest wait for the upstream's next bytes (its headers included), and for a request body's
    next bytes (then 408)."""
    forwarded_headers: Switch = True
    """Add ``X-Forwarded-For``, ``X-Forwarded-Proto`` and ``Via`` to what goes upstream."""

    # -- where the gateway listens, what it forwards, how it stops
    host: NonEmpty = "127.0.0.1"
    port: Port = 8080
    prefix: Prefix = "/v1/"
    """Where the upstream's API lives: the routes of ``forward_routes`` that do not start with ``/``
    are under it. The path is forwarded as it is."""
    forward_routes: Routes = DEFAULT_FORWARD_ROUTES
    """The routes forwarded to the upstream, each ``METHOD PATH``: anything else is answered 404
    (405 for another method of a forwarded path). ``*`` matches one path segment, ``**`` any rest;
    a method of ``*`` is any method. ``* **`` forwards everything under the prefix."""
    header_timeout: Seconds = 10.0
    """How long a client may take to send a request's head (line and headers): from the connection's
    opening, or from a later request's first byte. A connection that has not sent it by then is closed."""
    drain_delay: Delay = 5.0
    """On SIGTERM, how long the gateway goes on serving, ``/readyz`` failing, before it stops
    listening: time for load balancers to take it out of rotation."""
    shutdown_timeout: Seconds = 30.0
    """Once the gateway stops listening, how long open requests may go on before they are cancelled."""

    # -- who may use it, and what a client may ask
    client_keys_env: EnvName | None = None
    """Name of an environment variable holding the client keys (separated by commas or spaces)."""
    client_keys_file: Path | None = None
    """A file of client keys, one per line (blank lines and ``#`` comments ignored)."""
    metrics_key: Switch = False
    """``GET /metrics`` needs a client key too."""
    allow_client_off: Switch = True
    """Honour a client's ``X-Think-Extract: off`` (raw model output). ``false`` ignores the header."""

    # -- logs
    log_level: LogLevel = "info"
    access_log: Switch = True
    """One line per request (aiohttp's access log, logger ``aiohttp.access``)."""

    # -- the demo model
    demo_model: Switch = False
    """Serve the embedded demo model (no upstream). ``gateway-mw`` does without an upstream anyway;
    under gunicorn, and in the container, it must be asked for."""
    pace: Pace = 30.0
    """Demo model speed in tokens per second (0: as fast as possible)."""

    # -- the middleware, and what is read at startup (never from a file, a variable or a flag)
    think_extract: ThinkExtractConfig = msgspec.field(default_factory=ThinkExtractConfig)
    middleware: bool = True
    """``False`` serves the same proxy without gateway_mw (for comparisons)."""
    upstream_key: Secret | None = None
    client_keys: tuple[Secret, ...] = ()

    def __post_init__(self) -> None:
        check(self, _CHECKED)
        # The checks across fields, all here.
        if self.upstream is not None and self.demo_model:
            raise ValueError("upstream and demo_model are both set: the demo model stands in for an upstream")
        try:
            parse_routes(self.forward_routes, self.prefix)
        except ValueError as exc:
            raise ValueError(f"forward_routes: {exc}") from None


_READ_AT_STARTUP = ("think_extract", "middleware", "upstream_key", "client_keys")
PROXY_FIELDS: dict[str, Any] = {name: tp for name, tp in field_types(Settings).items() if name not in _READ_AT_STARTUP}
"""The ``[proxy]`` keys, ``GATEWAY_*`` variables and flags, with the type each value must have."""
_CHECKED = twin(Settings, PROXY_FIELDS)
_LINK = re.compile(r"(tcp|udp|sctp)://")


def check_value(name: str, value: object, where: str) -> Any:
    """``value`` (a variable's or a flag's text, or a TOML value) for the proxy field ``name``,
    converted and checked by msgspec against its type; ``where`` names it in an error."""
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
        checked = convert(value, tp, where, strict=not isinstance(value, str))
    except ValueError as exc:
        hint = ""
        if name == "port" and isinstance(value, str) and _LINK.match(value):
            # Kubernetes sets <SERVICE>_PORT=tcp://… for every Service: one named "gateway" clashes.
            hint = " (a Kubernetes service link? set enableServiceLinks: false in the pod spec)"
        raise SettingsError(f"{exc}{hint}") from None
    if name == "upstream":
        checked = str(URL(checked))
    elif name == "forward_routes":
        try:
            parse_routes(checked, "/v1/")
        except ValueError as exc:
            raise SettingsError(f"{where} is invalid: {exc}") from None
    return checked
