"""What an SSE client recovers from the bytes it receives, read by a parser written from the
standard, and the lossless check on it: the model's text with only whole tags taken out. Shared by
the fault and lossless tests of the middleware and of the messages surface."""

from __future__ import annotations

import functools
import json
import re

from gateway_mw import DEFAULT_TAG_PAIRS


def parse_sse(body: bytes) -> list[str]:
    """An SSE parser written from the standard, independent of the project's decoder: the data of
    every dispatched event. A stream that ends inside an event drops that event."""
    out: list[str] = []
    data: list[str] = []
    text = body.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split(r"\r\n|\r|\n", text)
    for line in lines[:-1]:  # the last piece has no line terminator: never a complete line
        if not line:
            if data:
                out.append("\n".join(data))
            data = []
        elif line.startswith("data"):
            name, _, value = line.partition(":")
            if name == "data":
                data.append(value[1:] if value.startswith(" ") else value)
    return out


def recovered(body: bytes, field: str = "reasoning_content") -> list[tuple[str, str]]:
    """(kind, text) of every delta of choice 0 an SSE client reads, in wire order."""
    runs: list[tuple[str, str]] = []
    for data in parse_sse(body):
        try:
            item = json.loads(data)
        except (ValueError, RecursionError):
            continue
        if not isinstance(item, dict):
            continue
        for ch in item.get("choices") or []:
            if not isinstance(ch, dict) or ch.get("index") != 0 or not isinstance(ch.get("delta"), dict):
                continue
            for key, kind in ((field, "reasoning"), ("content", "content")):
                value = ch["delta"].get(key)
                if isinstance(value, str) and value:
                    runs.append((kind, value))
    return runs


TAGS = sorted({t for pair in DEFAULT_TAG_PAIRS[:2] for t in (pair.open, pair.close)}, key=len, reverse=True)


def only_tags_removed(original: str, received: str) -> bool:
    """Whether ``received`` is ``original`` with some whole tag occurrences deleted, nothing else."""

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(original):
            return j == len(received)
        if any(original.startswith(tag, i) and match(i + len(tag), j) for tag in TAGS):
            return True
        return j < len(received) and original[i] == received[j] and match(i + 1, j + 1)

    return match(0, 0)
