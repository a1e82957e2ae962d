"""Ollama's native ``/api/chat`` requests: each earlier assistant message's reasoning in ``thinking``,
where Ollama reads it (its chat templates render an assistant turn's ``thinking``), in the form of the
plan; ``/api/generate`` carries no history (a prompt, or Ollama's own ``context``) and is left alone.

The messages are chat's (role, content, tool calls): the same transform, with ``thinking`` as the one
carrier and the one field."""

from __future__ import annotations

from .chat import keys as chat_keys
from .chat import prefix as chat_prefix
from .chat import transform_messages
from .plan import Plan
from .recall import Recall

__all__ = ["keys", "prefix", "transform"]

_THINKING = ("thinking",)


def transform(body: bytes, plan: Plan, recall: Recall) -> bytes | None:
    return transform_messages(body, plan, recall, _THINKING, _THINKING)


keys = chat_keys
prefix = chat_prefix
