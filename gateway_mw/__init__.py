"""Move inline ``<think>…</think>`` reasoning into each API's native reasoning field.

>>> from aiohttp import web
>>> from gateway_mw import thinkextract_middleware
>>> app = web.Application(middlewares=[thinkextract_middleware])

The sans-I/O core (scanner, SSE codec, surface translators) imports without aiohttp; the
middleware and its app keys are loaded on first use. ``__all__`` is the public API, listed with the
other public modules' names in ``docs/api.md``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from . import harmony  # noqa: F401  (registers gpt-oss's channel protocol with the scanner)
from .config import DEFAULT_TAG_PAIRS, ModelProfile, TagPair, ThinkExtractConfig
from .controls import Controlled, Intent, ModelInfo
from .scanner import Scanner, Segment, extract
from .stats import SurfaceStats, ThinkExtractStats

try:
    __version__ = version("gateway_mw")
    """The installed distribution's version (``setup.cfg``)."""
except PackageNotFoundError:  # pragma: no cover - imported from a checkout that was never installed
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from .incoming import CLIENT_GONE, RequestBodyTimeout
    from .middleware import (
        THINK_EXTRACT_HEADER,
        THINKEXTRACT_BUDGET,
        THINKEXTRACT_CONFIG,
        THINKEXTRACT_CONTROLS,
        THINKEXTRACT_IDS,
        THINKEXTRACT_MODEL_INFO,
        THINKEXTRACT_REASONING_TOKENS,
        THINKEXTRACT_RECORD,
        THINKEXTRACT_REQUEST_BODY,
        THINKEXTRACT_SCOPE,
        THINKEXTRACT_SERVER,
        THINKEXTRACT_STATS,
        THINKEXTRACT_TOKEN_COUNTER,
        setup,
        thinkextract_middleware,
    )

__all__ = [
    "CLIENT_GONE",
    "DEFAULT_TAG_PAIRS",
    "THINKEXTRACT_BUDGET",
    "THINKEXTRACT_CONFIG",
    "THINKEXTRACT_CONTROLS",
    "THINKEXTRACT_IDS",
    "THINKEXTRACT_MODEL_INFO",
    "THINKEXTRACT_REASONING_TOKENS",
    "THINKEXTRACT_RECORD",
    "THINKEXTRACT_REQUEST_BODY",
    "THINKEXTRACT_SCOPE",
    "THINKEXTRACT_SERVER",
    "THINKEXTRACT_STATS",
    "THINKEXTRACT_TOKEN_COUNTER",
    "THINK_EXTRACT_HEADER",
    "Controlled",
    "Intent",
    "ModelInfo",
    "ModelProfile",
    "RequestBodyTimeout",
    "Scanner",
    "Segment",
    "SurfaceStats",
    "TagPair",
    "ThinkExtractConfig",
    "ThinkExtractStats",
    "__version__",
    "extract",
    "setup",
    "thinkextract_middleware",
]

_ADAPTER = frozenset(
    {
        "CLIENT_GONE",
        "RequestBodyTimeout",
        "THINK_EXTRACT_HEADER",
        "THINKEXTRACT_BUDGET",
        "THINKEXTRACT_CONFIG",
        "THINKEXTRACT_CONTROLS",
        "THINKEXTRACT_IDS",
        "THINKEXTRACT_MODEL_INFO",
        "THINKEXTRACT_REASONING_TOKENS",
        "THINKEXTRACT_RECORD",
        "THINKEXTRACT_REQUEST_BODY",
        "THINKEXTRACT_SCOPE",
        "THINKEXTRACT_SERVER",
        "THINKEXTRACT_STATS",
        "THINKEXTRACT_TOKEN_COUNTER",
        "setup",
        "thinkextract_middleware",
    }
)


def __getattr__(name: str) -> Any:
    # The aiohttp adapter is imported only when one of its names is asked for.
    if name in _ADAPTER:
        from . import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
