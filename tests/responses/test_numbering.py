"""Responses: one numbering map for every event, whatever the upstream sends.

Each test plays an upstream over real HTTP behind the middleware and reads it with the official
openai SDK in strict mode (`responses.stream`): what it accepts, and the final response it builds.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import openai
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_STATS, ThinkExtractConfig, setup

from ..responseswire import (
    added,
    completed,
    created,
    function_call,
    in_progress,
    item_done,
    message,
    message_events,
    normalize,
    numbered,
    output_text,
    part_added,
    part_done,
    reasoning,
    response,
    sse,
    text_delta,
    text_done,
)

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
SMALL = {"max_event_bytes": 64 * 1024}  # the cap of these tests: their large events are ~80 KB


def gateway(pieces: list[bytes], config: ThinkExtractConfig) -> web.Application:
    """An upstream that writes ``pieces`` one per write, behind the middleware."""

    async def responses(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in pieces:
            await resp.write(piece)
        await resp.write_eof()
        return resp

    app = web.Application()
    setup(app, config)
    app.router.add_post("/v1/responses", responses)
    return app


async def client_view(
    aiohttp_server: ServerFactory, pieces: list[bytes], stats: list[Any] | None = None, **config: Any
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every event the strict SDK read (as JSON) and its final response (reasoning ids normalized);
    the middleware's statistics appended to ``stats``."""
    app = gateway(pieces, ThinkExtractConfig(**config))
    server = await aiohttp_server(app)
    if stats is not None:
        stats.append(app[THINKEXTRACT_STATS])
    client = openai.AsyncOpenAI(
        api_key="x", base_url=str(server.make_url("/v1")), max_retries=0, _strict_response_validation=True
    )
    async with client.responses.stream(model="m", input="hi") as stream:
        events = [
            wire_only(event.model_dump(mode="json", exclude_unset=True, warnings=False)) async for event in stream
        ]
        final = await stream.get_final_response()
    output = wire_only(final.model_dump(mode="json", exclude_unset=True, warnings=False)["output"])
    return normalize(events), normalize(output)


def wire_only(value: Any) -> Any:
    """``value`` without what the SDK's stream helper adds (``snapshot``, ``parsed: None``…)."""
    if isinstance(value, list):
        return [wire_only(v) for v in value]
    if isinstance(value, dict):
        added = ("parsed", "parsed_arguments")
        return {k: wire_only(v) for k, v in value.items() if k != "snapshot" and not (k in added and v is None)}
    return value


def each(events: list[dict[str, Any]]) -> list[bytes]:
    """One upstream write per event, as a model server streams."""
    return [sse([e]) for e in events]


def check_numbering(events: list[dict[str, Any]]) -> None:
    """What every client relies on: 0, 1, 2… sequence numbers; items added at 0, 1, 2… in order, each
    done once with the id it was added with; every content event about an item that is open."""
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    ids: list[str] = []
    done: set[int] = set()
    for e in events:
        if e["type"] == "response.output_item.added":
            assert e["output_index"] == len(ids)
            ids.append(e["item"]["id"])
        elif e["type"] == "response.output_item.done":
            assert ids[e["output_index"]] == e["item"]["id"] and e["output_index"] not in done
            done.add(e["output_index"])
        elif "output_index" in e:
            assert e["output_index"] < len(ids)
            if "item_id" in e:
                assert e["item_id"] == ids[e["output_index"]]


async def test_done_events_larger_than_the_event_cap_are_translated(aiohttp_server: ServerFactory) -> None:
    """Defect 1: an answer over max_event_bytes, streamed in small deltas: its done events repeat it
    whole; they are read (held up to max_body_bytes), cleaned and renumbered, not passed raw."""
    answer = "word " * 16_000  # 80 KB
    text = "<think>plan</think>" + answer
    deltas = ["<think>plan</think>", *["word " * 100] * 160]
    events = numbered(
        [
            created(),
            in_progress(),
            *message_events("msg_1", 0, deltas, text),
            completed([message("msg_1", [text])]),
        ]
    )
    got, final = await client_view(aiohttp_server, each(events), **SMALL)
    check_numbering(got)
    assert final == [reasoning("rs_1", "plan"), message("msg_1", [answer])]
    kinds = ("response.reasoning_text.done", "response.output_text.done", "response.content_part.done")
    dones = [e.get("text", e.get("part", {}).get("text")) for e in got if e["type"] in kinds]
    assert dones == ["plan", "plan", answer, answer]


