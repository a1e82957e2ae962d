"""The reasoning record keeps to its own conversation, over real HTTP through the middleware.

Two users of one application (one API key) ask the same kind of thing: the upstream's reasoning
names what it was shown (the first question, its image, the model), so that a turn given another
conversation's reasoning shows. Tool-call ids that repeat across conversations (Kimi K2's
``functions.get_weather:0``, as vLLM and SGLang pass them on), questions that differ only in their
image or their model, a key sent as ``x-api-key`` instead of ``Authorization: Bearer``, and an agent
that writes its tool calls as text (smolagents' ``ToolCallingAgent``) are each checked by what the
upstream receives on the next turn.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway_mw import THINKEXTRACT_RECORD, ThinkExtractConfig, setup

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

KIMI_ID = "functions.get_weather:0"  # Kimi K2 numbers its calls from 0 in every conversation
ARGS = '{"city":"Paris"}'
MODEL = "llama-3.1-8b"  # no known family: the inline form, every turn


def reasoning_for(body: dict[str, Any], conversation: Any) -> str:
    """What the upstream thinks: it names the conversation's first question and the model."""
    return f"About {json.dumps(conversation, sort_keys=True)} on {body['model']}."


def answered(conversation: list[dict[str, Any]]) -> bool:
    """Whether a tool's result is in: a tool message, or an agent's "Observation:" as user text."""
    return any(m.get("role") == "tool" or "Observation:" in json.dumps(m.get("content")) for m in conversation)


class Upstream:
    """A model server on the three surfaces: with tools it first calls one (with Kimi's id), then
    answers; without tools it answers at once, the same text for every question."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def turn(self, body: dict[str, Any], conversation: list[dict[str, Any]]) -> tuple[str, bool]:
        self.bodies.append(body)
        first = conversation[0].get("content") if conversation else None
        thought = f"<think>{reasoning_for(body, first)}</think>"
        if body.get("tools") and not answered(conversation):
            return thought + "Let me look.", True
        return thought + ("It is sunny." if body.get("tools") else "It is an animal."), False

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        text, call = self.turn(body, [m for m in body["messages"] if m["role"] != "system"])
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if call:
            message["tool_calls"] = [
                {"id": KIMI_ID, "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
            ]
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}
        return web.json_response(
            {"id": "c", "object": "chat.completion", "created": 1, "model": body["model"], "choices": [choice]}
        )

    async def messages(self, request: web.Request) -> web.Response:
        body = await request.json()
        text, call = self.turn(body, body["messages"])
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if call:
            content.append({"type": "tool_use", "id": KIMI_ID, "name": "get_weather", "input": json.loads(ARGS)})
        return web.json_response(
            {
                "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"], "content": content,
                "stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )  # fmt: skip

    async def responses(self, request: web.Request) -> web.Response:
        body = await request.json()
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        text, call = self.turn(body, items)
        part = {"type": "output_text", "text": text, "annotations": []}
        output: list[dict[str, Any]] = [
            {"type": "message", "id": "msg_up", "role": "assistant", "status": "completed", "content": [part]}
        ]
        if call:
            output.append(
                {"type": "function_call", "id": "fc_1", "call_id": KIMI_ID, "name": "get_weather",
                 "arguments": ARGS, "status": "completed"}
            )  # fmt: skip
        return web.json_response(
            {"id": "resp_1", "object": "response", "created_at": 1, "model": body["model"], "status": "completed",
             "output": output}
        )  # fmt: skip


async def gateway(aiohttp_server: ServerFactory) -> tuple[str, Upstream, web.Application]:
    up = Upstream()
    app = web.Application()
    setup(app, ThinkExtractConfig(messages_policy="unsigned"))
    app.router.add_post("/v1/chat/completions", up.chat)
    app.router.add_post("/v1/messages", up.messages)
    app.router.add_post("/v1/responses", up.responses)
    server = await aiohttp_server(app)
    return str(server.make_url("/v1")), up, app


async def post(base: str, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        auth = {"Authorization": "Bearer app-key"} if headers is None else headers
        async with session.post(base + path, json=body, headers=auth) as resp:
            assert resp.status == 200
            answer: dict[str, Any] = await resp.json()
            return answer


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def chat_replay(question: list[dict[str, Any]], answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The next turn of a client that keeps content and tool calls (LangChain's ChatOpenAI)."""
    message = answer["choices"][0]["message"]
    kept = {"role": "assistant", "content": message["content"], "tool_calls": message["tool_calls"]}
    return [*question, kept, {"role": "tool", "tool_call_id": KIMI_ID, "content": "sunny"}]


