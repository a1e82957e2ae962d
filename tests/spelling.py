"""The ways servers spell the same JSON, for the property tests that hold a fast path to its full path."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SPACING = [(",", ":"), (", ", ": "), (" , ", " : "), (",\t", ":\t")]


@dataclass(frozen=True)
class Spelling:
    """One way of writing a JSON document: spacing, key order, escapes in strings and in keys."""

    comma: str = ","
    colon: str = ":"
    ascii_only: bool = False
    slash: bool = False  # "/" written "\/"
    lt: bool = False  # "<" written "\u003c"
    rnd: random.Random | None = None  # shuffles every object's keys, when given
    key: Callable[[str], str | None] | None = None  # a key's own spelling (None: the usual one)

    def string(self, value: str, key: bool = False) -> str:
        if key and self.key is not None:
            spelled = self.key(value)
            if spelled is not None:
                return spelled
        encoded = json.dumps(value, ensure_ascii=self.ascii_only)
        if self.slash:
            encoded = encoded.replace("/", "\\/")
        return encoded.replace("<", "\\u003c") if self.lt else encoded

    def encode(self, value: Any) -> str:
        if isinstance(value, dict):
            items = list(value.items())
            if self.rnd is not None:
                self.rnd.shuffle(items)
            return "{" + self.comma.join(f"{self.string(k, True)}{self.colon}{self.encode(v)}" for k, v in items) + "}"
        if isinstance(value, list):
            return "[" + self.comma.join(self.encode(v) for v in value) + "]"
        return self.string(value) if isinstance(value, str) else json.dumps(value)
