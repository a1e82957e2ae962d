"""A property test's number of examples, scaled with the hypothesis profile the run loaded."""

from __future__ import annotations

from hypothesis import settings

__all__ = ["examples"]


def examples(count: int) -> int:
    """``count`` examples under the thorough profile (hypothesis's default of 100 a property), the
    same share of it under another (the default profile's quarter: ``count // 4``), at least one. Read
    when the test's module is imported, after pytest loaded the profile (``--hypothesis-profile``)."""
    return max(1, count * settings.default.max_examples // 100)
