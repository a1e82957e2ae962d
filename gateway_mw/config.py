"""Configuration: the frozen settings struct the middleware and the scanner read, grouped by what
the settings govern, and the settings for one model (its family's preset, then the operator's profile).

Each field's type carries what it accepts (``Literal`` choices, ``msgspec.Meta`` constraints and
descriptions); msgspec checks them, when the struct is built in Python as when it is read from
``THINK_EXTRACT_*`` variables or a TOML table (:mod:`.fieldcheck`, :mod:`.envtext`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, get_args

import msgspec

from .envtext import ENV_PREFIX, FALSE_WORDS, read_value
from .envtext import unknown_variable as _unknown
from .families import NAME_CHARS, family_for
from .fieldcheck import check, field_types, twin
from .profiles import (
    HistoryReasoning,
    HistoryScope,
    Markers,
    ModelProfile,
    Placement,
    Positive,
    Protocol,
    ReasoningControl,
    ResponsesReasoningFormat,
    StreamMode,
    TagPairs,
    TemplateSwitch,
)
from .tags import DEFAULT_TAG_PAIRS, TagPair

__all__ = [
    "BUDGET_MESSAGE",
    "DEFAULT_TAG_PAIRS",
    "ENV_PREFIX",
    "FALSE_WORDS",
    "ModelProfile",
    "Surface",
    "TagPair",
    "ThinkExtractConfig",
    "unknown_variable",
]

Surface = Literal["chat", "messages", "responses", "ollama"]
"""The name of each surface the gateway translates: what ``routes`` accepts, and what every table by
surface is checked against (each surface is a definition in ``surfaces/registry.py`` under its name)."""
DEFAULT_ROUTES: dict[str, Surface] = {
    "/chat/completions": "chat",
    "/messages": "messages",
    "/responses": "responses",
    "/api/chat": "ollama",
    "/api/generate": "ollama",
}
"""The surface of each route suffix unless the operator says otherwise: every surface's (its
definition forwards them, ``forward_routes``)."""

MessagesPolicy = Literal["off", "unsigned", "redacted"]
ChatReasoningField = Literal["both", "reasoning_content", "reasoning"]
BudgetEnforcement = Literal["auto", "server", "gateway", "off"]
UpstreamServer = Literal["auto", "vllm", "sglang", "llamacpp", "ollama", "openai", "anthropic", "generic"]

BUDGET_MESSAGE = (
    "\n\nConsidering the limited time by the user, I have to give the solution based on the thinking directly now.\n"
)
"""The early-stop sentence Qwen's recipe for a thinking budget puts before the closing tag."""

Routes = Annotated[
    dict[Annotated[str, msgspec.Meta(min_length=1, description="a non-empty path suffix")], Surface],
    msgspec.Meta(description=f"suffix=surface[,suffix=surface] with surface one of {', '.join(get_args(Surface))}"),
]
Profiles = Annotated[
    tuple[ModelProfile, ...],
    msgspec.Meta(description='a JSON list of profiles like [{"match": "deepseek-r1*", "start_with_reasoning": true}]'),
]


def _without_credentials(store: object) -> object:
    """A store's address as an error may show it: no password of a URL."""
    return store.split("@")[-1] if isinstance(store, str) and "://" in store else store


Store = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^\s*(memory|off)\s*$|^\s*(sqlite:|rediss?://|unix://)",
        description="'memory', 'off', 'sqlite:PATH' or 'redis://HOST:PORT/DB' (also rediss://… and unix://PATH)",
        extra={"shown": _without_credentials},
    ),
]


class ThinkExtractConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Everything the middleware and the scanner read. Frozen: derive variants with ``replace``.

    What the modules that read a configuration work out from it (a scanner's tag table, the
    settings for a model) is kept in a bounded table beside it, keyed by it (:attr:`derived`): the
    struct holds its fields and nothing else.
    """

    # -- which requests are translated
    enabled: bool = True
    """``False`` turns everything off, whatever else says (no profile turns it back on)."""
    chat_enabled: bool = True
    responses_enabled: bool = True
    ollama_enabled: bool = True
    """Ollama's native API (``/api/chat``, ``/api/generate``): ``thinking``, streamed as NDJSON."""
    messages_policy: MessagesPolicy = "off"
    routes: Routes = msgspec.field(default_factory=lambda: dict(DEFAULT_ROUTES))
    """The surface of each route suffix (the longest suffix that ends a path wins)."""

    # -- how an answer is read: where its reasoning is
    tag_pairs: TagPairs = DEFAULT_TAG_PAIRS
    start_with_reasoning: bool = False
    placement: Placement = "anywhere"
    protocol: Protocol = "tags"
    tool_call_markers: Markers = ()
    content_wrappers: tuple[TagPair, ...] = ()
    code_aware: bool = True

    # -- how reasoning and answer are written
    stream_mode: StreamMode = "live"
    separator: str = "\n"
    strip_whitespace: bool = False
    trim_tag_edges: bool = True
    trim_reasoning_tail: bool = False
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

    # -- how much is held
    max_buffer_bytes: Positive = 65536
    max_event_bytes: Positive = 1024 * 1024
    max_body_bytes: Positive = 64 * 1024 * 1024

    # -- the way back in: earlier turns' reasoning in requests
    history_reasoning: HistoryReasoning = "auto"
    """The form in which the reasoning of earlier assistant turns reaches the upstream (``auto``:
    the model's profile's or family's ``history``; ``pass``: request bodies are never changed)."""
    history_scope: HistoryScope = "auto"
    """Which assistant turns keep their reasoning (the others lose it): ``auto`` (the profile's or
    family's with ``history_reasoning=auto``, else ``all``), ``all``, ``current_turn``, ``tool_turns``."""
    upstream_server: UpstreamServer = "auto"
    """The server behind the gateway, for where it reads replayed reasoning (``auto``: the
    standalone gateway asks the upstream; the middleware alone takes ``generic``)."""
    reasoning_store: Store = "memory"
    """Where the reasoning record is kept (``setup()`` opens it): ``memory``, ``off``,
    ``sqlite:PATH``, ``redis://HOST:PORT/DB``."""

    # -- reasoning controls: what a client asks of the model's thinking, written where the upstream reads it
    reasoning_controls: bool = True
    """Read each request's reasoning control (``reasoning_effort``, ``thinking``, ``think``…) and write
    it where the upstream's server and the model's template read it; ``False``: neither read nor written."""
    reasoning_control: ReasoningControl = "default"
    """The intent for a request that says nothing: ``default`` (nothing written), ``off``, ``on``, an
    effort (``high``) or ``budget:N`` (at most N reasoning tokens)."""
    reasoning_control_pinned: bool = False
    """``reasoning_control`` wins over the client's own (with two budgets, the smaller one)."""
    template_switch: TemplateSwitch = "both"
    """What the model's chat template reads to think or not (the families set theirs)."""
    reasoning_budget_enforcement: BudgetEnforcement = "auto"
    """Who ends the thinking at a budget: ``server`` (its own budget field, where the server has
    one), ``gateway`` (the gateway counts the reasoning as it streams, ends the upstream request at
    the budget and asks for the answer after the early-stop sentence; the server's field is not
    written where the gateway does it), ``auto`` (the server's field where it has one, else the
    gateway's) or ``off`` (no one: thinking on, unbounded)."""
    reasoning_budget_message: str = BUDGET_MESSAGE
    """What the gateway writes after the reasoning it stopped, before the closing tag."""
    reasoning_exclude: bool = False
    """The client's answer carries no reasoning, on every surface, streamed or not: reasoning taken
    out of the text and reasoning the server wrote in its own fields, blocks or items alike are left
    out (the blocks and items after them renumbered). The reasoning record still keeps what the model
    wrote. Set per request when a client asks for ``reasoning: {"exclude": true}``."""

    # -- per model
    profiles: Profiles = ()
    families: bool = True
    """The built-in profiles of :mod:`.families`, applied before the operator's ``profiles``."""

    def __post_init__(self) -> None:
        check(self, _CHECKED)  # every field against its type; no setting depends on another

    def replace(self, **changes: Any) -> ThinkExtractConfig:
        return msgspec.structs.replace(self, **changes)

    def replaced(self, **changes: Any) -> ThinkExtractConfig:
        """:meth:`replace`, made once per configuration and changes (kept with its :attr:`derived`
        values): the requests that change a setting alike (the server an outer middleware names, a
        client that wants no reasoning back) share one configuration and what is worked out from it
        (the settings per model, a scanner's tables), which a copy made per request works out again."""
        key = f"replaced {sorted(changes.items())!r}"
        derived = self.derived
        made: ThinkExtractConfig | None = derived.get(key)
        if made is None:
            made = self.replace(**changes)
            if len(derived) < _DERIVED_VALUES_MAX:  # the values an outer middleware names: bounded all the same
                derived[key] = made
        return made

    @property
    def derived(self) -> dict[str, Any]:
        """Values worked out from these settings by the modules that read them (a scanner's tag
        table, the settings for a model), kept beside them: made once per configuration."""
        try:
            return _DERIVED[id(self)].values
        except KeyError:
            return _derived_of(self).values

    # -- resolution -------------------------------------------------------------------------

    def for_model(self, model: str | None) -> ThinkExtractConfig:
        """The effective settings for ``model``: its built-in family's profile (when ``families``
        is on), then the first matching profile of the operator's on top, so theirs always wins.

        A global ``enabled=False`` is authoritative: no profile turns extraction back on. Made once
        per model: the result depends on nothing else, and every stream starts with it.
        """
        if model is None:
            return self
        try:
            return _DERIVED[id(self)].models[model]
        except KeyError:
            return _kept(_derived_of(self).models, model, self._resolve(model))

    def _resolve(self, model: str) -> ThinkExtractConfig:
        family = family_for(model) if self.families else None
        profile = next((p for p in self.profiles if p.matches(model)), None)
        changes: dict[str, Any] = {}
        for applied in (family, profile):
            if applied is not None:
                _apply(applied, self, changes)
        if not self.enabled:
            changes.pop("enabled", None)
        if changes.get("history_reasoning", self.history_reasoning) == "auto":
            form, scope = next(
                (p.history for p in (profile, family) if p is not None and p.history[0] != "auto"), _AUTO
            )
            if form != "auto":
                changes["history_reasoning"] = form
                if changes.get("history_scope", self.history_scope) == "auto" and scope != "auto":
                    changes["history_scope"] = scope
        changed = {name: value for name, value in changes.items() if getattr(self, name) != value}
        return msgspec.structs.replace(self, **changed) if changed else self

    def surface_for_path(self, path: str) -> Surface | None:
        """The surface whose route suffix ends ``path`` (the longest suffix wins; found once per path)."""
        try:
            return _DERIVED[id(self)].paths[path]
        except KeyError:
            return _kept(_derived_of(self).paths, path, self._surface_for(path))

    def _surface_for(self, path: str) -> Surface | None:
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
        values = {
            name: read_value(name, tp, env[var], f"{var}={env[var]!r}")
            for name, tp in FIELD_TYPES.items()
            if (var := ENV_PREFIX + name.upper()) in env
        }
        return cls(**values)


