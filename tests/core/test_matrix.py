"""The properties every surface of the registry holds, over every real layout of its upstreams
(``tests/core/matrix.py``):

* the client, reading with its official SDK, gets the model's text back: the reasoning and the answer
  the plain scanner finds in the whole text, whatever the pieces the model wrote it in;
* the fast paths give the plain reference translator's events, one event per read and in any cuts;
* any cutting of the upstream's bytes gives the same events;
* a stream and a non-stream answer of the same text read the same;
* every character arrives before the final event (held text is never sent after it);
* over real HTTP, through the middleware, the same holds.

And for servers that parsed the reasoning themselves (each surface's ``native_layouts``): the client
gets the upstream's answer as it came (on chat, but for the names of the reasoning fields), whatever
the cuts; a stream and a body of the same answer read the same; every character of the answer
arrives before the final event. Their answers hold tags too (``TOKENS``): what follows the server's
own reasoning is not scanned, as the surfaces' pages say, so the tags reach the client as written.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig, setup
from gateway_mw.pipeline import StreamPipeline, transform_body
from gateway_mw.scanner import CONTENT, extract
from gateway_mw.sse import SSEDecoder
from gateway_mw.surfaces.base import NewId
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples
from ..ssecompare import events_of
from .matrix import CASES, Case, Read

TOKENS = ["<think>", "</think>", "abc", " ", "\n", "é", "🙂", "<", "/", "x y", '"q"', "\\", "`"]
PIECES = st.lists(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=3).map("".join), min_size=1, max_size=12)
NO_FIXTURE_RESET = [HealthCheck.function_scoped_fixture]  # the module's server serves every example alike
WITH_REFERENCE = [name for name in SURFACES if name not in CASES or CASES[name].reference is not None]


def test_the_matrix_holds_every_surface_of_the_registry() -> None:
    """Each surface the gateway translates has its case (streamed in a type it accepts, with servers
    that parsed the reasoning themselves), and every case is a surface's: each property below runs on
    every surface without naming it."""
    assert sorted(CASES) == sorted(SURFACES)
    for name, case in CASES.items():
        assert (case.surface, case.content_type in SURFACES[name].stream_types) == (name, True)
        assert case.layouts and case.native_layouts, name


@st.composite
def upstream(draw: st.DrawFn, case: Case) -> tuple[str, list[str], bytes, list[int]]:
    """A layout, the model's text in pieces, the upstream's stream of it, and cuts of that stream."""
    layout = draw(st.sampled_from(case.layouts))
    pieces = draw(PIECES)
    data = case.stream(layout, pieces)
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(data) - 1)), max_size=8)))
    return layout, pieces, data, cuts


def expected(case: Case, text: str) -> Read:
    """The oracle: the plain scanner over the whole text."""
    segments = extract(text, case.config.for_model("m"))
    reasoning = "".join(s.text for s in segments if s.kind != CONTENT)
    return reasoning, "".join(s.text for s in segments if s.kind == CONTENT)


def new_ids() -> NewId:
    """Made-up ids that are the same for every pipeline of a comparison."""
    counter = itertools.count()
    return lambda prefix: f"{prefix}{next(counter):032x}"


def translated(
    case: Case, parts: list[bytes], reference: bool = False, config: ThinkExtractConfig | None = None
) -> bytes:
    config = case.config if config is None else config
    pipeline = StreamPipeline(case.surface, config, new_ids())
    if reference:
        assert case.reference is not None
        pipeline._translator = case.reference(config, new_ids())
    out = b"".join(pipeline.feed(part) for part in parts) + pipeline.finish()
    assert pipeline.error is None
    return out


def cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


def frames(case: Case, body: bytes) -> Any:
    """The events of a translated stream, each as key-ordered JSON (SSE) or each line as JSON (NDJSON)."""
    if case.content_type == "text/event-stream":
        return events_of(body)
    return [list(json.loads(line).items()) for line in body.split(b"\n") if line.strip()]


def events_per_read(case: Case, stream: bytes) -> list[bytes]:
    """The stream as a deployed gateway reads it: one event (or line) per read."""
    end = b"\n\n" if SURFACES[case.surface].framing == "sse" else b"\n"
    return [part + end for part in stream.split(end) if part]


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_client_reads_the_models_text(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    _, pieces, stream, cuts = data.draw(upstream(case))
    assert case.read_stream(translated(case, cut(stream, cuts))) == expected(case, "".join(pieces))


@pytest.mark.parametrize("name", WITH_REFERENCE)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_paths_give_the_references_events(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    _, _, stream, cuts = data.draw(upstream(case))
    reads = events_per_read(case, stream)
    oracle = frames(case, translated(case, reads, reference=True))
    assert frames(case, translated(case, reads)) == oracle
    assert frames(case, translated(case, cut(stream, cuts))) == oracle
    assert frames(case, translated(case, [stream])) == oracle


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_cutting_gives_the_same_events(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    _, _, stream, cuts = data.draw(upstream(case))
    assert frames(case, translated(case, cut(stream, cuts))) == frames(case, translated(case, [stream]))


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_stream_and_a_body_of_the_same_text_read_the_same(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    layout, pieces, stream, _ = data.draw(upstream(case))
    upstream_body = case.body(layout, "".join(pieces))
    body, _, error = transform_body(case.surface, upstream_body, False, case.config)
    assert error is None
    assert case.read_body(upstream_body if body is None else body) == case.read_stream(translated(case, [stream]))


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_character_arrives_before_the_final_event(name: str, data: st.DataObject) -> None:
    """Text held at the end (a partial tag) goes out before ``[DONE]``, ``message_stop``,
    ``response.completed`` or the done line: a client that stops reading there has it all."""
    case = CASES[name]
    _, pieces, stream, cuts = data.draw(upstream(case))
    out = translated(case, cut(stream, cuts))
    assert case.read_stream(before_final(case, out)) == expected(case, "".join(pieces))


# -- a server that parsed the reasoning itself --------------------------------------------------------

NATIVE_PIECES = st.lists(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=3).map("".join), min_size=1, max_size=6)
MODELS = ["m", "deepseek-r1-distill-qwen-7b", "gpt-oss-20b"]  # presets: opened inside reasoning; Harmony


class Native(NamedTuple):
    layout: str
    model: str
    reasoning: list[str]
    answer: list[str]
    stream: bytes
    cuts: list[int]


@st.composite
def native_upstream(draw: st.DrawFn, case: Case) -> Native:
    """A server of the surface that parsed the reasoning, its stream of it, and cuts of that stream."""
    layout, model = draw(st.sampled_from(case.native_layouts)), draw(st.sampled_from(MODELS))
    reasoning, answer = draw(NATIVE_PIECES), draw(NATIVE_PIECES)
    data = case.native_stream(layout, model, reasoning, answer)
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(data) - 1)), max_size=8)))
    return Native(layout, model, reasoning, answer, data, cuts)


def native_read(case: Case, up: Native) -> Read:
    return case.native_read(up.layout, "".join(up.reasoning), "".join(up.answer))


def before_final(case: Case, stream: bytes) -> bytes:
    """The stream up to its final event (``[DONE]``, ``message_stop``, ``response.completed``, the done line)."""
    found = case.final.search(stream)
    assert found is not None, "no final event"
    at = found.start()
    end = b"\n\n" if SURFACES[case.surface].framing == "sse" else b"\n"
    start = stream.rfind(end, 0, at)
    return stream[: start + len(end)] if start >= 0 else b""


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_servers_own_reasoning_reaches_the_client_as_it_came(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    up = data.draw(native_upstream(case))
    out = translated(case, cut(up.stream, up.cuts))
    upstream_view, client_view = case.native_view(case.config, up.stream, out)
    assert client_view == upstream_view
    assert case.read_stream(out) == native_read(case, up)


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_servers_own_reasoning_every_character_of_the_answer_before_the_final_event(
    name: str, data: st.DataObject
) -> None:
    case = CASES[name]
    up = data.draw(native_upstream(case))
    out = translated(case, cut(up.stream, up.cuts))
    assert case.read_stream(before_final(case, out)) == native_read(case, up)


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_servers_own_reasoning_reads_the_same_streamed_or_not(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    up = data.draw(native_upstream(case))
    upstream_body = case.native_body(up.layout, up.model, "".join(up.reasoning), "".join(up.answer))
    body, _, error = transform_body(case.surface, upstream_body, False, case.config)
    assert error is None
    out = upstream_body if body is None else body
    upstream_view, client_view = case.native_view(case.config, upstream_body, out)
    assert client_view == upstream_view
    assert case.read_body(out) == case.read_stream(translated(case, [up.stream])) == native_read(case, up)


@pytest.mark.parametrize("name", WITH_REFERENCE)
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_servers_own_reasoning_the_fast_paths_give_the_references_events(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    up = data.draw(native_upstream(case))
    reads = events_per_read(case, up.stream)
    oracle = frames(case, translated(case, reads, reference=True))
    assert frames(case, translated(case, reads)) == oracle
    assert frames(case, translated(case, cut(up.stream, up.cuts))) == oracle


# -- the client asked for no reasoning (reasoning_exclude) -------------------------------------------

# What carries reasoning on some surface: a key, or an object's (or an event's) type.
_REASONING_KEYS = frozenset({"reasoning_content", "reasoning_details", "thinking", "signature"})
_REASONING_TYPES = frozenset(
    {
        "thinking",
        "redacted_thinking",
        "thinking_delta",
        "signature_delta",
        "reasoning",
        "reasoning_text",
        "summary_text",
    }
)


def documents(body: bytes) -> list[Any]:
    """Every JSON document a client reads in ``body``: the one body, a stream's lines, or its events."""
    try:
        return [json.loads(body)]
    except ValueError:
        pass
    if body.startswith((b"data:", b"event:")):
        return [json.loads(e.data) for e in SSEDecoder().feed(body) if e.data not in (None, b"[DONE]")]
    return [json.loads(line) for line in body.split(b"\n") if line.strip()]


