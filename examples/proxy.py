"""A streaming reverse proxy with gateway_mw applied: the reference for wiring it into a gateway.

    python examples/proxy.py                                  # an embedded demo model behind it
    python examples/proxy.py --upstream http://127.0.0.1:8000  # a real model server (vLLM, llama.cpp…)
    python examples/proxy.py --demo                           # one request per surface, side by side
    gunicorn 'examples.proxy:app_factory()' --worker-class aiohttp.GunicornWebWorker -w 4

Every request under the prefix (default ``/v1/``) goes to the upstream with its method, path, query,
headers (minus hop-by-hop ones) and body, streamed both ways; the middleware translates the answers
on the way out. ``GET /healthz`` and ``GET /metrics`` (Prometheus text) are served by the proxy.

Settings, weakest first: built-in defaults, the ``--config`` TOML file, environment variables
(``GATEWAY_*`` for the proxy, ``THINK_EXTRACT_*`` for the middleware), command-line flags. An invalid
setting stops the proxy at startup with a message naming it (exit status 2).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import logging
import os
import re
import signal
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import zip_longest
from typing import Any

import aiohttp
import msgspec
from aiohttp import hdrs, web
from multidict import CIMultiDict
from yarl import URL

from gateway_mw import (
    THINK_EXTRACT_HEADER,
    THINKEXTRACT_STATS,
    ModelProfile,
    ThinkExtractConfig,
    ThinkExtractStats,
    extract,
    setup,
)

if __package__:
    from . import demo_model
else:  # run as a script: examples/ is on sys.path
    import demo_model  # type: ignore[no-redef,import-not-found,unused-ignore]

__all__ = ["DEMO_CONFIG", "Settings", "SettingsError", "app_factory", "build_app", "load_settings", "main"]

log = logging.getLogger("gateway_mw.proxy")

# -- settings -----------------------------------------------------------------------------------------

DEMO_CONFIG = ThinkExtractConfig(
    messages_policy="unsigned",
    profiles=(ModelProfile(match="demo-r1*", start_with_reasoning=True),),
)
"""Middleware defaults with the demo model: every surface translated, ``demo-r1`` starts inside its
reasoning. Any ``THINK_EXTRACT_*`` variable, ``[think_extract]`` key or ``--set`` overrides them."""


class SettingsError(ValueError):
    """An invalid setting; the message names it."""


@dataclass(frozen=True)
class Settings:
    upstream: str | None = None
    """Base URL of the model server; ``None`` starts the embedded demo model."""
    host: str = "127.0.0.1"
    port: int = 8080
    prefix: str = "/v1/"
    """Requests whose path starts with this are forwarded; the path is kept as it is."""
    upstream_key_env: str | None = None
    """Name of an environment variable holding the upstream's API key, which then replaces the
    client's ``Authorization``/``x-api-key``."""
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    """Longest wait for the upstream's next bytes (its headers included)."""
    pace: float = 30.0
    """Demo model speed in tokens per second (0: as fast as possible)."""
    think_extract: ThinkExtractConfig = field(default_factory=ThinkExtractConfig)
    middleware: bool = True
    """``False`` serves the same proxy without gateway_mw (for comparisons)."""
    upstream_key: str | None = field(default=None, repr=False)


def _url(value: object) -> str:
    url = URL(str(value).strip())
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("expected an http:// or https:// URL with a host")
    if url.user or url.query_string or url.fragment:
        raise ValueError("expected a URL without credentials, query or fragment")
    return str(url)


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    return value.strip()


def _port(value: object) -> int:
    try:
        port = int(str(value).strip())
    except ValueError:
        raise ValueError("expected an integer from 0 to 65535") from None
    if not 0 <= port <= 65535 or isinstance(value, (bool, float)):
        raise ValueError("expected an integer from 0 to 65535")
    return port


def _prefix(value: object) -> str:
    prefix = _text(value)
    if not (prefix.startswith("/") and prefix.endswith("/")):
        raise ValueError("expected a path that starts and ends with '/', like /v1/")
    return prefix


def _env_name(value: object) -> str:
    name = _text(value)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError("expected the name of an environment variable")
    return name


