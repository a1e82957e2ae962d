"""``--demo``: one request per surface through the gateway, what the model wrote next to what the
client received, and a verdict for each."""

from __future__ import annotations

import base64
import json
import textwrap
from collections.abc import Callable
from itertools import zip_longest
from typing import Any, NamedTuple

import aiohttp
import msgspec
from aiohttp import web

from ..config import Surface
from ..middleware import THINK_EXTRACT_HEADER, THINKEXTRACT_STATS
from ..scanner import extract
from ..sse import SSEDecoder
from . import demo_model
from .app import PROXY, build_app
from .settings import Settings

__all__ = ["run_demo"]

QUESTION = demo_model.QUESTION

Shown = list[tuple[str, str]]  # (where, text) pairs


def _sse_events(body: bytes) -> list[tuple[str | None, Any]]:
    """(event type, decoded data) of every data event of an SSE body but ``[DONE]``, read with the
    package's own decoder."""
    decoder = SSEDecoder()
    events = decoder.feed(body)
    more, _tail = decoder.finish()
    return [
        (event.event, json.loads(event.data))
        for event in [*events, *more]
        if event.data is not None and event.data != b"[DONE]"
    ]


def _chat_shown(body: bytes, stream: bool) -> Shown:
    if not stream:
        message = json.loads(body)["choices"][0]["message"]
        return [(f"message.{k}", v) for k, v in message.items() if k != "role" and isinstance(v, str) and v]
    joined: dict[str, list[str]] = {}
    for _, chunk in _sse_events(body):
        for choice in chunk.get("choices", []):
            for key, value in choice.get("delta", {}).items():
                if key != "role" and isinstance(value, str) and value:
                    joined.setdefault(key, []).append(value)
    return [(f"delta.{k} ×{len(v)}", "".join(v)) for k, v in joined.items()]


def _blocks_shown(content: list[dict[str, Any]]) -> Shown:
    shown = []
    for i, block in enumerate(content):
        kind = block["type"]
        text = block.get("thinking", block.get("text", block.get("data", "")))
        shown.append((f"content[{i}] {kind}", text))
    return shown


def _messages_shown(body: bytes, stream: bool) -> Shown:
    if not stream:
        return _blocks_shown(json.loads(body)["content"])
    blocks: list[dict[str, Any]] = []
    for _, event in _sse_events(body):
        if event["type"] == "content_block_start":
            blocks.append(dict(event["content_block"]))
        elif event["type"] == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            for key in ("thinking", "text"):
                if key in delta:
                    block[key] = block.get(key, "") + delta[key]
    return _blocks_shown(blocks)


def _responses_shown(body: bytes, stream: bool) -> Shown:
    if stream:
        final = [e for _, e in _sse_events(body) if e["type"] == "response.completed"]
        response = final[-1]["response"]
    else:
        response = json.loads(body)
    shown = []
    for i, item in enumerate(response["output"]):
        parts = item.get("content") or []
        shown.append((f"output[{i}] {item['type']}", "".join(p.get("text", "") for p in parts)))
    return shown


class _Exchange(NamedTuple):
    """One scripted request of the demo, and how its answer is shown."""

    title: str
    path: str
    surface: Surface
    model: str
    asked: dict[str, Any]
    """The request's body but its ``model`` and ``stream``."""
    headers: dict[str, str]
    shown: Callable[[bytes, bool], Shown]


_ASKED = {"messages": [{"role": "user", "content": QUESTION}]}
_DEMO_EXCHANGES = [
    _Exchange("chat completions", "/v1/chat/completions", "chat", "demo-r1", _ASKED, {}, _chat_shown),
    _Exchange(
        "Anthropic messages",
        "/v1/messages",
        "messages",
        "demo",
        {**_ASKED, "max_tokens": 256},
        {"anthropic-version": "2023-06-01"},
        _messages_shown,
    ),
    _Exchange("OpenAI Responses", "/v1/responses", "responses", "demo-r1", {"input": QUESTION}, {}, _responses_shown),
]
_REASONING_WORDS = ("reasoning", "thinking")


