"""The surface registry: every surface the configuration names is in it once, under its own name, with
every piece of :class:`SurfaceDefinition`; and what each piece says of the surface."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gateway_mw
from gateway_mw import ThinkExtractConfig
from gateway_mw.config import DEFAULT_ROUTES, Surface
from gateway_mw.controls.continuation import CONTINUES
from gateway_mw.history.side import RequestSide
from gateway_mw.proxy.errors import error_shape
from gateway_mw.proxy.routes import DEFAULT_FORWARD_ROUTES, parse_routes
from gateway_mw.proxy.settings import Settings
from gateway_mw.surfaces.definition import NDJSON_TYPES, SSE_TYPES, SurfaceDefinition
from gateway_mw.surfaces.registry import SURFACES

from ..hypothesis_examples import examples


def _members(protocol: type) -> set[str]:
    return {
        name
        for cls in protocol.__mro__
        if cls in (SurfaceDefinition, RequestSide)
        for name in vars(cls)
        if not name.startswith("_")
    }


def test_every_surface_is_in_the_registry_once_under_its_name() -> None:
    assert {name: definition.name for name, definition in SURFACES.items()} == {s: s for s in get_args(Surface)}
    assert set(DEFAULT_ROUTES.values()) == set(SURFACES)


def test_each_surface_says_what_the_reasoning_controls_need_of_it() -> None:
    """Its own form of the control (read before the others), what a request that does not stream is
    sent with when the gateway enforces its budget, when a request streams, and whether the client gets
    the reasoning in events the gateway can count (not under the messages' redacted policy)."""
    redacted = ThinkExtractConfig(messages_policy="redacted")
    said = {
        name: (
            d.controls.own.__name__,
            dict(d.controls.streamed),
            [stream for stream in (b"", b"true", b"false", b"null") if d.controls.streams(stream)],
            d.controls.reasoning_as_events(redacted),
        )
        for name, d in SURFACES.items()
    }
    assert said == {
        "chat": (
            "reasoning_effort",
            {"stream": b"true", "stream_options": b'{"include_usage":true}'},
            [b"true"],
            True,
        ),
        "messages": ("thinking", {"stream": b"true"}, [b"true"], False),
        "responses": ("reasoning", {"stream": b"true"}, [b"true"], True),
        "ollama": ("think", {"stream": b"true"}, [b"", b"true", b"null"], True),
    }
    assert all(d.controls.reasoning_as_events(ThinkExtractConfig()) for d in SURFACES.values())


def test_each_surface_says_where_its_usage_counts_the_reasoning() -> None:
    """The field a non-stream body's count is written in, and the member its reasoning is read from."""
    said = {name: None if d.usage is None else (*d.usage.field, d.usage.answer) for name, d in SURFACES.items()}
    assert said == {
        "chat": ("completion_tokens_details", "reasoning_tokens", "choices"),
        "messages": ("output_tokens_details", "thinking_tokens", "content"),
        "responses": ("output_tokens_details", "reasoning_tokens", "output"),
        "ollama": None,
    }


def test_the_gateway_forwards_each_surfaces_default_routes_by_default() -> None:
    """Each route suffix the configuration sends to a surface by default is a POST route that surface
    has the gateway forward (under the default prefix, or outside it)."""
    forwarded = {name: parse_routes(d.forward_routes, "/v1/").entries for name, d in SURFACES.items()}
    unforwarded = {
        suffix: surface
        for suffix, surface in DEFAULT_ROUTES.items()
        if not any(method == "POST" and path.endswith(suffix) for method, path in forwarded[surface])
    }
    assert unforwarded == {}
    assert (*(r for d in SURFACES.values() for r in d.forward_routes), "GET models") == DEFAULT_FORWARD_ROUTES


def test_a_surfaces_other_routes_outside_the_prefix_get_its_error_shape() -> None:
    settings = Settings()
    shapes = {path: error_shape(settings, path) for path in ("/api/tags", "/api/pull", "/v1/api/tags", "/other")}
    assert shapes == {"/api/tags": "ollama", "/api/pull": "ollama", "/v1/api/tags": None, "/other": None}
    assert {name: d.error_paths for name, d in SURFACES.items() if d.error_paths} == {"ollama": ("/api/",)}


def test_every_definition_has_every_piece() -> None:
    """What ``mypy --strict`` checks of the registry's entries, seen at run time too."""
    members = _members(SurfaceDefinition)
    assert sorted(members) == [
        "answer_prefix",
        "asks_for_blobs",
        "body_without_reasoning",
        "budget",
        "controls",
        "enabled",
        "error_body",
        "error_paths",
        "forward_routes",
        "framing",
        "history_keys",
        "name",
        "read_history",
        "said_of_body",
        "story",
        "stream",
        "stream_types",
        "transform_body",
        "transform_history",
        "unknown_family",
        "usage",
        "without_reasoning",
    ]
    for name, definition in SURFACES.items():
        assert [m for m in sorted(members) if not hasattr(definition, m)] == [], name


def test_the_gateway_continues_only_on_surfaces_with_a_budget_side() -> None:
    """A (server, surface) the controls would hand the gateway's budget to has the pieces for it."""
    assert sorted({s for _, s in CONTINUES if SURFACES[s].budget is None}) == []


LACKING = """
from typing import Final

from gateway_mw.config import ThinkExtractConfig
from gateway_mw.surfaces.chat.surface import SURFACE as CHAT
from gateway_mw.surfaces.definition import SurfaceDefinition


class Lacking:
    name: Final = "chat"

    def enabled(self, config: ThinkExtractConfig) -> bool:
        return True


COMPLETE: SurfaceDefinition = type(CHAT)()
LACKS_PIECES: SurfaceDefinition = Lacking()
"""


def test_a_definition_that_lacks_a_piece_fails_the_type_check(tmp_path: Path) -> None:
    (tmp_path / "surface.py").write_text(LACKING)
    # In a process of its own: mypy raises the interpreter's recursion limit for good.
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", "surface.py"],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(Path(gateway_mw.__file__).parents[1])},
        capture_output=True,
        text=True,
        check=False,
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert (checked.returncode, errors) == (
        1,
        [
            'surface.py:17: error: Incompatible types in assignment (expression has type "Lacking", '
            'variable has type "SurfaceDefinition")  [assignment]'
        ],
    )


def test_each_surface_says_how_its_streams_are_framed() -> None:
    framed = {name: (d.framing, d.stream_types) for name, d in SURFACES.items()}
    assert framed == {
        "chat": ("sse", SSE_TYPES),
        "messages": ("sse", SSE_TYPES),
        "responses": ("sse", SSE_TYPES),
        "ollama": ("ndjson", NDJSON_TYPES),
    }


def test_each_surface_is_switched_by_its_own_setting() -> None:
    def switched(**settings: Any) -> dict[str, bool]:
        config = ThinkExtractConfig(**settings)
        return {name: d.enabled(config) for name, d in SURFACES.items()}

    assert switched() == {"chat": True, "messages": False, "responses": True, "ollama": True}
    assert switched(messages_policy="redacted") == {"chat": True, "messages": True, "responses": True, "ollama": True}
    assert switched(chat_enabled=False) == {"chat": False, "messages": False, "responses": True, "ollama": True}
    assert switched(responses_enabled=False) == {"chat": True, "messages": False, "responses": False, "ollama": True}
    assert switched(ollama_enabled=False) == {"chat": True, "messages": False, "responses": True, "ollama": False}


def test_each_surface_tells_where_the_reasoning_went() -> None:
    config = ThinkExtractConfig(chat_reasoning_field="reasoning", messages_policy="unsigned")
    assert {name: d.story(config) for name, d in SURFACES.items()} == {
        "chat": "reasoning into chat_reasoning_field=reasoning",
        "messages": "reasoning into thinking blocks (unsigned)",
        "responses": "reasoning into reasoning items",
        "ollama": "reasoning into thinking",
    }


def test_each_surface_writes_an_error_its_clients_read() -> None:
    assert {name: d.error_body(404, "not_found", "no such route") for name, d in SURFACES.items()} == {
        "chat": {
            "error": {"message": "no such route", "type": "invalid_request_error", "param": None, "code": "not_found"}
        },
        "messages": {"type": "error", "error": {"type": "not_found_error", "message": "no such route"}},
        "responses": {
            "error": {"message": "no such route", "type": "invalid_request_error", "param": None, "code": "not_found"}
        },
        "ollama": {"error": "no such route"},
    }


def test_only_responses_asks_for_reasoning_blobs() -> None:
    body = b'{"model":"m","input":"hi","include":["reasoning.encrypted_content"]}'
    assert {name: d.asks_for_blobs(d.read_history(body), body) for name, d in SURFACES.items()} == {
        "chat": False,
        "messages": False,
        "responses": True,
        "ollama": False,
    }
    assert SURFACES["responses"].asks_for_blobs(None, body)  # an input it could not read: the include says


SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
KEYS = ["choices", "message", "content", "tool_calls", "output", "response", "type", "text", "id", "call_id"]
VALUES = SCALARS | JSON | st.lists(st.dictionaries(st.sampled_from(KEYS), SCALARS | JSON, max_size=4), max_size=3)
ANSWERS = st.dictionaries(st.sampled_from(KEYS), VALUES | st.dictionaries(st.sampled_from(KEYS), VALUES), max_size=4)


@pytest.mark.parametrize("surface", SURFACES)
@settings(max_examples=examples(300), deadline=None)
@given(answer=ANSWERS)
def test_what_any_answer_said_is_read_without_failing(surface: Surface, answer: dict[str, Any]) -> None:
    """An upstream's body of any shape (``"choices": 5``, ``"content": {}``…) gives what it said, or
    nothing: it never fails the response it came in (the record reads it after the translation)."""
    said = SURFACES[surface].said_of_body(json.dumps(answer).encode(), ())
    assert all(isinstance(s.original, str) for s in said)
