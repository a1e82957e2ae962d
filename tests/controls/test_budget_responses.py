"""A reasoning budget the gateway enforces on the Responses surface, over loopback: the middleware on a
forwarding app in front of an emulated Responses server (:mod:`.responses_thinker`) that thinks until
it is stopped. The client gets at most N reasoning deltas and then an answer, as one well-formed
response (one ``response.created``, ``sequence_number`` and ``output_index`` continuous, one
terminal event whose ``output`` holds every item); the openai SDK's strict accumulator reads it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import ThinkExtractConfig
from gateway_mw.config import BUDGET_MESSAGE
from gateway_mw.controls import read_intent, read_with_texts, write_controls
from gateway_mw.surfaces.registry import SURFACES

from ..relay import Front as AnyFront
from ..relay import Fronts
from .responses_thinker import ROUTE, ResponsesThinker
from .thinker import ANSWER, token

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
MODEL = "Qwen/Qwen3-8B"
PREFILL = "<think>{}" + BUDGET_MESSAGE + "</think>"


Front = AnyFront[ResponsesThinker]
Start = Callable[..., Awaitable[Front]]


@pytest.fixture
async def start(aiohttp_server: ServerFactory) -> AsyncIterator[Start]:
    async with Fronts(aiohttp_server) as fronts:

        async def make(thinker: ResponsesThinker, whole: bool = False, **settings: Any) -> Front:
            back = web.Application()
            back.router.add_post(ROUTE, thinker.responses)
            # llama.cpp has a budget field of its own, which `auto` would write: the gateway's is asked for
            enforcement = "gateway" if thinker.server == "llamacpp" else "auto"
            settings.setdefault("reasoning_budget_enforcement", enforcement)
            config = ThinkExtractConfig(upstream_server=thinker.server, reasoning_store="off", **settings)
            return await fronts.make(thinker, back, config, [ROUTE], whole=whole)

        yield make


def request(think: str, budget: int | None, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "input": [{"role": "user", "content": think}], "stream": True}
    if budget is not None:
        body["reasoning"] = {"max_tokens": budget}
    return body | more


async def events(front: Front, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The client's stream: each event's data, decoded. Every event is named by an ``event:`` line
    (its data's type) when the upstream names its events (llama.cpp), none otherwise."""
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert resp.status == 200
        raw = await resp.read()
    assert raw.endswith(b"\n\n")
    out = []
    for block in raw.decode().split("\n\n")[:-1]:
        lines = block.split("\n")
        data = json.loads("\n".join(line[len("data: ") :] for line in lines if line.startswith("data: ")))
        named = [line[len("event: ") :] for line in lines if line.startswith("event: ")]
        assert named == ([data["type"]] if front.thinker.server == "llamacpp" else [])
        out.append(data)
    return out


def well_formed(stream: list[dict[str, Any]]) -> dict[str, Any]:
    """The checks every joined response passes; its terminal event's response."""
    kinds = [e["type"] for e in stream]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds.count("response.created") == kinds.count("response.in_progress") == 1
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert sum(k in ("response.completed", "response.incomplete", "response.failed") for k in kinds) == 1
    assert [e["sequence_number"] for e in stream] == list(range(len(stream)))
    added = [e["output_index"] for e in stream if e["type"] == "response.output_item.added"]
    done = [e for e in stream if e["type"] == "response.output_item.done"]
    assert added == list(range(len(added))) == [e["output_index"] for e in done]
    response = stream[-1]["response"]
    assert response["id"] == stream[0]["response"]["id"]
    assert response["output"] == [e["item"] for e in done]
    return response


def reasoning_deltas(stream: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in stream if e["type"] == "response.reasoning_text.delta"]


def answer_text(stream: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in stream if e["type"] == "response.output_text.delta")


def reasoning_item(item_id: str, text: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": text}],
        "content": [{"type": "reasoning_text", "text": text}],
        "status": "completed",
    }


@pytest.mark.parametrize("server", ["vllm", "llamacpp"])
async def test_a_stream_is_cut_at_the_budget_and_continued_as_one_response(start: Start, server: str) -> None:
    front = await start(ResponsesThinker(server))
    stream = await events(front, request("think", 3))
    response = well_formed(stream)
    thought = "".join(token(i) for i in range(3))
    assert reasoning_deltas(stream) == [token(i) for i in range(3)]
    assert answer_text(stream) == "".join(ANSWER)
    output = response["output"]
    assert [item["type"] for item in output] == ["reasoning", "message"]
    assert output[0] == reasoning_item(output[0]["id"], thought)
    assert output[1]["content"][0]["text"] == "".join(ANSWER)
    assert response["status"] == "completed"
    first, second = await front.thinker.over()
    assert first.stopped and not second.stopped
    item = {"type": "message", "id": "msg_prefill", "role": "assistant", "status": "in_progress"}
    item["content"] = [{"type": "output_text", "text": PREFILL.format(thought), "annotations": []}]
    written = {"chat_template_kwargs": {"enable_thinking": True}} if server == "llamacpp" else {}  # the switch on
    assert first.body == request("think", 3) | written
    assert second.body == request("think", 3) | written | {"input": [*request("think", 3)["input"], item]}
    assert front.stats.surface("responses").budgets == {"continued": 1}


