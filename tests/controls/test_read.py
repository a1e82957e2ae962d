"""Reading: every form a client says its intent in, normalised to one intent; a value of the wrong
type or an unknown word is no intent (the body then goes on as it came)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway_mw.config import Surface
from gateway_mw.controls import ControlFields, Intent, read_fields, read_intent
from gateway_mw.controls.forms import FORMS as ALL_FORMS
from gateway_mw.surfaces.registry import SURFACES


def read(body: Any, surface: Surface = "chat") -> Intent:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return read_intent(data, SURFACES[surface])


OFF = "off"

FORMS: list[tuple[Surface, dict[str, Any], Intent]] = [
    ("chat", {"reasoning_effort": "none"}, Intent(OFF, form="reasoning_effort")),
    ("messages", {"reasoning_effort": "none"}, Intent(OFF, form="reasoning_effort")),
    ("chat", {"reasoning_effort": "minimal"}, Intent("effort", "minimal", form="reasoning_effort")),
    ("chat", {"reasoning_effort": "max"}, Intent("effort", "max", form="reasoning_effort")),
    ("chat", {"reasoning": {"effort": "none"}}, Intent(OFF, form="reasoning")),
    ("responses", {"reasoning": {"effort": "none", "summary": "auto"}}, Intent(OFF, form="reasoning")),
    ("chat", {"reasoning": {"enabled": False}}, Intent(OFF, form="reasoning")),
    ("chat", {"reasoning": {"effort": "xhigh"}}, Intent("effort", "xhigh", form="reasoning")),
    ("chat", {"reasoning": {"max_tokens": 2000}}, Intent("budget", budget=2000, form="reasoning")),
    ("chat", {"reasoning": {"enabled": True}}, Intent("on", form="reasoning")),
    ("chat", {"reasoning": {"exclude": True}}, Intent(exclude=True)),
    (
        "chat",
        {"reasoning": {"effort": "high", "exclude": True}},
        Intent("effort", "high", exclude=True, form="reasoning"),
    ),
    ("messages", {"thinking": {"type": "disabled"}}, Intent(OFF, form="thinking")),
    (
        "messages",
        {"thinking": {"type": "enabled", "budget_tokens": 4096}},
        Intent("budget", budget=4096, form="thinking"),
    ),
    ("messages", {"thinking": {"type": "enabled"}}, Intent("on", form="thinking")),
    ("messages", {"thinking": {"type": "adaptive"}}, Intent()),
    (
        "messages",
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}},
        Intent("effort", "low", form="output_config"),
    ),
    ("messages", {"output_config": {"effort": "max"}}, Intent("effort", "max", form="output_config")),
    (
        "messages",
        {"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}},
        Intent(OFF, form="thinking"),
    ),
    ("ollama", {"think": False}, Intent(OFF, form="think")),
    ("ollama", {"think": True}, Intent("on", form="think")),
    ("ollama", {"think": "medium"}, Intent("effort", "medium", form="think")),
    ("ollama", {"think": "max"}, Intent("effort", "max", form="think")),
    ("chat", {"chat_template_kwargs": {"enable_thinking": False}}, Intent(OFF, form="chat_template_kwargs")),
    ("chat", {"chat_template_kwargs": {"thinking": False}}, Intent(OFF, form="chat_template_kwargs")),
    ("chat", {"chat_template_kwargs": {"enable_thinking": True}}, Intent("on", form="chat_template_kwargs")),
    ("chat", {"messages": [{"role": "user", "content": "hi /no_think"}]}, Intent(OFF, form="text")),
    (
        "chat",
        {"messages": [{"role": "system", "content": "/think"}, {"role": "user", "content": "hi"}]},
        Intent("on", form="text"),
    ),
    (
        "chat",
        {
            "messages": [
                {"role": "user", "content": "a /no_think"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c /think\n"},
            ]
        },
        Intent("on", form="text"),
    ),
    (
        "chat",
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "x /no_think"}]}]},
        Intent(OFF, form="text"),
    ),
    (
        "messages",
        {"system": "be brief /no_think", "messages": [{"role": "user", "content": "hi"}]},
        Intent(OFF, form="text"),
    ),
    ("ollama", {"prompt": "why /no_think", "system": "x"}, Intent(OFF, form="text")),
    ("responses", {"input": "why /no_think"}, Intent(OFF, form="text")),
    ("responses", {"instructions": "/think", "input": [{"role": "user", "content": "q"}]}, Intent("on", form="text")),
    ("chat", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, Intent()),
]


@pytest.mark.parametrize(("surface", "body", "intent"), FORMS)
def test_each_form_is_read_as_its_intent(surface: Surface, body: dict[str, Any], intent: Intent) -> None:
    assert read(body, surface) == intent


SURFACE_FIRST: list[tuple[Surface, Intent]] = [
    ("chat", Intent("effort", "low", form="reasoning_effort")),
    ("messages", Intent(OFF, form="thinking")),
    ("responses", Intent("effort", "high", form="reasoning")),
    ("ollama", Intent("on", form="think")),
]


@pytest.mark.parametrize(("surface", "intent"), SURFACE_FIRST)
def test_the_surface_s_own_form_wins(surface: Surface, intent: Intent) -> None:
    body = {
        "reasoning_effort": "low",
        "thinking": {"type": "disabled"},
        "reasoning": {"effort": "high"},
        "think": True,
        "chat_template_kwargs": {"enable_thinking": False},
        "messages": [{"role": "user", "content": "x /no_think"}],
    }
    assert read(body, surface) == intent


def test_another_form_counts_when_the_surface_s_own_says_nothing() -> None:
    assert read({"think": False, "reasoning_effort": "ultra"}, "chat") == Intent(OFF, form="think")
    assert read({"reasoning_effort": "high"}, "ollama") == Intent("effort", "high", form="reasoning_effort")


BAD: list[dict[str, Any]] = [
    {"reasoning_effort": "ultra"},
    {"reasoning_effort": 0.5},  # SGLang's float: no intent the gateway writes
    {"reasoning_effort": True},
    {"reasoning_effort": None},
    {"reasoning_effort": ["high"]},
    {"reasoning": "high"},
    {"reasoning": {"effort": "huge"}},
    {"reasoning": {"max_tokens": "2000"}},
    {"reasoning": {"max_tokens": -1}},
    {"reasoning": {"max_tokens": 1.5}},
    {"reasoning": {"enabled": "false"}},
    {"thinking": {"type": "enabled", "budget_tokens": "4096"}},
    {"thinking": {"type": "enabled", "budget_tokens": True}},
    {"thinking": {"type": "off"}},
    {"thinking": "disabled"},
    {"output_config": {"effort": "none"}},
    {"output_config": "high"},
    {"think": "minimal"},
    {"think": "none"},
    {"think": 0},
    {"think": None},
    {"chat_template_kwargs": {"enable_thinking": "false"}},
    {"chat_template_kwargs": {"enable_thinking": 0}},
    {"chat_template_kwargs": ["enable_thinking"]},
    {"messages": [{"role": "assistant", "content": "done /no_think"}]},
    {"messages": [{"role": "user", "content": "/no_think is a word here, not at the end"}]},
    {"messages": [{"role": "user", "content": "Summarise https://example.com/blog/think"}]},
    {"messages": [{"role": "user", "content": "Open C:/projects/no_think"}]},
    {"messages": [{"role": "user", "content": "see a/no_think\n"}]},
]


@pytest.mark.parametrize("body", BAD)
@pytest.mark.parametrize("surface", SURFACES)
def test_a_bad_value_is_no_intent(body: dict[str, Any], surface: Surface) -> None:
    assert read(body, surface) == Intent()


@pytest.mark.parametrize(
    "body",
    [b"", b"null", b"[1,2]", b'"text"', b"{", b'{"reasoning_effort":"none"', b"\xff\xfe", b'{"think":fals}'],
)
def test_a_body_that_is_no_json_object_says_nothing(body: bytes) -> None:
    assert read_fields(body) is None
    assert read(body) == Intent()


def test_a_lone_surrogate_elsewhere_does_not_hide_the_control() -> None:
    body = b'{"messages":[{"role":"tool","content":"cut \\ud83d here"}],"reasoning_effort":"none"}'
    assert read(body) == Intent(OFF, form="reasoning_effort")


def test_a_key_spelled_with_escapes_is_the_key_a_server_reads() -> None:
    assert read(b'{"reasoning\\u005feffort":"none"}') == Intent(OFF, form="reasoning_effort")


def test_the_last_of_duplicate_keys_counts_as_with_the_servers_parsers() -> None:
    assert read(b'{"reasoning_effort":"none","reasoning_effort":"high"}') == Intent(
        "effort", "high", form="reasoning_effort"
    )


def test_a_role_spelled_after_the_content_is_read_all_the_same() -> None:
    body = {"messages": [{"content": "x /no_think", "role": "user"}, {"content": "ok", "role": "assistant"}]}
    assert read(body) == Intent(OFF, form="text")
    spaced = b'{"messages": [{"role": "system", "content": "/think"}, {"role" : "user", "content": "q"}]}'
    assert read(spaced) == Intent("on", form="text")


def test_a_role_named_twice_is_the_last_as_with_the_servers_parsers() -> None:
    said = b'{"messages":[{"role":"assistant","role":"user","content":"x /no_think"}]}'
    assert read(said) == Intent(OFF, form="text")
    unsaid = b'{"messages":[{"role":"user","content":"x /no_think","role":"assistant"}]}'
    assert read(unsaid) == Intent()


@pytest.mark.parametrize(
    ("surface", "body"),
    [
        (
            "chat",
            b'{"reasoning_effort":"none","messages":[{"role":"user","content":"hi"},{"role":1e400,"content":"x"}]}',
        ),
        ("chat", b'{"reasoning_effort":"none","messages":[{"role":"user","content":"hi"},1e400,[1e400]]}'),
        ("messages", b'{"reasoning_effort":"none","messages":[{"role":"assistant","content":[{"v":1e400}]}]}'),
        ("responses", b'{"reasoning_effort":"none","input":{"role":"user"}}'),
        ("responses", b'{"reasoning_effort":"none","input":5}'),
        ("responses", b'{"reasoning_effort":"none","input":[{"type":"function_call","x":1e400},1e400]}'),
    ],
)
def test_a_conversation_no_decoder_takes_leaves_the_fields_read(surface: Surface, body: bytes) -> None:
    """A number out of a double's range (valid JSON) in a message, or a conversation of the wrong type:
    the control fields are read all the same."""
    assert read(body, surface) == Intent(OFF, form="reasoning_effort")


TEXT_ELSEWHERE: list[tuple[Surface, dict[str, Any]]] = [
    ("chat", {"system": "/no_think", "messages": [{"role": "user", "content": "hi"}]}),
    ("chat", {"instructions": "/no_think", "prompt": "/no_think", "messages": [{"role": "user", "content": "hi"}]}),
    ("chat", {"input": [{"role": "user", "content": "/no_think"}]}),
    ("ollama", {"prompt": "/no_think", "messages": [{"role": "user", "content": "hi"}]}),
    ("responses", {"messages": [{"role": "user", "content": "/no_think"}], "input": "hi"}),
    ("messages", {"instructions": "/no_think", "messages": [{"role": "user", "content": "hi"}]}),
    ("chat", {"messages": [{"role": "user", "content": {"content": "/no_think"}}]}),
    ("messages", {"system": {"text": "/no_think"}, "messages": [{"role": "user", "content": "hi"}]}),
]


@pytest.mark.parametrize(("surface", "body"), TEXT_ELSEWHERE)
def test_text_where_the_surface_s_server_reads_none_says_nothing(surface: Surface, body: dict[str, Any]) -> None:
    """A member of another surface's (which its server ignores), or a content that is an object
    (which no template renders as text), carries no switch."""
    assert read(body, surface) == Intent()


def test_a_leading_system_message_is_the_system_prompt_on_every_surface() -> None:
    body = {"messages": [{"role": "system", "content": "/no_think"}, {"role": "user", "content": "hi"}]}
    assert read(body, "messages") == read(body, "ollama") == read(body, "chat") == Intent(OFF, form="text")


def test_a_switch_spelled_with_escapes_is_the_text_the_model_reads() -> None:
    assert read(b'{"messages":[{"role":"user","content":"q \\u002fno_think"}]}') == Intent(OFF, form="text")


# Values some form takes somewhere: a field no form reads must make none of them say anything.
_SAYINGS: list[Any] = [
    True,
    False,
    "none",
    "high",
    1000,
    {"type": "disabled"},
    {"type": "enabled", "budget_tokens": 1000},
    {"enabled": False},
    {"effort": "low"},
    {"enable_thinking": False},
    {"thinking": False},
]


def test_a_body_speaks_exactly_when_some_form_may_say_something() -> None:
    """A body none of whose fields ``ControlFields.speaks`` names is not asked of each form (most
    bodies): the fields some form hears are exactly those, whatever the other fields hold."""

    def fields_of(name: str, value: Any) -> ControlFields:
        fields = read_fields(json.dumps({name: value}).encode())
        assert fields is not None
        return fields

    names = [n for n in ControlFields.__struct_fields__ if n != "model"]
    heard = {n for n in names for v in _SAYINGS if any(form(fields_of(n, v)) is not None for form in ALL_FORMS)}
    speaking = {n for n in names if any(fields_of(n, v).speaks for v in _SAYINGS)}
    forms_fields = {"reasoning_effort", "reasoning", "thinking", "output_config", "think", "chat_template_kwargs"}
    assert heard == speaking == forms_fields