def reasoning_in(value: Any, path: str = "") -> list[str]:
    """Where ``value`` (a document) carries reasoning: the paths of every reasoning key or typed object."""
    found: list[str] = []
    if isinstance(value, dict):
        kind = value.get("type")
        if isinstance(kind, str) and (kind in _REASONING_TYPES or kind.startswith("response.reasoning")):
            found.append(f"{path}<{kind}>")
        for key, inner in value.items():
            if key in _REASONING_KEYS or (key == "reasoning" and isinstance(inner, str)):
                found.append(f"{path}.{key}")
            found += reasoning_in(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += reasoning_in(inner, f"{path}[{i}]")
    return found


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for inner in value.values() for s in strings(inner)]
    if isinstance(value, list):
        return [s for inner in value for s in strings(inner)]
    return []


def assert_without_reasoning(out: bytes, full: Read, reasoning: str, read: Any, metadata: list[bytes]) -> None:
    """``out`` reads as the answer ``full`` read, with no reasoning: none read, no reasoning key,
    block, item or event in any of its documents, and the reasoning's text in none of its strings
    (unless the answer itself holds it, or a string of the upstream's layout does: ``metadata``, the
    same layout's body and stream with no text, hold its ids and fingerprints)."""
    assert read(out) == ("", full[1])
    docs = documents(out)
    assert [where for doc in docs for where in reasoning_in(doc)] == []
    if len(reasoning) >= 3 and reasoning not in full[1]:
        layout = {s for body in metadata for doc in documents(body) for s in strings(doc)}
        assert [s for doc in docs for s in strings(doc) if reasoning in s and s not in layout] == []


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_without_reasoning_the_answer_is_the_same_and_carries_none(name: str, data: st.DataObject) -> None:
    """With ``reasoning_exclude``, the client reads the answer it reads without it, whatever the
    cuts, streamed or not, and nothing of the reasoning: reasoning moved out of tags and reasoning
    the server wrote in its own fields alike."""
    case = CASES[name]
    excluded = case.config.replace(reasoning_exclude=True)
    layout, pieces, stream, cuts = data.draw(upstream(case))
    full = case.read_stream(translated(case, [stream]))
    reasoning = expected(case, "".join(pieces))[0]
    empty = [case.body(layout, ""), case.stream(layout, [])]  # the layout's own strings (ids, fingerprints)
    out = translated(case, cut(stream, cuts), config=excluded)
    assert_without_reasoning(out, full, reasoning, case.read_stream, empty)
    upstream_body = case.body(layout, "".join(pieces))
    body, _, error = transform_body(case.surface, upstream_body, False, excluded)
    assert error is None
    assert_without_reasoning(upstream_body if body is None else body, full, reasoning, case.read_body, empty)

    up = data.draw(native_upstream(case))
    full = native_read(case, up)
    reasoning = "".join(up.reasoning)
    out = translated(case, cut(up.stream, up.cuts), config=excluded)
    empty = [case.native_body(up.layout, up.model, "", ""), case.native_stream(up.layout, up.model, [""], [""])]
    assert_without_reasoning(out, full, reasoning, case.read_stream, empty)
    assert case.read_stream(before_final(case, out)) == ("", full[1])
    upstream_body = case.native_body(up.layout, up.model, reasoning, "".join(up.answer))
    body, _, error = transform_body(case.surface, upstream_body, False, excluded)
    assert error is None
    assert_without_reasoning(upstream_body if body is None else body, full, reasoning, case.read_body, empty)


