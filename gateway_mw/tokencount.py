"""Where the middleware asks how many tokens a text is (``THINKEXTRACT_TOKEN_COUNTER``): for a
non-stream answer's reasoning, whose usage lacks the count (see :mod:`.surfaces.usage`).

A stream's reasoning is counted by its events as it passes, with no one asked; a body is one piece of
text, and only the model's tokenizer knows its tokens. The application installs a counter; the
packaged gateway installs one that asks its upstream's ``/tokenize``. Without one, a body's usage is
left as the server wrote it.

The counter is asked once per body, with all its reasoning text. It may fail, time out or answer
``None``: the count is then not written, and the answer goes on as it came (never a failed request).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from aiohttp import web

__all__ = [
    "COUNT_TIMEOUT",
    "THINKEXTRACT_REASONING_TOKENS",
    "THINKEXTRACT_TOKEN_COUNTER",
    "ReasoningTokens",
    "TokenCounter",
    "count_tokens",
]

log = logging.getLogger("gateway_mw")

TokenCounter = Callable[[str | None, str], Awaitable["int | None"]]
"""``await counter(model, text)``: how many tokens ``text`` is to ``model``'s tokenizer (no special
tokens added), or ``None`` when it cannot say."""

THINKEXTRACT_TOKEN_COUNTER: web.AppKey[TokenCounter] = web.AppKey("THINKEXTRACT_TOKEN_COUNTER")
"""Optional: how the middleware counts a non-stream answer's reasoning tokens for its usage. The
gateway sets it to its upstream's tokenizer; without it, no body's usage is filled."""

COUNT_TIMEOUT = 5.0
"""Seconds the middleware waits for a counter, whatever the counter's own timeout: the answer then
goes on without the count."""


async def count_tokens(counter: TokenCounter, model: str | None, text: str) -> int | None:
    """``counter``'s answer, or ``None`` when it fails, takes over :data:`COUNT_TIMEOUT` seconds or
    answers something other than a whole number (the application's bug is logged, never raised)."""
    try:
        tokens = await asyncio.wait_for(counter(model, text), COUNT_TIMEOUT)
    except asyncio.TimeoutError:
        log.debug("gateway_mw: the token counter took over %s s: the usage is left as it was", COUNT_TIMEOUT)
        return None
    except Exception:
        log.exception("gateway_mw: the token counter failed: the usage is left as it was")
        return None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        return None
    return tokens


class ReasoningTokens(NamedTuple):
    """The reasoning count the gateway wrote into an answer's usage, and what it counted."""

    tokens: int
    counted: str
    """``reasoning events`` (a stream's events that carried reasoning), ``tokenizer`` (a body's
    reasoning text, tokenized by the counter) or ``server`` (a body whose server wrote its count
    outside the API's field: SGLang's ``usage.reasoning_tokens``)."""


THINKEXTRACT_REASONING_TOKENS = web.RequestKey("THINKEXTRACT_REASONING_TOKENS", ReasoningTokens)
"""Set on a request whose answer's usage got the gateway's reasoning count."""
