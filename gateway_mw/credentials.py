"""The API keys a request presents, and the reasoning record's scope they make.

A client presents its key as ``Authorization: Bearer KEY`` (the OpenAI SDK's way) or ``x-api-key: KEY``
(the Anthropic SDK's): the same key either way is the same client.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from multidict import CIMultiDictProxy

__all__ = ["bearer_keys", "credentials", "scope_for"]

_SCOPE_KEY = b"gateway_mw reasoning record scope"
_SCOPED = hmac.new(_SCOPE_KEY, digestmod=hashlib.sha256)
"""The keyed digest with the key taken in, copied for each scope (never fed itself): a fresh one
costs a request about twice as much CPU, the key's own hashing included."""


def bearer_keys(headers: CIMultiDictProxy[str]) -> list[str]:
    """Every ``Authorization: Bearer`` token and ``x-api-key`` value of a request, in order."""
    keys = []
    for value in headers.getall("Authorization", ()):
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            keys.append(token.strip())
    keys += [value.strip() for value in headers.getall("x-api-key", ()) if value.strip()]
    return keys


def credentials(headers: CIMultiDictProxy[str]) -> list[str]:
    """What identifies a request's client: its keys (:func:`bearer_keys`), and any ``Authorization``
    of another scheme (``Basic …``) as it is written."""
    others = []
    for value in headers.getall("Authorization", ()):
        scheme = value.strip().partition(" ")[0]
        if scheme and scheme.lower() != "bearer":
            others.append(value.strip())
    return bearer_keys(headers) + others


def scope_for(keys: Iterable[str]) -> bytes:
    """The record scope of a client that presents ``keys``: a keyed digest of the distinct keys, in
    any order and however presented; ``b""`` (the scope of every request without a key) for none."""
    distinct = sorted(set(keys))
    if not distinct:
        return b""
    credential = "\n".join(distinct).encode("utf-8", "surrogateescape")
    scoped = _SCOPED.copy()
    scoped.update(credential)
    return scoped.digest()
