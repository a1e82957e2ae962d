"""Settings checked the msgspec way: a field's annotated type holds its constraints (``msgspec.Meta``)
and the words that say what it accepts; msgspec checks a value against it, and an error names the
setting and says, in those words, what it must be.

msgspec checks types when it decodes or converts, not when Python code builds a struct: a settings
struct's ``__post_init__`` hands itself to :func:`check`, which converts it, attribute by attribute,
into a twin of the same field types without the ``__post_init__`` (one call into msgspec's C code).
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import msgspec

__all__ = ["check", "convert", "describe", "field_types", "twin"]


def field_types(cls: type[msgspec.Struct]) -> dict[str, Any]:
    """Each field of ``cls`` with its annotated type (constraints included)."""
    hints = get_type_hints(cls, include_extras=True)
    return {name: hints[name] for name in cls.__struct_fields__}


def twin(cls: type[msgspec.Struct], fields: Iterable[str] | None = None) -> type[msgspec.Struct]:
    """A struct with the fields of ``cls`` (or those named), their types and no ``__post_init__``:
    what :func:`check` converts a built ``cls`` into."""
    hints = field_types(cls)
    return msgspec.defstruct(cls.__name__, [(name, hints[name]) for name in fields or hints], kw_only=True)


def _meta(tp: Any) -> msgspec.Meta | None:
    return next((m for m in getattr(tp, "__metadata__", ()) if isinstance(m, msgspec.Meta)), None)


def _unwrap(tp: Any) -> Any:
    """``X | None`` → ``X``; ``Annotated[X, …]`` with no description → ``X``."""
    if get_origin(tp) is Annotated and getattr(_meta(tp), "description", None) is None:
        return _unwrap(get_args(tp)[0])
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    return tp


_PLAIN = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def describe(tp: Any, quote: Callable[[object], str] = repr) -> str:
    """What a value of ``tp`` must be: its ``Meta`` description, or its choices (each put through
    ``quote``: ``'live'`` for Python code, ``live`` for the text of a variable)."""
    tp = _unwrap(tp)
    meta = _meta(tp)
    if meta is not None and meta.description is not None:
        return meta.description
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(map(quote, get_args(tp)))
    if get_origin(tp) is tuple:
        return "a list, each " + describe(get_args(tp)[0], quote)
    return _PLAIN.get(tp, getattr(tp, "__name__", str(tp)))


def _shape(tp: Any) -> Any:
    """The container under a description, ``None`` or a scalar it may stand for (``X | tuple[X, ...]``):
    ``dict[K, V]``, ``tuple[...]``, a struct."""
    tp = _unwrap(tp)
    tp = _unwrap(get_args(tp)[0]) if get_origin(tp) is Annotated else tp
    if get_origin(tp) in (Union, types.UnionType):
        return next(_shape(a) for a in get_args(tp) if get_origin(_unwrap(a)) in (tuple, dict))
    return tp


def _says_what(tp: Any) -> bool:
    """Whether ``describe(tp)`` says more than a type's name (a struct's own errors say it better)."""
    tp = _unwrap(tp)
    return _meta(tp) is not None or get_origin(tp) in (Literal, tuple) or tp in _PLAIN


def _shown(tp: Any, value: object) -> object:
    """``value`` as an error may show it: a field's ``Meta(extra={"shown": …})`` hides what must not be."""
    meta = _meta(_unwrap(tp))
    hide = None if meta is None or meta.extra is None else meta.extra.get("shown")
    return value if hide is None else hide(value)


def _fits(value: object, tp: Any) -> bool:
    try:
        msgspec.convert(value, tp)
    except msgspec.ValidationError:
        return False
    return True


_WHERE = re.compile(r"(?s)(.*) - at (`key` in )?`\$\.(\w+)((?:\.\w+|\[[^\]]*\])*)`")
_STEP = re.compile(r"\.(\w+)|\[([^\]]*)\]")
_IN_A_STRUCT = re.compile(r"(?s).* - at `\$[^`]*\.\w+`")


def _why(obj: object, hints: dict[str, Any], error: str) -> str:
    """``error`` (msgspec's, about a field of ``obj``) in the setting's own words."""
    match = _WHERE.fullmatch(error)
    if match is None:
        return error
    reason, in_key, name, path = match.groups()
    where, value, tp = name, getattr(obj, name), hints[name]
    for attr, key in _STEP.findall(path):
        shape = _shape(tp)
        if attr:
            where, value, tp = f"{where}.{attr}", getattr(value, attr), field_types(shape)[attr]
        elif get_origin(shape) is dict:  # msgspec does not name a dict's key: find it
            key_type, tp = get_args(shape)
            step = next(k for k, v in value.items() if not (_fits(k, key_type) and _fits(v, tp)))
            if not _fits(step, key_type):
                return f"{where} keys must be {describe(key_type)}, got {step!r}"
            where, value = f"{where}[{step!r}]", value[step]
        else:
            args = get_args(shape)
            index = int(key)
            where, value, tp = f"{where}[{index}]", value[index], args[0] if args[-1] is Ellipsis else args[index]
    if in_key:
        key_type = get_args(_shape(tp))[0]
        bad = next(k for k in value if not _fits(k, key_type))
        return f"{where} keys must be {describe(key_type)}, got {bad!r}"
    if not _says_what(tp):
        return f"{where}: {reason}"
    return f"{where} must be {describe(tp)}, got {_shown(tp, value)!r}"


def check(obj: msgspec.Struct, checked_as: type[msgspec.Struct]) -> None:
    """Raise ``ValueError`` naming the first field of ``obj`` that its type rejects."""
    try:
        msgspec.convert(obj, checked_as, from_attributes=True)
    except msgspec.ValidationError as exc:
        raise ValueError(_why(obj, field_types(checked_as), str(exc))) from None


def convert(value: object, tp: Any, where: str, *, strict: bool = True) -> Any:
    """``value`` as ``tp``, or ``ValueError("{where} is invalid: expected …")`` in the type's words
    (with msgspec's own when the fault is a field of a struct in it, as in a list of profiles)."""
    try:
        return msgspec.convert(value, tp, strict=strict)
    except msgspec.ValidationError as exc:
        detail = f" ({exc})" if _IN_A_STRUCT.fullmatch(str(exc)) else ""  # which field of which profile
        raise ValueError(f"{where} is invalid: expected {describe(tp, str)}{detail}") from None
