"""Client keys: who may use the gateway (and so spend the operator's upstream key).

A client presents a key as ``Authorization: Bearer KEY`` (the OpenAI SDK's way) or ``x-api-key: KEY``
(the Anthropic SDK's). Only SHA-256 digests of the keys are kept, and a presented key is compared with
every one of them in constant time. The key is never logged and never sent upstream.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from aiohttp import hdrs, web

__all__ = ["ClientKeys"]


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()


class ClientKeys:
    """The accepted client keys; empty means the gateway checks no one."""

    __slots__ = ("_digests",)

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._digests = tuple(_digest(key) for key in keys)

    def __bool__(self) -> bool:
        return bool(self._digests)

    def __repr__(self) -> str:
        return f"ClientKeys(<{len(self._digests)} keys>)"

    def accepts(self, key: str) -> bool:
        """Whether ``key`` is one of the keys; the time taken does not depend on which, or how close."""
        presented = _digest(key)
        found = False
        for digest in self._digests:
            found |= hmac.compare_digest(presented, digest)
        return found

    def presented(self, request: web.Request) -> list[str]:
        """The keys a request carries: every ``Authorization: Bearer`` and ``x-api-key`` value."""
        keys = []
        for value in request.headers.getall(hdrs.AUTHORIZATION, ()):
            scheme, _, token = value.strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                keys.append(token.strip())
        keys += [value.strip() for value in request.headers.getall("x-api-key", ()) if value.strip()]
        return keys

    def allows(self, request: web.Request) -> bool:
        """Whether the request carries an accepted key (always, when no keys are set)."""
        if not self._digests:
            return True
        results = [self.accepts(key) for key in self.presented(request)]
        return any(results)
