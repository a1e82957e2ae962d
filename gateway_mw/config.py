"""Configuration: tag pairs, model profiles, the frozen config struct and its env parsing."""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from functools import cached_property
from typing import Any, Literal, get_args

import msgspec

from .families import family_for
from .tags import DEFAULT_TAG_PAIRS, TagPair

__all__ = [
    "DEFAULT_TAG_PAIRS",
    "ModelProfile",
    "Surface",
    "TagPair",
    "ThinkExtractConfig",
]

Surface = Literal["chat", "messages", "responses", "ollama"]
MessagesPolicy = Literal["off", "unsigned", "redacted"]
StreamMode = Literal["live", "buffered"]
Placement = Literal["anywhere", "leading"]
ChatReasoningField = Literal["both", "reasoning_content", "reasoning"]
ResponsesReasoningFormat = Literal["both", "content", "summary"]
Protocol = Literal["tags", "harmony"]
HistoryReasoning = Literal["auto", "pass", "field", "inline", "strip"]
HistoryScope = Literal["auto", "all", "current_turn", "tool_turns"]
UpstreamServer = Literal["auto", "vllm", "sglang", "llamacpp", "ollama", "openai", "anthropic", "generic"]


_RESOLVED_MAX = 1024

DEFAULT_ROUTES: dict[str, Surface] = {
    "/chat/completions": "chat",
    "/messages": "messages",
    "/responses": "responses",
    "/api/chat": "ollama",
    "/api/generate": "ollama",
}


@functools.cache
def _choices(allowed: object) -> tuple[object, ...]:
    return get_args(allowed)  # slow (typing walks the alias): once per Literal


def _check_choice(name: str, value: object, allowed: object) -> None:
    choices = _choices(allowed)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


_STORE_FORMS = "'memory', 'off', 'sqlite:PATH' or 'redis://HOST:PORT/DB' (also rediss://… and unix://PATH)"


def _check_store(value: str) -> None:
    """The form of ``reasoning_store`` (opening it is the record's job, at startup)."""
    form = value.strip()
    if form in ("memory", "off") or form.startswith(("sqlite:", "redis://", "rediss://", "unix://")):
        return
    shown = form.split("@")[-1] if "://" in form else form  # a password never reaches an error message
    raise ValueError(f"reasoning_store must be {_STORE_FORMS}, got {shown!r}")


def _check_scanner_fields(owner: ModelProfile | ThinkExtractConfig) -> None:
    """Validate the scanner fields shared by the config and profiles (None means "not overridden")."""
    for name, allowed in (
        ("stream_mode", StreamMode),
        ("placement", Placement),
        ("responses_reasoning_format", ResponsesReasoningFormat),
        ("history_reasoning", HistoryReasoning),
        ("history_scope", HistoryScope),
    ):
        value = getattr(owner, name)
        if value is not None:
            _check_choice(name, value, allowed)
    max_bytes = owner.max_buffer_bytes
    if max_bytes is not None and (isinstance(max_bytes, bool) or max_bytes < 1):
        raise ValueError(f"max_buffer_bytes must be a positive integer, got {max_bytes!r}")
    pairs = owner.tag_pairs
    if pairs is not None and not pairs:
        raise ValueError("tag_pairs must hold at least one TagPair")
    if owner.protocol is not None:
        _check_choice("protocol", owner.protocol, Protocol)
    markers = owner.tool_call_markers
    if markers is not None and not all(markers):
        raise ValueError("tool_call_markers must not hold an empty string")


