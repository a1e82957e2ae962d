"""The digests the reasoning record's keys are made of: a conversation's prefix, each message digested
once, is the digest of that prefix alone, in any order asked; a message's digest covers every part a
model sees and nothing a client may or may not send back."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.history.recall import Thread, canonical_decoded, canonical_json

from .reference import recall as reference

MESSAGES = st.lists(st.binary(max_size=20), max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


def ident(message: bytes) -> bytes:
    return message


@given(messages=MESSAGES, asked=st.lists(st.integers(0, 12), max_size=8), model=st.none() | st.text(max_size=5))
def test_each_prefix_is_the_digest_of_that_prefix_alone(
    messages: list[bytes], asked: list[int], model: str | None
) -> None:
    thread = Thread(model, b"head", messages, ident)
    wanted = [n for n in asked if n <= len(messages)]
    assert [thread.upto(n) for n in wanted] == [Thread(model, b"head", messages[:n], ident).upto(n) for n in wanted]


@given(messages=MESSAGES, other=st.binary(max_size=20))
def test_a_prefix_depends_on_every_message_the_model_and_the_head(messages: list[bytes], other: bytes) -> None:
    base = Thread("m", b"", messages, ident).upto(len(messages))
    assert Thread("n", b"", messages, ident).upto(len(messages)) != base
    assert Thread(None, b"", messages, ident).upto(len(messages)) != base
    assert Thread("m", b"system", messages, ident).upto(len(messages)) != base
    if messages and messages[-1] != other:
        changed = [*messages[:-1], other]
        assert Thread("m", b"", changed, ident).upto(len(changed)) != base


@given(fields=st.dictionaries(st.sampled_from(["role", "content", "name", "tool_call_id"]), JSON, min_size=1))
def test_a_message_digest_ignores_key_order_reasoning_and_cache_markers(fields: dict[str, Any]) -> None:
    plain = canonical_json(json.dumps(fields).encode(), frozenset({"reasoning_content"}))
    reordered = dict(reversed(list(fields.items())))
    extra = {**reordered, "reasoning_content": "I think.", "cache_control": {"type": "ephemeral"}}
    assert canonical_json(json.dumps(extra).encode(), frozenset({"reasoning_content"})) == plain


def test_a_message_digest_covers_images_and_skips_thinking_parts() -> None:
    def user(url: str) -> bytes:
        parts = [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": url}}]
        return json.dumps({"role": "user", "content": parts}).encode()

    assert canonical_json(user("data:image/png;base64,AAAA")) != canonical_json(user("data:image/png;base64,BBBB"))
    said = [{"type": "text", "text": "A cat.", "cache_control": {"type": "ephemeral"}}]
    thought = [{"type": "thinking", "thinking": "Whiskers.", "signature": "s"}, {"type": "text", "text": "A cat."}]
    assert canonical_json(json.dumps({"role": "assistant", "content": said}).encode()) == canonical_json(
        json.dumps({"role": "assistant", "content": thought}).encode()
    )


PART = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "redacted_thinking", "image", "tool_result"])},
    optional={"text": st.text(max_size=8), "cache_control": JSON, "content": JSON, "zz": JSON, "aa": JSON},
)
CONTENT = st.text(max_size=8) | st.lists(PART | JSON, max_size=4) | st.lists(PART, max_size=4) | JSON


@given(
    fields=st.dictionaries(st.sampled_from(["role", "content", "system", "cache_control", "reasoning"]), CONTENT),
    compact=st.booleans(),
    ascii_only=st.booleans(),
    reordered=st.booleans(),
)
def test_a_message_is_spelled_as_the_reference_spelled_it(
    fields: dict[str, Any], compact: bool, ascii_only: bool, reordered: bool
) -> None:
    """Content parts read in one decoder pass (or, when some part is no object, one by one) spell a
    message exactly as each part decoded on its own did, in any JSON spelling a client sends."""
    if reordered:
        fields = dict(reversed(list(fields.items())))
    body = json.dumps(fields, separators=(",", ":") if compact else None, ensure_ascii=ascii_only).encode()
    skip = frozenset({"reasoning"})
    assert canonical_json(body, skip) == reference.canonical_json(body, skip)
    assert canonical_json(body) == reference.canonical_json(body)


def test_a_conversation_digest_is_the_one_earlier_versions_made() -> None:
    """A key the record holds from before an upgrade is found after it: the digest of one fixed
    conversation, as the versions before made it."""
    parts = [
        {"type": "thinking", "thinking": "Whiskers.", "signature": "s"},
        {"type": "text", "text": "A cat.", "cache_control": {"type": "ephemeral"}},
        "stray",
    ]
    messages = [
        json.dumps({"role": "user", "content": "What is this?"}).encode(),
        json.dumps({"content": parts, "role": "assistant"}, separators=(",", ":")).encode(),
        json.dumps(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "18°C"}]}
        ).encode(),
    ]
    digest = Thread("qwen3-8b", b"", messages, canonical_json).upto(3)
    assert digest.hex() == "9281659757fdee39c72b167e0c78dbf684a7f8f18c4e427fbc375f5db93f65f5"


NESTED_PART = st.fixed_dictionaries(
    {"type": st.sampled_from(["input_text", "thinking", "tool_result"])},
    optional={"cache_control": JSON, "content": st.lists(PART | JSON, max_size=3), "text": st.text(max_size=8)},
)
ITEM_VALUE = CONTENT | st.lists(NESTED_PART | PART, max_size=4)


@given(
    fields=st.dictionaries(
        st.sampled_from(["type", "role", "content", "system", "output", "cache_control", "call_id"]), ITEM_VALUE
    )
)
def test_decoded_fields_are_spelled_as_value_by_value(fields: dict[str, Any]) -> None:
    """Decoded fields (a Responses item) encoded whole when nothing is left out spell what
    encoding each value on its own spelled, whatever a part holds at any depth."""
    assert canonical_decoded(fields) == reference.canonical_decoded(fields)