def _number(minimum: float, strict: bool, unit: str) -> Callable[[object], float]:
    what = f"a number of {unit} {'>' if strict else '>='} {minimum:g}"

    def parse(value: object) -> float:
        if isinstance(value, bool):
            raise ValueError(f"expected {what}")
        try:
            number = float(str(value).strip())
        except ValueError:
            raise ValueError(f"expected {what}") from None
        if number != number or number < minimum or (strict and number == minimum):
            raise ValueError(f"expected {what}")
        return number

    return parse


_PROXY_FIELDS: dict[str, Callable[[object], Any]] = {
    "upstream": _url,
    "host": _text,
    "port": _port,
    "prefix": _prefix,
    "upstream_key_env": _env_name,
    "connect_timeout": _number(0, strict=True, unit="seconds"),
    "read_timeout": _number(0, strict=True, unit="seconds"),
    "pace": _number(0, strict=False, unit="tokens per second"),
}
ENV_PREFIX = "GATEWAY_"
TE_PREFIX = "THINK_EXTRACT_"
_TE_FIELDS = tuple(ThinkExtractConfig.__struct_fields__)


def _parse_te(name: str, raw: str, where: str) -> Any:
    """One ``ThinkExtractConfig`` field from its ``THINK_EXTRACT_*`` string form; ``where`` names
    the setting in errors (``THINK_EXTRACT_STREAM_MODE='x'``, ``--set stream_mode=x``)."""
    if name not in _TE_FIELDS:
        raise SettingsError(f"{where}: unknown field {name!r}; fields: {', '.join(_TE_FIELDS)}")
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
        if key not in _PROXY_FIELDS:
            raise SettingsError(f"--config {path}: [proxy] unknown key {key!r}; keys: {', '.join(_PROXY_FIELDS)}")
        try:
            proxy[key] = _PROXY_FIELDS[key](value)
        except ValueError as exc:
            raise SettingsError(f"--config {path}: [proxy] {key} = {value!r} is invalid: {exc}") from None
    try:
        parsed = msgspec.convert(te_table, ThinkExtractConfig)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"--config {path}: [think_extract] {exc}") from None
    return proxy, {key: getattr(parsed, key) for key in te_table}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="examples/proxy.py",
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


def load_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Settings, argparse.Namespace]:
    """Settings from defaults < ``--config`` file < environment < flags. Raises :class:`SettingsError`."""
    env = os.environ if environ is None else environ
    args = _parser().parse_args([] if argv is None else list(argv))
    proxy: dict[str, Any] = {}
    te: dict[str, Any] = {}

    config_file = args.config or env.get(ENV_PREFIX + "CONFIG")
    if config_file:
        proxy, te = _from_file(config_file)
    for name, parse in _PROXY_FIELDS.items():
        var = ENV_PREFIX + name.upper()
        if var in env:
            try:
                proxy[name] = parse(env[var])
            except ValueError as exc:
                raise SettingsError(f"{var}={env[var]!r} is invalid: {exc}") from None
    for name in _TE_FIELDS:
        var = TE_PREFIX + name.upper()
        if var in env:
            te[name] = _parse_te(name, env[var], f"{var}={env[var]!r}")
    for name, parse in _PROXY_FIELDS.items():
        raw = getattr(args, name)
        if raw is not None:
            flag = "--" + name.replace("_", "-")
            try:
                proxy[name] = parse(raw)
            except ValueError as exc:
                raise SettingsError(f"{flag} {raw!r} is invalid: {exc}") from None
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
        settings = replace(settings, upstream_key=key)
    return settings, args


