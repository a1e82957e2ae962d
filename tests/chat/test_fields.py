"""The names chat reasoning goes out under (``chat_reasoning_field``, ``chat_mirror_reasoning``).

By default (``both``) reasoning taken out of the text is written as ``reasoning_content`` and as
``reasoning``, the same text in the same delta, and reasoning an upstream wrote under one name is
also written under the other: clients read one name or the other (the OpenAI Agents SDK for
JavaScript reads only ``reasoning``, DeepSeek-style clients only ``reasoning_content``), and every
client that reads both takes one of them (docs/clients.md). Key order is asserted: the second name
goes right after the first.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway_mw import ThinkExtractConfig
from gateway_mw.pipeline import StreamPipeline
from gateway_mw.surfaces.chat import transform_body

from ..chatwire import ENVELOPE, choice, chunk, completion, read_sse, sse
from ..ssecompare import pairs

DEFAULT = ThinkExtractConfig()


def translate(stream: bytes, config: ThinkExtractConfig = DEFAULT) -> list[Any]:
    """The data of each event out, every object as its (key, value) pairs: key order counts."""
    pipeline = StreamPipeline("chat", config)
    out = pipeline.feed(stream) + pipeline.finish()
    read_sse(out)  # every chunk as the SDK's strict mode reads it
    return [json.loads(line[6:], object_pairs_hook=list) for line in out.split(b"\n") if line[:7] == b"data: {"]


def test_the_default_writes_both_names() -> None:
    assert DEFAULT.chat_reasoning_field == "both"
    assert DEFAULT.chat_mirror_reasoning


def test_reasoning_from_tags_goes_out_under_both_names_in_the_same_delta() -> None:
    stream = sse(
        chunk("", delta={"role": "assistant"}),
        chunk("<think>I add"),
        chunk(" 2 and 2</think>It"),
        chunk(" is 4."),
        chunk(finish="stop"),
        "[DONE]",
    )
    assert translate(stream) == pairs(
        [
            chunk("", delta={"role": "assistant"}),
            chunk(delta={"reasoning_content": "I add", "reasoning": "I add"}),
            chunk(delta={"reasoning_content": " 2 and 2", "reasoning": " 2 and 2"}),
            {**ENVELOPE, "choices": [choice(0, {"content": "It"})]},
            chunk(" is 4."),
            chunk(finish="stop"),
        ]
    )


def test_held_reasoning_at_the_end_goes_out_under_both_names() -> None:
    stream = sse(chunk("<think>unclosed <"), "[DONE]")
    assert translate(stream) == pairs(
        [
            chunk(delta={"reasoning_content": "unclosed ", "reasoning": "unclosed "}),
            {**ENVELOPE, "choices": [choice(0, {"reasoning_content": "<", "reasoning": "<"})]},
        ]
    )


def test_an_explicit_null_reasoning_content_trades_places_with_content_and_the_other_name_follows() -> None:
    """SGLang's spelling: every absent field null."""
    nulls = {"role": None, "content": None, "reasoning_content": None, "tool_calls": None}
    stream = sse(chunk(delta={**nulls, "content": "<think>"}), chunk(delta={**nulls, "content": "r"}), "[DONE]")
    delta = {"role": None, "reasoning_content": "r", "reasoning": "r", "content": None, "tool_calls": None}
    assert translate(stream) == pairs([chunk(delta=delta)])


@pytest.mark.parametrize(
    ("upstream", "out"),
    [
        # vLLM: reasoning only
        ({"reasoning": "r"}, {"reasoning": "r", "reasoning_content": "r"}),
        # SGLang, llama.cpp, DeepSeek: reasoning_content only (with SGLang's explicit nulls)
        ({"reasoning_content": "r"}, {"reasoning_content": "r", "reasoning": "r"}),
        ({"content": None, "reasoning_content": "r"}, {"content": None, "reasoning_content": "r", "reasoning": "r"}),
        # both names already: as it came
        ({"reasoning_content": "r", "reasoning": "r"}, {"reasoning_content": "r", "reasoning": "r"}),
    ],
)
def test_a_servers_own_reasoning_is_given_under_the_name_it_lacks(
    upstream: dict[str, Any], out: dict[str, Any]
) -> None:
    stream = sse(chunk(delta=upstream), chunk("It is 4."), "[DONE]")
    assert translate(stream) == pairs([chunk(delta=out), chunk("It is 4.")])
    message = {k: v for k, v in upstream.items() if k != "content"}  # the answer is the message's content
    body = json.dumps(completion("It is 4.", **message)).encode()
    new, _ = transform_body(body, DEFAULT)
    if upstream == out:
        assert new is None  # sent as it came
    else:
        mirrored = {k: v for k, v in out.items() if k != "content"}
        assert new is not None
        assert json.loads(new, object_pairs_hook=list) == pairs(completion("It is 4.", **mirrored))


@pytest.mark.parametrize(
    ("field", "upstream", "out"),
    [
        ("reasoning_content", {"reasoning": "r"}, {"reasoning": "r", "reasoning_content": "r"}),
        ("reasoning_content", {"reasoning_content": "r"}, {"reasoning_content": "r"}),
        ("reasoning", {"reasoning_content": "r"}, {"reasoning_content": "r", "reasoning": "r"}),
        ("reasoning", {"reasoning": "r"}, {"reasoning": "r"}),
    ],
)
def test_with_one_name_chosen_a_servers_reasoning_under_the_other_is_also_given_under_it(
    field: str, upstream: dict[str, Any], out: dict[str, Any]
) -> None:
    assert translate(sse(chunk(delta=upstream), "[DONE]"), DEFAULT.replace(chat_reasoning_field=field)) == pairs(
        [chunk(delta=out)]
    )


@pytest.mark.parametrize("field", ["both", "reasoning_content", "reasoning"])
def test_without_the_mirror_a_servers_reasoning_passes_as_it_came(field: str) -> None:
    config = DEFAULT.replace(chat_reasoning_field=field, chat_mirror_reasoning=False)
    for upstream in ({"reasoning": "r"}, {"reasoning_content": "r"}):
        assert translate(sse(chunk(delta=upstream), "[DONE]"), config) == pairs([chunk(delta=upstream)])


@pytest.mark.parametrize(
    ("field", "names"),
    [
        ("both", ("reasoning_content", "reasoning")),
        ("reasoning_content", ("reasoning_content",)),
        ("reasoning", ("reasoning",)),
    ],
)
def test_a_body_gets_the_moved_reasoning_under_the_names_of_the_field(field: str, names: tuple[str, ...]) -> None:
    body = json.dumps(completion("<think>r</think>answer")).encode()
    new, _ = transform_body(body, DEFAULT.replace(chat_reasoning_field=field))
    assert new is not None
    assert json.loads(new, object_pairs_hook=list) == pairs(completion("answer", **dict.fromkeys(names, "r")))
