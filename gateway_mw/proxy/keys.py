"""Client keys, read from their variable and their file: at startup, and again on SIGHUP."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .schema import UNNAMED, Secret, Settings, SettingsError

__all__ = ["read_client_keys", "upper_name", "variable_named"]

_ALIAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _key_file(path: str) -> list[Secret]:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable as UTF-8 text"
        raise SettingsError(f"client_keys_file: {path}: {reason}") from None
    found = []
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) > 2:  # never quote the line: it holds a key
            raise SettingsError(f"client_keys_file: {path}, line {number}: expected KEY or ALIAS KEY")
        if len(words) == 2 and not _ALIAS.fullmatch(words[0]):
            raise SettingsError(
                f"client_keys_file: {path}, line {number}: an alias is 1 to 64 letters, digits, '.', '_' or '-'"
            )
        found.append(Secret(words[-1], words[0]) if len(words) == 2 else Secret(words[0]))
    if not found:
        raise SettingsError(f"client_keys_file: {path} holds no key")
    return found


def variable_named(name: str) -> str:
    """``name``, a setting's variable, as an error shows it: as it is when it is spelled as a variable
    is, else not at all (a key written where its variable's name belongs)."""
    return name if upper_name(name) else "it names (not shown: no upper-case name; a key, perhaps)"


def upper_name(value: object) -> bool:
    """Whether ``value`` is spelled as a variable's name is: upper case, digits, underscores (no key is)."""
    return isinstance(value, str) and _UPPER_NAME.fullmatch(value) is not None


_UPPER_NAME = re.compile(r"[A-Z0-9_]{1,64}")


def read_client_keys(settings: Settings, env: Mapping[str, str]) -> tuple[Secret, ...]:
    """The client keys of ``client_keys_env`` and ``client_keys_file``, read now (at startup, and
    again on SIGHUP). A key listed twice keeps its alias; two different aliases are an error."""
    keys: list[Secret] = []
    if settings.client_keys_env is not None:
        found = env.get(settings.client_keys_env, "").replace(",", " ").split()
        if not found:
            named = variable_named(settings.client_keys_env)
            raise SettingsError(f"client_keys_env: the variable {named} is not set or empty")
        keys += [Secret(key) for key in found]
    if settings.client_keys_file is not None:
        keys += _key_file(settings.client_keys_file)
    unique: dict[str, Secret] = {}
    for key in keys:
        seen = unique.get(key.value)
        if seen is None or seen.alias == UNNAMED:
            unique[key.value] = key
        elif key.alias not in (UNNAMED, seen.alias):
            raise SettingsError(f"client keys: one key has two aliases, {seen.alias} and {key.alias}")
    return tuple(unique.values())
