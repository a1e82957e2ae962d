"""Every surface the gateway translates, by name: one line each. A surface is its module (which
declares its :class:`~.definition.SurfaceDefinition`) and its line here."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..config import Surface
from .chat.surface import SURFACE as CHAT
from .definition import SurfaceDefinition
from .messages.surface import SURFACE as MESSAGES
from .ollama import SURFACE as OLLAMA
from .responses.surface import SURFACE as RESPONSES

__all__ = ["SURFACES", "SurfaceDefinition"]

SURFACES: Mapping[Surface, SurfaceDefinition] = MappingProxyType(
    {
        CHAT.name: CHAT,
        MESSAGES.name: MESSAGES,
        RESPONSES.name: RESPONSES,
        OLLAMA.name: OLLAMA,
    }
)
