"""Builders and readers for OpenAI Responses wire data, shared by the Responses tests."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from aiohttp import web
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.sse import SSEDecoder

Handler = Any
USAGE = {
    "input_tokens": 5,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 30,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 35,
}
_EVENT = TypeAdapter(ResponseStreamEvent)
_RS_ID = re.compile(r"rs_[0-9a-f]{32}")


# -- objects -------------------------------------------------------------------------------------


def response(status: str, output: list[Any], *, usage: Any = None, model: str = "m", **extra: Any) -> dict[str, Any]:
    """A ``response`` object with the field set the real API sends."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1730000000,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "metadata": {},
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        **extra,
    }


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message(item_id: str, texts: list[str] | None, status: str = "completed") -> dict[str, Any]:
    content = [] if texts is None else [output_text(t) for t in texts]
    return {"id": item_id, "type": "message", "role": "assistant", "status": status, "content": content}


def reasoning(
    item_id: str, text: str | None, status: str = "completed", summary: bool = False, fmt: str = "both"
) -> dict[str, Any]:
    """A reasoning item as the middleware writes it (``text=None``: as first added), in the format
    ``fmt`` (``summary=True`` is the ``summary`` format)."""
    fmt = "summary" if summary else fmt
    summaries = [] if text is None or fmt == "content" else [{"type": "summary_text", "text": text}]
    item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": summaries}
    if fmt != "summary":
        item["content"] = [] if text is None else [{"type": "reasoning_text", "text": text}]
    item["status"] = status
    return item


def function_call(item_id: str = "fc_1", status: str = "completed", arguments: str = '{"x":1}') -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": "call_1",
        "name": "f",
        "arguments": arguments,
        "status": status,
    }


# -- events (sequence numbers are given by ``numbered``) -----------------------------------------


def ev(type_: str, **fields: Any) -> dict[str, Any]:
    return {"type": type_, **fields}


def created(model: str = "m") -> dict[str, Any]:
    return ev("response.created", response=response("in_progress", [], model=model))


def in_progress(model: str = "m") -> dict[str, Any]:
    return ev("response.in_progress", response=response("in_progress", [], model=model))


def completed(output: list[Any], model: str = "m", kind: str = "completed") -> dict[str, Any]:
    status = {"completed": "completed", "incomplete": "incomplete", "failed": "failed"}[kind]
    extra: dict[str, Any] = {}
    if kind == "failed":
        extra["error"] = {"code": "server_error", "message": "upstream failed"}
    return ev(f"response.{kind}", response=response(status, output, usage=USAGE, model=model, **extra))


def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return ev("response.output_item.added", output_index=index, item=item)


def item_done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return ev("response.output_item.done", output_index=index, item=item)


def part_added(item_id: str, index: int, part: dict[str, Any], content_index: int = 0) -> dict[str, Any]:
    return ev(
        "response.content_part.added", item_id=item_id, output_index=index, content_index=content_index, part=part
    )


def part_done(item_id: str, index: int, part: dict[str, Any], content_index: int = 0) -> dict[str, Any]:
    return ev("response.content_part.done", item_id=item_id, output_index=index, content_index=content_index, part=part)


def text_delta(item_id: str, index: int, delta: str, content_index: int = 0) -> dict[str, Any]:
    return ev(
        "response.output_text.delta",
        item_id=item_id,
        output_index=index,
        content_index=content_index,
        delta=delta,
        logprobs=[],
    )


def text_done(item_id: str, index: int, text: str, content_index: int = 0) -> dict[str, Any]:
    return ev(
        "response.output_text.done",
        item_id=item_id,
        output_index=index,
        content_index=content_index,
        text=text,
        logprobs=[],
    )


def numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**e, "sequence_number": i} for i, e in enumerate(events)]


def message_events(item_id: str, index: int, deltas: list[str], text: str | None = None) -> list[dict[str, Any]]:
    """The lifecycle of one message item with one output_text part."""
    full = "".join(deltas) if text is None else text
    return [
        added(index, message(item_id, None, "in_progress")),
        part_added(item_id, index, output_text("")),
        *(text_delta(item_id, index, d) for d in deltas),
        text_done(item_id, index, full),
        part_done(item_id, index, output_text(full)),
        item_done(index, message(item_id, [full])),
    ]