async def test_a_tool_call_id_that_repeats_across_conversations_finds_only_its_own(
    aiohttp_server: ServerFactory,
) -> None:
    base, up, app = await gateway(aiohttp_server)
    alice = [{"role": "user", "content": "Weather in Paris?"}]
    bob = [{"role": "user", "content": "Weather in Rome?"}]
    alice_answer = await post(base, "/chat/completions", {"model": MODEL, "messages": alice, "tools": TOOLS})
    bob_answer = await post(base, "/chat/completions", {"model": MODEL, "messages": bob, "tools": TOOLS})
    await app[THINKEXTRACT_RECORD].drain()
    for question, answer in ((alice, alice_answer), (bob, bob_answer)):
        replay = chat_replay(question, answer)
        await post(base, "/chat/completions", {"model": MODEL, "messages": replay, "tools": TOOLS})
    call = {"id": KIMI_ID, "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
    for body, question in zip(up.bodies[2:], (alice, bob), strict=True):
        thought = reasoning_for({"model": MODEL}, question[0]["content"])
        assert body["messages"][1] == {
            "role": "assistant", "content": f"<think>{thought}</think>Let me look.", "tool_calls": [call]
        }  # fmt: skip


CAT, DOG = "data:image/png;base64,Q0FU", "data:image/png;base64,RE9H"


def image_question(url: str) -> list[dict[str, Any]]:
    parts = [{"type": "text", "text": "What animal is this?"}, {"type": "image_url", "image_url": {"url": url}}]
    return [{"role": "user", "content": parts}]


@pytest.mark.parametrize(
    ("alice", "bob"),
    [
        ((MODEL, image_question(CAT)), (MODEL, image_question(DOG))),
        ((MODEL, image_question(CAT)), ("mistral-7b", image_question(CAT))),
    ],
    ids=["another-image", "another-model"],
)  # fmt: skip
async def test_the_same_words_about_another_image_or_to_another_model_share_nothing(
    aiohttp_server: ServerFactory, alice: tuple[str, list[dict[str, Any]]], bob: tuple[str, list[dict[str, Any]]]
) -> None:
    base, up, app = await gateway(aiohttp_server)
    answers = [await post(base, "/chat/completions", {"model": m, "messages": q}) for m, q in (alice, bob)]
    await app[THINKEXTRACT_RECORD].drain()
    for (model, question), answer in zip((alice, bob), answers, strict=True):
        text = answer["choices"][0]["message"]["content"]
        assert text == "It is an animal."  # the same words for both: only the record's keys tell them apart
        replay = [*question, {"role": "assistant", "content": text}, {"role": "user", "content": "Sure?"}]
        await post(base, "/chat/completions", {"model": model, "messages": replay})
    for body, (model, question) in zip(up.bodies[2:], (alice, bob), strict=True):
        thought = reasoning_for({"model": model}, question[0]["content"])
        assert body["messages"][1] == {"role": "assistant", "content": f"<think>{thought}</think>It is an animal."}


async def test_the_scope_is_the_key_however_it_is_presented(aiohttp_server: ServerFactory) -> None:
    base, up, app = await gateway(aiohttp_server)
    question = [{"role": "user", "content": "Weather in Paris?"}]
    answer = await post(base, "/chat/completions", {"model": MODEL, "messages": question, "tools": TOOLS})
    await app[THINKEXTRACT_RECORD].drain()
    replay = {"model": MODEL, "messages": chat_replay(question, answer), "tools": TOOLS}
    await post(base, "/chat/completions", replay, {"x-api-key": "app-key"})  # the Anthropic SDK's way
    await post(base, "/chat/completions", replay, {"Authorization": "Bearer  app-key "})
    await post(base, "/chat/completions", replay, {})  # no key: another scope
    await post(base, "/chat/completions", replay, {"x-api-key": "another-key"})
    thought = reasoning_for({"model": MODEL}, "Weather in Paris?")
    contents = [body["messages"][1]["content"] for body in up.bodies[1:]]
    assert contents == [f"<think>{thought}</think>Let me look."] * 2 + ["Let me look."] * 2


# smolagents 1.26, ToolCallingAgent: ActionStep.to_messages writes the model's text, then the calls as a
# TOOL_CALL message ("Calling tools:\n" + str([call.dict()])), then the result as a TOOL_RESPONSE
# ("Observation:\n…"); OpenAIServerModel converts those roles to assistant and user, and
# get_clean_message_list joins consecutive text parts of one role with "\n".
SMOL_SYSTEM = "You are an expert assistant who can solve any task using tool calls."


def smol_calls() -> str:
    calls = [{"id": KIMI_ID, "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    return "Calling tools:\n" + str(calls)


def smol_chat(text: str | None) -> list[dict[str, Any]]:
    said = (text.strip() + "\n" if text else "") + smol_calls()
    return [
        {"role": "system", "content": [{"type": "text", "text": SMOL_SYSTEM}]},
        {"role": "user", "content": [{"type": "text", "text": "New task:\nWeather in Paris?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": said}]},
        {"role": "user", "content": [{"type": "text", "text": "Observation:\nsunny"}]},
    ]


async def test_an_agent_that_writes_its_tool_calls_as_text_gets_its_reasoning_back_on_chat(
    aiohttp_server: ServerFactory,
) -> None:
    base, up, app = await gateway(aiohttp_server)
    first = smol_chat(None)[:2]
    answer = await post(base, "/chat/completions", {"model": MODEL, "messages": first, "tools": TOOLS})
    await app[THINKEXTRACT_RECORD].drain()
    message = answer["choices"][0]["message"]
    assert message["content"] == "Let me look." and message["tool_calls"][0]["id"] == KIMI_ID
    await post(base, "/chat/completions", {"model": MODEL, "messages": smol_chat(message["content"]), "tools": TOOLS})
    thought = reasoning_for({"model": MODEL}, first[1]["content"])
    said = f"<think>{thought}</think>Let me look.\n{smol_calls()}"
    assert up.bodies[1]["messages"][2] == {"role": "assistant", "content": [{"type": "text", "text": said}]}


async def test_an_agent_that_writes_its_tool_calls_as_text_gets_its_reasoning_back_on_messages(
    aiohttp_server: ServerFactory,
) -> None:
    base, up, app = await gateway(aiohttp_server)
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    first = [{"role": "user", "content": [{"type": "text", "text": "New task:\nWeather in Paris?"}]}]
    body = {"model": MODEL, "max_tokens": 100, "system": SMOL_SYSTEM, "messages": first, "tools": tools}
    answer = await post(base, "/messages", body)
    await app[THINKEXTRACT_RECORD].drain()
    text = next(block["text"] for block in answer["content"] if block["type"] == "text")
    assert text == "Let me look."
    said = f"{text}\n{smol_calls()}"
    replay = [
        *first,
        {"role": "assistant", "content": [{"type": "text", "text": said}]},
        {"role": "user", "content": [{"type": "text", "text": "Observation:\nsunny"}]},
    ]
    await post(base, "/messages", {**body, "messages": replay})
    thought = reasoning_for({"model": MODEL}, first[0]["content"])
    assert up.bodies[1]["messages"][1] == {
        "role": "assistant", "content": [{"type": "text", "text": f"<think>{thought}</think>{said}"}]
    }  # fmt: skip


async def test_an_agent_that_writes_its_tool_calls_as_text_gets_its_reasoning_back_on_responses(
    aiohttp_server: ServerFactory,
) -> None:
    base, up, app = await gateway(aiohttp_server)
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    first = [{"role": "user", "content": "New task:\nWeather in Paris?"}]
    body = {"model": MODEL, "instructions": SMOL_SYSTEM, "input": first, "tools": tools}
    answer = await post(base, "/responses", body)
    await app[THINKEXTRACT_RECORD].drain()
    text = "".join(p["text"] for item in answer["output"] if item["type"] == "message" for p in item["content"])
    assert text == "Let me look."
    said = f"{text}\n{smol_calls()}"
    replay = [*first, {"role": "assistant", "content": said}, {"role": "user", "content": "Observation:\nsunny"}]
    await post(base, "/responses", {**body, "input": replay})
    thought = reasoning_for({"model": MODEL}, first[0]["content"])
    assert up.bodies[1]["input"][1] == {"role": "assistant", "content": f"<think>{thought}</think>{said}"}


async def test_the_gateway_with_client_keys_scopes_by_the_key_it_accepted() -> None:
    """The Anthropic SDK sends its key as ``x-api-key``; a client that also carries another
    ``Authorization`` (its own proxy's, say) is the same client to the gateway that accepted its key."""
    from gateway_mw.proxy.settings import Secret

    from ..proxy.support import serving, settings

    up = Upstream()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", up.chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    upstream = f"http://127.0.0.1:{runner.addresses[0][1]}"
    keys = (Secret("key-a", "alice"), Secret("key-b", "bob"))
    try:
        async with serving(settings(upstream=upstream, client_keys=keys)) as base:
            question = [{"role": "user", "content": "Weather in Paris?"}]
            body = {"model": MODEL, "messages": question, "tools": TOOLS}
            answer = await post(f"{base}/v1", "/chat/completions", body, {"Authorization": "Bearer key-a"})
            replay = {**body, "messages": chat_replay(question, answer)}
            both = {"x-api-key": "key-a", "Authorization": "Bearer sk-not-for-the-gateway"}
            await post(f"{base}/v1", "/chat/completions", replay, both)
            await post(f"{base}/v1", "/chat/completions", replay, {"x-api-key": "key-b"})
    finally:
        await runner.cleanup()
    thought = reasoning_for({"model": MODEL}, "Weather in Paris?")
    contents = [body["messages"][1]["content"] for body in up.bodies[1:]]
    assert contents == [f"<think>{thought}</think>Let me look.", "Let me look."]


async def test_a_reference_to_a_message_the_record_lacks_goes_on_as_it_came(aiohttp_server: ServerFactory) -> None:
    """The AI SDK replays an answer as an ``item_reference`` to its message's id; one the record no
    longer holds (expired, another worker's) is the upstream's to resolve or refuse, not dropped
    (the answer would vanish from the history)."""
    from gateway_mw.marks import random_id

    base, up, _ = await gateway(aiohttp_server)
    message_id = random_id("msg_")  # as the gateway makes them
    items = [
        {"role": "user", "content": "What animal is this?"},
        {"type": "item_reference", "id": message_id},
        {"role": "user", "content": "Sure?"},
    ]
    await post(base, "/responses", {"model": MODEL, "input": items})
    assert up.bodies[0]["input"] == items


async def test_a_request_naming_thousands_of_tool_calls_looks_up_the_latest_few(aiohttp_server: ServerFactory) -> None:
    """One client's request that names thousands of tool calls costs the record no more than any
    other (the keys of its latest turns), so it cannot tie up the store other clients read."""
    from gateway_mw.history import MAX_RECALL_KEYS
    from gateway_mw.incoming import entries_handed_over

    base, up, app = await gateway(aiohttp_server)
    long: list[dict[str, Any]] = []
    for i in range(5000):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
        long += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": "sunny"},
        ]
    long.append({"role": "user", "content": "So, the weather?"})
    answer = await post(base, "/chat/completions", {"model": MODEL, "messages": long, "tools": TOOLS})
    record = app[THINKEXTRACT_RECORD]
    await entries_handed_over()  # a body this large is read for its entries in a worker thread
    await record.drain()
    text = answer["choices"][0]["message"]["content"]
    assert text == "It is sunny."
    before = record.counts.hits + record.counts.misses
    replay = [*long, {"role": "assistant", "content": text}, {"role": "user", "content": "Thanks."}]
    await post(base, "/chat/completions", {"model": MODEL, "messages": replay, "tools": TOOLS})
    assert record.counts.hits + record.counts.misses - before == MAX_RECALL_KEYS
    thought = reasoning_for({"model": MODEL}, None)  # the first message the upstream saw had no content
    assert up.bodies[1]["messages"][-2] == {"role": "assistant", "content": f"<think>{thought}</think>It is sunny."}
