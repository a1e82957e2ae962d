"""The real ``llama-server`` thinking long, for the budgets the gateway enforces: the tiny model under a
grammar that thinks 60 to 80 words where it thinks, then answers (:class:`Thinking`), and a relaying
proxy in front of it with the middleware (:func:`relaying`), as the packaged gateway relays: each
read written on as it comes, so that the budget's cut stops the upstream."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.stats import ThinkExtractStats

from ..relay import relay, url_of
from .decided import decide
from .llama import CHAT_TEMPLATE, build_gguf

LONG = r"""
root   ::= think? answer
think  ::= "<think>" word (" " word){60,80} "</think>"
answer ::= " " word (" " word){2,4}
word   ::= "alpha" | "beta" | "gamma" | "delta"
"""
BUDGET = 8


class Thinking:
    """``llama-server`` serving the tiny model under ``grammar`` (every answer follows it; by default
    :data:`LONG`), a server of its own: the suite's shared one forces a short reasoning on every
    request. ``decided``: the model made to think right after the generation prompt and never after
    a closing tag (:func:`.decided.decide`), for prompts the tests do not choose (a real client's)."""

    def __init__(
        self,
        binary: Path,
        workdir: Path,
        port: int,
        env: dict[str, str],
        grammar: str = LONG,
        decided: bool = False,
        context: int = 8192,
        predict: int = 256,
    ) -> None:
        model, grammar_file = workdir / "tiny.gguf", workdir / "thinking.gbnf"
        build_gguf(model)
        if decided:
            decide(model)
        grammar_file.write_text(grammar)
        self.base = f"http://127.0.0.1:{port}"
        cmd = [
            str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
            "--grammar-file", str(grammar_file), "--reasoning-format", "none", "--jinja",
            "--chat-template", CHAT_TEMPLATE, "--ctx-size", str(context), "--parallel", "1", "--threads", "2",
            "--seed", "0", "--temp", "1.0", "--n-predict", str(predict), "--no-webui", "--offline",
        ]  # fmt: skip
        self.log = (workdir / "llama-server.log").open("w")
        self.process = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(600):  # a bound for a hang, not a speed: it answers when it is up
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("llama-server did not start:\n" + (workdir / "llama-server.log").read_text()[-4000:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.log.close()


@asynccontextmanager
async def relaying(
    base: str,
    aiohttp_server: Callable[[web.Application], Awaitable[TestServer]],
    route: str,
    config: ThinkExtractConfig,
) -> AsyncIterator[tuple[str, ThinkExtractStats]]:
    """A proxy to ``base`` on ``route`` with the middleware set up with ``config``: its URL and statistics."""
    # A connection per request: llama-server closes a kept-alive one after a few requests, and a
    # request sent on it as it closes fails.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
        app = web.Application()
        stats = setup(app, config, record="off")
        app.router.add_post(route, relay(session, base))
        yield url_of(await aiohttp_server(app)), stats