# -- over HTTP --------------------------------------------------------------------------------------


async def _replay(request: web.Request) -> web.StreamResponse:
    """The upstream: the request body is what to answer, ``X-Cuts`` where to cut it, ``X-Type`` its type."""
    body = await request.read()
    cuts = [int(c) for c in request.headers.get("X-Cuts", "").split(",") if c]
    resp = web.StreamResponse(headers={"Content-Type": request.headers["X-Type"]})
    await resp.prepare(request)
    for part in cut(body, cuts):
        await resp.write(part)
    await resp.write_eof()
    return resp


@pytest.fixture(scope="module")
def server_urls() -> Iterator[dict[str, str]]:
    """Real servers for the module, in a thread of their own: one per surface, its routes translated with
    its case's configuration."""
    ready = threading.Event()
    state: dict[str, Any] = {"urls": {}}

    def run() -> None:
        loop = asyncio.new_event_loop()
        runners = []
        for name, case in CASES.items():
            app = web.Application()
            setup(app, case.config)
            for route in set(case.routes.values()):
                app.router.add_post(route, _replay)
            runner = web.AppRunner(app, access_log=None)
            loop.run_until_complete(runner.setup())
            loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0).start())
            state["urls"][name] = f"http://127.0.0.1:{runner.addresses[0][1]}"
            runners.append(runner)
        state["loop"] = loop
        ready.set()
        loop.run_forever()
        for runner in runners:
            loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield dict(state["urls"])
    state["loop"].call_soon_threadsafe(state["loop"].stop)
    thread.join(10)


