"""Anthropic messages (``/messages``) as the gateway knows it: one
:class:`~gateway_mw.surfaces.definition.SurfaceDefinition`."""

from __future__ import annotations

from typing import Any, Final

from ...config import ThinkExtractConfig
from ...controls.forms import thinking
from ...controls.side import SurfaceControls
from ...history import messages as history
from ...history.plan import UNKNOWN_FAMILY
from .. import StreamTranslator
from ..base import Counts, NewId, Said
from ..budgeting import BudgetSide
from ..definition import SSE_TYPES, SurfaceDefinition
from ..exclude import ReasoningFilter
from ..said import document, items_of, text_of
from ..usage import BodyUsage
from .body import transform_body
from .budget import SIDE as BUDGET
from .exclude import MessagesWithoutReasoning, body_without_reasoning
from .fastpath import MessagesStream
from .usage import USAGE

__all__ = ["SURFACE"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    504: "timeout_error",
}


def _thinking_as_events(config: ThinkExtractConfig) -> bool:
    """Under the redacted policy a message's thinking reaches the client whole, when it ends."""
    return config.messages_policy != "redacted"


class _Messages:
    name: Final = "messages"
    forward_routes: Final = ("POST messages", "POST messages/count_tokens")  # Claude Code counts tokens
    error_paths: Final = ()
    framing: Final = "sse"
    stream_types: Final = SSE_TYPES
    unknown_family: Final = UNKNOWN_FAMILY
    read_history = staticmethod(history.read)
    transform_history = staticmethod(history.transform)
    history_keys = staticmethod(history.keys)
    answer_prefix = staticmethod(history.prefix)
    budget: Final[BudgetSide | None] = BUDGET
    usage: Final[BodyUsage | None] = USAGE
    # A messages stream carries its usage by itself.
    controls: Final = SurfaceControls(
        thinking, {"stream": b"true"}, reasoning_as_events=_thinking_as_events, texts_around=("system",)
    )

    def stream(self, config: ThinkExtractConfig, new_id: NewId) -> StreamTranslator:
        return MessagesStream(config)

    def transform_body(
        self, body: bytes | bytearray, config: ThinkExtractConfig, new_id: NewId
    ) -> tuple[bytes | None, Counts]:
        return transform_body(body, config)

    def without_reasoning(self) -> ReasoningFilter:
        return MessagesWithoutReasoning()

    def body_without_reasoning(self, body: bytes | bytearray) -> bytes | None:
        return body_without_reasoning(body)

    def said_of_body(self, body: bytes, item_ids: tuple[str, ...]) -> list[Said]:
        doc = document(body)
        if doc is None:
            return []
        content = items_of(doc, "content")
        calls = tuple(
            c["id"]
            for c in content
            if isinstance(c, dict) and c.get("type") == "tool_use" and isinstance(c.get("id"), str)
        )
        return [Said(text_of(doc.get("content"), "text"), calls)]

    def asks_for_blobs(self, read: object, body: bytes) -> bool:
        return False

    def enabled(self, config: ThinkExtractConfig) -> bool:
        return config.messages_policy != "off"

    def story(self, config: ThinkExtractConfig) -> str:
        return f"reasoning into thinking blocks ({config.messages_policy})"

    def error_body(self, status: int, code: str, message: str) -> dict[str, Any]:
        """Anthropic's shape: a ``type`` of its own for each status."""
        return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}


SURFACE: SurfaceDefinition = _Messages()
