"""OpenAI chat completions: inline reasoning → ``reasoning_content`` (or ``reasoning``).

:mod:`.reference` translates a stream plainly (decode, channels, rebuild); :mod:`.fast` is the layer
that proves, on the bytes, what the reference would give for the chunks real servers send most;
:mod:`.body` translates a non-stream body. :mod:`.chunks` reads a chunk, :mod:`.write` and
:mod:`.edits` write one.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from ...config import ThinkExtractConfig
from ...sse import SSEEvent
from ..base import translated
from .body import transform_body
from .fast import ChatStream
from .reference import ChatReference

__all__ = ["ChatReference", "ChatStream", "transform_body", "translate_stream"]


def translate_stream(events: AsyncIterable[SSEEvent], config: ThinkExtractConfig) -> AsyncIterator[SSEEvent]:
    """The async generator form: upstream events in, client events out."""
    return translated(ChatStream(config), events)
