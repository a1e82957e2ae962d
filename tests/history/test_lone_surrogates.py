"""A lone surrogate escape in a request body leaves its own string as it came and nothing else: the
body is rewritten exactly as the same body with plain text in the string's place."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import surrogates, transform_request
from gateway_mw.marks import redacted_data
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


REDACTED = ThinkExtractConfig(upstream_server="vllm", messages_policy="redacted")


def messages_with_blob(reasoning: str, user: str) -> bytes:
    """A messages history whose earlier turn carries its reasoning in the gateway's own
    ``redacted_thinking`` block (its text in no string of the body)."""
    messages: list[Any] = [
        {"role": "user", "content": user},
        {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": redacted_data(reasoning)}, {"type": "text", "text": "ok"}]},
        {"role": "user", "content": "go"},
    ]  # fmt: skip
    return json.dumps({"model": "m", "max_tokens": 9, "messages": messages}).encode()


@given(reasoning=TEXTS.filter(lambda text: not has_lone(text)), lone=st.sampled_from(["\ud83d", "\ude00", "a\udbff"]))
@example(reasoning="the file is C:\\dead\\beef", lone="\ud83d")
def test_reasoning_the_transform_writes_is_never_lifted_into_a_lone_surrogate(reasoning: str, lone: str) -> None:
    """Text the transform writes itself (a blob's reasoning, the record's) that spells a backslash
    before a surrogate's digits is no masked escape: a body masked for a lone escape elsewhere is
    rewritten with that reasoning as it was, or goes as it came; the client's escape stays its own."""
    body = messages_with_blob(reasoning, f"cut {lone}")
    got = transform_request(SURFACES["messages"], body, REDACTED)
    plain = transform_request(SURFACES["messages"], messages_with_blob(reasoning, f"cut {STAND_IN}"), REDACTED)
    assert plain is not None
    if got is None:  # only when the reasoning spells a backslash before a d: the mask could not be told from it
        assert b"\\\\d" in escaped(reasoning).lower()
        return
    assert json.loads(got) == json.loads(plain.replace(STAND_IN.encode(), escaped(lone)))
