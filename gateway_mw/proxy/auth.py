"""Client keys: who may use the gateway (and so spend the operator's upstream key), and by which name.

A client presents a key as ``Authorization: Bearer KEY`` (the OpenAI SDK's way) or ``x-api-key: KEY``
(the Anthropic SDK's). Only SHA-256 digests of the keys are kept, and a presented key is compared with
every one of them in constant time. The key is never logged and never sent upstream: logs and metrics
name a client by its key's alias, the name the operator gave the key in the key file.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from aiohttp import web

from ..credentials import bearer_keys

__all__ = ["ClientKeys"]


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()


class ClientKeys:
    """The accepted client keys, each a key or ``(alias, key)``; empty means the gateway checks no one."""

    __slots__ = ("_digests",)

    def __init__(self, keys: Iterable[str | tuple[str, str]] = ()) -> None:
        named = [key if isinstance(key, tuple) else ("unnamed", key) for key in keys]
        self._digests = tuple((_digest(key), alias) for alias, key in named)

    def __bool__(self) -> bool:
        return bool(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def __repr__(self) -> str:
        return f"ClientKeys(<{len(self._digests)} keys>)"

    def alias(self, key: str) -> str | None:
        """The alias of ``key`` if it is one of the keys; the time taken does not depend on which
        key it is, or how close it comes."""
        presented = _digest(key)
        found: str | None = None
        for digest, alias in self._digests:
            if hmac.compare_digest(presented, digest):
                found = alias  # no early exit: every digest is compared
        return found

    def presented(self, request: web.Request) -> list[str]:
        """The keys a request carries: every ``Authorization: Bearer`` and ``x-api-key`` value."""
        return bearer_keys(request.headers)

    def match(self, request: web.Request) -> tuple[str, str] | None:
        """The first accepted key the request carries, with its alias, or ``None`` (refused)."""
        presented = self.presented(request)
        aliases = [self.alias(key) for key in presented]  # each one compared, in full
        return next(((alias, key) for alias, key in zip(aliases, presented, strict=True) if alias is not None), None)

    def identify(self, request: web.Request) -> str | None:
        """The alias of the first accepted key the request carries, or ``None`` (refused)."""
        matched = self.match(request)
        return None if matched is None else matched[0]

    def allows(self, request: web.Request) -> bool:
        """Whether the request carries an accepted key (always, when no keys are set)."""
        return not self._digests or self.identify(request) is not None