async def test_the_whole_stream_as_the_client_reads_it(start: Start) -> None:
    """Every event of a budget of 1 on vLLM, in order: the cut reasoning item closed with what the
    client got, the continuation's message numbered after it."""
    front = await start(ResponsesThinker("vllm"))
    stream = await events(front, request("think", 1))
    rs = stream[2]["item"]["id"]
    seen = [(e["type"], e.get("output_index"), e.get("delta", e.get("text"))) for e in stream]
    assert seen == [
        ("response.created", None, None),
        ("response.in_progress", None, None),
        ("response.output_item.added", 0, None),
        ("response.content_part.added", 0, None),
        ("response.reasoning_summary_part.added", 0, None),
        ("response.reasoning_text.delta", 0, "r0 "),
        ("response.reasoning_summary_text.delta", 0, "r0 "),
        ("response.reasoning_text.done", 0, "r0 "),
        ("response.content_part.done", 0, None),
        ("response.reasoning_summary_text.done", 0, "r0 "),
        ("response.reasoning_summary_part.done", 0, None),
        ("response.output_item.done", 0, None),
        ("response.output_item.added", 1, None),
        ("response.content_part.added", 1, None),
        *[("response.output_text.delta", 1, word) for word in ANSWER],
        ("response.output_text.done", 1, "".join(ANSWER)),
        ("response.content_part.done", 1, None),
        ("response.output_item.done", 1, None),
        ("response.completed", None, None),
    ]
    assert stream[11]["item"] == reasoning_item(rs, "r0 ")
    assert {e["item_id"] for e in stream[3:11]} == {rs}
    response = well_formed(stream)
    assert response["usage"]["output_tokens"] == len(ANSWER)  # the continuation's: the cut stream reported none


async def test_the_openai_sdk_reads_one_response(start: Start) -> None:
    front = await start(ResponsesThinker("vllm"))
    client = openai.AsyncOpenAI(base_url=front.url + "/v1", api_key="none", max_retries=0)
    try:
        async with client.responses.stream(
            model=MODEL, input="think", extra_body={"reasoning": {"max_tokens": 2}}
        ) as stream:
            kinds = [event.type async for event in stream]
            final = await stream.get_final_response()
        body = await client.responses.create(model=MODEL, input="think", extra_body={"reasoning": {"max_tokens": 2}})
    finally:
        await client.close()
    assert kinds.count("response.completed") == 1
    for response in (final, body):
        assert [item.type for item in response.output] == ["reasoning", "message"]
        reasoning = response.output[0]
        assert reasoning.type == "reasoning" and reasoning.content is not None
        assert [c.text for c in reasoning.content] == ["r0 r1 "]
        assert response.output_text == "".join(ANSWER)
        assert response.status == "completed"
    assert front.stats.surface("responses").budgets == {"continued": 2}
    served = await front.thinker.over()
    assert [s.body["stream"] for s in served] == [True] * 4  # the client's body asked for as a stream
    user = {"type": "message", "role": "user", "content": "think"}  # the client's string input, as a message
    assert [s.body["input"] if i % 2 == 0 else s.body["input"][0] for i, s in enumerate(served)] == ["think", user] * 2
    assert [s.body["input"][1]["content"][0]["text"] for s in served[1::2]] == [PREFILL.format("r0 r1 ")] * 2


