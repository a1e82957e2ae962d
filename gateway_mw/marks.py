"""What the gateway writes so that it knows it again when a client sends it back.

A leaf module: the response side writes these values, the request side reads them.

* a ``thinking`` block's signature: ``gw1:`` and the base64url SHA-256 of the thinking text;
* a ``redacted_thinking`` block's data: the base64 of the reasoning text;
* a Responses reasoning item's ``encrypted_content``: ``gw1:`` and the base64 of the reasoning text
  (not encrypted: the client was given that text already; the name is the API's);
* the ids it makes up (``rs_…``, ``msg_…``): the prefix, 24 random hex digits and 8 that check them,
  so that an id the gateway made is told from an upstream's with a chance of 2⁻³² of a mistake.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "BLOB_PREFIX",
    "SIGNATURE_PREFIX",
    "NewId",
    "decode_blob",
    "decode_redacted",
    "encode_blob",
    "gateway_signature",
    "is_gateway_id",
    "random_id",
    "redacted_data",
    "signature_of",
]

SIGNATURE_PREFIX = "gw1:"
"""Every signature this gateway writes starts with this; Anthropic's own never do."""
BLOB_PREFIX = "gw1:"
"""Every ``encrypted_content`` this gateway writes starts with this."""

NewId = Callable[[str], str]
"""The source of the ids a translator makes up (``rs_…``, ``msg_…``): given the prefix, a new id."""

_ID = re.compile(r"[a-z]+_([0-9a-f]{24})([0-9a-f]{8})")


def gateway_signature(thinking: str) -> str:
    """The signature of a ``thinking`` block: the prefix, then the unpadded base64url SHA-256 of
    the thinking text (UTF-8). Derived from the text alone: every worker, stream or not, agrees."""
    return signature_of(hashlib.sha256(thinking.encode()))


def signature_of(digest: Any) -> str:
    """The signature from a SHA-256 fed the thinking text: a stream hashes it as it goes by."""
    return SIGNATURE_PREFIX + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def redacted_data(reasoning: str) -> str:
    return base64.b64encode(reasoning.encode()).decode()


def decode_redacted(data: str) -> str | None:
    """The reasoning text of a ``redacted_thinking`` block this gateway wrote; ``None`` for one it
    did not (Anthropic's own data is ciphertext: not base64 of UTF-8 text)."""
    try:
        text = base64.b64decode(data.encode("ascii"), validate=True).decode("utf-8")
    except (UnicodeError, binascii.Error, ValueError):
        return None
    return None if any(ch < " " and ch not in "\t\n\r" for ch in text) else text


def encode_blob(reasoning: str) -> str:
    return BLOB_PREFIX + base64.b64encode(reasoning.encode()).decode()


def decode_blob(value: str) -> str | None:
    """The reasoning text of an ``encrypted_content`` this gateway wrote; ``None`` for any other."""
    if not value.startswith(BLOB_PREFIX):
        return None
    try:
        return base64.b64decode(value[len(BLOB_PREFIX) :].encode("ascii"), validate=True).decode("utf-8")
    except (UnicodeError, binascii.Error, ValueError):
        return None


def _check(random_part: str) -> str:
    return hashlib.sha256(b"gateway_mw id " + random_part.encode()).hexdigest()[:8]


def random_id(prefix: str) -> str:
    """A new id: ``prefix``, then 32 hex digits as the real APIs' ids look (24 random, 8 that
    mark it as this gateway's)."""
    random_part = os.urandom(12).hex()
    return prefix + random_part + _check(random_part)


def is_gateway_id(value: str) -> bool:
    """Whether ``value`` is an id :func:`random_id` made."""
    found = _ID.fullmatch(value)
    return found is not None and _check(found.group(1)) == found.group(2)
