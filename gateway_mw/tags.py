"""Tag pairs: the literal delimiters of a reasoning block, and the default list.

A leaf module: the configuration and the model family presets both build on it.
"""

from __future__ import annotations

import msgspec

__all__ = ["DEFAULT_TAG_PAIRS", "TagPair"]


class TagPair(msgspec.Struct, frozen=True):
    """An open/close delimiter pair, matched literally and case-sensitively."""

    open: str
    close: str

    def __post_init__(self) -> None:
        if not self.open or not self.close:
            raise ValueError(f"tag pair needs a non-empty open and close string, got {self!r}")


DEFAULT_TAG_PAIRS: tuple[TagPair, ...] = (
    TagPair("<think>", "</think>"),
    TagPair("<thinking>", "</thinking>"),
    TagPair("<reasoning>", "</reasoning>"),
    TagPair("<reason>", "</reason>"),
    TagPair("<thought>", "</thought>"),
    TagPair("<|begin_of_thought|>", "<|end_of_thought|>"),
    TagPair("◁think▷", "◁/think▷"),
    TagPair("[THINK]", "[/THINK]"),
    # gpt-oss harmony: the analysis channel, ended by the header of the final channel.
    TagPair(
        "<|channel|>analysis<|message|>",
        "<|end|><|start|>assistant<|channel|>final<|message|>",
    ),
    # Gemma 4 thought channel.
    TagPair("<|channel>thought\n", "<channel|>"),
)