FIELD_TYPES: dict[str, Any] = field_types(ThinkExtractConfig)
"""Each setting with the type its values must have."""
_CHECKED = twin(ThinkExtractConfig)
_AUTO = ("auto", "auto")
_RESOLVED_MAX = 1024
_DERIVED_MAX = 256
_DERIVED_VALUES_MAX = 64
_V = TypeVar("_V")


def _kept(table: dict[str, _V], name: str, value: _V) -> _V:
    """``value``, kept in ``table`` under ``name`` when the name is short (the client chooses it:
    :data:`~.families.NAME_CHARS`), the table emptied first when full."""
    if len(name) <= NAME_CHARS:
        if len(table) >= _RESOLVED_MAX:
            table.clear()
        table[name] = value
    return value


class _Derived:
    """What is worked out from one configuration: the settings per model, the surface per path, and
    the values of :attr:`ThinkExtractConfig.derived`. Holds the configuration, so that its identity,
    the key, is not reused while the entry lives."""

    __slots__ = ("config", "models", "paths", "values")

    def __init__(self, config: ThinkExtractConfig) -> None:
        self.config = config
        self.models: dict[str, ThinkExtractConfig] = {}
        self.paths: dict[str, Surface | None] = {}
        self.values: dict[str, Any] = {}


_DERIVED: dict[int, _Derived] = {}
"""The values worked out from each configuration, bounded. Keyed by identity, not by value: a
configuration's ``routes`` is a dict (no hash), and a lookup per stream must not hash 31 fields."""


def _derived_of(config: ThinkExtractConfig) -> _Derived:
    entry = _DERIVED.get(id(config))
    if entry is None:
        if len(_DERIVED) >= _DERIVED_MAX:  # a configuration per request (replace) must not pile up
            _DERIVED.clear()
        entry = _DERIVED[id(config)] = _Derived(config)
    return entry


_OVERRIDES = tuple(
    name
    for name in ModelProfile.__struct_fields__
    if name not in ("match", "name", "history") and not name.startswith("add_")
)
_ADDED = {
    "add_tag_pairs": "tag_pairs",
    "add_tool_call_markers": "tool_call_markers",
    "add_content_wrappers": "content_wrappers",
}


def _apply(profile: ModelProfile, config: ThinkExtractConfig, changes: dict[str, Any]) -> None:
    """Put ``profile``'s settings into ``changes`` (made to ``config``): each one it sets replaces
    the value in effect; each ``add_*`` list goes in front of the one in effect."""
    for name in _OVERRIDES:
        value = getattr(profile, name)
        if value is not None:
            changes[name] = value
    for added, name in _ADDED.items():
        first = getattr(profile, added)
        if first:
            then = changes.get(name, getattr(config, name))
            changes[name] = first + tuple(item for item in then if item not in first)


def unknown_variable(var: str) -> str | None:
    """Why ``var`` is wrong, if it is a ``THINK_EXTRACT_*`` name that no setting has; else ``None``."""
    return _unknown(var, ThinkExtractConfig.__struct_fields__)
