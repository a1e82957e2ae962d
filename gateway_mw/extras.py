"""The library needs aiohttp and msgspec only; what needs more says which extra installs it."""

from __future__ import annotations

__all__ = ["GATEWAY_EXTRA", "MissingExtra"]

GATEWAY_EXTRA = "pip install 'gateway_mw[gateway]'"
"""What installs the gateway's own dependencies (prometheus-client, gunicorn)."""


class MissingExtra(ModuleNotFoundError):
    """A module of an extra that is not installed; the message names the extra."""