def reasoning_events(
    item_id: str, index: int, deltas: list[str], summary: bool = False, fmt: str = "both"
) -> list[dict[str, Any]]:
    """The lifecycle of one reasoning item as the middleware writes it, in the format ``fmt``."""
    fmt = "summary" if summary else fmt
    text = "".join(deltas)
    forms = []  # (part event kind, delta event kind, index key, part type) of each form written
    if fmt != "summary":
        forms.append(("content_part", "reasoning_text", "content_index", "reasoning_text"))
    if fmt != "content":
        forms.append(("reasoning_summary_part", "reasoning_summary_text", "summary_index", "summary_text"))
    at = {"item_id": item_id, "output_index": index}
    events = [added(index, reasoning(item_id, None, "in_progress", fmt=fmt))]
    events += [
        ev(f"response.{part}.added", **at, **{key: 0}, part={"type": kind, "text": ""}) for part, _, key, kind in forms
    ]
    for d in deltas:
        events += [ev(f"response.{delta}.delta", **at, **{key: 0}, delta=d) for _, delta, key, _ in forms]
    for part, delta, key, kind in forms:
        events += [
            ev(f"response.{delta}.done", **at, **{key: 0}, text=text),
            ev(f"response.{part}.done", **at, **{key: 0}, part={"type": kind, "text": text}),
        ]
    events.append(item_done(index, reasoning(item_id, text, fmt=fmt)))
    return events


def upstream(
    deltas: list[str],
    *,
    msg_id: str = "msg_1",
    after: list[dict[str, Any]] | None = None,
    model: str = "m",
) -> list[dict[str, Any]]:
    """A model server's stream: one message item whose text is ``deltas``, then the ``after`` items."""
    text = "".join(deltas)
    events = [created(model), in_progress(model), *message_events(msg_id, 0, deltas)]
    tail = list(after or [])
    for i, item in enumerate(tail, start=1):
        events += [added(i, {**item, "status": "in_progress"}), item_done(i, item)]
    events.append(completed([message(msg_id, [text]), *tail], model))
    return numbered(events)


# -- wire ----------------------------------------------------------------------------------------


def sse(events: list[dict[str, Any] | str], event_lines: bool = True) -> bytes:
    """Encode events (dicts) and raw data strings as an SSE stream; ``event:`` lines as the API sends."""
    out = []
    for item in events:
        if isinstance(item, str):
            out.append(f"data: {item}\n\n".encode())
            continue
        data = json.dumps(item, separators=(",", ":"))
        name = f"event: {item['type']}\n" if event_lines else ""
        out.append(f"{name}data: {data}\n\n".encode())
    return b"".join(out)


def normalize(value: Any) -> Any:
    """Reasoning ids (random) replaced by ``rs_1``, ``rs_2``… in order of first appearance."""
    text = value.decode() if isinstance(value, bytes) else json.dumps(value)
    seen: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        return seen.setdefault(m.group(0), f"rs_{len(seen) + 1}")

    text = _RS_ID.sub(name, text)
    return text.encode() if isinstance(value, bytes) else json.loads(text)


def read_events(body: bytes, *, event_lines: bool | None = True) -> list[Any]:
    """The data of each event (decoded JSON, or the raw string), with reasoning ids normalized.

    Every Responses event is validated against the openai SDK's types (as its strict mode does),
    and its ``event:`` line, when ``event_lines`` says there must (or must not) be one, checked.
    """
    decoder = SSEDecoder()
    out: list[Any] = []
    events = decoder.feed(body)
    last, tail = decoder.finish()
    assert tail == b"", tail  # every event the middleware sends is whole
    for event in events + last:
        if event.data is None:
            continue
        text = event.data.decode()
        try:
            item = json.loads(text)
        except ValueError:
            out.append(text)
            continue
        if isinstance(item, dict) and "type" in item:
            for rs in _RS_ID.findall(text):
                assert len(rs) == 35
            _EVENT.validate_python(item, strict=True)
            if event_lines is not None:
                assert event.event == (item["type"] if event_lines else None), (event.event, item["type"])
        out.append(item)
    return normalize(out)  # type: ignore[no-any-return]


def validate_response(body: dict[str, Any]) -> None:
    Response.model_validate(body, strict=True)


def make_app(handler: Handler, **config: Any) -> web.Application:
    app = web.Application()
    setup(app, ThinkExtractConfig(**config))
    app.router.add_route("POST", "/v1/responses", handler)
    return app


def stream_handler(body: bytes, pieces: list[int] | None = None) -> Handler:
    """A handler that streams ``body``, cut at the byte offsets ``pieces``."""

    async def handle(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        cuts = [0, *(pieces or []), len(body)]
        for start, end in itertools.pairwise(cuts):
            if end > start:
                await resp.write(body[start:end])
        await resp.write_eof()
        return resp

    return handle
