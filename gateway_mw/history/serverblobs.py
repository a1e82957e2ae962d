"""The reasoning text in an ``encrypted_content`` SGLang wrote on its own reasoning item.

SGLang holds no key (python/sglang/srt/entrypoints/openai/responses_adapters.py
``encode_reasoning_state``): its blob is a prefix and the base64url of the zlib-compressed text, which it
reads back. A client that replays only that blob (its ``summary`` empty, as SGLang writes it unless asked
for one) gives SGLang's model the reasoning; the gateway reads it too, for every form and server.
"""

from __future__ import annotations

import base64
import binascii
import zlib

__all__ = ["decode_server_blob"]

_PREFIX = "sglang-reasoning-v1."
_RATIO = 64
"""The most a large blob may grow when inflated (text compresses 3–5×; a model's looping reasoning far
more, which a small blob may: up to :data:`_FLOOR`): a bomb is refused, not inflated."""
_FLOOR = 1 << 20


def decode_server_blob(value: str) -> str | None:
    """The text of a blob SGLang wrote; ``None`` for any other, or one that does not inflate whole to
    UTF-8 within :data:`_RATIO` times its size (or :data:`_FLOOR` bytes)."""
    if not value.startswith(_PREFIX):
        return None
    try:
        packed = base64.urlsafe_b64decode(value[len(_PREFIX) :].encode("ascii"))
        limit = max(_RATIO * len(packed), _FLOOR)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, limit + 1)
        if len(raw) > limit or not inflater.eof or inflater.unused_data:
            return None
        return raw.decode("utf-8")
    except (UnicodeError, binascii.Error, ValueError, zlib.error):
        return None
