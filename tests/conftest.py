"""What every test gets."""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import logging
import py_compile
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis times each example (a deadline of 200 ms) and how long its data take to make (the too_slow
# health check): on a busy machine either fails a test whose property holds. Neither is a property of
# the code under test, so neither is checked. Nor is how many drawn inputs a test's ``assume`` sets
# aside (the filter_too_much check): with fewer examples the first ones decide it, and a run of
# unlucky draws failed a property that holds; a test whose every input is set aside still fails
# (hypothesis's ``Unsatisfiable``).
#
# Two profiles: "thorough", hypothesis's 100 examples a property (a test's own number where it sets
# one), and "gateway_mw", the default, a quarter of those, so that the README's command answers in
# minutes; CI runs every property again with ``--hypothesis-profile=thorough``. A test's own number
# goes through ``tests/hypothesis_examples.py``, which scales it with the profile.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much]}
settings.register_profile("thorough", max_examples=100, **_UNTIMED)
settings.register_profile("gateway_mw", max_examples=25, **_UNTIMED)
settings.load_profile("gateway_mw")


@pytest.fixture(autouse=True)
def _logger_levels_restored() -> Iterator[None]:
    """``app_factory()`` sets the gateway's loggers to its log level, as a gunicorn worker needs: one
    test calling it must not silence the debug lines a later test reads."""
    loggers = [logging.getLogger(name) for name in ("gateway_mw", "aiohttp")]
    levels = [logger.level for logger in loggers]
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


_C = TypeVar("_C")


class Closing:
    """Keeps the SDK clients a test makes, to close them at its end: one left open is closed by the
    garbage collector later, in another test, which then finds an error in its log."""

    def __init__(self) -> None:
        self.made: list[object] = []

    def __call__(self, client: _C) -> _C:
        self.made.append(client)
        return client


@pytest.fixture
async def closing() -> AsyncIterator[Closing]:
    kept = Closing()
    yield kept
    for client in kept.made:
        close = getattr(client, "close", None)
        if close is not None:  # the oldest ollama clients have none (their httpx client closes quietly)
            await close()


def pytest_configure(config: pytest.Config) -> None:
    """Where the environment writes no bytecode (``PYTHONDONTWRITEBYTECODE``), each Python process a
    test starts (a docs block, the gateway, gunicorn's workers) would compile the package from its
    source again, a quarter of its CPU. The run compiles it once, next to its sources, and removes
    what it wrote when it ends (pytest's workers leave it to the run that started them)."""
    if hasattr(config, "workerinput") or not sys.dont_write_bytecode:
        return
    written: list[Path] = []
    root = Path(__file__).resolve().parent.parent
    for source in [*root.glob("gateway_mw/**/*.py"), *root.glob("examples/*.py")]:
        compiled = Path(importlib.util.cache_from_source(str(source)))
        if not compiled.exists() and py_compile.compile(str(source), str(compiled), doraise=False):
            written.append(compiled)

    def remove() -> None:
        for compiled in written:
            with contextlib.suppress(OSError):  # removed already, or the folder holds others' files
                compiled.unlink()
                compiled.parent.rmdir()

    config.add_cleanup(remove)


def pytest_collection(session: pytest.Session) -> None:
    """The collection makes objects that live as long as the run (the test modules, their data):
    the garbage collector would walk them again and again while they are made, a third of the
    collection's time. It starts again once the collection ends."""
    gc.disable()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the imports and the collection made lives as long as the run: frozen, it is left out of
    every later garbage collection, so that a test's ``gc.collect()`` (the memory-tracing tests make
    two a run) walks only what the tests made."""
    gc.collect()  # once: what the collection left unreachable is freed, not frozen
    gc.freeze()
    gc.enable()
