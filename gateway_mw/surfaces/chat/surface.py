"""OpenAI chat completions (``/chat/completions``) as the gateway knows it: one
:class:`~gateway_mw.surfaces.definition.SurfaceDefinition`."""

from __future__ import annotations

from typing import Any, Final

from ...calls import call_spellings
from ...config import ThinkExtractConfig
from ...controls.forms import reasoning_effort
from ...controls.side import SurfaceControls
from ...history import chat as history
from ...history.plan import UNKNOWN_FAMILY
from .. import StreamTranslator
from ..base import Counts, NewId, Said
from ..budgeting import BudgetSide
from ..definition import SSE_TYPES, SurfaceDefinition
from ..errors import openai_error
from ..exclude import ReasoningFilter
from ..said import document, ids_of, items_of, text_of
from ..usage import BodyUsage
from .body import transform_body
from .budget import SIDE as BUDGET
from .exclude import ChatWithoutReasoning, body_without_reasoning
from .fast import ChatStream
from .usage import USAGE

__all__ = ["SURFACE"]


class _Chat:
    name: Final = "chat"
    forward_routes: Final = ("POST chat/completions",)
    error_paths: Final = ()
    framing: Final = "sse"
    stream_types: Final = SSE_TYPES
    unknown_family: Final = UNKNOWN_FAMILY
    read_history = staticmethod(history.read)
    transform_history = staticmethod(history.transform)
    history_keys = staticmethod(history.keys)
    answer_prefix = staticmethod(history.prefix)
    error_body = staticmethod(openai_error)
    budget: Final[BudgetSide | None] = BUDGET
    usage: Final[BodyUsage | None] = USAGE
    # A chat stream carries its usage only when asked to.
    controls: Final = SurfaceControls(
        reasoning_effort, {"stream": b"true", "stream_options": b'{"include_usage":true}'}
    )

    def stream(self, config: ThinkExtractConfig, new_id: NewId) -> StreamTranslator:
        return ChatStream(config)

    def transform_body(
        self, body: bytes | bytearray, config: ThinkExtractConfig, new_id: NewId
    ) -> tuple[bytes | None, Counts]:
        return transform_body(body, config)

    def without_reasoning(self) -> ReasoningFilter:
        return ChatWithoutReasoning()

    def body_without_reasoning(self, body: bytes | bytearray) -> bytes | None:
        return body_without_reasoning(body)

    def said_of_body(self, body: bytes, item_ids: tuple[str, ...]) -> list[Said]:
        out = []
        for choice in items_of(document(body), "choices"):
            message = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(message, dict):
                calls: Any = message.get("tool_calls")
                out.append(
                    Said(text_of(message.get("content"), "text"), ids_of(calls, "id"), (), call_spellings(calls))
                )
        return out

    def asks_for_blobs(self, read: object, body: bytes) -> bool:
        return False

    def enabled(self, config: ThinkExtractConfig) -> bool:
        return config.chat_enabled

    def story(self, config: ThinkExtractConfig) -> str:
        return f"reasoning into chat_reasoning_field={config.chat_reasoning_field}"


SURFACE: SurfaceDefinition = _Chat()