# -- the proxy ----------------------------------------------------------------------------------------

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""RFC 9110 §7.6.1 connection-specific fields, plus those a ``Connection`` header names."""
_NOT_FORWARDED = frozenset({"host", "expect", "accept-encoding"})
_AUTH = ("authorization", "x-api-key")
_DOT_SEGMENT = re.compile(r"(?:^|/)(?:\.|%2e){1,2}(?:/|$)", re.IGNORECASE)


def _strip_hop_by_hop(headers: Mapping[str, str], also: frozenset[str] = frozenset()) -> CIMultiDict[str]:
    named = {
        token.strip().lower()
        for value in CIMultiDict(headers).getall(hdrs.CONNECTION, [])
        for token in value.split(",")
    }
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        lname = name.lower()
        if lname not in HOP_BY_HOP and lname not in named and lname not in also:
            out.add(name, value)
    return out


@dataclass
class Counters:
    """What the proxy itself saw, for ``/metrics`` (per worker)."""

    requests: int = 0
    upstream_connect_errors: int = 0
    upstream_timeouts: int = 0
    upstream_dropped: int = 0
    client_disconnects: int = 0


class UpstreamDropped(Exception):
    """The upstream failed after the response had started: the client connection is cut."""


class Proxy:
    """Per-worker state: one pooled upstream session, the in-flight requests, the demo model."""

    disconnect_poll = 0.2
    """Seconds between checks for clients that went away while their upstream is silent."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.counters = Counters()
        self.session: aiohttp.ClientSession | None = None
        self.origin = ""
        self.base_path = ""
        self._inflight: dict[asyncio.Task[Any], web.Request] = {}

    def set_upstream(self, upstream: str) -> None:
        url = URL(upstream)
        self.origin = f"{url.scheme}://{url.raw_authority}"
        self.base_path = url.raw_path.rstrip("/")

    @property
    def upstream(self) -> str:
        return self.origin + self.base_path

    async def context(self, app: web.Application) -> AsyncIterator[None]:
        """``cleanup_ctx``: the demo model (if any), the session and the disconnect watcher."""
        async with contextlib.AsyncExitStack() as stack:
            if self.settings.upstream is None:
                port = await stack.enter_async_context(_serve_demo_model(self.settings.pace))
                self.set_upstream(f"http://127.0.0.1:{port}")
            else:
                self.set_upstream(self.settings.upstream)
            s = self.settings
            self.session = await stack.enter_async_context(
                aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True),
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=s.connect_timeout, sock_read=s.read_timeout),
                    auto_decompress=False,
                    cookie_jar=aiohttp.DummyCookieJar(),  # one session serves every client: keep none
                    skip_auto_headers=(hdrs.USER_AGENT,),
                )
            )
            watcher = asyncio.create_task(self._watch_disconnects())
            try:
                yield
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    async def _watch_disconnects(self) -> None:
        """Cancel handlers whose client is gone, even while their upstream sends nothing.

        aiohttp does not cancel handlers on disconnect by default (``handler_cancellation``), and a
        write is what would notice; a silent upstream (a long prompt, a stalled model) writes nothing.
        """
        while True:
            await asyncio.sleep(self.disconnect_poll)
            for task, request in list(self._inflight.items()):
                transport = request.transport
                if transport is None or transport.is_closing():
                    self._inflight.pop(task, None)
                    self.counters.client_disconnects += 1
                    task.cancel()

    def _upstream_headers(self, request: web.Request) -> CIMultiDict[str]:
        headers = _strip_hop_by_hop(request.headers, _NOT_FORWARDED)
        headers[hdrs.ACCEPT_ENCODING] = "identity"  # the middleware reads plain bytes
        key = self.settings.upstream_key
        if key is not None:
            sent = [name for name in _AUTH if name in headers]
            for name in _AUTH:
                headers.popall(name, None)
            for name in sent or _AUTH:
                headers[name] = f"Bearer {key}" if name == "authorization" else key
        return headers

    async def forward(self, request: web.Request) -> web.StreamResponse:
        self.counters.requests += 1
        surface = self.settings.think_extract.surface_for_path(request.path)
        raw_path = request.rel_url.raw_path  # the origin form, even for an absolute-form target
        if _DOT_SEGMENT.search(raw_path):
            return error_response(surface, 400, "invalid_request", "dot segments are not allowed in the path")
        query = request.rel_url.raw_query_string
        url = URL(self.origin + self.base_path + raw_path + ("?" + query if query else ""), encoded=True)
        task = asyncio.current_task()
        assert task is not None and self.session is not None
        self._inflight[task] = request
        try:
            return await self._exchange(request, url, surface)
        finally:
            self._inflight.pop(task, None)

    async def _exchange(self, request: web.Request, url: URL, surface: str | None) -> web.StreamResponse:
        assert self.session is not None
        try:
            upstream = await self.session.request(
                request.method,
                url,
                headers=self._upstream_headers(request),
                data=request.content if request.body_exists else None,
                allow_redirects=False,
            )
        except asyncio.TimeoutError:
            self.counters.upstream_timeouts += 1
            return error_response(surface, 504, "upstream_timeout", "the upstream model server did not answer in time")
        except aiohttp.ClientError as exc:
            self.counters.upstream_connect_errors += 1
            log.warning("upstream %s unreachable: %s", self.upstream, exc)
            return error_response(surface, 502, "upstream_unreachable", "the upstream model server is unreachable")
        complete = False
        try:
            resp = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            resp.headers.extend(_strip_hop_by_hop(upstream.headers))
            await resp.prepare(request)
            reader = upstream.content
            while True:
                try:
                    piece = await reader.readany()
                except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                    self.counters.upstream_dropped += 1
                    raise UpstreamDropped(f"upstream {self.upstream} failed mid-response: {exc!r}") from exc
                if not piece:
                    break
                try:
                    await resp.write(piece)  # waits while the client's socket buffer is full
                except ConnectionResetError:
                    self.counters.client_disconnects += 1
                    return resp  # the client left: aiohttp's write_eof fails quietly
            complete = True
            await resp.write_eof()
            return resp
        finally:
            if complete:
                upstream.release()
            else:
                upstream.close()  # closes the upstream connection: the model stops generating


