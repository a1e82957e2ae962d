"""Lone surrogate escapes (``"\\ud83d"`` alone: what JavaScript writes for a string cut inside an
emoji) in a request body: valid JSON that no decoder turns into text, so that one of them in a tool
result would keep the whole history from being read.

Each is masked for the transform by a JSON spelling of the same length that decodes, ``\\\\d83d``
(a backslash, then the escape's hex digits): a string that holds one is read and written again as
``\\\\d83d``, and the mask is lifted from the transform's output, which gives the escape back as the
client spelled it. A body that already spells a backslash before such digits is not masked (the mask
could not be told from it): it goes as it came.
"""

from __future__ import annotations

import re

__all__ = ["lifted", "mask", "unmask"]

_ESCAPE = re.compile(rb"(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})")
"""A backslash run, then ``u`` and a surrogate's hex digits: an escape when the run is odd."""
_MASKED = re.compile(rb"(\\+)([dD][89a-fA-F][0-9a-fA-F]{2})")
"""A backslash run, then a surrogate's hex digits: a masked escape at its end when the run is even."""
_BACKSLASH_ESCAPE = re.compile(rb"\\u005[cC]")


def _is_high(digits: bytes) -> bool:
    return digits[1] in b"89abAB"


def mask(body: bytes) -> bytes | None:
    """``body`` with every lone surrogate escape masked; ``None`` when it holds none (or when it
    cannot be masked, and the body goes as it came)."""
    if body.find(b"\\ud") < 0 and body.find(b"\\uD") < 0:
        return None
    escapes = [m for m in _ESCAPE.finditer(body) if len(m.group(1)) % 2 == 1]
    lone: list[int] = []  # where the ``u`` of each lone escape is
    i = 0
    while i < len(escapes):
        here = escapes[i]
        nxt = escapes[i + 1] if i + 1 < len(escapes) else None
        if (
            _is_high(here.group(2))
            and nxt is not None
            and nxt.start(1) == here.end()
            and len(nxt.group(1)) == 1
            and not _is_high(nxt.group(2))
        ):
            i += 2  # a pair: one character
            continue
        lone.append(here.end(1))
        i += 1
    if not lone:
        return None
    if _BACKSLASH_ESCAPE.search(body) or any(len(m.group(1)) % 2 == 0 for m in _MASKED.finditer(body)):
        return None
    masked = bytearray(body)
    for at in lone:
        masked[at] = 0x5C  # the ``u`` becomes a backslash: an escaped backslash, then the digits
    return bytes(masked)


def unmask(body: bytes) -> bytes:
    """The transform's output of a masked body, every masked escape given back."""
    return _MASKED.sub(_lift, body)


def lifted(out: bytes, masked: bytes) -> bytes | None:
    """:func:`unmask` of ``out``, a transform's output of the ``masked`` body, when it holds no more
    masked escapes than that body: ``None`` when it does (text the transform wrote itself, a reasoning
    that spells ``C:\\\\dead``, would be lifted into a lone surrogate: the body goes as it came)."""
    if _count(out) > _count(masked):
        return None
    return unmask(out)


def _count(body: bytes) -> int:
    """The masked escapes in ``body``: backslash runs of even length before a surrogate's digits."""
    return sum(1 for m in _MASKED.finditer(body) if len(m.group(1)) % 2 == 0)


def _lift(found: re.Match[bytes]) -> bytes:
    run, digits = found.group(1), found.group(2)
    if len(run) % 2 == 1:
        return found.group(0)
    return run[:-1] + b"u" + digits
