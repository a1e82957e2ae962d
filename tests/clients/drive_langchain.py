"""Makes LangChain's chat models on the proxy, asks them (``invoke`` or ``stream``) and reads the reasoning
their ``content_blocks`` show."""

from __future__ import annotations

from typing import Any

from .conftest import require


def _models() -> Any:
    try:
        from langchain_anthropic import ChatAnthropic
        from langchain_deepseek import ChatDeepSeek
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        require(False, f"the LangChain clients are not installed ({exc}): pip install -e '.[clients]'")
    return ChatOpenAI, ChatDeepSeek, ChatAnthropic


def make(client: str, base: str, model: str = "demo", **options: Any) -> Any:
    """``options`` are more of the model's own settings (``reasoning_effort="none"``…)."""
    chat_openai, chat_deepseek, chat_anthropic = _models()
    common: dict[str, Any] = {"model": model, "api_key": "unused", "max_retries": 0, "timeout": 60, **options}
    if client == "ChatOpenAI":
        return chat_openai(base_url=f"{base}/v1", **common)
    if client == "ChatOpenAI(responses)":
        return chat_openai(base_url=f"{base}/v1", use_responses_api=True, **common)
    if client == "ChatDeepSeek":
        return chat_deepseek(api_base=f"{base}/v1", **common)
    return chat_anthropic(base_url=base, max_tokens=512, **common)


def reasoning_of(message: Any) -> list[str]:
    return [b["reasoning"] for b in message.content_blocks if b.get("type") == "reasoning" and "reasoning" in b]


def ask(model: Any, mode: str, messages: Any) -> Any:
    if mode == "invoke":
        return model.invoke(messages)
    merged = None
    for chunk in model.stream(messages):
        merged = chunk if merged is None else merged + chunk
    return merged


def weather() -> Any:
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    return get_weather
