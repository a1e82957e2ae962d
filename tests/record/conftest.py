"""Fixtures of the record tests: a redis-server of the test's own (skipped, or failed where Redis is
required, when the server or the client is missing).

A test that uses one is marked ``redis``: the README's test command, which needs nothing outside Python,
leaves it to CI (``python -m pytest -m redis`` with redis-server installed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import RedisServer, redis_executable, skip_or_fail


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "redis_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.redis)


@pytest.fixture
def redis_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RedisServer]:
    # A test that asks for the server at run time (``request.getfixturevalue``) must carry the mark
    # itself: unmarked, it would run where no redis-server is expected.
    if request.node.get_closest_marker("redis") is None:
        pytest.fail(f"{request.node.nodeid} starts a redis-server: mark it pytest.mark.redis")
    try:
        import redis  # noqa: F401 - only whether the client is installed
    except ImportError:
        skip_or_fail("the redis client is not installed (pip install -e '.[test]')")
    directory = tmp_path / "redis"
    directory.mkdir()
    server = RedisServer(redis_executable(), directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()