def error_response(surface: str | None, status: int, code: str, message: str) -> web.Response:
    """An error body in the shape of the surface's API (Anthropic for messages, OpenAI otherwise)."""
    if surface == "messages":
        kind = {400: "invalid_request_error", 504: "timeout_error"}.get(status, "api_error")
        return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)
    kind = "invalid_request_error" if status < 500 else "server_error"
    error = {"message": message, "type": kind, "param": None, "code": code}
    return web.json_response({"error": error}, status=status)


@contextlib.asynccontextmanager
async def _serve_demo_model(pace: float) -> AsyncIterator[int]:
    runner = web.AppRunner(demo_model.build_app(pace), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


# -- health and metrics -------------------------------------------------------------------------------

_HELP = {
    "seen": "Responses on the surface's routes.",
    "translated": "Responses that went through the translator.",
    "passed_through": "Responses left untouched, by reason.",
    "reasoning_blocks": "Reasoning blocks moved into native fields.",
    "reasoning_chars": "Characters of reasoning moved into native fields.",
    "unclosed_blocks": "Reasoning blocks still open at the end of a response.",
    "cap_overflows": "Buffered blocks released as content at max_buffer_bytes.",
    "unreadable_events": "Data events passed on untranslated because they could not be read.",
    "oversized_events": "Events over max_event_bytes, streamed through raw.",
    "translation_errors": "Responses in which a translator failed (the failing event passed as it came).",
}


Samples = list[tuple[dict[str, str], float]]


def _samples(stats: ThinkExtractStats | None, counters: Counters) -> list[tuple[str, str, Samples]]:
    """(name, help, [(labels, value)]) for every counter; names without the ``_total`` suffix."""
    families: dict[str, tuple[str, Samples]] = {}
    if stats is not None:
        for surface, values in stats.snapshot().items():
            for key, value in values.items():
                help_ = _HELP.get(key, f"gateway_mw statistic {key}.")
                samples = families.setdefault(f"thinkextract_{key}", (help_, []))[1]
                if isinstance(value, dict):
                    samples.extend(({"surface": surface, "reason": r}, float(n)) for r, n in sorted(value.items()))
                else:
                    samples.append(({"surface": surface}, float(value)))
    for f in fields(counters):
        help_ = f"Proxy: {f.name.replace('_', ' ')}."
        families[f"gateway_proxy_{f.name}"] = (help_, [({}, float(getattr(counters, f.name)))])
    return [(name, help_, samples) for name, (help_, samples) in families.items()]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def metrics_text(stats: ThinkExtractStats | None, counters: Counters, use_client: bool = True) -> bytes:
    """Prometheus text format, through prometheus-client when it is installed."""
    families = _samples(stats, counters)
    if use_client:
        try:
            from prometheus_client import CollectorRegistry, generate_latest
            from prometheus_client.core import CounterMetricFamily
        except ImportError:
            pass
        else:

            class _Collector:
                def collect(self) -> Any:
                    for name, help_, samples in families:
                        labels = sorted({k for s, _ in samples for k in s})
                        family = CounterMetricFamily(name, help_, labels=labels)
                        for sample_labels, value in samples:
                            family.add_metric([sample_labels[k] for k in labels], value)
                        yield family

            registry = CollectorRegistry(auto_describe=False)
            registry.register(_Collector())  # type: ignore[arg-type,unused-ignore]
            return bytes(generate_latest(registry))
    lines = []
    for name, help_, samples in families:
        lines += [f"# HELP {name}_total {help_}", f"# TYPE {name}_total counter"]
        for labels, value in samples:
            rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            lines.append(f"{name}_total{{{rendered}}} {value!r}" if rendered else f"{name}_total {value!r}")
    return ("\n".join(lines) + "\n").encode()


PROXY = web.AppKey("PROXY", Proxy)


async def healthz(request: web.Request) -> web.Response:
    """Liveness of this worker; it does not call the upstream."""
    return web.json_response({"status": "ok"})


async def metrics(request: web.Request) -> web.Response:
    app = request.app
    body = metrics_text(app.get(THINKEXTRACT_STATS), app[PROXY].counters)
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


def build_app(settings: Settings) -> web.Application:
    """The proxy as an aiohttp application: gateway_mw, health, metrics, and the forwarding route."""
    app = web.Application()
    if settings.middleware:
        setup(app, settings.think_extract)
    proxy = app[PROXY] = Proxy(settings)
    app.cleanup_ctx.append(proxy.context)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    app.router.add_route("*", settings.prefix + "{tail:.*}", proxy.forward)
    return app


def app_factory() -> web.Application:
    """For ``gunicorn 'examples.proxy:app_factory()' --worker-class aiohttp.GunicornWebWorker``.

    Settings come from ``GATEWAY_*`` / ``THINK_EXTRACT_*`` variables and ``GATEWAY_CONFIG``; gunicorn's
    ``--bind`` decides where it listens. A bad setting stops the worker from booting.
    """
    settings, _ = load_settings([])
    return build_app(settings)


# -- running it ---------------------------------------------------------------------------------------

QUESTION = demo_model.QUESTION


def banner(base: str, settings: Settings) -> str:
    """What to paste next: one curl per surface, and one Python SDK snippet per surface."""
    demo = settings.upstream is None
    upstream = "the embedded demo model" if demo else settings.upstream
    lines = [f"gateway_mw proxy on {base} → {upstream}   (GET /healthz, GET /metrics)", ""]
    pace = f"{settings.pace:g} tokens/s" if settings.pace else "no delay"
    if demo and not settings.middleware:
        lines += [f"Models: demo and demo-r1 write <think> inline; the middleware is off. Pace: {pace}.", ""]
    elif demo:
        lines += [
            f"Models: demo writes <think>…</think>answer; demo-r1 starts inside its reasoning (profile "
            f"demo-r1*: start_with_reasoning). Pace: {pace}.",
            "",
        ]
    else:
        notes = []
        if not settings.middleware:
            notes.append("The middleware is off: responses pass as the upstream sent them.")
        elif settings.think_extract.messages_policy == "off":
            notes.append("Anthropic /v1/messages passes untouched until --messages-policy unsigned (or redacted).")
        if settings.middleware:
            notes.append(
                "A model whose chat template opens <think> itself (R1-style) needs a profile with "
                "start_with_reasoning: see docs/configuration.md."
            )
        lines += [*notes, ""]
    model = "demo-r1" if demo else "YOUR-MODEL"
    ask = json.dumps(QUESTION)
    chat = f'{{"model":"{model}","stream":true,"messages":[{{"role":"user","content":{ask}}}]}}'
    msgs = f'{{"model":"{model}","max_tokens":256,"stream":true,"messages":[{{"role":"user","content":{ask}}}]}}'
    resp = f'{{"model":"{model}","stream":true,"input":{ask}}}'
    lines += [
        'Try it (stream; drop "stream":true for one JSON body):',
        "",
        f"  curl -sN {base}/v1/chat/completions -H 'Content-Type: application/json' \\",
        f"    -d '{chat}'",
        "",
        f"  curl -sN {base}/v1/messages -H 'Content-Type: application/json' -H 'anthropic-version: 2023-06-01' \\",
        f"    -d '{msgs}'",
        "",
        f"  curl -sN {base}/v1/responses -H 'Content-Type: application/json' \\",
        f"    -d '{resp}'",
        "",
        "From Python (pip install openai anthropic):",
        "",
        "  from openai import OpenAI",
        f'  client = OpenAI(base_url="{base}/v1", api_key="unused")',
        f'  r = client.chat.completions.create(model="{model}", messages=[{{"role": "user", "content": {ask}}}])',
        '  print((r.choices[0].message.model_extra or {}).get("reasoning_content"), "|", r.choices[0].message.content)',
        "",
        f'  r = client.responses.create(model="{model}", input={ask})',
        "  print([item.type for item in r.output], r.output_text)",
        "",
        "  from anthropic import Anthropic",
        f'  claude = Anthropic(base_url="{base}", api_key="unused")',
        f'  m = claude.messages.create(model="{model}", max_tokens=256,',
        f'                             messages=[{{"role": "user", "content": {ask}}}])',
        "  print([block.type for block in m.content])",
        "",
        "Ctrl-C stops it.",
    ]
    return "\n".join(lines)


async def serve(settings: Settings) -> None:
    """Listen until SIGINT/SIGTERM; print what to try once the port is open."""
    runner = web.AppRunner(build_app(settings))
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, settings.host, settings.port).start()
        except OSError as exc:
            where = f"{settings.host}:{settings.port}"
            raise SystemExit(f"examples/proxy.py: cannot listen on {where}: {exc.strerror}") from None
        host, port = runner.addresses[0][:2]
        base = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
        print(banner(base, settings), flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


# -- --demo: one request per surface, what the model wrote next to what the client received ----------

Shown = list[tuple[str, str]]  # (where, text) pairs


def _sse_events(body: bytes) -> list[tuple[str | None, Any]]:
    out: list[tuple[str | None, Any]] = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        event, data = None, []
        for line in block.decode().split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data and data != ["[DONE]"]:
            out.append((event, json.loads("\n".join(data))))
    return out


def _chat_shown(body: bytes, stream: bool) -> Shown:
    if not stream:
        message = json.loads(body)["choices"][0]["message"]
        return [(f"message.{k}", v) for k, v in message.items() if k != "role" and isinstance(v, str) and v]
    joined: dict[str, list[str]] = {}
    for _, chunk in _sse_events(body):
        for choice in chunk.get("choices", []):
            for key, value in choice.get("delta", {}).items():
                if key != "role" and isinstance(value, str) and value:
                    joined.setdefault(key, []).append(value)
    return [(f"delta.{k} ×{len(v)}", "".join(v)) for k, v in joined.items()]


def _blocks_shown(content: list[dict[str, Any]]) -> Shown:
    shown = []
    for i, block in enumerate(content):
        kind = block["type"]
        text = block.get("thinking", block.get("text", block.get("data", "")))
        shown.append((f"content[{i}] {kind}", text))
    return shown


def _messages_shown(body: bytes, stream: bool) -> Shown:
    if not stream:
        return _blocks_shown(json.loads(body)["content"])
    blocks: list[dict[str, Any]] = []
    for _, event in _sse_events(body):
        if event["type"] == "content_block_start":
            blocks.append(dict(event["content_block"]))
        elif event["type"] == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            for key in ("thinking", "text"):
                if key in delta:
                    block[key] = block.get(key, "") + delta[key]
    return _blocks_shown(blocks)


def _responses_shown(body: bytes, stream: bool) -> Shown:
    if stream:
        final = [e for _, e in _sse_events(body) if e["type"] == "response.completed"]
        response = final[-1]["response"]
    else:
        response = json.loads(body)
    shown = []
    for i, item in enumerate(response["output"]):
        parts = item.get("content") or []
        shown.append((f"output[{i}] {item['type']}", "".join(p.get("text", "") for p in parts)))
    return shown


_DEMO_EXCHANGES = [
    ("chat completions", "/v1/chat/completions", "chat", "demo-r1", _chat_shown),
    ("Anthropic messages", "/v1/messages", "messages", "demo", _messages_shown),
    ("OpenAI Responses", "/v1/responses", "responses", "demo-r1", _responses_shown),
]
_REASONING_WORDS = ("reasoning", "thinking")


def _side_by_side(left: Shown, right: Shown, width: int = 54) -> list[str]:
    def column(shown: Shown) -> list[str]:
        out = []
        for where, text in shown:
            out.append(where + ":")
            out += ["  " + line for line in textwrap.wrap(repr(text)[1:-1], width - 2) or [""]]
        return out

    lines = [f"  {'the model wrote':<{width}} │ the client received", f"  {'─' * width} ┼ {'─' * width}"]
    for a, b in zip_longest(column(left), column(right), fillvalue=""):
        lines.append(f"  {a:<{width}} │ {b}")
    return lines


_WHY = {"disabled": "the {surface} surface is turned off in the configuration"}


def _reasoning_text(where: str, text: str) -> str:
    """The reasoning a client can read from one shown part (``redacted_thinking`` is base64)."""
    return base64.b64decode(text).decode() if "redacted_thinking" in where else text


async def _demo_exchange(
    session: aiohttp.ClientSession, base: str, app: web.Application, exchange: Any, stream: bool
) -> tuple[list[str], bool]:
    title, path, surface, model, shown = exchange
    body: dict[str, Any] = {"model": model, "stream": stream}
    if surface == "responses":
        body["input"] = QUESTION
    else:
        body["messages"] = [{"role": "user", "content": QUESTION}]
    if surface == "messages":
        body["max_tokens"] = 256
    headers = {"anthropic-version": "2023-06-01"} if surface == "messages" else {}
    async with session.post(base + path, json=body, headers={**headers, THINK_EXTRACT_HEADER: "off"}) as r:
        raw = await r.read()
    stats = app[THINKEXTRACT_STATS]
    before = dict(stats.snapshot()[surface]["passed_through"])
    async with session.post(base + path, json=body, headers=headers) as r:
        got = await r.read()
        status = r.status
    after = stats.snapshot()[surface]["passed_through"]
    passed = [reason for reason, n in after.items() if n != before.get(reason, 0)]
    left, right = shown(raw, stream), shown(got, stream)
    lines = [f"{title} · {'stream' if stream else 'non-stream'} · model {model} · POST {path}"]
    lines += _side_by_side(left, right)

    is_reasoning = [any(x in where for x in _REASONING_WORDS) for where, _ in right]
    reasoning = "".join(_reasoning_text(w, t) for (w, t), r in zip(right, is_reasoning, strict=True) if r)
    answer = "".join(t for (_, t), r in zip(right, is_reasoning, strict=True) if not r)
    expected = extract(demo_model.model_text(model, QUESTION), app[PROXY].settings.think_extract.for_model(model))
    want = (
        "".join(s.text for s in expected if s.kind == "reasoning"),
        "".join(s.text for s in expected if s.kind == "content"),
    )
    where = next((w.split(" ")[0] for (w, _), r in zip(right, is_reasoning, strict=True) if r), "")
    if status == 200 and (reasoning, answer) == want and where:
        return [*lines, f"  ✓ reasoning moved into {where}, answer clean", ""], True
    if status == 200 and right == left and passed and all(reason in _WHY for reason in passed):
        why = "; ".join(_WHY[reason].format(surface=surface) for reason in passed)
        return [*lines, f"  = passed through untranslated ({', '.join(passed)}): {why}", ""], True
    return [*lines, f"  ✗ unexpected result (HTTP {status}, passed through: {passed or 'no'})", ""], False


async def run_demo(settings: Settings, out: Callable[[str], None] = print) -> int:
    """``--demo``: start the proxy on a free port, send each surface's request both ways, print."""
    settings = replace(settings, port=0, host="127.0.0.1")
    app = build_app(settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        upstream = "the embedded demo model" if settings.upstream is None else settings.upstream
        out(f"gateway_mw demo: proxy {base} → {upstream}; each request sent twice, with X-Think-Extract: off")
        out("(what the model wrote) and without (what a client receives).")
        out("")
        ok = True
        async with aiohttp.ClientSession() as session:
            for exchange in _DEMO_EXCHANGES:
                for stream in (False, True):
                    lines, good = await _demo_exchange(session, base, app, exchange, stream)
                    ok = ok and good
                    for line in lines:
                        out(line)
        out("demo: all surfaces answered as expected" if ok else "demo: some answers were not as expected")
        return 0 if ok else 1
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings, args = load_settings(sys.argv[1:] if argv is None else argv)
    except SettingsError as exc:
        print(f"examples/proxy.py: error: {exc}", file=sys.stderr)
        return 2
    if args.demo:
        if settings.upstream is not None or not settings.middleware:
            print(
                "examples/proxy.py: error: --demo runs the embedded demo model through gateway_mw: "
                "leave out --upstream and --no-middleware",
                file=sys.stderr,
            )
            return 2
        if args.pace is None and "GATEWAY_PACE" not in os.environ:
            settings = replace(settings, pace=5000.0)  # fast: this mode only shows the result
        return asyncio.run(run_demo(settings))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
