"""Configuration: defaults, validation, model profiles, routes and ``from_env``."""

from __future__ import annotations

import pytest

from gateway_mw import DEFAULT_TAG_PAIRS, ModelProfile, TagPair, ThinkExtractConfig


def test_defaults() -> None:
    cfg = ThinkExtractConfig()
    assert cfg.tag_pairs == DEFAULT_TAG_PAIRS
    assert (cfg.enabled, cfg.chat_enabled, cfg.responses_enabled, cfg.messages_policy) == (True, True, True, "off")
    assert (cfg.stream_mode, cfg.placement, cfg.separator, cfg.max_buffer_bytes) == ("live", "anywhere", "\n", 65536)
    assert (cfg.code_aware, cfg.strip_whitespace, cfg.start_with_reasoning) == (True, False, False)
    assert cfg.chat_reasoning_field == "both"
    assert cfg.routes == {
        "/chat/completions": "chat",
        "/messages": "messages",
        "/responses": "responses",
        "/api/chat": "ollama",
        "/api/generate": "ollama",
    }
    assert cfg.ollama_enabled is True
    assert (cfg.history_reasoning, cfg.history_scope, cfg.upstream_server) == ("auto", "auto", "auto")
    assert (cfg.reasoning_store, cfg.responses_encrypted_content) == ("memory", False)
    assert [p.open for p in DEFAULT_TAG_PAIRS] == [
        "<think>",
        "<thinking>",
        "<reasoning>",
        "<reason>",
        "<thought>",
        "<|begin_of_thought|>",
        "◁think▷",
        "[THINK]",
        "<|channel|>analysis<|message|>",
        "<|channel>thought\n",
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"stream_mode": "fast"}, "stream_mode must be one of 'live', 'buffered', got 'fast'"),
        ({"placement": "first"}, "placement must be one of 'anywhere', 'leading', got 'first'"),
        ({"messages_policy": "on"}, "messages_policy must be one of 'off', 'unsigned', 'redacted', got 'on'"),
        (
            {"chat_reasoning_field": "thinking"},
            "chat_reasoning_field must be one of 'both', 'reasoning_content', 'reasoning', got 'thinking'",
        ),
        ({"max_buffer_bytes": 0}, "max_buffer_bytes must be a positive integer (bytes), got 0"),
        ({"max_event_bytes": 0}, "max_event_bytes must be a positive integer (bytes), got 0"),
        ({"max_body_bytes": -5}, "max_body_bytes must be a positive integer (bytes), got -5"),
        ({"max_body_bytes": True}, "max_body_bytes must be a positive integer (bytes), got True"),
        ({"tag_pairs": ()}, "tag_pairs must be a list of one or more tag pairs (open...close[,open...close]), got ()"),
        (
            {"routes": {"/x": "completions"}},
            "routes['/x'] must be one of 'chat', 'messages', 'responses', 'ollama', got 'completions'",
        ),
        ({"routes": {"": "chat"}}, "routes keys must be a non-empty path suffix, got ''"),
        ({"tool_call_markers": ("<a>", "")}, "tool_call_markers[1] must be a non-empty string, got ''"),
        ({"enabled": "yes"}, "enabled must be true or false, got 'yes'"),
        ({"separator": None}, "separator must be a string, got None"),
    ],
)
def test_invalid_values_are_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        ThinkExtractConfig(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_a_store_error_never_shows_a_password() -> None:
    with pytest.raises(ValueError) as info:
        ThinkExtractConfig(reasoning_store="redis2://user:hunter2@cache:6379/0")
    assert str(info.value) == (
        "reasoning_store must be 'memory', 'off', 'sqlite:PATH' or 'redis://HOST:PORT/DB' "
        "(also rediss://… and unix://PATH), got 'cache:6379/0'"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"match": ""}, "match must be a non-empty glob like deepseek-r1*, or a list of them, got ''"),
        ({"match": ("a*", "")}, "match[1] must be a non-empty glob, got ''"),
        ({"match": "x", "stream_mode": "fast"}, "stream_mode must be one of 'live', 'buffered', got 'fast'"),
        ({"match": "x", "max_buffer_bytes": 0}, "max_buffer_bytes must be a positive integer (bytes), got 0"),
        (
            {"match": "x", "history": ("field", "every")},
            "history[1] must be one of auto, all, current_turn, tool_turns, got 'every'",
        ),
    ],
)
def test_invalid_profiles_are_rejected_in_the_same_words(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        ModelProfile(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_a_config_holds_its_fields_and_nothing_else() -> None:
    """Frozen means frozen: no ``__dict__`` to cache into. What is worked out from a configuration
    is kept beside it, per configuration object, and a variant starts with nothing."""
    cfg = ThinkExtractConfig()
    with pytest.raises(AttributeError):
        cfg.__dict__  # noqa: B018
    with pytest.raises(AttributeError):
        cfg.cache = {}  # type: ignore[attr-defined]
    assert cfg.derived is cfg.derived
    variant = cfg.replace(stream_mode="buffered")
    assert variant.derived is not cfg.derived
    assert cfg.for_model("qwen3-8b") is cfg.for_model("qwen3-8b")


def test_what_is_worked_out_is_kept_in_a_bounded_table() -> None:
    from gateway_mw import config as module

    configs = [ThinkExtractConfig(max_buffer_bytes=n) for n in range(1, 2 * module._DERIVED_MAX + 2)]
    for cfg in configs:
        cfg.derived["mine"] = cfg.max_buffer_bytes
    assert len(module._DERIVED) <= module._DERIVED_MAX
    assert [cfg.derived.get("mine", cfg.max_buffer_bytes) == cfg.max_buffer_bytes for cfg in configs] == [True] * len(
        configs
    )  # a configuration sees its own values or none, never another's


def test_what_a_client_names_is_kept_only_when_short() -> None:
    """Model names and paths are the client's: each table of what is worked out from them holds a
    bounded number of entries, and only short names, so that requests naming long ones (a model of
    megabytes, an 8 KB path) cannot pin memory; a long one is worked out each time, alike."""
    from gateway_mw import config as module
    from gateway_mw import families

    cfg = ThinkExtractConfig(profiles=(ModelProfile(match="qwen3*", separator="|"),))
    long_model, long_path = "qwen3-" + "m" * (1 << 20), "/" + "p" * 8000 + "/v1/chat/completions"
    assert (cfg.for_model("qwen3-8b").separator, cfg.surface_for_path("/v1/chat/completions")) == ("|", "chat")
    families_kept = families._family_of.cache_info().currsize
    for n in range(3):
        assert (cfg.for_model(f"{n}{long_model}").separator, cfg.for_model(long_model).separator) == ("\n", "|")
        assert cfg.surface_for_path(f"/{n}{long_path}") == "chat"
        assert families.family_for(f"{n}{long_model}") is None
        assert families.family_for(long_model) is families.family_for("qwen3-8b") is not None
    derived = module._DERIVED[id(cfg)]
    assert (list(derived.models), list(derived.paths)) == (["qwen3-8b"], ["/v1/chat/completions"])
    assert families._family_of.cache_info().currsize == families_kept


def test_tag_pair_needs_both_strings() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        TagPair("<t>", "")


def test_profiles_first_match_wins_and_global_off_is_authoritative() -> None:
    cfg = ThinkExtractConfig(
        profiles=(
            ModelProfile(match="DeepSeek-R1*", start_with_reasoning=True, enabled=True),
            ModelProfile(match="deepseek-*", separator=""),
            ModelProfile(match="plain-*", enabled=False),
        )
    )
    r1 = cfg.for_model("deepseek-r1-distill-qwen")
    assert (r1.start_with_reasoning, r1.separator, r1.profiles) == (True, "\n", cfg.profiles)
    assert cfg.for_model("deepseek-v3").separator == ""
    assert cfg.for_model("plain-7b").enabled is False
    assert cfg.for_model("other") is cfg
    assert cfg.for_model(None) is cfg
    off = cfg.replace(enabled=False)
    assert off.for_model("deepseek-r1").enabled is False


def test_surface_for_path() -> None:
    cfg = ThinkExtractConfig(routes={"/chat/completions": "chat", "/v2/chat/completions": "responses"})
    assert cfg.surface_for_path("/v1/chat/completions") == "chat"
    assert cfg.surface_for_path("/v2/chat/completions") == "responses"
    assert cfg.surface_for_path("/v1/embeddings") is None


def test_from_env_reads_every_field() -> None:
    env = {
        "THINK_EXTRACT_ENABLED": "yes",
        "THINK_EXTRACT_CHAT_ENABLED": "off",
        "THINK_EXTRACT_RESPONSES_ENABLED": "0",
        "THINK_EXTRACT_MESSAGES_POLICY": "Redacted",
        "THINK_EXTRACT_TAG_PAIRS": r"<think>...</think>,<|channel>thought\n...<channel|>,a\,b...c",
        "THINK_EXTRACT_STREAM_MODE": "buffered",
        "THINK_EXTRACT_START_WITH_REASONING": "true",
        "THINK_EXTRACT_SEPARATOR": r"\n\n",
        "THINK_EXTRACT_PLACEMENT": "leading",
        "THINK_EXTRACT_CODE_AWARE": "false",
        "THINK_EXTRACT_STRIP_WHITESPACE": "1",
        "THINK_EXTRACT_MAX_BUFFER_BYTES": "1024",
        "THINK_EXTRACT_MAX_EVENT_BYTES": "4096",
        "THINK_EXTRACT_MAX_BODY_BYTES": " 8192 ",
        "THINK_EXTRACT_CHAT_REASONING_FIELD": "reasoning",
        "THINK_EXTRACT_CHAT_MIRROR_REASONING": "off",
        "THINK_EXTRACT_RESPONSES_REASONING_FORMAT": "summary",
        "THINK_EXTRACT_ROUTES": "/v1/chat/completions=chat, /v1/messages=messages",
        "THINK_EXTRACT_PROFILES": '[{"match": "qwq*", "start_with_reasoning": false}]',
        "UNRELATED": "x",
    }
    assert ThinkExtractConfig.from_env(env) == ThinkExtractConfig(
        enabled=True,
        chat_enabled=False,
        responses_enabled=False,
        messages_policy="redacted",
        tag_pairs=(TagPair("<think>", "</think>"), TagPair("<|channel>thought\n", "<channel|>"), TagPair("a,b", "c")),
        stream_mode="buffered",
        start_with_reasoning=True,
        separator="\n\n",
        placement="leading",
        code_aware=False,
        strip_whitespace=True,
        max_buffer_bytes=1024,
        max_event_bytes=4096,
        max_body_bytes=8192,
        chat_reasoning_field="reasoning",
        chat_mirror_reasoning=False,
        responses_reasoning_format="summary",
        routes={"/v1/chat/completions": "chat", "/v1/messages": "messages"},
        profiles=(ModelProfile(match="qwq*", start_with_reasoning=False),),
    )


def test_the_words_of_a_profiles_history_are_those_of_the_settings_it_becomes() -> None:
    from typing import get_args

    from gateway_mw.fieldcheck import describe
    from gateway_mw.profiles import HistoryReasoning, HistoryScope, HistoryWord, TurnsWord

    assert (describe(HistoryWord), describe(TurnsWord)) == (
        describe(HistoryReasoning, str),
        describe(HistoryScope, str),
    )
    for form in get_args(HistoryReasoning):
        for scope in get_args(HistoryScope):
            assert ModelProfile(match="x", history=(form, scope)).history == (form, scope)


def test_every_field_says_what_it_accepts() -> None:
    """An error names what a setting accepts in words, never as a bare type name."""
    from gateway_mw.config import FIELD_TYPES
    from gateway_mw.fieldcheck import describe

    said = {name: describe(tp, str) for name, tp in FIELD_TYPES.items()}
    assert [name for name, words in said.items() if words.isidentifier()] == []  # a type's name has no space


def test_from_env_empty_gives_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ThinkExtractConfig.from_env({}) == ThinkExtractConfig()
    monkeypatch.setenv("THINK_EXTRACT_STREAM_MODE", "buffered")
    assert ThinkExtractConfig.from_env().stream_mode == "buffered"


BOOL = "expected one of 1, true, yes, on, 0, false, no, off"


@pytest.mark.parametrize(
    ("var", "raw", "reason"),
    [
        ("THINK_EXTRACT_ENABLED", "maybe", BOOL),
        ("THINK_EXTRACT_CHAT_ENABLED", "", BOOL),
        ("THINK_EXTRACT_RESPONSES_ENABLED", "2", BOOL),
        ("THINK_EXTRACT_START_WITH_REASONING", "y", BOOL),
        ("THINK_EXTRACT_CODE_AWARE", "enabled", BOOL),
        ("THINK_EXTRACT_STRIP_WHITESPACE", "no way", BOOL),
        ("THINK_EXTRACT_MESSAGES_POLICY", "signed", "expected one of off, unsigned, redacted"),
        ("THINK_EXTRACT_STREAM_MODE", "batch", "expected one of live, buffered"),
        ("THINK_EXTRACT_PLACEMENT", "start", "expected one of anywhere, leading"),
        ("THINK_EXTRACT_CHAT_REASONING_FIELD", "thoughts", "expected one of both, reasoning_content, reasoning"),
        ("THINK_EXTRACT_CHAT_MIRROR_REASONING", "both", BOOL),
        ("THINK_EXTRACT_MAX_BUFFER_BYTES", "64k", "expected a positive integer (bytes)"),
        ("THINK_EXTRACT_MAX_BUFFER_BYTES", "-1", "expected a positive integer (bytes)"),
        ("THINK_EXTRACT_MAX_EVENT_BYTES", "0", "expected a positive integer (bytes)"),
        ("THINK_EXTRACT_MAX_BODY_BYTES", "1MB", "expected a positive integer (bytes)"),
        ("THINK_EXTRACT_RESPONSES_REASONING_FORMAT", "text", "expected one of both, content, summary"),
        ("THINK_EXTRACT_TAG_PAIRS", "<think>", r"expected open...close[,open...close] (escapes: \n \t \r \\ \,)"),
        ("THINK_EXTRACT_TAG_PAIRS", "...</think>", r"expected open...close[,open...close] (escapes: \n \t \r \\ \,)"),
        ("THINK_EXTRACT_TAG_PAIRS", r"<a>...\q", r"unknown escape; use \n, \r, \t, \\ or \,"),
        ("THINK_EXTRACT_SEPARATOR", "\\", r"unknown escape; use \n, \r, \t, \\ or \,"),
        ("THINK_EXTRACT_ROUTES", "/chat=completions", "expected suffix=surface[,suffix=surface] with surface one of"),
        ("THINK_EXTRACT_PROFILES", '{"match": 1}', "expected a JSON list of profiles like"),
        ("THINK_EXTRACT_PROFILES", '[{"match": "x", "stream_mode": "nope"}]', "expected a JSON list of profiles like"),
    ],
)
def test_from_env_invalid_value_names_the_variable(var: str, raw: str, reason: str) -> None:
    with pytest.raises(ValueError) as info:
        ThinkExtractConfig.from_env({var: raw})
    assert str(info.value).startswith(f"{var}={raw!r} is invalid: {reason}")


def test_trim_tag_edges_from_env_and_profiles() -> None:
    assert ThinkExtractConfig().trim_tag_edges is True
    assert ThinkExtractConfig.from_env({"THINK_EXTRACT_TRIM_TAG_EDGES": "off"}).trim_tag_edges is False
    with pytest.raises(ValueError, match="THINK_EXTRACT_TRIM_TAG_EDGES='maybe' is invalid"):
        ThinkExtractConfig.from_env({"THINK_EXTRACT_TRIM_TAG_EDGES": "maybe"})
    config = ThinkExtractConfig.from_env({"THINK_EXTRACT_PROFILES": '[{"match": "raw-*", "trim_tag_edges": false}]'})
    assert (config.for_model("raw-1").trim_tag_edges, config.for_model("qwen3-8b").trim_tag_edges) == (False, True)


@pytest.mark.parametrize("value", ["both", " Both ", "reasoning_content", "REASONING"])
def test_every_chat_reasoning_field_is_read_from_its_variable(value: str) -> None:
    env = {"THINK_EXTRACT_CHAT_REASONING_FIELD": value}
    assert ThinkExtractConfig.from_env(env).chat_reasoning_field == value.strip().lower()
