"""Move inline ``<think>…</think>`` reasoning into each API's native reasoning field."""

from .config import DEFAULT_TAG_PAIRS, THINKEXTRACT_CONFIG, ModelProfile, TagPair, ThinkExtractConfig
from .scanner import Scanner, Segment, extract

__all__ = [
    "DEFAULT_TAG_PAIRS",
    "THINKEXTRACT_CONFIG",
    "ModelProfile",
    "Scanner",
    "Segment",
    "TagPair",
    "ThinkExtractConfig",
    "extract",
]
