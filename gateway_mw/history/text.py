"""Reasoning written inline in a replayed text: found with the model's own tags, and written back."""

from __future__ import annotations

from ..config import ThinkExtractConfig
from ..scanner import CONTENT, extract
from ..tags import TagPair

__all__ = ["inline", "may_hold_reasoning", "split_inline", "split_written"]


def _reading(config: ThinkExtractConfig) -> ThinkExtractConfig:
    """The settings a replayed text is read with, kept with ``config`` (made once, not per message)."""
    reading: ThinkExtractConfig | None = config.derived.get("replayed")
    if reading is None:
        # A replayed text holds the model's tags as written: an answer that starts without an open
        # tag is answer, whatever a template injects in front of a live one.
        reading = config.derived["replayed"] = config.replace(start_with_reasoning=False, separator="\n")
    return reading


def split_inline(text: str, config: ThinkExtractConfig) -> tuple[str, str]:
    """``text`` as (reasoning, answer): the reasoning it holds in the model's tags, and the rest."""
    if not text:
        return "", text
    reading = _reading(config)
    if not may_hold_reasoning(text, reading):
        return "", text
    segments = extract(text, reading)
    reasoning = "".join(s.text for s in segments if s.kind != CONTENT)
    if not reasoning:
        return "", text
    return reasoning, "".join(s.text for s in segments if s.kind == CONTENT)


def may_hold_reasoning(text: str, config: ThinkExtractConfig) -> bool:
    """``False`` when ``text``, read with ``config``, surely holds no reasoning, known without the
    scanner: read from outside reasoning, only an open tag starts some, and none is in it."""
    if config.protocol != "tags" or config.start_with_reasoning:
        return True
    return any(pair.open in text for pair in config.tag_pairs)


_HARMONY = TagPair("<|channel|>analysis<|message|>", "<|end|><|start|>assistant<|channel|>final<|message|>")


def split_written(text: str, config: ThinkExtractConfig) -> tuple[str, str]:
    """What the model wrote, as (reasoning, answer), read as the response side read it (a template's
    injected open tag included): what the client was given of it."""
    reasoning: list[str] = []
    answer: list[str] = []
    for segment in extract(text, config):
        (answer if segment.kind == CONTENT else reasoning).append(segment.text)
    return "".join(reasoning), "".join(answer)


def inline(reasoning: str, answer: str, config: ThinkExtractConfig) -> str:
    """The reasoning in the model's own tags (its first pair; gpt-oss: the analysis channel), in
    front of the answer."""
    pair = _HARMONY if config.protocol == "harmony" else config.tag_pairs[0]
    return pair.open + reasoning + pair.close + answer
