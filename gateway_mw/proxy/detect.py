"""Which server the upstream is, from its ``GET /v1/models``: the request side writes replayed reasoning
where that server reads it (``upstream_server``).

Each server names itself in the ``owned_by`` of its models: vLLM ``"vllm"``, SGLang ``"sglang"``,
llama.cpp's llama-server ``"llamacpp"``, Ollama the model's namespace (``"library"`` for its own
models), OpenAI ``"openai"``, ``"system"`` or an organisation; Anthropic lists models without
``owned_by`` but with ``"type": "model"``. Anything else, or no answer, is ``generic``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import msgspec

__all__ = ["detect_server", "server_from_models"]

log = logging.getLogger("gateway_mw.proxy")

_OWNERS = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp", "library": "ollama"}
_OPENAI = frozenset({"openai", "system", "openai-internal"})


class _Model(msgspec.Struct):
    id: Any = None
    owned_by: Any = None
    type: Any = None


class _Models(msgspec.Struct):
    data: list[_Model] = []
    models: Any = None  # llama-server and Ollama also list their models here


def server_from_models(body: bytes) -> str:
    """The server that answered ``GET /v1/models`` with ``body``; ``generic`` when it cannot be told."""
    try:
        models = msgspec.json.decode(body, type=_Models).data
    except (msgspec.DecodeError, msgspec.ValidationError):
        return "generic"
    owners = {m.owned_by for m in models if isinstance(m.owned_by, str)}
    for owner in owners:
        if owner in _OWNERS:
            return _OWNERS[owner]
    if owners and owners <= _OPENAI | {o for o in owners if o.startswith("user-") or o.startswith("org-")}:
        return "openai"
    if models and not owners and all(m.type == "model" for m in models):
        return "anthropic"
    return "generic"


async def detect_server(
    session: aiohttp.ClientSession, upstream: str, headers: dict[str, str], timeout: float
) -> str | None:
    """Ask the upstream which server it is; ``None`` when it did not answer (try again later)."""
    url = upstream.rstrip("/") + "/v1/models"
    try:
        async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            body = await resp.read()
            if resp.status != 200:
                return "generic"
    except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
        log.info(
            "upstream %s: GET /v1/models failed (%s); replayed reasoning is written for any server until it "
            "answers (set upstream_server to choose one)",
            upstream,
            type(exc).__name__,
        )
        return None
    return server_from_models(body)
