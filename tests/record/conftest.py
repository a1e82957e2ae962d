"""Fixtures of the record tests: a redis-server of the test's own (skipped, or failed where Redis is
required, when the server or the client is missing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import RedisServer, redis_executable, skip_or_fail


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
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
