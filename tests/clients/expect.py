"""What each upstream writes, and the shapes a replayed turn must have."""

from __future__ import annotations

from typing import Any

from examples import demo_model

from .scripted import FINAL, PLAIN, TOOL, Turn

__all__ = ["FINAL", "PLAIN", "TOOL", "Turn", "demo_turn", "llama_accepts_reasoning_item", "turn_for"]

QUESTION = "What is 2+2?"


def demo_turn(question: str = QUESTION) -> Turn:
    """What the embedded demo model (model ``demo``) writes for ``question``."""
    text = demo_model.model_text("demo", question)
    reasoning, answer = text.removeprefix("<think>").split("</think>")
    return Turn(reasoning, answer)


def turn_for(upstream: str) -> Turn:
    return demo_turn() if upstream == "demo" else PLAIN


def llama_accepts_reasoning_item(item: dict[str, Any], reasoning: str) -> bool:
    """A replayed reasoning item every upstream reads: a ``summary`` array and the text in ``content[0]``
    (llama.cpp requires both; vLLM reads ``content[0].text`` first), no ``encrypted_content`` (vLLM rejects it)."""
    content = item.get("content")
    return (
        item.get("type") == "reasoning"
        and isinstance(item.get("summary"), list)
        and isinstance(content, list)
        and len(content) >= 1
        and content[0] == {"type": "reasoning_text", "text": reasoning}
        and not item.get("encrypted_content")
    )
