"""Who enforces a budget (``reasoning_budget_enforcement``), what the controls write for it, and the
continuation's request body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import BUDGET_MESSAGE
from gateway_mw.controls import read_intent, read_with_texts, write_controls
from gateway_mw.controls.continuation import continuation
from gateway_mw.surfaces.chat.budget import SIDE as CHAT
from gateway_mw.surfaces.registry import SURFACES

USER = [{"role": "user", "content": "Hi"}]


def written(server: str, enforcement: str, **more: Any) -> tuple[str, str, bool]:
    body = json.dumps({"model": "Qwen/Qwen3-8B", "messages": USER, "reasoning": {"max_tokens": 64}} | more).encode()
    both = read_with_texts(body, SURFACES["chat"].controls)
    assert both is not None
    fields, texts = both
    config = ThinkExtractConfig(upstream_server=server, reasoning_budget_enforcement=enforcement)  # type: ignore[arg-type]
    controlled = write_controls(
        read_intent(body, SURFACES["chat"], fields, texts), fields, SURFACES["chat"], server, config.for_model(None)
    )
    return controlled.written, controlled.outcome, controlled.by_gateway


ON = "chat_template_kwargs.enable_thinking=true, chat_template_kwargs.thinking=true"
BY_GATEWAY = f"{ON}, budget 64 enforced by the gateway"
STREAM = {"stream": True}

CASES: list[tuple[str, str, dict[str, Any], tuple[str, str, bool]]] = [
    # auto: the server's own field where it has one, else the gateway's on a stream it can continue
    ("vllm", "auto", STREAM, (f"{ON}, thinking_token_budget=64", "applied", False)),
    ("llamacpp", "auto", STREAM, (f"{ON}, thinking_budget_tokens=64", "applied", False)),
    ("sglang", "auto", STREAM, (BY_GATEWAY, "applied", True)),
    ("sglang", "auto", {}, (BY_GATEWAY + ", stream=true", "applied", True)),  # asked for as a stream
    ("ollama", "auto", STREAM, ("budget 64 enforced by the gateway", "applied", True)),  # /v1 is its /api/chat
    ("ollama", "auto", {}, ("budget 64 enforced by the gateway, stream=true", "applied", True)),
    ("ollama", "server", STREAM, ("", "nearest", False)),  # no field of Ollama's: thinking on, by default
    ("ollama", "off", STREAM, ("", "nearest", False)),
    # gateway: the server's field is not written where the gateway enforces it
    ("vllm", "gateway", STREAM, (BY_GATEWAY, "applied", True)),
    ("llamacpp", "gateway", STREAM, (BY_GATEWAY, "applied", True)),
    ("vllm", "gateway", {"stream": False}, (BY_GATEWAY + ", stream=true", "applied", True)),
    ("vllm", "gateway", STREAM | {"n": 2}, (f"{ON}, thinking_token_budget=64", "applied", False)),
    ("sglang", "gateway", STREAM | {"n": 1}, (BY_GATEWAY, "applied", True)),
    # server: its field, or nothing
    ("vllm", "server", STREAM, (f"{ON}, thinking_token_budget=64", "applied", False)),
    ("sglang", "server", STREAM, (ON, "nearest", False)),
    # off: thinking on, no budget
    ("vllm", "off", STREAM, (ON, "nearest", False)),
    ("sglang", "off", STREAM, (ON, "nearest", False)),
]


@pytest.mark.parametrize(("server", "enforcement", "more", "expected"), CASES)
def test_who_enforces_a_budget(
    server: str, enforcement: str, more: dict[str, Any], expected: tuple[str, str, bool]
) -> None:
    assert written(server, enforcement, **more) == expected


def test_the_settings_are_read_from_the_environment() -> None:
    config = ThinkExtractConfig.from_env(
        {
            "THINK_EXTRACT_REASONING_BUDGET_ENFORCEMENT": "gateway",
            "THINK_EXTRACT_REASONING_BUDGET_MESSAGE": "\\n\\nStop.\\n",
        }
    )
    assert (config.reasoning_budget_enforcement, config.reasoning_budget_message) == ("gateway", "\n\nStop.\n")
    assert ThinkExtractConfig().reasoning_budget_message == BUDGET_MESSAGE
    with pytest.raises(ValueError, match="THINK_EXTRACT_REASONING_BUDGET_ENFORCEMENT"):
        ThinkExtractConfig.from_env({"THINK_EXTRACT_REASONING_BUDGET_ENFORCEMENT": "sometimes"})


@pytest.mark.parametrize(
    ("server", "asked"),
    [
        ("vllm", b',"continue_final_message":true,"add_generation_prompt":false'),
        ("sglang", b',"continue_final_message":true,"add_generation_prompt":false'),
        ("llamacpp", b""),
    ],
)
def test_the_continuation_appends_the_prefill_as_each_server_continues_it(server: str, asked: bytes) -> None:
    body = b'{"model":"m", "messages": [ {"role":"user","content":"Hi \\u00e9"} ] ,"stream":true}'
    new = continuation(body, "<think>x\u00e9</think>", CHAT, "chat", server)
    added = b',{"role":"assistant","content":"<think>x\xc3\xa9</think>"}]'
    assert (
        new
        == b'{"model":"m","messages":[ {"role":"user","content":"Hi \\u00e9"} '
        + added
        + b',"stream":true'
        + asked
        + b"}"
    )


@pytest.mark.parametrize("body", [b'{"messages": []}', b'{"messages":[ ]}'])
def test_an_empty_conversation_gets_the_prefill_alone(body: bytes) -> None:
    assert json.loads(continuation(body, "p", CHAT, "chat", "llamacpp") or b"") == {
        "messages": [{"role": "assistant", "content": "p"}]
    }


@pytest.mark.parametrize("body", [b"[]", b'{"prompt": "x"}', b'{"messages": "x"}', b"not json"])
def test_a_body_without_messages_is_not_continued(body: bytes) -> None:
    assert continuation(body, "p", CHAT, "chat", "vllm") is None


def test_a_body_with_a_lone_surrogate_escape_is_continued_with_the_escape_as_it_came() -> None:
    body = b'{"messages":[{"role":"user","content":"\\ud83d"}],"stream":true}'
    assert continuation(body, "<think>x</think>", CHAT, "chat", "llamacpp") == (
        b'{"messages":[{"role":"user","content":"\\ud83d"},{"role":"assistant","content":"<think>x</think>"}],'
        b'"stream":true}'
    )


def test_a_prefill_spelled_as_a_masked_escape_is_not_continued_on_a_masked_body() -> None:
    """The model wrote a backslash and a surrogate's digits: lifting the mask would change them."""
    body = b'{"messages":[{"role":"user","content":"\\ud83d"}]}'
    assert continuation(body, "<think>\\d83d</think>", CHAT, "chat", "llamacpp") is None
