"""What a writer makes of one request: the top-level edits, what they say for the debug line, and
whether the intent reached the model as asked, as the nearest the server accepts, or not at all."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .fields import ControlFields
from .intent import EFFORTS, Effort, Intent, ModelInfo

__all__ = ["Out", "Outcome", "nearest_effort", "token_count"]

Outcome = Literal["unchanged", "applied", "nearest", "unsupported"]

_decode_any = msgspec.json.Decoder().decode
_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_encode = msgspec.json.Encoder().encode
_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError)

_GIVE_WAY = ("reasoning_effort", "think", "thinking")
"""The client's own control fields that an operator's pinned intent removes (written again where
the server reads the operator's); ``reasoning`` and ``output_config`` lose only their control keys."""
_CONTROL_KEYS = {"reasoning": ("effort", "max_tokens", "enabled"), "output_config": ("effort",)}


def nearest_effort(effort: Effort, ladder: tuple[Effort, ...]) -> Effort:
    """``effort`` if ``ladder`` has it, else the ladder's closest step (a tie goes up: ``xhigh`` is
    ``max`` where the ladder has it, as Ollama itself maps it)."""
    if effort in ladder:
        return effort
    at = EFFORTS.index(effort)
    return min(ladder, key=lambda step: (abs(EFFORTS.index(step) - at), -EFFORTS.index(step)))


def _shown(value: Any) -> str:
    return _encode(value).decode()


class Out:
    """The edits being made to one body, over its client's ``fields``."""

    __slots__ = (
        "by_gateway", "edits", "fields", "gateway_budget", "info", "intent", "missed", "override", "pinned",
        "server_budget", "written",
    )  # fmt: skip

    def __init__(
        self,
        intent: Intent,
        fields: ControlFields,
        info: ModelInfo,
        override: bool,
        server_budget: bool = True,
        gateway_budget: bool = False,
        pinned: bool = False,
    ) -> None:
        self.intent = intent
        self.fields = fields
        self.info = info
        self.override = override
        """The operator's pinned intent replaced the client's: the client's control fields give way."""
        self.edits: dict[str, bytes | None] = {}
        self.written: list[str] = []
        self.missed: Outcome | None = None
        """``nearest`` or ``unsupported`` once a writer says so (the worse one stays)."""
        self.server_budget = server_budget
        """A budget may go in the server's own budget field (``reasoning_budget_enforcement``)."""
        self.gateway_budget = gateway_budget
        """A budget the server has no field for (or may not be given) is the gateway's to enforce."""
        self.pinned = pinned
        """The operator's intent wins over the client's (``reasoning_control_pinned``)."""
        self.by_gateway = False
        """The gateway enforces the budget: a writer said so through :meth:`budget`."""
        if override:
            self._give_way()

    # -- what the writers say -----------------------------------------------------------------

    def nearest(self) -> None:
        if self.missed is None:
            self.missed = "nearest"

    def unsupported(self) -> None:
        self.missed = "unsupported"

    def budget(self, field: str | None, budget: int) -> None:
        """A budget: in the server's own ``field`` where it has one and may be given it, else the
        gateway's where it can enforce one, else thinking on (the nearest)."""
        if field is not None and self.server_budget:
            own = token_count(self.current(field))
            if own is not None and self.intent.form == "operator":
                # The client's own budget, in the server's field: the operator's default leaves it,
                # and a pinned one is a ceiling (as of two budgets read from the client's forms).
                budget = min(own, budget) if self.pinned else own
            self.put(field, budget)
        elif self.gateway_budget:
            self.by_gateway = True
            self.written.append(f"budget {budget} enforced by the gateway")
        else:
            self.nearest()

    @property
    def outcome(self) -> Outcome:
        return self.missed or "applied"

    # -- the edits ----------------------------------------------------------------------------

    def current(self, name: str) -> msgspec.Raw | None:
        """A top-level member as the body (with the edits made so far) has it; ``None``: absent."""
        if name in self.edits:
            value = self.edits[name]
            return None if value is None else msgspec.Raw(value)
        raw: msgspec.Raw | None = getattr(self.fields, name, None)
        return raw if raw else None

    def put(self, name: str, value: Any) -> None:
        """The top-level member ``name`` set to ``value`` (nothing changes when it holds it already)."""
        if _same(_decoded(self.current(name)), value):
            return
        self.edits[name] = _encode(value)
        self.written.append(f"{name}={_shown(value)}")

    def remove(self, name: str, why: str = "removed") -> None:
        if self.current(name) is not None:
            self.edits[name] = None
            self.written.append(f"{name} {why}")

    def value_at(self, at: tuple[str, ...]) -> Any:
        """The value at a top-level member, or at a key of one (``None``: absent, or ``null``)."""
        value = _decoded(self.current(at[0]))
        for key in at[1:]:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def remove_at(self, at: tuple[str, ...], why: str) -> None:
        """The top-level member ``at[0]`` removed, or its key ``at[1]``."""
        if len(at) == 1:
            self.remove(at[0], why)
            return
        name, key = at
        raw = self.current(name)
        try:
            obj = _decode_obj(raw) if raw is not None else None
        except _UNREADABLE:
            obj = None
        if obj is not None and obj.pop(key, None) is not None:
            self.edits[name] = _encode(obj)
            self.written.append(f"{name}.{key} {why}")

    def put_in(self, name: str, values: dict[str, Any], client_wins: bool = False) -> bool:
        """``values`` merged into the object member ``name`` (made when absent); with ``client_wins``,
        a key the client set stays its own (unless the operator's pinned intent replaced the
        client's). ``False`` when the member holds no object (the server refuses it as it came)."""
        raw = self.current(name)
        obj: dict[str, Any] | None
        if raw is None or bytes(raw) == b"null":
            obj = {}
        else:
            try:
                obj = _decode_obj(raw)
            except _UNREADABLE:
                obj = None
        if obj is None:
            return False
        changed = []
        for key, value in values.items():
            if key in obj and ((client_wins and not self.override) or _same(_decoded(obj[key]), value)):
                continue
            obj[key] = value
            changed.append(f"{name}.{key}={_shown(value)}")
        if changed:
            self.edits[name] = _encode(obj)
            self.written.extend(changed)
        return True

    def template_kwargs(self, values: dict[str, Any]) -> None:
        """``values`` into ``chat_template_kwargs``, the client's own keys kept."""
        if not self.put_in("chat_template_kwargs", values, client_wins=True):
            self.unsupported()

    def _give_way(self) -> None:
        for name in _GIVE_WAY:
            if self.current(name) is not None:
                self.edits[name] = None
        for name, keys in _CONTROL_KEYS.items():
            raw = self.current(name)
            if raw is None:
                continue
            try:
                obj = _decode_obj(raw)
            except _UNREADABLE:
                continue
            kept = {key: value for key, value in obj.items() if key not in keys}
            if len(kept) != len(obj):
                self.edits[name] = _encode(kept) if kept else None
        if self.edits:
            self.written.append("the client's control removed")


def token_count(raw: msgspec.Raw | None) -> int | None:
    """A member's value as a token count the servers take; ``None`` when it is none (or absent)."""
    return _count(_decoded(raw))


def _count(value: Any) -> int | None:
    """A token count as the servers take one: a non-negative integer (not a bool)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _decoded(raw: msgspec.Raw | None) -> Any:
    if raw is None:
        return None
    try:
        return _decode_any(raw)
    except _UNREADABLE:
        return None


def _same(held: Any, value: Any) -> bool:
    """Whether a member already holds ``value`` (``0`` is not ``false``, as the servers' types see it)."""
    return type(held) is type(value) and held == value
