"""A non-stream body's plain output written directly, held to its reference: the output replayed
through the stream translator (``rebuild``) gives the same bytes, the same counts and the same ids
in the same order, for any output a server may answer, plain or not, under any setting and family."""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig
from gateway_mw.rawjson import raw_list
from gateway_mw.surfaces.base import Counts
from gateway_mw.surfaces.responses import rebuild
from gateway_mw.surfaces.responses.body import SLICE, plain_output
from gateway_mw.surfaces.responses.reference import replayer

from ..core.familycases import CASES
from ..hypothesis_examples import examples
from ..responseswire import function_call, message, output_text, reasoning, response

FRAGMENTS = [
    "<think>",
    "</think>",
    "<thi",
    "nk>",
    "<think></think>",
    "a",
    "b c",
    "\n",
    " ",
    "é",
    "数",
    "🙂",
    "\u2028",
    "```\n",
    "[THINK]",
    "[/THINK]",
    "<|channel|>analysis<|message|>",
    "<|end|>",
    "<|start|>assistant<|channel|>final<|message|>",
    "x<",
    "ok.",
]
TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=10).map("".join) | st.sampled_from([c.text for c in CASES])
CONFIGS = [
    ThinkExtractConfig(),
    ThinkExtractConfig(responses_reasoning_format="content"),
    ThinkExtractConfig(responses_reasoning_format="summary", responses_encrypted_content=True),
    ThinkExtractConfig(start_with_reasoning=True, separator=""),
    ThinkExtractConfig(trim_tag_edges=True, trim_reasoning_tail=True),
    ThinkExtractConfig(strip_whitespace=True, code_aware=False),
    ThinkExtractConfig(stream_mode="buffered"),
]
MODELS = ["m", *sorted({c.model for c in CASES})]

HUGE = b"1" + b"0" * 5000
"""A number of more digits than a decoder turns into one (Python's limit is 4300): msgspec reads it
as a raw value, the stream's head decoder (which decodes an item's ``id`` and ``call_id``) cannot."""


@st.composite
def message_items(draw: st.DrawFn) -> dict[str, Any]:
    """A message item as servers write one, now and then spelled otherwise: no id, an id that is no
    string, no status, a part without annotations or with more members, more parts, another kind."""
    item = message(f"msg_{draw(st.integers(0, 9))}", [draw(TEXT)])
    part = item["content"][0]
    match draw(st.integers(0, 9)):
        case 0:
            del item["id"]
        case 1:
            item["id"] = 7
        case 2:
            del item["status"]
        case 3:
            del part["annotations"]
        case 4:
            item["content"] = [{"text": part["text"], "type": "output_text", "extra": {"k": [1]}}]
        case 5:
            item["content"].append(output_text(draw(TEXT)))
        case 6:
            item["content"] = [{"type": "refusal", "refusal": "no"}]
        case 7:
            item["content"] = []
    return item


ITEMS = st.lists(
    message_items()
    | st.sampled_from(
        [
            function_call(),
            reasoning("rs_up", "their own"),
            {**reasoning("rs_up", "their own"), "id": "HUGE"},  # one the stream cannot read (see HUGE)
            {"type": "web_search_call"},
            5,
        ]
    ),
    min_size=1,
    max_size=4,
)


def counter() -> Any:
    numbers = itertools.count(1)
    return lambda prefix: f"{prefix}{next(numbers)}"


Written = tuple[bytes | None, dict[str, Any]]


def both(body: bytes, config: ThinkExtractConfig) -> tuple[Written, Written]:
    """The body written directly where it is plain, and replayed (each with its own ids, from 1):
    the new body, and the counts."""
    direct = rebuild.transform_body(body, config, replayer, new_id=counter())
    replayed = rebuild.transform_body(body, config, replayer, new_id=counter(), direct=False)
    return (direct[0], counted(direct[1])), (replayed[0], counted(replayed[1]))


def counted(counts: Counts) -> dict[str, Any]:
    return {name: getattr(counts, name) for name in Counts.__slots__}


@settings(max_examples=examples(300), deadline=None)
@given(output=ITEMS, config=st.sampled_from(CONFIGS), model=st.sampled_from(MODELS), text=st.none() | st.text())
def test_written_directly_as_replayed(
    output: list[Any], config: ThinkExtractConfig, model: str, text: str | None
) -> None:
    body = json.dumps(response("completed", output, model=model, output_text=text), ensure_ascii=False).encode()
    body = body.replace(b'"HUGE"', HUGE)
    direct, replayed = both(body, config)
    assert direct == replayed