class ModelProfile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Overrides applied when the response's ``model`` matches ``match``.

    ``match`` is an fnmatch glob compared case-insensitively (``"deepseek-r1*"``). Fields left as
    ``None`` keep the global value.
    """

    match: str
    enabled: bool | None = None
    tag_pairs: tuple[TagPair, ...] | None = None
    stream_mode: StreamMode | None = None
    start_with_reasoning: bool | None = None
    separator: str | None = None
    placement: Placement | None = None
    code_aware: bool | None = None
    strip_whitespace: bool | None = None
    trim_tag_edges: bool | None = None
    trim_reasoning_tail: bool | None = None
    max_buffer_bytes: int | None = None
    protocol: Protocol | None = None
    tool_call_markers: tuple[str, ...] | None = None
    content_wrappers: tuple[TagPair, ...] | None = None
    chat_mirror_reasoning: bool | None = None
    responses_reasoning_format: ResponsesReasoningFormat | None = None
    history_reasoning: HistoryReasoning | None = None
    history_scope: HistoryScope | None = None

    def __post_init__(self) -> None:
        _check_scanner_fields(self)

    def matches(self, model: str) -> bool:
        return fnmatchcase(model.lower(), self.match.lower())

    def overrides(self) -> dict[str, Any]:
        return {
            name: value
            for name in self.__struct_fields__
            if name != "match" and (value := getattr(self, name)) is not None
        }


class ThinkExtractConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, dict=True):
    """Everything the middleware and the scanner read. Frozen: derive variants with ``replace``.

    What is worked out from a configuration (the settings for a model, a scanner's tag table) is
    kept with it, in :attr:`derived` and the resolution cache, and goes with it: a variant made with
    ``replace`` starts with none."""

    enabled: bool = True
    chat_enabled: bool = True
    responses_enabled: bool = True
    ollama_enabled: bool = True
    """Ollama's native API (``/api/chat``, ``/api/generate``): ``thinking``, streamed as NDJSON."""
    messages_policy: MessagesPolicy = "off"
    tag_pairs: tuple[TagPair, ...] = DEFAULT_TAG_PAIRS
    stream_mode: StreamMode = "live"
    start_with_reasoning: bool = False
    separator: str = "\n"
    placement: Placement = "anywhere"
    code_aware: bool = True
    strip_whitespace: bool = False
    trim_tag_edges: bool = True
    trim_reasoning_tail: bool = False
    max_buffer_bytes: int = 65536
    protocol: Protocol = "tags"
    tool_call_markers: tuple[str, ...] = ()
    content_wrappers: tuple[TagPair, ...] = ()
    max_event_bytes: int = 1024 * 1024
    max_body_bytes: int = 64 * 1024 * 1024
    chat_reasoning_field: ChatReasoningField = "both"
    """Chat: the name(s) under which reasoning taken out of the text is written: ``both``
    (``reasoning_content`` and ``reasoning``, the same text, so that clients that read either name
    find it), ``reasoning_content`` or ``reasoning``."""
    chat_mirror_reasoning: bool = True
    """Chat: reasoning the upstream sent under one name only is also written under the name(s) of
    ``chat_reasoning_field`` it lacks (with ``both``, under the other name); the upstream's own
    field stays."""
    responses_reasoning_format: ResponsesReasoningFormat = "both"
    responses_encrypted_content: bool = False
    """Responses: reasoning items carry an ``encrypted_content`` the gateway made (``gw1:``…) and reads
    back. Set per request when a client asks for ``include: ["reasoning.encrypted_content"]``."""
    history_reasoning: HistoryReasoning = "auto"
    """The way back in: the form in which the reasoning of earlier assistant turns reaches the
    upstream (``auto``: the model family's; ``pass``: request bodies are never changed)."""
    history_scope: HistoryScope = "auto"
    """Which assistant turns keep their reasoning (the others lose it): ``auto`` (the family's with
    ``history_reasoning=auto``, else ``all``), ``all``, ``current_turn``, ``tool_turns``."""
    upstream_server: UpstreamServer = "auto"
    """The server behind the gateway, for where it reads replayed reasoning (``auto``: the
    standalone gateway asks the upstream; the middleware alone takes ``generic``)."""
    reasoning_store: str = "memory"
    """Where the reasoning record is kept (``setup()`` opens it): ``memory``, ``off``,
    ``sqlite:PATH``, ``redis://HOST:PORT/DB``."""
    routes: dict[str, Surface] = msgspec.field(default_factory=lambda: dict(DEFAULT_ROUTES))
    profiles: tuple[ModelProfile, ...] = ()
    families: bool = True

    def __post_init__(self) -> None:
        _check_scanner_fields(self)
        for name in ("max_event_bytes", "max_body_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        _check_choice("messages_policy", self.messages_policy, MessagesPolicy)
        _check_choice("chat_reasoning_field", self.chat_reasoning_field, ChatReasoningField)
        _check_choice("upstream_server", self.upstream_server, UpstreamServer)
        _check_store(self.reasoning_store)
        for suffix, surface in self.routes.items():
            if not suffix:
                raise ValueError("routes: a route suffix must not be empty")
            _check_choice(f"routes[{suffix!r}]", surface, Surface)

    # -- resolution -------------------------------------------------------------------------

    def replace(self, **changes: Any) -> ThinkExtractConfig:
        return msgspec.structs.replace(self, **changes)

    def for_model(self, model: str | None) -> ThinkExtractConfig:
        """The effective settings for ``model``: its built-in family preset (when ``families`` is
        on), then the first matching profile's overrides on top, so a profile always wins.

        A global ``enabled=False`` is authoritative: no profile turns extraction back on. Cached:
        the result depends on nothing else, and every stream starts with it.
        """
        if model is None:
            return self
        cache = self._by_model
        resolved = cache.get(model)
        if resolved is None:
            if len(cache) >= _RESOLVED_MAX:  # model names are the client's: keep the cache bounded
                cache.clear()
            resolved = cache[model] = self._resolve(model)
        return resolved

    @cached_property
    def _by_model(self) -> dict[str, ThinkExtractConfig]:
        return {}

    @cached_property
    def derived(self) -> dict[str, Any]:
        """Values worked out from these settings, once, by the modules that read them (a scanner's
        tag table): kept with the configuration they come from."""
        return {}

    def _resolve(self, model: str) -> ThinkExtractConfig:
        config = self
        if self.families:
            family = family_for(model)
            if family is not None:
                config = family.apply(self)
        for profile in self.profiles:
            if profile.matches(model):
                changes = profile.overrides()
                if not self.enabled:
                    changes.pop("enabled", None)
                return msgspec.structs.replace(config, **changes) if changes else config
        return config

    def surface_for_path(self, path: str) -> Surface | None:
        """The surface whose route suffix ends ``path`` (the longest suffix wins)."""
        best: Surface | None = None
        best_len = 0
        for suffix, surface in self.routes.items():
            if len(suffix) > best_len and path.endswith(suffix):
                best, best_len = surface, len(suffix)
        return best

    # -- environment ------------------------------------------------------------------------

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ThinkExtractConfig:
        """Build a config from ``THINK_EXTRACT_<FIELD>`` variables; unset ones keep defaults.

        An invalid value raises ``ValueError`` naming the variable and what it accepts; so does a
        ``THINK_EXTRACT_*`` variable that is no setting (with the closest name there is).
        """
        env = os.environ if environ is None else environ
        for var in env:
            message = unknown_variable(var)
            if message is not None:
                raise ValueError(message)
        values: dict[str, Any] = {}
        for name in cls.__struct_fields__:
            var = ENV_PREFIX + name.upper()
            raw = env.get(var)
            if raw is None:
                continue
            try:
                values[name] = _ENV_PARSERS[name](raw)
            except ValueError as exc:
                raise ValueError(f"{var}={raw!r} is invalid: {exc}") from None
        try:
            return cls(**values)
        except ValueError as exc:  # cross-field checks of __post_init__
            raise ValueError(f"THINK_EXTRACT_* settings are invalid: {exc}") from None


ENV_PREFIX = "THINK_EXTRACT_"


def unknown_variable(var: str) -> str | None:
    """Why ``var`` is wrong, if it is a ``THINK_EXTRACT_*`` name that no setting has; else ``None``."""
    if not var.startswith(ENV_PREFIX):
        return None
    known = [name.upper() for name in ThinkExtractConfig.__struct_fields__]
    name = var.removeprefix(ENV_PREFIX)
    if name in known:
        return None
    close = difflib.get_close_matches(name.upper(), known, n=1, cutoff=0.6)
    if close:
        return f"{var} is not a setting; did you mean {ENV_PREFIX}{close[0]}?"
    return f"{var} is not a setting; the settings are {', '.join(ENV_PREFIX + k for k in known)}"


_TRUE = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
"""The values that say "off", in the environment and in a client's ``X-Think-Extract`` header."""


def _parse_bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in FALSE_WORDS:
        return False
    raise ValueError("expected one of 1, true, yes, on, 0, false, no, off")


def _choice(allowed: object) -> Callable[[str], str]:
    choices: tuple[str, ...] = get_args(allowed)

    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value

    return parse


def _parse_positive_int(raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError("expected a positive integer (bytes)") from None
    if value < 1:
        raise ValueError("expected a positive integer (bytes)")
    return value


_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", ",": ","}


def _split_escaped(raw: str, sep: str | None) -> list[str]:
    r"""Split ``raw`` on unescaped ``sep`` and decode ``\n``, ``\r``, ``\t``, ``\\`` and ``\,``."""
    parts: list[str] = []
    current: list[str] = []
    chars = iter(raw)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, None)
            if nxt is None or nxt not in _ESCAPES:
                raise ValueError(r"unknown escape; use \n, \r, \t, \\ or \,")
            current.append(_ESCAPES[nxt])
        elif sep is not None and ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _parse_separator(raw: str) -> str:
    return _split_escaped(raw, None)[0]


def _parse_tag_pairs(raw: str) -> tuple[TagPair, ...]:
    pairs = []
    for item in _split_escaped(raw, ","):
        open_, dots, close = item.partition("...")
        if not dots or not open_ or not close:
            raise ValueError(r"expected open...close[,open...close] (escapes: \n \t \r \\ \,)")
        pairs.append(TagPair(open_, close))
    return tuple(pairs)


def _parse_markers(raw: str) -> tuple[str, ...]:
    if not raw.strip():
        return ()
    markers = tuple(_split_escaped(raw, ","))
    if not all(markers):
        raise ValueError(r"expected marker[,marker] with no empty marker (escapes: \n \t \r \\ \,)")
    return markers


def _parse_wrappers(raw: str) -> tuple[TagPair, ...]:
    return () if not raw.strip() else _parse_tag_pairs(raw)


def _parse_routes(raw: str) -> dict[str, Surface]:
    routes: dict[str, Surface] = {}
    for item in raw.split(","):
        suffix, eq, surface = item.strip().partition("=")
        if not eq or not suffix or surface not in get_args(Surface):
            raise ValueError(
                "expected suffix=surface[,suffix=surface] with surface one of chat, messages, responses, ollama"
            )
        routes[suffix] = surface  # type: ignore[assignment]  # membership checked above
    return routes


def _parse_profiles(raw: str) -> tuple[ModelProfile, ...]:
    try:
        document = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not valid JSON ({exc}); expected a JSON list of profiles") from None
    try:
        return msgspec.convert(document, type=tuple[ModelProfile, ...])
    except msgspec.ValidationError as exc:
        raise ValueError(
            f'expected a JSON list of profiles like [{{"match": "deepseek-r1*", "start_with_reasoning": true}}] ({exc})'
        ) from None


_ENV_PARSERS: dict[str, Callable[[str], Any]] = {
    "enabled": _parse_bool,
    "chat_enabled": _parse_bool,
    "responses_enabled": _parse_bool,
    "ollama_enabled": _parse_bool,
    "messages_policy": _choice(MessagesPolicy),
    "tag_pairs": _parse_tag_pairs,
    "stream_mode": _choice(StreamMode),
    "start_with_reasoning": _parse_bool,
    "separator": _parse_separator,
    "placement": _choice(Placement),
    "code_aware": _parse_bool,
    "strip_whitespace": _parse_bool,
    "trim_tag_edges": _parse_bool,
    "trim_reasoning_tail": _parse_bool,
    "max_buffer_bytes": _parse_positive_int,
    "protocol": _choice(Protocol),
    "tool_call_markers": _parse_markers,
    "content_wrappers": _parse_wrappers,
    "max_event_bytes": _parse_positive_int,
    "max_body_bytes": _parse_positive_int,
    "chat_reasoning_field": _choice(ChatReasoningField),
    "chat_mirror_reasoning": _parse_bool,
    "responses_reasoning_format": _choice(ResponsesReasoningFormat),
    "responses_encrypted_content": _parse_bool,
    "history_reasoning": _choice(HistoryReasoning),
    "history_scope": _choice(HistoryScope),
    "upstream_server": _choice(UpstreamServer),
    "reasoning_store": str.strip,
    "routes": _parse_routes,
    "profiles": _parse_profiles,
    "families": _parse_bool,
}
