"""One module per API surface; each exposes a stream translator and a non-stream body transform."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..config import Surface, ThinkExtractConfig
from ..sse import SSEEvent
from . import chat
from .base import Counts

__all__ = ["BODY_TRANSFORMS", "STREAM_TRANSLATORS", "Counts", "StreamTranslator"]


class StreamTranslator(Protocol):
    """Sans-I/O step logic: one upstream event in, the client's events out."""

    counts: Counts

    def event(self, event: SSEEvent) -> list[SSEEvent]: ...

    def finish(self) -> list[SSEEvent]: ...


BodyTransform = Callable[[bytes, ThinkExtractConfig], tuple[bytes | None, Counts]]

STREAM_TRANSLATORS: dict[Surface, Callable[[ThinkExtractConfig], StreamTranslator]] = {
    "chat": chat.ChatStream,
}
BODY_TRANSFORMS: dict[Surface, BodyTransform] = {
    "chat": chat.transform_body,
}