@pytest.mark.parametrize(
    ("text", "output"),
    [
        ("no tags", None),
        ("<think>ab</think>c", [reasoning("rs_1", "ab"), message("msg_1", ["c"])]),
        ("<think>cut off", [reasoning("rs_1", "cut off")]),
        (
            "a<think>b</think>c<think>d</think>e",
            [
                message("msg_1", ["a"]),
                reasoning("rs_1", "b"),
                message("msg_1_1", ["\nc"]),  # the default separator between runs of a kind
                reasoning("rs_2", "\nd"),
                message("msg_1_2", ["\ne"]),
            ],
        ),
        ("", None),
    ],
)
def test_what_servers_answer_is_written_directly(text: str, output: list[Any] | None) -> None:
    """An answer as servers write it is plain: written directly, without a replay."""
    items = [message("msg_1", [text]), function_call()]
    body = json.dumps(response("completed", items)).encode()
    raw = raw_list(msgspec.json.decode(body, type=dict[str, msgspec.Raw])["output"])
    assert raw is not None
    written = plain_output(raw, ThinkExtractConfig(), counter())
    assert written is not None
    new, _ = written
    expected = items if output is None else [*output, function_call()]
    assert [json.loads(msgspec.json.encode(item)) for item in new] == expected
    direct, replayed = both(body, ThinkExtractConfig())
    assert direct == replayed


def test_a_text_longer_than_a_delta_counts_one_reasoning_event_per_slice() -> None:
    """A text of several slices: each slice with reasoning in it counts once, as its delta did."""
    text = "<think>" + "r" * (2 * SLICE) + "</think>answer"
    body = json.dumps(response("completed", [message("msg_1", [text])])).encode()
    direct, replayed = both(body, ThinkExtractConfig())
    assert direct == replayed
    assert direct[0] is not None and direct[1]["reasoning_events"] == 3


def test_escapes_are_plain() -> None:
    """Python's ``json.dumps`` escapes every character past ASCII (a pair of escapes for an emoji)."""
    body = json.dumps(response("completed", [message("msg_1", ["<think>é🙂</think>数"])])).encode()
    assert b"\\ud83d\\ude42" in body
    raw = raw_list(msgspec.json.decode(body, type=dict[str, msgspec.Raw])["output"])
    assert raw is not None and plain_output(raw, ThinkExtractConfig(), counter()) is not None
    direct, replayed = both(body, ThinkExtractConfig())
    assert direct == replayed
    assert direct[0] is not None
    assert json.loads(direct[0])["output"] == [reasoning("rs_1", "é🙂"), message("msg_1", ["数"])]


def test_bodies_that_are_not_plain_are_replayed() -> None:
    """A second part, a part of another kind: not plain; the replay translates them."""
    config = ThinkExtractConfig()
    item = message("msg_1", ["<think>a</think>b"])
    for body in (
        json.dumps(response("completed", [{**item, "content": [output_text("<think>x</think>y")] * 2}])).encode(),
        json.dumps(response("completed", [{**item, "content": [{"type": "refusal", "refusal": "no"}]}])).encode(),
    ):
        raw = raw_list(msgspec.json.decode(body, type=dict[str, msgspec.Raw])["output"])
        assert raw is not None
        assert plain_output(raw, config, counter()) is None
        direct, replayed = both(body, config)
        assert direct == replayed


def test_a_body_of_invalid_utf8_goes_on_as_it_came() -> None:
    """No JSON is invalid UTF-8: such a body is passed on as it came, where the replay failed on it."""
    body = json.dumps(response("completed", [message("msg_1", ["<think>a</think>b"])])).encode()
    assert both(body.replace(b"a<", b"\xff<"), ThinkExtractConfig()) == ((None, counted(Counts())),) * 2


def _with_huge(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode().replace(b'"HUGE"', HUGE)


def test_an_upstream_reasoning_item_the_stream_cannot_read_is_replayed() -> None:
    """Its event is unread in the replay (counted so), so it does not win: the message after it is
    translated. Not plain: written as replayed."""
    body = _with_huge(
        response(
            "completed", [{**reasoning("rs_up", "their own"), "id": "HUGE"}, message("msg_1", ["<think>a</think>b"])]
        )
    )
    raw = raw_list(msgspec.json.decode(body, type=dict[str, msgspec.Raw])["output"])
    assert raw is not None
    made = counter()
    assert plain_output(raw, ThinkExtractConfig(), made) is None
    assert made("x_") == "x_1"  # no id made up before it declined
    direct, replayed = both(body, ThinkExtractConfig())
    assert direct == replayed
    assert replayed[0] is not None and replayed[1]["unreadable_events"] == 1


@pytest.mark.parametrize(
    "members",
    [
        {"id": "HUGE"},
        {"call_id": "HUGE"},
        # msgspec cannot read the id (out of its range): the standard library reads the event, whole,
        # and fails on a member msgspec skips
        {"id": "OUT_OF_RANGE", "x": "HUGE"},
    ],
)
def test_a_message_item_the_stream_cannot_read_is_not_plain(members: dict[str, str]) -> None:
    """The replay's events of it are unread: not plain, declined before any id is made up."""
    item = {**message("msg_1", ["<think>a</think>b"]), **members}
    body = _with_huge(response("completed", [item])).replace(b'"OUT_OF_RANGE"', b"1e999999")
    raw = raw_list(msgspec.json.decode(body, type=dict[str, msgspec.Raw])["output"])
    assert raw is not None
    made = counter()
    assert plain_output(raw, ThinkExtractConfig(), made) is None
    assert made("x_") == "x_1"
