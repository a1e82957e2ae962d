"""Running the gateway: the banner, serving until a signal, ``main()`` for ``gateway-mw``.

Signals: SIGHUP reads the client keys again (open requests go on); SIGTERM fails ``/readyz`` for
``drain_delay`` seconds while the gateway serves on, then it stops listening and open requests get
``shutdown_timeout`` seconds; SIGINT (Ctrl-C), or a second SIGTERM, skips the delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence

import msgspec
from aiohttp import web

from . import demo_model
from .app import PROXY, build_app
from .connections import AcceptErrors, GatewayRunner
from .forwarding import Proxy
from .logs import ACCESS_LOG_FORMAT, configure_logging, warn_demo
from .logsafe import GatewayAccessLogger
from .settings import Settings, SettingsError, load_settings

__all__ = ["ACCESS_LOG_FORMAT", "banner", "configure_logging", "main", "make_runner", "serve", "warn_demo"]

log = logging.getLogger("gateway_mw.proxy")

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
    keyed = bool(settings.client_keys)
    if keyed:
        lines += ["Client keys are required: put one of yours in place of YOUR-KEY below.", ""]
    key = "YOUR-KEY" if keyed else "unused"
    bearer = " -H 'Authorization: Bearer YOUR-KEY'" if keyed else ""
    x_api_key = " -H 'x-api-key: YOUR-KEY'" if keyed else ""
    model = "demo-r1" if demo else "YOUR-MODEL"
    ask = json.dumps(QUESTION)
    chat = f'{{"model":"{model}","stream":true,"messages":[{{"role":"user","content":{ask}}}]}}'
    msgs = f'{{"model":"{model}","max_tokens":256,"stream":true,"messages":[{{"role":"user","content":{ask}}}]}}'
    resp = f'{{"model":"{model}","stream":true,"input":{ask}}}'
    lines += [
        'Try it (stream; drop "stream":true for one JSON body):',
        "",
        f"  curl -sN {base}/v1/chat/completions -H 'Content-Type: application/json'{bearer} \\",
        f"    -d '{chat}'",
        "",
        f"  curl -sN {base}/v1/messages -H 'Content-Type: application/json' -H 'anthropic-version: 2023-06-01'"
        f"{x_api_key} \\",
        f"    -d '{msgs}'",
        "",
        f"  curl -sN {base}/v1/responses -H 'Content-Type: application/json'{bearer} \\",
        f"    -d '{resp}'",
        "",
        "From Python (pip install openai anthropic):",
        "",
        "  from openai import OpenAI",
        f'  client = OpenAI(base_url="{base}/v1", api_key="{key}")',
        f'  r = client.chat.completions.create(model="{model}", messages=[{{"role": "user", "content": {ask}}}])',
        '  print((r.choices[0].message.model_extra or {}).get("reasoning_content"), "|", r.choices[0].message.content)',
        "",
        f'  r = client.responses.create(model="{model}", input={ask})',
        "  print([item.type for item in r.output], r.output_text)",
        "",
        "  from anthropic import Anthropic",
        f'  claude = Anthropic(base_url="{base}", api_key="{key}")',
        f'  m = claude.messages.create(model="{model}", max_tokens=256,',
        f'                             messages=[{{"role": "user", "content": {ask}}}])',
        "  print([block.type for block in m.content])",
        "",
        "Ctrl-C stops it.",
    ]
    return "\n".join(lines)


def make_runner(settings: Settings, app: web.Application | None = None) -> web.AppRunner:
    """The runner ``serve()`` uses: the gateway's connections (:mod:`.connections`), the access log as
    configured, ``shutdown_timeout`` for open requests."""
    return GatewayRunner(
        build_app(settings) if app is None else app,
        access_log=logging.getLogger("aiohttp.access") if settings.access_log else None,
        access_log_class=GatewayAccessLogger,
        access_log_format=ACCESS_LOG_FORMAT,
        shutdown_timeout=settings.shutdown_timeout,
        header_timeout=settings.header_timeout,
        body_timeout=settings.read_timeout,
    )


async def serve(settings: Settings, prog: str = "gateway-mw") -> None:
    """Listen until SIGINT/SIGTERM; print what to try once the port is open.

    On SIGTERM, ``/readyz`` fails for ``drain_delay`` seconds while it serves on. Then it stops the way
    ``web.run_app`` does: no new connections, open requests get up to ``shutdown_timeout`` seconds to
    finish, then the application's cleanup runs. (``run_app`` itself
    is not used because it cannot tell the port it bound before serving, which ``--port 0`` and the
    banner need.)
    """
    asyncio.get_running_loop().set_exception_handler(AcceptErrors())
    runner = make_runner(settings)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, settings.host, settings.port).start()
        except OSError as exc:
            where = f"{settings.host}:{settings.port}"
            raise SystemExit(f"{prog}: cannot listen on {where}: {exc.strerror}") from None
        host, port = runner.addresses[0][:2]
        base = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
        print(banner(base, settings), flush=True)
        warn_demo(settings)  # after the banner, where it is seen; still the first line of the log
        await _until_stopped(runner.app[PROXY], settings)
    finally:
        await runner.cleanup()


async def _until_stopped(proxy: Proxy, settings: Settings) -> None:
    """Serve until SIGINT, or SIGTERM and ``drain_delay``; SIGHUP reloads the client keys meanwhile."""
    loop = asyncio.get_running_loop()
    stop, term = asyncio.Event(), asyncio.Event()

    def on_term() -> None:
        if term.is_set():
            stop.set()  # a second SIGTERM: stop now
        term.set()

    def on_hup() -> None:
        try:
            count = proxy.reload_keys(os.environ)
        except SettingsError as exc:
            log.error("SIGHUP: client keys not reloaded, the previous ones stay: %s", exc)
        else:
            log.info("SIGHUP: client keys reloaded: %d key%s", count, "" if count == 1 else "s")

    handlers = {signal.SIGINT: stop.set, signal.SIGTERM: on_term, signal.SIGHUP: on_hup}
    for sig, handler in handlers.items():
        # Windows' event loops take no signal handlers, and it has no SIGHUP: Ctrl-C still stops it.
        with contextlib.suppress(NotImplementedError, AttributeError):
            loop.add_signal_handler(sig, handler)
    waiters = [asyncio.ensure_future(event.wait()) for event in (stop, term)]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        proxy.draining = True
        if term.is_set() and not stop.is_set() and settings.drain_delay > 0:
            log.info(
                "SIGTERM: /readyz fails for %gs while the gateway serves on; then it stops listening",
                settings.drain_delay,
            )
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), settings.drain_delay)
    finally:
        for waiter in waiters:
            waiter.cancel()
    log.info("stopping: open requests get %gs", settings.shutdown_timeout)


def main(argv: Sequence[str] | None = None, prog: str = "gateway-mw") -> int:
    """The ``gateway-mw`` command (also ``python -m gateway_mw`` and ``examples/proxy.py``)."""
    try:
        settings, args = load_settings(sys.argv[1:] if argv is None else argv, prog=prog)
    except SettingsError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings)
    if args.demo:
        if settings.upstream is not None or not settings.middleware:
            print(
                f"{prog}: error: --demo runs the embedded demo model through gateway_mw: "
                "leave out --upstream and --no-middleware",
                file=sys.stderr,
            )
            return 2
        if args.pace is None and "GATEWAY_PACE" not in os.environ:
            settings = msgspec.structs.replace(settings, pace=5000.0)  # fast: this mode only shows the result
        from .demo import run_demo

        return asyncio.run(run_demo(settings))
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(settings, prog))
    except SettingsError as exc:  # found when the application is built (a reasoning_store it cannot open)
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0