async def test_a_large_function_call_after_reasoning_keeps_its_identity(aiohttp_server: ServerFactory) -> None:
    """Defect 1 (agents writing files) and 2: a function call whose added and done events are over
    the cap, after a reasoning item was inserted: counted, shifted, the same id throughout."""
    call = function_call(arguments=json.dumps({"content": "x" * 80_000}))
    events = numbered(
        [
            created(),
            in_progress(),
            *message_events("msg_1", 0, ["<think>I will write it</think>", "Writing."]),
            added(1, {**call, "status": "in_progress"}),
            item_done(1, call),
            completed([message("msg_1", ["<think>I will write it</think>Writing."]), call]),
        ]
    )
    got, final = await client_view(aiohttp_server, each(events), **SMALL)
    check_numbering(got)
    assert final == [reasoning("rs_1", "I will write it"), message("msg_1", ["Writing."]), call]


async def test_an_oversized_opening_event_on_a_tag_free_stream_is_counted(aiohttp_server: ServerFactory) -> None:
    """Defect 2: a tag-free stream passes unchanged; a large item still takes its index."""
    call = function_call(arguments="y" * 80_000)
    events = numbered(
        [
            created(),
            added(0, {**call, "status": "in_progress"}),
            item_done(0, call),
            *message_events("msg_1", 1, ["plain ", "answer"]),
            completed([call, message("msg_1", ["plain answer"])]),
        ]
    )
    got, final = await client_view(aiohttp_server, each(events), **SMALL)
    check_numbering(got)
    assert final == [call, message("msg_1", ["plain answer"])]
    assert got == events


async def test_an_oversized_delta_is_renumbered_on_its_bytes(aiohttp_server: ServerFactory) -> None:
    """A delta over the event cap goes through raw (not held up to the body cap), renumbered as it
    goes, into the client's part. The events that repeat its text are over the cap too: the done
    events of the item are the gateway's own, the terminal event goes on as the upstream wrote it."""
    big = "z" * 80_000
    events = numbered(
        [
            created(),
            in_progress(),
            *message_events("msg_1", 0, ["<think>r</think>", "a", big, "b"]),
            completed([message("msg_1", ["<think>r</think>a" + big + "b"])]),
        ]
    )
    got, final = await client_view(aiohttp_server, each(events), max_event_bytes=4096, max_body_bytes=300_000)
    check_numbering(got)
    done = [e["item"] for e in got if e["type"] == "response.output_item.done"]
    assert [d["type"] for d in done] == ["reasoning", "message"] and done[0] == reasoning("rs_1", "r")
    assert "".join(e["delta"] for e in got if e["type"] == "response.output_text.delta") == "a" + big + "b"
    assert final == [message("msg_1", ["<think>r</think>a" + big + "b"])]


