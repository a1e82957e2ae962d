"""What the request side hands to its worker threads, noted as it hands it (the work still done there)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway_mw import incoming


def worker_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions the request side runs in its worker threads from now on, in order."""
    sent: list[str] = []
    in_worker = incoming._in_worker

    async def noted(work: Any, *args: Any) -> Any:
        sent.append(getattr(work, "__name__", ""))
        return await in_worker(work, *args)

    monkeypatch.setattr(incoming, "_in_worker", noted)
    return sent
