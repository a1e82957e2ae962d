"""Move inline ``<think>…</think>`` reasoning into each API's native reasoning field.

>>> from aiohttp import web
>>> from gateway_mw import thinkextract_middleware
>>> app = web.Application(middlewares=[thinkextract_middleware])
"""

from .config import DEFAULT_TAG_PAIRS, THINKEXTRACT_CONFIG, ModelProfile, TagPair, ThinkExtractConfig
from .middleware import THINK_EXTRACT_HEADER, THINKEXTRACT_STATS, setup, thinkextract_middleware
from .scanner import Scanner, Segment, extract
from .stats import SurfaceStats, ThinkExtractStats

__all__ = [
    "DEFAULT_TAG_PAIRS",
    "THINKEXTRACT_CONFIG",
    "THINKEXTRACT_STATS",
    "THINK_EXTRACT_HEADER",
    "ModelProfile",
    "Scanner",
    "Segment",
    "SurfaceStats",
    "TagPair",
    "ThinkExtractConfig",
    "ThinkExtractStats",
    "extract",
    "setup",
    "thinkextract_middleware",
]
