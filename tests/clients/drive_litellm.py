"""Runs LiteLLM's ``completion`` on its three provider routes to a self-hosted server, telemetry off.

The ``drive_`` prefix of this module and its siblings keeps them from shadowing the client packages
(``litellm``, ``langchain``) when ``tests/clients`` itself is on ``sys.path``."""

from __future__ import annotations

from typing import Any

from .conftest import require

ROUTES = {"openai/": "/v1", "hosted_vllm/": "/v1", "anthropic/": ""}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def litellm() -> Any:
    try:
        import litellm as module
    except ImportError as exc:
        require(False, f"LiteLLM is not installed ({exc}): pip install -e '.[clients]'")
    module.telemetry = False
    module.suppress_debug_info = True
    return module


def complete(
    route: str, base: str, messages: list[Any], stream: bool = False, model: str = "demo", **extra: Any
) -> tuple[Any, str]:
    """(message, reasoning as streamed) of one completion."""
    ll = litellm()
    kw: dict[str, Any] = {
        "model": f"{route}{model}",
        "api_base": base + ROUTES[route],
        "api_key": "unused",
        "messages": messages,
        "max_tokens": 512,
        "num_retries": 0,
        "timeout": 60,
        **extra,
    }
    if not stream:
        return ll.completion(**kw).choices[0].message, ""
    chunks = list(ll.completion(stream=True, **kw))
    streamed = "".join(getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices)
    return ll.stream_chunk_builder(chunks).choices[0].message, streamed
