"""Who enforces a budget on Ollama's native API (``reasoning_budget_enforcement``), and what the
controls write for it: the gateway's on ``/api/chat`` (Ollama has no budget field), thinking on and
``nearest`` on ``/api/generate`` (it cannot be continued) and wherever the gateway may not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway_mw import ThinkExtractConfig
from gateway_mw.controls import ModelInfo, read_intent, read_with_texts, write_controls
from gateway_mw.surfaces.registry import SURFACES

CHAT = {"model": "qwen3:8b", "messages": [{"role": "user", "content": "Hi"}]}
GENERATE = {"model": "qwen3:8b", "prompt": "Hi"}


def written(body: dict[str, Any], enforcement: str) -> tuple[str, str, bool, bool]:
    raw = json.dumps(body | {"reasoning": {"max_tokens": 64}}).encode()
    both = read_with_texts(raw, SURFACES["ollama"].controls)
    assert both is not None
    fields, texts = both
    config = ThinkExtractConfig(upstream_server="ollama", reasoning_budget_enforcement=enforcement)  # type: ignore[arg-type]
    side = SURFACES["ollama"]
    controlled = write_controls(
        read_intent(raw, side, fields, texts), fields, side, "ollama", config, ModelInfo(thinking=True)
    )
    return controlled.written, controlled.outcome, controlled.by_gateway, controlled.stream


BY_GATEWAY = "budget 64 enforced by the gateway, think=true"


@pytest.mark.parametrize(
    ("body", "enforcement", "expected"),
    [
        (CHAT, "auto", (BY_GATEWAY, "applied", True, True)),  # no stream said: Ollama streams
        (CHAT, "gateway", (BY_GATEWAY, "applied", True, True)),
        (CHAT | {"stream": True}, "auto", (BY_GATEWAY, "applied", True, True)),
        (CHAT | {"stream": False}, "auto", (BY_GATEWAY + ", stream=true", "applied", True, False)),
        (CHAT, "server", ("think=true", "nearest", False, True)),
        (CHAT, "off", ("think=true", "nearest", False, True)),
        (GENERATE, "auto", ("think=true", "nearest", False, True)),
        (GENERATE, "gateway", ("think=true", "nearest", False, True)),
    ],
)
def test_who_enforces_a_budget_on_ollama(
    body: dict[str, Any], enforcement: str, expected: tuple[str, str, bool, bool]
) -> None:
    assert written(body, enforcement) == expected