async def test_numbers_written_as_floats_and_split_surrogate_pairs(aiohttp_server: ServerFactory) -> None:
    """Defect 3: what the SDK accepts (``4.0``, a surrogate pair split across deltas) is read too."""
    events = numbered(
        [created(), in_progress(), *message_events("msg_1", 0, ["<think>r</think>smile ", "X", "Y", "!"])]
    )
    events.append(completed([message("msg_1", ["<think>r</think>smile \U0001f600!"])]))
    raw = [sse([e]) for e in events]
    at = [i for i, e in enumerate(events) if e["type"] == "response.output_text.delta"]
    raw[at[1]] = raw[at[1]].replace(b'"X"', b'"\\ud83d"').replace(b'"output_index":0', b'"output_index":0.0')
    seq = b'"sequence_number":%d' % events[at[2]]["sequence_number"]
    raw[at[2]] = raw[at[2]].replace(b'"Y"', b'"\\ude00"').replace(seq, seq + b".0")
    got, final = await client_view(aiohttp_server, raw)
    check_numbering(got)
    assert final == [reasoning("rs_1", "r"), message("msg_1", ["smile \U0001f600!"])]
    deltas = [e["delta"] for e in got if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "smile \U0001f600!"


async def test_a_message_without_id_keeps_one_id_throughout(aiohttp_server: ServerFactory) -> None:
    """Defect 4: the id made up for a message the upstream left without one is the same in every
    event and in response.completed; so is the reasoning item's."""
    item = message("x", ["<think>r</think>answer"])
    del item["id"]
    events = numbered(
        [
            created(),
            added(0, {k: v for k, v in message("x", None, "in_progress").items() if k != "id"}),
            {**part_added("x", 0, output_text("")), "item_id": None},
            {**text_delta("x", 0, "<think>r</think>answer"), "item_id": None},
            item_done(0, item),
            completed([item]),
        ]
    )
    for e in events:
        if e.get("item_id", 0) is None:
            del e["item_id"]
    got, final = await client_view(aiohttp_server, each(events))
    check_numbering(got)
    msg_ids = {e["item"]["id"] for e in got if e["type"].startswith("response.output_item") and e["output_index"] == 1}
    assert len(msg_ids) == 1 and next(iter(msg_ids)).startswith("msg_")
    assert final == [reasoning("rs_1", "r"), {**item, "id": next(iter(msg_ids)), "content": [output_text("answer")]}]


async def test_a_delta_after_its_item_is_done_points_at_its_client_item(aiohttp_server: ServerFactory) -> None:
    """Defect 5: a late delta is not left at the upstream's index, which the shift gave to another item."""
    events = numbered(
        [
            created(),
            *message_events("msg_1", 0, ["<think>r</think>a"]),
            text_delta("msg_1", 0, "late"),
            completed([message("msg_1", ["<think>r</think>a"])]),
        ]
    )
    got, final = await client_view(aiohttp_server, each(events))
    check_numbering(got)
    late = [e for e in got if e["type"] == "response.output_text.delta" and e["delta"] == "late"]
    assert [(e["output_index"], e["item_id"]) for e in late] == [(1, "msg_1")]
    assert final == [reasoning("rs_1", "r"), message("msg_1", ["a"])]


async def test_model_text_naming_a_large_event_does_not_make_it_one(aiohttp_server: ServerFactory) -> None:
    """Defect 8: only the event line or the first key name an event's type, never its text: a tool
    call's arguments that start with "response.created" stream through, they are not held."""
    args = "response.created " * 5_000
    call = {**function_call(arguments=args), "status": "in_progress"}
    delta = {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1}
    events = numbered(
        [
            created(),
            *message_events("msg_1", 0, ["<think>r</think>a"]),
            added(1, {**call, "arguments": ""}),
            {"delta": args, **delta},  # the text first: no event line, the type is not the first key
            item_done(1, function_call(arguments=args)),
            completed([message("msg_1", ["<think>r</think>a"]), function_call(arguments=args)]),
        ]
    )
    raw = [sse([e], event_lines=False) for e in events]
    stats: list[Any] = []
    got, final = await client_view(aiohttp_server, raw, stats, max_event_bytes=4096, max_body_bytes=1 << 20)
    check_numbering(got)
    assert final == [reasoning("rs_1", "r"), message("msg_1", ["a"]), function_call(arguments=args)]
    assert stats[0].surface("responses").oversized_events == 1  # the delta streamed through, not held whole


async def test_a_non_string_message_id_in_the_terminal_output(aiohttp_server: ServerFactory) -> None:
    """Defect 9: the translator does not raise; the client gets the ids it was streamed."""
    events = numbered([created(), *message_events("msg_1", 0, ["<think>r</think>a"])])
    events.append(completed([{**message("msg_1", ["<think>r</think>a"]), "id": 7}]))
    got, final = await client_view(aiohttp_server, each(events))
    check_numbering(got)
    assert final == [reasoning("rs_1", "r"), message("msg_1", ["a"])]


async def test_a_stream_without_indexes_or_numbers_as_llama_server_writes_it(aiohttp_server: ServerFactory) -> None:
    """Defect 11: no output_index, content_index or sequence_number on any event, a created event of
    three fields: items are known by their ids and order; the client gets every field it needs."""
    text = "<think>two plus two</think>It is 4."
    item = {"content": [], "id": "msg_ll", "role": "assistant", "status": "in_progress", "type": "message"}
    done_item = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    head = {"id": "resp_ll", "object": "response", "status": "in_progress"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": head},
        {"type": "response.in_progress", "response": head},
        {"type": "response.output_item.added", "item": item},
        {"type": "response.content_part.added", "item_id": "msg_ll", "part": {"type": "output_text", "text": ""}},
        *(
            {"type": "response.output_text.delta", "item_id": "msg_ll", "delta": text[i : i + 3]}
            for i in range(0, 36, 3)
        ),
        {"type": "response.output_text.done", "item_id": "msg_ll", "text": text},
        {"type": "response.content_part.done", "item_id": "msg_ll", "part": done_item["content"][0]},
        {"type": "response.output_item.done", "item": done_item},
        {"type": "response.completed", "response": {**response("completed", [done_item]), "id": "resp_ll"}},
    ]
    got, final = await client_view(aiohttp_server, each(events))
    check_numbering(got)
    answer = {**done_item, "content": [{"type": "output_text", "text": "It is 4.", "annotations": []}]}
    assert final == [reasoning("rs_1", "two plus two"), answer]
    assert "".join(e["delta"] for e in got if e["type"] == "response.reasoning_text.delta") == "two plus two"


async def test_a_block_may_span_the_parts_of_one_message(aiohttp_server: ServerFactory) -> None:
    """Defect 12: one channel per message item: a block opened in one part closes in a later one,
    in stream and non-stream alike."""
    parts = ["a<think>x", "y</think>B"]
    item = message("msg_1", parts)
    events = numbered(
        [
            created(),
            added(0, message("msg_1", None, "in_progress")),
            part_added("msg_1", 0, output_text("")),
            text_delta("msg_1", 0, parts[0]),
            text_done("msg_1", 0, parts[0]),
            part_done("msg_1", 0, output_text(parts[0])),
            part_added("msg_1", 0, output_text(""), content_index=1),
            text_delta("msg_1", 0, parts[1], content_index=1),
            text_done("msg_1", 0, parts[1], content_index=1),
            part_done("msg_1", 0, output_text(parts[1]), content_index=1),
            item_done(0, item),
            completed([item]),
        ]
    )
    got, final = await client_view(aiohttp_server, each(events))
    check_numbering(got)
    # The answer after the block goes on in a new message item, after the separator (design rule 5).
    expected = [message("msg_1", ["a"]), reasoning("rs_1", "xy"), message("msg_1_1", ["\nB"])]
    assert final == expected

    from gateway_mw.surfaces.responses import transform_body

    new, _ = transform_body(json.dumps(response("completed", [item])).encode(), ThinkExtractConfig())
    assert new is not None and normalize(json.loads(new)["output"]) == expected


async def test_made_up_ids_come_from_the_app_s_source(aiohttp_server: ServerFactory) -> None:
    """``THINKEXTRACT_IDS`` makes the output deterministic, stream and non-stream alike."""
    from itertools import count

    from gateway_mw import THINKEXTRACT_IDS

    events = numbered([created(), *message_events("msg_1", 0, ["<think>r</think>a"])])
    events.append(completed([message("msg_1", ["<think>r</think>a"])]))
    app = gateway(each(events), ThinkExtractConfig())
    numbers = count(1)
    app[THINKEXTRACT_IDS] = lambda prefix: f"{prefix}{next(numbers)}"
    body = response("completed", [message("msg_1", ["<think>r</think>a"])])

    async def plain(request: web.Request) -> web.Response:
        return web.json_response(body)

    app.router.add_post("/v1/plain/responses", plain)
    server = await aiohttp_server(app)
    client = openai.AsyncOpenAI(api_key="x", base_url=str(server.make_url("/v1")), max_retries=0)
    async with client.responses.stream(model="m", input="hi") as stream:
        final = await stream.get_final_response()
    assert [item.id for item in final.output] == ["rs_1", "msg_1"]
    async with aiohttp.ClientSession() as http, http.post(server.make_url("/v1/plain/responses"), json={}) as resp:
        plain_body = await resp.json()
    assert plain_body == response("completed", [reasoning("rs_2", "r"), message("msg_1", ["a"])])


async def test_values_the_translator_does_not_own_keep_their_bytes(aiohttp_server: ServerFactory) -> None:
    """A rewritten event and the rebuilt terminal output keep the upstream's spelling of every value
    they do not own (``1.50`` stays ``1.50``, an escape stays an escape), in stream and non-stream."""
    extra = b',"score":1.50,"note":"caf\\u00e9"'
    events = numbered([created(), *message_events("msg_1", 0, ["<think>r</think>a"])])
    events.append(completed([message("msg_1", ["<think>r</think>a"])]))
    raw = [sse([e]) for e in events]
    at = next(i for i, e in enumerate(events) if e["type"] == "response.output_text.delta")
    raw[at] = raw[at].replace(b',"logprobs":[]', b',"logprobs":[]' + extra)
    raw[-1] = raw[-1].replace(b'"status":"completed","content"', b'"status":"completed"' + extra + b',"content"')
    app = gateway(raw, ThinkExtractConfig())
    server = await aiohttp_server(app)
    async with aiohttp.ClientSession() as http, http.post(server.make_url("/v1/responses"), json={}) as resp:
        body = await resp.read()
    # The upstream delta "<think>r</think>a" becomes reasoning deltas (written afresh: an answer
    # delta's own fields, logprobs among them, are the answer's) and the answer delta "a", its rewrite.
    answer = [line for line in body.split(b"\n") if b'"type":"response.output_text.delta"' in line]
    assert [line.count(extra) for line in answer] == [1]
    completed_line = next(line for line in body.split(b"\n") if b'"type":"response.completed"' in line)
    assert completed_line.count(extra) == 1  # and so did the message item the terminal output rebuilt
