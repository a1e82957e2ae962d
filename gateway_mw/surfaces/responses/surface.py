"""OpenAI Responses (``/responses``) as the gateway knows it: one
:class:`~gateway_mw.surfaces.definition.SurfaceDefinition`."""

from __future__ import annotations

from typing import Final

from ...config import ThinkExtractConfig
from ...controls.forms import reasoning
from ...controls.side import SurfaceControls
from ...history import responses as history
from ...history.plan import UNKNOWN_FAMILY
from .. import StreamTranslator
from ..base import Counts, NewId, Said
from ..budgeting import BudgetSide
from ..definition import SSE_TYPES, SurfaceDefinition
from ..errors import openai_error
from ..exclude import ReasoningFilter
from ..said import document, items_of, text_of
from ..usage import BodyUsage
from .budgetside import SIDE as BUDGET
from .exclude import ResponsesWithoutReasoning, body_without_reasoning
from .stream import ResponsesStream, transform_body
from .usage import USAGE

__all__ = ["SURFACE"]


class _Responses:
    name: Final = "responses"
    forward_routes: Final = ("POST responses",)
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
    controls: Final = SurfaceControls(
        reasoning, {"stream": b"true"}, conversation="input", texts_around=("instructions",)
    )
    error_body = staticmethod(openai_error)

    def asks_for_blobs(self, read: object, body: bytes) -> bool:
        if isinstance(read, history.Responses):
            return read.blobs
        return history.asks_for_blobs(body)  # no input read: its include still says

    def stream(self, config: ThinkExtractConfig, new_id: NewId) -> StreamTranslator:
        return ResponsesStream(config, new_id=new_id)

    def transform_body(
        self, body: bytes | bytearray, config: ThinkExtractConfig, new_id: NewId
    ) -> tuple[bytes | None, Counts]:
        return transform_body(body, config, new_id=new_id)

    def without_reasoning(self) -> ReasoningFilter:
        return ResponsesWithoutReasoning()

    def body_without_reasoning(self, body: bytes | bytearray) -> bytes | None:
        return body_without_reasoning(body)

    def said_of_body(self, body: bytes, item_ids: tuple[str, ...]) -> list[Said]:
        """One answer: the text of its message items, its calls, and the ids of its items (the
        gateway's, then the upstream's message items')."""
        doc = document(body)
        if doc is None:
            return []
        texts: list[str] = []
        calls: list[str] = []
        messages: list[str] = []
        for item in items_of(doc, "output"):  # one pass over the items
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "message":
                texts.append(text_of(item.get("content"), "output_text"))
                if isinstance(message_id := item.get("id"), str) and message_id not in item_ids:
                    messages.append(message_id)
            elif kind == "function_call" and isinstance(call_id := item.get("call_id"), str):
                calls.append(call_id)
        return [Said("".join(texts), tuple(calls), (*item_ids, *messages))]

    def enabled(self, config: ThinkExtractConfig) -> bool:
        return config.responses_enabled

    def story(self, config: ThinkExtractConfig) -> str:
        return "reasoning into reasoning items"


SURFACE: SurfaceDefinition = _Responses()
