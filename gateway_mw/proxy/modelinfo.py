"""What the upstream says of a model, for the reasoning controls (``THINKEXTRACT_MODEL_INFO``): an
Ollama upstream is asked ``POST /api/show`` (whether the model can think: Ollama answers 400 to
``think: true`` on one that cannot) and ``GET /api/version`` (which ``think`` levels it accepts).

Each model is asked once and its answer kept; requests for a model being asked wait for that one
call. An ask that fails or takes over :data:`ASK_TIMEOUT` seconds is "not known" (the middleware then
writes the control in the form every version accepts) and is asked again only after
:data:`RETRY_AFTER`. Model names come from clients: at most :data:`MODELS_KEPT` are kept, the least
recently asked forgotten first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

import aiohttp
import msgspec
from aiohttp import hdrs

from ..controls import ModelInfo

__all__ = [
    "ASK_TIMEOUT",
    "KEEP_KNOWN",
    "MODELS_KEPT",
    "RETRY_AFTER",
    "Kept",
    "OllamaModels",
    "thinking_of",
    "version_of",
]

log = logging.getLogger("gateway_mw.proxy")

ASK_TIMEOUT = 2.0
"""Seconds one ask of the upstream may take, all of it: a request waits no longer for it."""
KEEP_KNOWN = 600.0
"""Seconds an answer is kept: a model pulled again under its name may have changed."""
RETRY_AFTER = 30.0
"""Seconds "not known" is kept after a failure, a timeout or a model the server does not have."""
MODELS_KEPT = 1024
NAME_CHARS = 1024
"""A longer model name is no model a server has: not known, never asked (nor kept)."""
ANSWER_BYTES = 8 * 1024 * 1024
"""A larger answer is not read (``/api/show`` carries the license and the template: a few kilobytes)."""

_T = TypeVar("_T")


class _Show(msgspec.Struct):
    capabilities: Any = None


class _Version(msgspec.Struct):
    version: Any = None


def thinking_of(body: bytes) -> bool | None:
    """From Ollama's ``/api/show`` answer: whether ``capabilities`` holds ``thinking``; ``None`` when it
    has no list of them (servers before capabilities were reported, or not Ollama's answer)."""
    try:
        capabilities = msgspec.json.decode(body, type=_Show).capabilities
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if not isinstance(capabilities, list):
        return None
    return "thinking" in capabilities


def version_of(body: bytes) -> tuple[int, ...] | None:
    """From ``{"version": "0.12.4"}``: ``(0, 12, 4)``. A pre-release or build suffix counts as its
    release (``0.12.4-rc1`` is ``(0, 12, 4)``); ``0.0.0`` (a build from source) is not known."""
    try:
        text = msgspec.json.decode(body, type=_Version).version
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if not isinstance(text, str):
        return None
    release = text.strip().removeprefix("v").partition("-")[0].partition("+")[0]
    numbers: list[int] = []
    for part in release.split("."):
        if not part.isascii() or not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers) if any(numbers) else None


class _Entry(Generic[_T]):
    __slots__ = ("task", "until")

    def __init__(self, task: asyncio.Task[_T | None]) -> None:
        self.task = task
        self.until = float("inf")  # set when the answer comes


class Kept(Generic[_T]):
    """Answers by key: one ask at a time per key, shared by every caller; an answer kept for
    ``keep`` seconds, "not known" (``None``) for ``retry``; at most ``size`` keys, the least recently
    asked forgotten first. An ask never raises: a failure is ``None``."""

    def __init__(
        self,
        ask: Callable[[str], Awaitable[_T | None]],
        *,
        size: int,
        keep: float,
        retry: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ask = ask
        self._size = size
        self._keep = keep
        self._retry = retry
        self._clock = clock
        self._entries: OrderedDict[str, _Entry[_T]] = OrderedDict()
        self._running: set[asyncio.Task[_T | None]] = set()  # forgotten ones too, until they end

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: str) -> _T | None:
        entry = self._entries.get(key)
        if entry is None or (entry.task.done() and (entry.task.cancelled() or self._clock() >= entry.until)):
            task = asyncio.create_task(self._answer(key))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            entry = self._entries[key] = _Entry(task)
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)  # a forgotten ask still answers those waiting on it
        self._entries.move_to_end(key)
        # Shielded: a caller that goes away (its client left) does not cancel the others' answer.
        return await asyncio.shield(entry.task)

    async def close(self) -> None:
        """Cancel the asks under way (the application stops)."""
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)

    async def _answer(self, key: str) -> _T | None:
        try:
            value = await self._ask(key)
        except Exception:  # a bug here must not fail the requests waiting: not known
            log.exception("gateway: asking the upstream of a model failed")
            value = None
        entry = self._entries.get(key)
        if entry is not None and entry.task is asyncio.current_task():
            entry.until = self._clock() + (self._keep if value is not None else self._retry)
        return value


class OllamaModels:
    """The ``THINKEXTRACT_MODEL_INFO`` of an Ollama upstream: ``/api/show`` per model, ``/api/version``
    once, both kept (see the module)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        upstream: str,
        headers: Mapping[str, str],
        *,
        timeout: float = ASK_TIMEOUT,
        size: int = MODELS_KEPT,
        keep: float = KEEP_KNOWN,
        retry: float = RETRY_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._upstream = upstream.rstrip("/")
        # Plain bytes (the gateway's session does not inflate answers) and the gateway's own key, if any.
        self._headers = {**headers, hdrs.ACCEPT_ENCODING: "identity"}
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self.thinking = Kept(self._show, size=size, keep=keep, retry=retry, clock=clock)
        self.version = Kept(self._version, size=1, keep=keep, retry=retry, clock=clock)

    async def __call__(self, model: str) -> ModelInfo:
        if not model or len(model) > NAME_CHARS:
            return ModelInfo(version=await self.version.get(""))
        thinking, version = await asyncio.gather(self.thinking.get(model), self.version.get(""))
        return ModelInfo(thinking, version)

    async def close(self) -> None:
        await asyncio.gather(self.thinking.close(), self.version.close())

    async def _show(self, model: str) -> bool | None:
        body = await self._fetch(hdrs.METH_POST, "/api/show", msgspec.json.encode({"model": model}))
        return None if body is None else thinking_of(body)

    async def _version(self, _: str) -> tuple[int, ...] | None:
        body = await self._fetch(hdrs.METH_GET, "/api/version", None)
        return None if body is None else version_of(body)

    async def _fetch(self, method: str, path: str, data: bytes | None) -> bytes | None:
        """The answer's body when it is a 200 of a bounded size; ``None`` otherwise (one DEBUG line:
        no model name, no header)."""
        headers = self._headers if data is None else {**self._headers, hdrs.CONTENT_TYPE: "application/json"}
        try:
            async with self._session.request(
                method, self._upstream + path, data=data, headers=headers, timeout=self._timeout, allow_redirects=False
            ) as resp:
                if resp.status != 200:
                    log.debug("upstream: %s %s answered %d: not known, asked again later", method, path, resp.status)
                    return None
                body = bytearray()
                async for piece in resp.content.iter_chunked(64 * 1024):
                    body += piece
                    if len(body) > ANSWER_BYTES:
                        log.debug("upstream: %s %s answered over %d bytes: not read", method, path, ANSWER_BYTES)
                        return None
                return bytes(body)
        except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
            log.debug("upstream: %s %s failed (%s): not known, asked again later", method, path, type(exc).__name__)
            return None