@pytest.mark.parametrize("fault", ["refused", "dropped"])
async def test_a_failed_continuation_ends_the_response_incomplete(start: Start, fault: str) -> None:
    """The continuation is refused, or its connection closes after one word: the response ends where
    it was, every item closed, ``response.incomplete`` holding them, as a limit would end it."""
    thinker = ResponsesThinker("vllm", fail=500 if fault == "refused" else None, drop=fault == "dropped")
    front = await start(thinker)
    stream = await events(front, request("think", 3))
    response = well_formed(stream)
    assert reasoning_deltas(stream) == [token(0), token(1), token(2)]
    assert answer_text(stream) == ("" if fault == "refused" else ANSWER[0])
    assert stream[-1]["type"] == "response.incomplete"
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    output = response["output"]
    assert output[0] == reasoning_item(output[0]["id"], "r0 r1 r2 ")
    if fault == "dropped":  # the message the continuation began, closed with the word it got
        part = {"type": "output_text", "text": ANSWER[0], "annotations": []}
        assert output[1] == {
            "id": output[1]["id"], "type": "message", "role": "assistant", "status": "incomplete", "content": [part]
        }  # fmt: skip
        assert [e["type"] for e in stream[-4:]] == [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.incomplete",
        ]
    else:
        assert len(output) == 1
    assert front.stats.surface("responses").budgets == {"continuation_failed": 1}


async def test_a_model_that_reopens_its_reasoning_gets_a_second_reasoning_item(start: Start) -> None:
    """The continuation thinks again: its reasoning goes out as a reasoning item of its own after the
    cut one, not counted against the budget (one cut per answer)."""
    front = await start(ResponsesThinker("vllm", reopen=True))
    stream = await events(front, request("think", 2))
    response = well_formed(stream)
    assert reasoning_deltas(stream) == [token(0), token(1), "more "]
    output = response["output"]
    assert [item["type"] for item in output] == ["reasoning", "reasoning", "message"]
    assert output[0] == reasoning_item(output[0]["id"], "r0 r1 ")
    assert output[1] == reasoning_item(output[1]["id"], "more ")
    assert response["status"] == "completed"
    assert front.stats.surface("responses").budgets == {"continued": 1}


@pytest.mark.parametrize("server", ["vllm", "llamacpp"])
async def test_a_continuation_answered_with_one_body_is_the_rest_of_the_stream(start: Start, server: str) -> None:
    """A continuation that comes as one JSON body (llama.cpp's echo of the prefill in its text) goes
    to the client as the rest of the same stream."""
    front = await start(ResponsesThinker(server, whole=True))
    stream = await events(front, request("think", 2))
    response = well_formed(stream)
    assert reasoning_deltas(stream) == [token(0), token(1)]
    assert answer_text(stream) == "".join(ANSWER)
    assert [item["type"] for item in response["output"]] == ["reasoning", "message"]
    assert response["usage"] == {"input_tokens": 1, "output_tokens": len(ANSWER), "total_tokens": 1 + len(ANSWER)}
    assert front.stats.surface("responses").budgets == {"continued": 1}


async def test_a_budget_of_zero_gives_an_empty_reasoning_item(start: Start) -> None:
    front = await start(ResponsesThinker("vllm"))
    stream = await events(front, request("think", 0))
    response = well_formed(stream)
    assert reasoning_deltas(stream) == []
    assert answer_text(stream) == "".join(ANSWER)
    assert response["output"][0] == reasoning_item(response["output"][0]["id"], "")
    item = front.thinker.served[1].body["input"][-1]
    assert item["content"][0]["text"] == "<think>" + BUDGET_MESSAGE + "</think>"


async def test_reasoning_within_the_budget_goes_as_without_one(start: Start) -> None:
    """A reasoning that ends within the budget is not touched: the same events as with no budget."""
    front = await start(ResponsesThinker("vllm"))
    budgeted = await events(front, request("think 4", 4))
    free = await events(front, request("think 4", None))
    ids = {e["item"]["id"] for e in free if e["type"] == "response.output_item.added"}
    assert len(ids) == 2
    assert [{k: v for k, v in e.items() if k not in ("item_id", "item", "response", "part")} for e in budgeted] == [
        {k: v for k, v in e.items() if k not in ("item_id", "item", "response", "part")} for e in free
    ]
    assert reasoning_deltas(budgeted) == [token(i) for i in range(4)]
    assert [s.stopped for s in await front.thinker.over()] == [False, False]
    assert front.stats.surface("responses").budgets == {"within": 1}


async def test_sglang_s_responses_endpoint_is_not_continued(start: Start) -> None:
    """SGLang's Responses handler closes a final assistant message and prompts for a new turn
    (serving_responses.py ``_make_request``): the gateway does not enforce a budget there."""
    front = await start(ResponsesThinker("sglang"), reasoning_budget_enforcement="gateway")
    stream = await events(front, request("think 5", 2))
    well_formed(stream)
    assert reasoning_deltas(stream) == [token(i) for i in range(5)]
    assert len(await front.thinker.over()) == 1
    assert front.stats.surface("responses").budgets == {}


