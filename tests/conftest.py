"""What every test gets."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _logger_levels_restored() -> Iterator[None]:
    """``app_factory()`` sets the gateway's loggers to its log level, as a gunicorn worker needs: one
    test calling it must not silence the debug lines a later test reads."""
    loggers = [logging.getLogger(name) for name in ("gateway_mw", "aiohttp")]
    levels = [logger.level for logger in loggers]
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)