def _post(url: str, body: bytes, content_type: str, cuts: list[int]) -> bytes:
    headers = {"Content-Type": "application/json", "X-Type": content_type, "X-Cuts": ",".join(map(str, cuts))}
    with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=30) as resp:
        data: bytes = resp.read()
        return data


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow, *NO_FIXTURE_RESET])
@given(data=st.data())
def test_over_http_the_client_reads_the_models_text(
    name: str, server_urls: dict[str, str], data: st.DataObject
) -> None:
    case = CASES[name]
    layout, pieces, stream, cuts = data.draw(upstream(case))
    url = server_urls[name] + case.routes[layout]
    text = "".join(pieces)
    assert case.read_stream(_post(url, stream, case.content_type, cuts)) == expected(case, text)
    assert case.read_body(_post(url, case.body(layout, text), "application/json", [])) == expected(case, text)


@pytest.mark.parametrize("name", SURFACES)
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow, *NO_FIXTURE_RESET])
@given(data=st.data())
def test_over_http_a_servers_own_reasoning_reaches_the_client_as_it_came(
    name: str, server_urls: dict[str, str], data: st.DataObject
) -> None:
    case = CASES[name]
    up = data.draw(native_upstream(case))
    url = server_urls[name] + case.routes[up.layout]
    out = _post(url, up.stream, case.content_type, up.cuts)
    upstream_view, client_view = case.native_view(case.config, up.stream, out)
    assert client_view == upstream_view
    assert case.read_stream(before_final(case, out)) == native_read(case, up)
    upstream_body = case.native_body(up.layout, up.model, "".join(up.reasoning), "".join(up.answer))
    body = _post(url, upstream_body, "application/json", [])
    upstream_view, client_view = case.native_view(case.config, upstream_body, body)
    assert client_view == upstream_view
    assert case.read_body(body) == native_read(case, up)