@pytest.mark.parametrize(("server", "limit"), [("vllm", "max_output_tokens"), ("llamacpp", "n_predict")])
async def test_the_continuation_may_generate_only_what_the_limit_leaves(start: Start, server: str, limit: str) -> None:
    """The client's limit holds for the two requests together (llama.cpp's own ``n_predict`` too: its
    Responses endpoint passes it on, as build 0c1e570 does)."""
    front = await start(ResponsesThinker(server))
    await events(front, request("think", 3, **{limit: 10}))
    first, second = await front.thinker.over()
    assert (first.body[limit], second.body[limit]) == (10, 7)


async def test_a_limit_the_reasoning_used_up_ends_the_response_incomplete(start: Start) -> None:
    front = await start(ResponsesThinker("vllm"))
    stream = await events(front, request("think", 3, max_output_tokens=3))
    response = well_formed(stream)
    assert response["status"] == "incomplete"
    assert len(await front.thinker.over()) == 1
    assert front.stats.surface("responses").budgets == {"not_continued": 1}


async def test_a_string_input_becomes_a_list_with_the_prefill(start: Start) -> None:
    front = await start(ResponsesThinker("llamacpp"))
    stream = await events(front, {"model": MODEL, "input": "think", "stream": True, "reasoning": {"max_tokens": 1}})
    well_formed(stream)
    second = (await front.thinker.over())[1]
    assert second.body["input"][0] == {"type": "message", "role": "user", "content": "think"}
    assert second.body["input"][1]["content"][0]["text"] == "<think>r0 " + BUDGET_MESSAGE + "</think>"


async def test_summaries_only_count_the_summary_deltas(start: Start) -> None:
    """Reasoning written as summaries only (``responses_reasoning_format=summary``): the budget
    counts their deltas."""
    front = await start(ResponsesThinker("vllm"), responses_reasoning_format="summary")
    stream = await events(front, request("think", 2))
    response = well_formed(stream)
    summary = [e["delta"] for e in stream if e["type"] == "response.reasoning_summary_text.delta"]
    assert summary == [token(0), token(1)]
    assert response["output"][0] == {
        "id": response["output"][0]["id"],
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "r0 r1 "}],
        "status": "completed",
    }


async def test_a_client_that_asks_for_no_stream_gets_the_joined_body(start: Start) -> None:
    front = await start(ResponsesThinker("vllm"))
    body = request("think", 2, stream=False)
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert resp.status == 200 and resp.content_type == "application/json"
        body = await resp.json()
    first, second = await front.thinker.over()
    assert first.body["stream"] is True and second.body["stream"] is True
    assert body["id"] == "resp_1" and body["created_at"] == 1001 and body["status"] == "completed"
    output = body["output"]
    assert [item["type"] for item in output] == ["reasoning", "message"]
    assert output[0] == reasoning_item(output[0]["id"], "r0 r1 ")
    assert output[1]["content"] == [{"type": "output_text", "text": "".join(ANSWER), "annotations": []}]


async def test_a_continuation_that_ends_without_its_terminal_event_ends_the_response(start: Start) -> None:
    """The continuation's stream ends cleanly after its text but says no more: the response still
    ends well-formed, its message closed with the text it got, ``response.incomplete``."""
    front = await start(ResponsesThinker("vllm", unfinished=True))
    stream = await events(front, request("think", 2))
    response = well_formed(stream)
    assert answer_text(stream) == "".join(ANSWER)
    assert response["status"] == "incomplete"
    part = {"type": "output_text", "text": "".join(ANSWER), "annotations": []}
    message = {"id": response["output"][1]["id"], "type": "message", "role": "assistant", "status": "incomplete"}
    assert response["output"][1] == message | {"content": [part]}


async def test_a_client_gone_before_the_continuation_gets_none(start: Start) -> None:
    """The client leaves after N reasoning deltas while the model goes on thinking: the handler is
    cancelled, and no continuation is asked for."""
    thinker = ResponsesThinker("vllm", wait_at=2)
    front = await start(thinker)
    thinker.wait = front.client_gone
    seen: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as session:
        resp = await session.post(front.url + ROUTE, json=request("think", 2))
        async for line in resp.content:
            if line.startswith(b"data: "):
                seen.append(json.loads(line[len(b"data: ") :]))
            if len(reasoning_deltas(seen)) == 2:
                break
        resp.connection.transport.close()  # type: ignore[union-attr]
        resp.close()
    served = await thinker.over()
    assert reasoning_deltas(seen) == [token(0), token(1)]
    assert len(served) == 1 and served[0].stopped
    assert front.stats.surface("responses").budgets == {}


