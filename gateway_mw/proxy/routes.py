"""Which requests the gateway forwards: an allowlist of routes, each a method and a path.

The default is the model list and what each surface the gateway translates declares (its
definition's ``forward_routes``: its own routes, the route Claude Code counts tokens with, the
read-only routes Ollama's clients list and describe models with); nothing else reaches the upstream
(its admin routes, file uploads, adapters, Ollama's pull, push, create, copy, delete and blobs)
unless the operator widens the list. A path that does not start with ``/`` is under the prefix
(``/v1/`` by default): ``POST chat/completions`` is ``POST /v1/chat/completions``. In a path, ``*``
matches within one segment and a ``**`` segment matches whatever follows; a method of ``*`` is any
method.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..surfaces.registry import SURFACES

__all__ = ["DEFAULT_FORWARD_ROUTES", "ForwardRoutes", "parse_routes"]

DEFAULT_FORWARD_ROUTES: tuple[str, ...] = (
    *(route for surface in SURFACES.values() for route in surface.forward_routes),
    "GET models",
)

_METHOD = re.compile(r"\*|[A-Z]+")


def _pattern(path: str) -> str | None:
    """The regular expression of a path with wildcards; ``None`` for a plain path."""
    if "*" not in path:
        return None
    out = []
    for segment in path.split("/"):
        if segment == "**":
            out.append(".*")
        elif "**" in segment:
            raise ValueError(f"'**' must be a whole path segment: {path!r}")
        else:
            out.append("[^/]*".join(re.escape(part) for part in segment.split("*")))
    return "/".join(out)


class ForwardRoutes:
    """The compiled allowlist; :meth:`check` tells whether a request may be forwarded."""

    __slots__ = ("_exact", "_patterns", "entries")

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        self.entries = tuple(entries)
        self._exact: dict[str, set[str]] = {}
        self._patterns: list[tuple[str, re.Pattern[str]]] = []
        for method, path in self.entries:
            regex = _pattern(path)
            if regex is None:
                self._exact.setdefault(path, set()).add(method)
            else:
                self._patterns.append((method, re.compile(regex)))

    def check(self, method: str, path: str) -> tuple[str, ...] | None:
        """``None`` when ``method path`` is forwarded; otherwise the methods forwarded on ``path``
        (empty: the path is not forwarded at all, a 404; else a 405 with these in ``Allow``)."""
        methods = set(self._exact.get(path, ()))
        methods.update(m for m, regex in self._patterns if regex.fullmatch(path))
        if method in methods or "*" in methods:
            return None
        return tuple(sorted(methods))


def parse_routes(routes: Iterable[str], prefix: str) -> ForwardRoutes:
    """Compile ``METHOD PATH`` entries, relative paths under ``prefix``. Raises ``ValueError``."""
    entries = []
    for route in routes:
        method, _, path = route.strip().partition(" ")
        path = path.strip()
        if not _METHOD.fullmatch(method) or not path or any(c in path for c in " ?#"):
            raise ValueError(
                f"{route!r} is not a route: expected a METHOD (or *) and a path, like 'POST chat/completions'"
            )
        if not path.startswith("/"):
            path = prefix + path
        _pattern(path)  # the ValueError of a misplaced "**", now
        entries.append((method, path))
    return ForwardRoutes(entries)
