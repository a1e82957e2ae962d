"""Ollama's native ``/api/chat`` requests: each earlier assistant message's reasoning in ``thinking``,
where Ollama reads it (its chat templates render an assistant turn's ``thinking``), in the form of the
plan; ``/api/generate`` carries no history (a prompt, or Ollama's own ``context``) and is left alone.

The messages are chat's (role, content, tool calls): the same transform, with ``thinking`` as the one
carrier and the one field."""

from __future__ import annotations

from .chat import Chat, keys_of, transform_messages
from .chat import prefix as chat_prefix
from .chat import read as chat_read
from .plan import Plan
from .recall import Recall

__all__ = ["keys", "prefix", "read", "transform"]

_THINKING = ("thinking",)


def transform(chat: Chat, plan: Plan, recall: Recall) -> bytes | None:
    return transform_messages(chat, plan, recall, _THINKING, _THINKING)


def keys(chat: Chat, turns: int, plan: Plan | None = None) -> list[str]:
    return keys_of(chat, turns, plan, _THINKING)


read = chat_read
prefix = chat_prefix