async def test_a_handler_that_returns_the_stream_whole_is_not_cut(start: Start) -> None:
    """A handler that reads the upstream's stream whole and returns it gives the middleware nothing to
    cut: a client that asked for no stream gets the body that stream makes, the budget not enforced."""
    front = await start(ResponsesThinker("vllm"), whole=True)
    body = request("think 5", 2, stream=False)
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert resp.status == 200 and resp.content_type == "application/json"
        answer = await resp.json()
    assert answer["id"] == "resp_1" and answer["status"] == "completed"
    assert [item["type"] for item in answer["output"]] == ["reasoning", "message"]
    assert answer["output"][0]["content"] == [{"type": "reasoning_text", "text": "".join(token(i) for i in range(5))}]
    assert answer["output"][1]["content"][0]["text"] == "".join(ANSWER)
    assert front.stats.surface("responses").budgets == {"not_relayed": 1}
    assert [s.stopped for s in await front.thinker.over()] == [False]


async def test_a_client_that_asks_for_no_stream_gets_an_incomplete_body_when_the_continuation_fails(
    start: Start,
) -> None:
    front = await start(ResponsesThinker("llamacpp", fail=400))
    body = request("think", 2, stream=False)
    async with aiohttp.ClientSession() as session, session.post(front.url + ROUTE, json=body) as resp:
        assert resp.status == 200 and resp.content_type == "application/json"
        answer = await resp.json()
    assert answer["id"] == "resp_1" and answer["status"] == "incomplete"
    assert answer["incomplete_details"] == {"reason": "max_output_tokens"}
    assert answer["output"] == [reasoning_item(answer["output"][0]["id"], "r0 r1 ")]
    assert front.stats.surface("responses").budgets == {"continuation_failed": 1}


async def test_reasoning_the_server_splits_itself_is_cut_and_its_item_closed(start: Start) -> None:
    """vLLM with a reasoning parser sends the reasoning as a reasoning item of its own: its deltas are
    counted, and the item the budget cut is closed with what the client got of it."""
    front = await start(ResponsesThinker("vllm", native=True))
    stream = await events(front, request("think", 3))
    response = well_formed(stream)
    assert reasoning_deltas(stream) == [token(0), token(1), token(2)]
    assert answer_text(stream) == "".join(ANSWER)
    content = [{"type": "reasoning_text", "text": "r0 r1 r2 "}]
    assert response["output"][0] == {"id": "rs_1", "type": "reasoning", "summary": [], "status": "completed"} | {
        "content": content
    }
    assert [item["type"] for item in response["output"]] == ["reasoning", "message"]
    first, second = await front.thinker.over()
    assert first.stopped and second.body["input"][-1]["content"][0]["text"] == PREFILL.format("r0 r1 r2 ")


def responses_written(server: str, enforcement: str, stream: bool = True) -> tuple[str, str, bool]:
    body = json.dumps(request("hi", 64, stream=stream)).encode()
    both = read_with_texts(body, SURFACES["responses"].controls)
    assert both is not None
    fields, texts = both
    config = ThinkExtractConfig(upstream_server=server, reasoning_budget_enforcement=enforcement)  # type: ignore[arg-type]
    intent = read_intent(body, SURFACES["responses"], fields, texts)
    controlled = write_controls(intent, fields, SURFACES["responses"], server, config.for_model(None))
    return controlled.written, controlled.outcome, controlled.by_gateway


ON = "chat_template_kwargs.enable_thinking=true, chat_template_kwargs.thinking=true"


@pytest.mark.parametrize(
    ("server", "enforcement", "stream", "expected"),
    [
        # vLLM's Responses has no budget field: the gateway's, wherever it may enforce one
        ("vllm", "auto", True, ("budget 64 enforced by the gateway", "applied", True)),
        ("vllm", "auto", False, ("budget 64 enforced by the gateway, stream=true", "applied", True)),
        ("vllm", "server", True, ("", "nearest", False)),
        ("vllm", "off", True, ("", "nearest", False)),  # thinking on, unbounded
        # llama.cpp's has its own: the gateway's only when asked for
        ("llamacpp", "auto", True, (f"{ON}, thinking_budget_tokens=64", "applied", False)),
        ("llamacpp", "gateway", True, (f"{ON}, budget 64 enforced by the gateway", "applied", True)),
        # SGLang's cannot continue: thinking on, no budget
        ("sglang", "gateway", True, ("", "nearest", False)),
    ],
)
def test_who_enforces_a_budget_on_responses(
    server: str, enforcement: str, stream: bool, expected: tuple[str, str, bool]
) -> None:
    assert responses_written(server, enforcement, stream) == expected
