"""The gateway's ``THINKEXTRACT_TOKEN_COUNTER``: its upstream's own tokenizer, ``POST /tokenize``.

Each server spells the call its own way (read from their sources):

* vLLM (``vllm/entrypoints/serve/tokenize``) and SGLang (``serving_tokenize.py``):
  ``{"model": …, "prompt": TEXT, "add_special_tokens": false}`` →
  ``{"count": N, "tokens": […], "max_model_len": …}``;
* llama.cpp's llama-server (``tools/server``): ``{"content": TEXT, "add_special": false}`` →
  ``{"tokens": […]}``.

Special tokens are not added: the text is a part of the answer, not a prompt of its own. Ollama has
no tokenize endpoint, nor have OpenAI and Anthropic (their usage counts reasoning itself), nor a
server the gateway does not know: no one is asked there.

Bounded: a text over :data:`TEXT_BYTES` is not sent, an answer over :data:`ANSWER_BYTES` not read; at
most :data:`AT_ONCE` asks are under way, and an ask (its wait for a turn included) ends after
:data:`ASK_TIMEOUT` seconds. Any failure is "not known", one DEBUG line (no text, no model name).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
import msgspec
from aiohttp import hdrs

__all__ = ["ANSWER_BYTES", "ASK_TIMEOUT", "AT_ONCE", "TEXT_BYTES", "UpstreamTokenizer", "tokens_of"]

log = logging.getLogger("gateway_mw.proxy")

ASK_TIMEOUT = 2.0
"""Seconds one count may take, its wait for a turn included: an answer waits no longer for it."""
AT_ONCE = 16
"""Counts under way at once: a burst of answers does not become a burst of calls on the upstream."""
TEXT_BYTES = 4 * 1024 * 1024
"""A longer reasoning text is not sent (the body it came in was bounded by ``max_body_bytes``)."""
ANSWER_BYTES = 64 * 1024 * 1024
"""A larger answer is not read: llama-server lists every token's id (a few bytes each)."""

_SERVERS = frozenset({"vllm", "sglang", "llamacpp"})


class _Tokenized(msgspec.Struct):
    count: Any = None
    tokens: Any = None


def tokens_of(body: bytes) -> int | None:
    """The count in a ``/tokenize`` answer: its ``count`` (vLLM, SGLang), else the length of its
    ``tokens`` list (llama.cpp); ``None`` for anything else."""
    try:
        answer = msgspec.json.decode(body, type=_Tokenized)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    count = answer.count
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    return len(answer.tokens) if isinstance(answer.tokens, list) else None


def request_of(server: str, model: str | None, text: str) -> bytes:
    """The ``/tokenize`` body ``server`` reads."""
    if server == "llamacpp":
        return msgspec.json.encode({"content": text, "add_special": False})
    fields: dict[str, Any] = {"prompt": text, "add_special_tokens": False}
    if model is not None:
        fields = {"model": model, **fields}
    return msgspec.json.encode(fields)


class UpstreamTokenizer:
    """Counts a text's tokens with the upstream's ``/tokenize`` (see the module)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        upstream: str,
        headers: Mapping[str, str],
        server: Callable[[], str],
        *,
        timeout: float = ASK_TIMEOUT,
        at_once: int = AT_ONCE,
    ) -> None:
        self._session = session
        self._url = upstream.rstrip("/") + "/tokenize"
        # Plain bytes, JSON, and the gateway's own key, if any.
        self._headers = {**headers, hdrs.ACCEPT_ENCODING: "identity", hdrs.CONTENT_TYPE: "application/json"}
        self._server = server
        self._timeout = timeout
        self._turns = asyncio.Semaphore(at_once)

    async def __call__(self, model: str | None, text: str) -> int | None:
        server = self._server()
        if server not in _SERVERS:
            return None
        data = request_of(server, model, text)
        if len(data) > TEXT_BYTES:
            log.debug("upstream: POST /tokenize not asked: the text is over %d bytes", TEXT_BYTES)
            return None
        try:
            body = await asyncio.wait_for(self._ask(data), self._timeout)
        except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
            log.debug("upstream: POST /tokenize failed (%s): reasoning tokens not counted", type(exc).__name__)
            return None
        return None if body is None else tokens_of(body)

    async def _ask(self, data: bytes) -> bytes | None:
        async with self._turns:
            return await self._post(data)

    async def _post(self, data: bytes) -> bytes | None:
        async with self._session.post(self._url, data=data, headers=self._headers, allow_redirects=False) as resp:
            if resp.status != 200:
                log.debug("upstream: POST /tokenize answered %d: reasoning tokens not counted", resp.status)
                return None
            body = bytearray()
            async for piece in resp.content.iter_chunked(64 * 1024):
                body += piece
                if len(body) > ANSWER_BYTES:
                    log.debug("upstream: POST /tokenize answered over %d bytes: not read", ANSWER_BYTES)
                    return None
            return bytes(body)
