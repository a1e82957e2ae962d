r"""``THINK_EXTRACT_*`` variables: the text form of each setting, turned into the value msgspec
then checks against the setting's type (``msgspec.convert(..., strict=False)``).

The field's type decides the form: a switch is a word (``1/true/yes/on``, ``0/false/no/off``); a
list of tag pairs is ``open...close,open...close``; a list of strings is ``a,b``; routes are
``suffix=surface,…``; profiles are JSON. Lists, the separator and the budget message understand ``\n``, ``\r``, ``\t``,
``\\`` and ``\,``. A value that is not in its form is reported here; one that is in its form but
not what the setting accepts (``-1`` bytes, ``batch`` as a stream mode) by msgspec, in the words of
the type's description (:mod:`.fieldcheck`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, Literal, get_args, get_origin

import msgspec

from .fieldcheck import convert, describe
from .tags import TagPair

__all__ = ["ENV_PREFIX", "FALSE_WORDS", "read_value", "unknown_variable"]

ENV_PREFIX = "THINK_EXTRACT_"

_TRUE = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
"""The values that say "off", in the environment and in a client's ``X-Think-Extract`` header."""

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", ",": ","}
_PAIRS = r"expected open...close[,open...close] (escapes: \n \t \r \\ \,)"


def unknown_variable(var: str, settings: Iterable[str]) -> str | None:
    """Why ``var`` is wrong, if it is a ``THINK_EXTRACT_*`` name that none of ``settings`` has; else ``None``."""
    if not var.startswith(ENV_PREFIX):
        return None
    known = [name.upper() for name in settings]
    name = var.removeprefix(ENV_PREFIX)
    if name in known:
        return None
    close = difflib.get_close_matches(name.upper(), known, n=1, cutoff=0.6)
    if close:
        return f"{var} is not a setting; did you mean {ENV_PREFIX}{close[0]}?"
    return f"{var} is not a setting; the settings are {', '.join(ENV_PREFIX + k for k in known)}"


def _split_escaped(raw: str, sep: str | None) -> list[str]:
    r"""Split ``raw`` on unescaped ``sep`` and decode ``\n``, ``\r``, ``\t``, ``\\`` and ``\,``."""
    parts: list[str] = []
    current: list[str] = []
    chars = iter(raw)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, None)
            if nxt is None or nxt not in _ESCAPES:
                raise ValueError(r"unknown escape; use \n, \r, \t, \\ or \,")
            current.append(_ESCAPES[nxt])
        elif sep is not None and ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _switch(raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in FALSE_WORDS:
        return False
    raise ValueError("expected one of 1, true, yes, on, 0, false, no, off")


def _pairs(raw: str) -> list[TagPair]:
    pairs = []
    for item in _split_escaped(raw, ","):
        open_, dots, close = item.partition("...")
        if not dots or not open_ or not close:
            raise ValueError(_PAIRS)
        pairs.append(TagPair(open_, close))
    return pairs


def _routes(raw: str, description: str) -> dict[str, str]:
    routes = {}
    for item in raw.split(","):
        suffix, eq, surface = item.strip().partition("=")
        if not eq:
            raise ValueError(f"expected {description}")
        routes[suffix] = surface.strip()
    return routes


def _json(raw: str, description: str) -> Any:
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not valid JSON ({exc}); expected {description}") from None


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is not None and get_origin(tp) not in (tuple, dict, Literal):
        tp = get_args(tp)[0]  # Annotated[X, ...] → X
    return tp


def _text_form(name: str, tp: Any, raw: str) -> Any:
    """The value ``raw`` writes, in the form the type of field ``name`` takes (before it is checked)."""
    shape = _unwrap(tp)
    item = _unwrap(get_args(shape)[0]) if get_origin(shape) is tuple else None
    if shape is bool:
        return _switch(raw)
    if item is TagPair:
        return [] if not raw.strip() else _pairs(raw)
    if item is str:
        return [] if not raw.strip() else _split_escaped(raw, ",")
    if get_origin(shape) is dict:
        return _routes(raw, describe(tp, str))
    if item is not None:  # a list of structs: profiles, as JSON
        return _json(raw, describe(tp, str).partition(" like ")[0])
    if name in ("separator", "reasoning_budget_message"):  # texts whose edges are their whitespace
        return _split_escaped(raw, None)[0]
    text = raw.strip()
    return text.lower() if get_origin(shape) is Literal else text


def read_value(name: str, tp: Any, raw: str, where: str) -> Any:
    """The value of field ``name`` (of type ``tp``) that the text ``raw`` writes, checked;
    ``ValueError("{where} is invalid: …")`` if it is not one."""
    try:
        value = _text_form(name, tp, raw)
    except ValueError as exc:
        raise ValueError(f"{where} is invalid: {exc}") from None
    return convert(value, tp, where, strict=False)
