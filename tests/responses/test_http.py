"""The Responses surface over real HTTP through the middleware: whole event lists and bodies."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from gateway_mw import THINKEXTRACT_STATS, ModelProfile
from gateway_mw.sse import SSEDecoder

from ..httpcuts import bytes_at_every_cut
from ..responseswire import (
    USAGE,
    added,
    completed,
    created,
    ev,
    function_call,
    in_progress,
    item_done,
    make_app,
    message,
    message_events,
    normalize,
    numbered,
    part_added,
    read_events,
    reasoning,
    reasoning_events,
    response,
    sse,
    stream_handler,
    text_delta,
    upstream,
    validate_response,
)

ClientFactory = Callable[[web.Application], Awaitable[TestClient[web.Request, web.Application]]]
ROUTE = "/v1/responses"


async def post_stream(aiohttp_client: ClientFactory, body: bytes, **config: Any) -> tuple[bytes, Any]:
    client = await aiohttp_client(make_app(stream_handler(body, list(range(0, len(body), 50))), **config))
    resp = await client.post(ROUTE, json={"stream": True})
    assert resp.status == 200
    return await resp.read(), client.app[THINKEXTRACT_STATS].snapshot()["responses"]


async def test_reasoning_then_answer(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["<thi", "nk>Two plus", " two.</think>", "It is 4."]))
    out, stats = await post_stream(aiohttp_client, body)
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["Two plus", " two."]),
            *message_events("msg_1", 1, ["It is 4."]),
            completed([reasoning("rs_1", "Two plus two."), message("msg_1", ["It is 4."])]),
        ]
    )
    assert (stats["seen"], stats["translated"], stats["reasoning_blocks"], stats["reasoning_chars"]) == (1, 1, 1, 13)


async def test_summary_format(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["<think>Two plus", " two.</think>", "It is 4."]))
    out, _ = await post_stream(aiohttp_client, body, responses_reasoning_format="summary")
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["Two plus", " two."], summary=True),
            *message_events("msg_1", 1, ["It is 4."]),
            completed([reasoning("rs_1", "Two plus two.", summary=True), message("msg_1", ["It is 4."])]),
        ]
    )


async def test_summary_format_by_model_profile(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["<think>r</think>a"], model="codex-local"))
    profile = ModelProfile(match="codex-*", responses_reasoning_format="summary")
    out, _ = await post_stream(aiohttp_client, body, profiles=(profile,))
    assert read_events(out) == numbered(
        [
            created("codex-local"),
            in_progress("codex-local"),
            *reasoning_events("rs_1", 0, ["r"], summary=True),
            *message_events("msg_1", 1, ["a"]),
            completed([reasoning("rs_1", "r", summary=True), message("msg_1", ["a"])], "codex-local"),
        ]
    )


async def test_answer_reasoning_answer_splits_the_message(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["Answer first. <think>wait", "</think>", "Then more."]))
    out, _ = await post_stream(aiohttp_client, body)
    first = "Answer first. "
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *message_events("msg_1", 0, [first]),
            *reasoning_events("rs_1", 1, ["wait"]),
            *message_events("msg_1_1", 2, ["\nThen more."]),
            completed([message("msg_1", [first]), reasoning("rs_1", "wait"), message("msg_1_1", ["\nThen more."])]),
        ]
    )


async def test_function_call_after_the_message_is_shifted(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["<think>call f</think>", "Calling f."], after=[function_call()]))
    out, _ = await post_stream(aiohttp_client, body)
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["call f"]),
            *message_events("msg_1", 1, ["Calling f."]),
            added(2, function_call(status="in_progress")),
            item_done(2, function_call()),
            completed([reasoning("rs_1", "call f"), message("msg_1", ["Calling f."]), function_call()]),
        ]
    )


async def test_function_call_arguments_events_follow_the_shift(aiohttp_client: ClientFactory) -> None:
    fc = function_call()
    events = upstream(["<think>r</think>a"])[:-1]
    events += [
        added(1, {**fc, "arguments": "", "status": "in_progress"}),
        ev("response.function_call_arguments.delta", item_id="fc_1", output_index=1, delta='{"x":1}'),
        ev("response.function_call_arguments.done", item_id="fc_1", output_index=1, arguments='{"x":1}'),
        item_done(1, fc),
        completed([message("msg_1", ["<think>r</think>a"]), fc]),
    ]
    out, _ = await post_stream(aiohttp_client, sse(numbered(events)))
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["r"]),
            *message_events("msg_1", 1, ["a"]),
            added(2, {**fc, "arguments": "", "status": "in_progress"}),
            ev("response.function_call_arguments.delta", item_id="fc_1", output_index=2, delta='{"x":1}'),
            ev("response.function_call_arguments.done", item_id="fc_1", output_index=2, arguments='{"x":1}'),
            item_done(2, fc),
            completed([reasoning("rs_1", "r"), message("msg_1", ["a"]), fc]),
        ]
    )


async def test_unclosed_block_live_stays_reasoning(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["<think>still", " thinking"]))
    out, stats = await post_stream(aiohttp_client, body)
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["still", " thinking"]),
            completed([reasoning("rs_1", "still thinking")]),
        ]
    )
    assert stats["unclosed_blocks"] == 1


async def test_unclosed_block_buffered_is_content_verbatim(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["<think>still", " thinking"]))
    out, _ = await post_stream(aiohttp_client, body, stream_mode="buffered")
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *message_events("msg_1", 0, ["<think>still thinking"]),
            completed([message("msg_1", ["<think>still thinking"])]),
        ]
    )


async def test_upstream_error_then_failed_mid_stream(aiohttp_client: ClientFactory) -> None:
    error = ev("error", code="server_error", message="boom", param=None)
    events = [
        created(),
        in_progress(),
        added(0, message("msg_1", None, "in_progress")),
        part_added("msg_1", 0, {"type": "output_text", "text": "", "annotations": [], "logprobs": []}),
        text_delta("msg_1", 0, "<think>Hmm"),
        text_delta("msg_1", 0, " let me</th"),
        error,
        completed([message("msg_1", ["<think>Hmm let me</th"], "incomplete")], kind="failed"),
    ]
    out, _ = await post_stream(aiohttp_client, sse(numbered(events)))
    assert (
        read_events(out)
        == numbered(
            [
                created(),
                in_progress(),
                *reasoning_events("rs_1", 0, ["Hmm", " let me", "</th"])[:-5],  # open until the end
                error,  # held text went out before it
                *reasoning_events("rs_1", 0, ["Hmm let me</th"])[-5:],
                completed([reasoning("rs_1", "Hmm let me</th")], kind="failed"),
            ]
        )
    )


async def test_failed_with_an_open_message_closes_it_as_incomplete(aiohttp_client: ClientFactory) -> None:
    events = [
        created(),
        in_progress(),
        added(0, message("msg_1", None, "in_progress")),
        part_added("msg_1", 0, {"type": "output_text", "text": "", "annotations": [], "logprobs": []}),
        text_delta("msg_1", 0, "<think>r</think>Part"),
        text_delta("msg_1", 0, "ial <thin"),
        completed([message("msg_1", ["<think>r</think>Partial <thin"], "incomplete")], kind="incomplete"),
    ]
    out, _ = await post_stream(aiohttp_client, sse(numbered(events)))
    partial = message("msg_1", ["Partial <thin"], "incomplete")
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["r"]),
            *message_events("msg_1", 1, ["Part", "ial ", "<thin"])[:-1],
            item_done(1, partial),
            completed([reasoning("rs_1", "r"), partial], kind="incomplete"),
        ]
    )


async def test_unreadable_event_mid_stream_comes_after_the_held_text(aiohttp_client: ClientFactory) -> None:
    events: list[Any] = upstream(["Hello <thi", "nk>x</think>y"])
    events.insert(5, "{not json")
    out, stats = await post_stream(aiohttp_client, sse(events))
    msg = message_events("msg_1", 0, ["Hello ", "<thi", "nk>x</think>y"])  # "<thi" could not wait
    expected: list[Any] = numbered(
        [created(), in_progress(), *msg, completed([message("msg_1", ["Hello <think>x</think>y"])])]
    )
    expected.insert(6, "{not json")  # passed on as it came, after the held text, taking no number
    assert read_events(out) == expected
    assert (stats["translated"], stats["unreadable_events"]) == (1, 1)


async def test_stream_without_event_lines_gets_none(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["<think>r</think>a"]), event_lines=False)
    out, _ = await post_stream(aiohttp_client, body)
    assert read_events(out, event_lines=False) == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["r"]),
            *message_events("msg_1", 1, ["a"]),
            completed([reasoning("rs_1", "r"), message("msg_1", ["a"])]),
        ]
    )


async def test_done_marker_and_comments_pass(aiohttp_client: ClientFactory) -> None:
    events = upstream(["<think>r", "</think>a"])
    body = sse(events[:5]) + b": keepalive\n\n" + sse([*events[5:], "[DONE]"])
    out, _ = await post_stream(aiohttp_client, body)
    decoder = SSEDecoder()
    assert [e.raw for e in decoder.feed(out) if e.data is None] == [b": keepalive\n\n"]
    assert read_events(out) == [
        *numbered(
            [
                created(),
                in_progress(),
                *reasoning_events("rs_1", 0, ["r"]),
                *message_events("msg_1", 1, ["a"]),
                completed([reasoning("rs_1", "r"), message("msg_1", ["a"])]),
            ]
        ),
        "[DONE]",
    ]


async def test_upstream_reasoning_item_wins(aiohttp_client: ClientFactory) -> None:
    events = [
        created(),
        in_progress(),
        added(0, {"id": "rs_up", "type": "reasoning", "summary": [], "status": "in_progress"}),
        item_done(0, {"id": "rs_up", "type": "reasoning", "summary": [], "content": [], "status": "completed"}),
        *message_events("msg_1", 1, ["<think>literal</think> text"]),
        completed([message("msg_1", ["<think>literal</think> text"])]),
    ]
    body = sse(numbered(events))
    out, _ = await post_stream(aiohttp_client, body)
    assert out == body


async def test_tag_free_stream_passes_byte_for_byte(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["Just ", "an answer."], after=[function_call()]))
    out, _ = await post_stream(aiohttp_client, body)
    assert out == body


async def test_stream_cut_at_every_byte_offset_gives_identical_bytes(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["a<think>é日", "🙂</think>b <thi", "nk>c</think>"], after=[function_call()]))
    received = await bytes_at_every_cut(lambda handler: aiohttp_client(make_app(handler)), ROUTE, body)
    outputs = {normalize(out) for out in received}
    assert len(outputs) == 1
    assert read_events(outputs.pop()) == numbered(
        [
            created(),
            in_progress(),
            *message_events("msg_1", 0, ["a"]),
            *reasoning_events("rs_1", 1, ["é日", "🙂"]),
            *message_events("msg_1_1", 2, ["\nb "]),
            *reasoning_events("rs_2", 3, ["\nc"]),
            added(4, function_call(status="in_progress")),
            item_done(4, function_call()),
            completed(
                [
                    message("msg_1", ["a"]),
                    reasoning("rs_1", "é日🙂"),
                    message("msg_1_1", ["\nb "]),
                    reasoning("rs_2", "\nc"),
                    function_call(),
                ]
            ),
        ]
    )


async def test_gomodel_defect_9_regression(aiohttp_client: ClientFactory) -> None:
    """GoModel's Responses stream was half rewritten: raw tags in the done events and the completed
    response, the reasoning item at the message's output_index, no sequence_number on synthesized
    events, no reasoning_text.done, held bytes lost when a new item starts, a delta after completion."""
    second = message_events("msg_2", 1, ["<think>s</think>t"])
    events = [
        created(),
        in_progress(),
        *message_events("msg_1", 0, ["<think>r</think>", "a <thi"]),  # "<thi" held at the item's end
        *second,
        completed([message("msg_1", ["<think>r</think>a <thi"]), message("msg_2", ["<think>s</think>t"])]),
    ]
    out, _ = await post_stream(aiohttp_client, sse(numbered(events)))
    got = read_events(out)
    assert got == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["r"]),
            *message_events("msg_1", 1, ["a ", "<thi"]),
            *reasoning_events("rs_2", 2, ["s"]),
            *message_events("msg_2", 3, ["t"]),
            completed(
                [reasoning("rs_1", "r"), message("msg_1", ["a <thi"]), reasoning("rs_2", "s"), message("msg_2", ["t"])]
            ),
        ]
    )
    assert [e["sequence_number"] for e in got] == list(range(len(got)))
    assert got[-1]["type"] == "response.completed"


# -- non-stream -----------------------------------------------------------------------------------


def json_handler(doc: dict[str, Any]) -> Any:
    async def handle(request: web.Request) -> web.StreamResponse:
        return web.json_response(doc)

    return handle


async def post_json(aiohttp_client: ClientFactory, doc: dict[str, Any], **config: Any) -> dict[str, Any]:
    client = await aiohttp_client(make_app(json_handler(doc), **config))
    resp = await client.post(ROUTE, json={})
    body = await resp.read()
    assert int(resp.headers["Content-Length"]) == len(body)
    result: dict[str, Any] = normalize(json.loads(body))
    validate_response(result)
    return result


@pytest.mark.parametrize("summary", [False, True])
async def test_non_stream_reasoning_then_answer(aiohttp_client: ClientFactory, summary: bool) -> None:
    doc = response("completed", [message("msg_1", ["<think>Two plus two.</think>It is 4."])], output_text="x")
    config = {"responses_reasoning_format": "summary"} if summary else {}
    assert await post_json(aiohttp_client, doc, **config) == response(
        "completed",
        [reasoning("rs_1", "Two plus two.", summary=summary), message("msg_1", ["It is 4."])],
        output_text="It is 4.",
    )


async def test_non_stream_split_and_other_items(aiohttp_client: ClientFactory) -> None:
    doc = response("completed", [message("msg_1", ["A <think>r</think>B"]), function_call()], usage=USAGE)
    assert await post_json(aiohttp_client, doc) == response(
        "completed",
        [message("msg_1", ["A "]), reasoning("rs_1", "r"), message("msg_1_1", ["\nB"]), function_call()],
        usage=USAGE,
    )


async def test_non_stream_upstream_reasoning_item_wins(aiohttp_client: ClientFactory) -> None:
    native = {"id": "rs_up", "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "n"}]}
    doc = response("completed", [native, message("msg_1", ["<think>x</think>y"])])
    assert await post_json(aiohttp_client, doc) == doc


async def test_whole_sse_body_in_a_response(aiohttp_client: ClientFactory) -> None:
    body = sse(upstream(["<think>r</think>a"]))

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="text/event-stream")

    client = await aiohttp_client(make_app(handler))
    resp = await client.post(ROUTE, json={"stream": True})
    out = await resp.read()
    assert int(resp.headers["Content-Length"]) == len(out)
    assert read_events(out) == numbered(
        [
            created(),
            in_progress(),
            *reasoning_events("rs_1", 0, ["r"]),
            *message_events("msg_1", 1, ["a"]),
            completed([reasoning("rs_1", "r"), message("msg_1", ["a"])]),
        ]
    )