def _side_by_side(left: Shown, right: Shown, width: int = 54) -> list[str]:
    def column(shown: Shown) -> list[str]:
        out = []
        for where, text in shown:
            out.append(where + ":")
            out += ["  " + line for line in textwrap.wrap(repr(text)[1:-1], width - 2) or [""]]
        return out

    lines = [f"  {'the model wrote':<{width}} │ the client received", f"  {'─' * width} ┼ {'─' * width}"]
    for a, b in zip_longest(column(left), column(right), fillvalue=""):
        lines.append(f"  {a:<{width}} │ {b}")
    return lines


_WHY = {"disabled": "the {surface} surface is turned off in the configuration"}


def _reasoning_text(where: str, text: str) -> str:
    """The reasoning a client can read from one shown part (``redacted_thinking`` is base64)."""
    return base64.b64decode(text).decode() if "redacted_thinking" in where else text


async def _demo_exchange(
    session: aiohttp.ClientSession, base: str, app: web.Application, exchange: _Exchange, stream: bool
) -> tuple[list[str], bool]:
    title, path, surface, model, asked, headers, shown = exchange
    body = {"model": model, "stream": stream, **asked}
    async with session.post(base + path, json=body, headers={**headers, THINK_EXTRACT_HEADER: "off"}) as r:
        raw = await r.read()
    stats = app[THINKEXTRACT_STATS]
    before = dict(stats.snapshot()[surface]["passed_through"])
    async with session.post(base + path, json=body, headers=headers) as r:
        got = await r.read()
        status = r.status
    after = stats.snapshot()[surface]["passed_through"]
    passed = [reason for reason, n in after.items() if n != before.get(reason, 0)]
    left, right = shown(raw, stream), shown(got, stream)
    lines = [f"{title} · {'stream' if stream else 'non-stream'} · model {model} · POST {path}"]
    lines += _side_by_side(left, right)

    is_reasoning = [any(x in where for x in _REASONING_WORDS) for where, _ in right]
    texts = [_reasoning_text(w, t) for (w, t), r in zip(right, is_reasoning, strict=True) if r]
    # The parts together (blocks), or the same text under each name (chat's two fields).
    reasoning = texts[0] if len(texts) > 1 and len(set(texts)) == 1 else "".join(texts)
    answer = "".join(t for (_, t), r in zip(right, is_reasoning, strict=True) if not r)
    expected = extract(demo_model.model_text(model, QUESTION), app[PROXY].settings.think_extract.for_model(model))
    want = (
        "".join(s.text for s in expected if s.kind == "reasoning"),
        "".join(s.text for s in expected if s.kind == "content"),
    )
    where = " and ".join(w.split(" ")[0] for (w, _), r in zip(right, is_reasoning, strict=True) if r)
    if status == 200 and (reasoning, answer) == want and where:
        return [*lines, f"  ✓ reasoning moved into {where}, answer clean", ""], True
    if status == 200 and right == left and passed and all(reason in _WHY for reason in passed):
        why = "; ".join(_WHY[reason].format(surface=surface) for reason in passed)
        return [*lines, f"  = passed through untranslated ({', '.join(passed)}): {why}", ""], True
    return [*lines, f"  ✗ unexpected result (HTTP {status}, passed through: {passed or 'no'})", ""], False


async def run_demo(settings: Settings, out: Callable[[str], None] = print) -> int:
    """``--demo``: start the proxy on a free port, send each surface's request both ways, print."""
    # It sends each request with X-Think-Extract: off too, to show what the model wrote.
    settings = msgspec.structs.replace(settings, port=0, host="127.0.0.1", client_keys=(), allow_client_off=True)
    app = build_app(settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        upstream = "the embedded demo model" if settings.upstream is None else settings.upstream
        out(f"gateway_mw demo: proxy {base} → {upstream}; each request sent twice, with X-Think-Extract: off")
        out("(what the model wrote) and without (what a client receives).")
        out("")
        ok = True
        async with aiohttp.ClientSession() as session:
            for exchange in _DEMO_EXCHANGES:
                for stream in (False, True):
                    lines, good = await _demo_exchange(session, base, app, exchange, stream)
                    ok = ok and good
                    for line in lines:
                        out(line)
        out("demo: all surfaces answered as expected" if ok else "demo: some answers were not as expected")
        return 0 if ok else 1
    finally:
        await runner.cleanup()
