"""A lone surrogate escape in a request body leaves its own string as it came and nothing else: the
body is rewritten exactly as the same body with plain text in the string's place."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import surrogates, transform_request
from gateway_mw.surfaces.registry import SURFACES

CONFIG = ThinkExtractConfig(upstream_server="sglang")
STAND_IN = "QQQQQQ"
TEXTS = st.text(st.characters(max_codepoint=0xFFFF, blacklist_categories=()), max_size=12)
"""Any BMP text, lone surrogates and backslashes included (``st.text()`` leaves surrogates out)."""


def chat(tool_result: str, reasoning: str = "I call the tool.") -> bytes:
    messages: list[Any] = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "reasoning_content": reasoning,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": tool_result},
    ]  # fmt: skip
    return json.dumps({"model": "m", "messages": messages}).encode()


def has_lone(text: str) -> bool:
    """Whether ``text``, once written and read as JSON (adjacent halves make a pair), has a lone surrogate."""
    try:
        json.loads(json.dumps(text)).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def escaped(text: str) -> bytes:
    return json.dumps(text)[1:-1].encode()


@given(TEXTS)
def test_a_tool_result_goes_as_it_came_and_the_rest_is_rewritten(text: str) -> None:
    rewritten = transform_request(SURFACES["chat"], chat(STAND_IN), CONFIG)
    assert rewritten is not None
    got = transform_request(SURFACES["chat"], chat(text), CONFIG)
    expected = rewritten.replace(STAND_IN.encode(), escaped(text))
    if surrogates.mask(chat(text)) is None and has_lone(text):
        assert got in (expected, None)  # a body the mask could be confused with goes as it came
    else:
        assert got == expected


@given(TEXTS)
def test_a_rewritten_turn_keeps_a_lone_surrogate_spelled_as_the_client_spelled_it(text: str) -> None:
    """The reasoning of the rewritten turn itself holds the string: it is read, moved where the plan
    says, and written with every lone escape as it came."""
    rewritten = transform_request(SURFACES["chat"], chat("sunny", reasoning=f"think {STAND_IN}"), CONFIG)
    assert rewritten is not None
    body = chat("sunny", reasoning=f"think {text}")
    got = transform_request(SURFACES["chat"], body, CONFIG)
    if surrogates.mask(body) is None and has_lone(text):
        assert got is None  # a body the mask could be confused with goes as it came
        return
    assert got is not None
    assert json.loads(got) == json.loads(rewritten.replace(STAND_IN.encode(), escaped(text)))
    got.decode("utf-8")  # a lone surrogate written as its escape, never as bytes no decoder reads


def test_a_body_that_spells_a_backslash_before_surrogate_digits_is_not_masked() -> None:
    assert surrogates.mask(chat("a\\d83d \ud83d")) is None
    assert surrogates.mask(chat("\\u005c \ud83d")) is None
    assert surrogates.mask(chat("\U0001f600")) is None  # a pair: one character, nothing to mask
    assert surrogates.mask(chat("plain")) is None
