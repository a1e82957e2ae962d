"""The way back in: the reasoning of the earlier turns a client sends back, given to the upstream in
the place its server reads it (sans-I/O; the middleware hands the handler the rewritten body).

A body is read once per request (:class:`Request`: the surface's lean decode) and that reading is
shared: the plan for the request's model, :func:`record_keys` (what the reasoning record is asked
for first), the surface's transform, ``(read, plan, recall) -> bytes | None`` (``None``: forward
the body as it came), and after the response :func:`record_entries`. Each surface's pieces come
from its :class:`RequestSide` (its definition, which the caller looks up: this package knows no
surface by name).
"""

from __future__ import annotations

from types import EllipsisType
from typing import Any

import msgspec

from .. import surrogates
from ..channels import Said
from ..config import ThinkExtractConfig
from ..controls.fields import ControlFields
from .carry import CARRIED_BYTES, READING_BYTES, REQUEST_BYTES, CarriedStates, decoded_bytes
from .plan import Plan, Server, plan_for
from .recall import MAX_RECALL_KEYS, NOTHING, Recall, Recalled, after_key, answer_key, call_key, item_key
from .side import Reading, RequestSide
from .text import may_hold_reasoning, split_written

__all__ = [
    "MAX_RECALL_KEYS",
    "NOTHING",
    "Plan",
    "Reading",
    "Recall",
    "Recalled",
    "Request",
    "RequestSide",
    "plan_for",
    "record_entries",
    "record_keys",
    "request_model",
    "server_of",
    "transform_request",
]


class _Model(msgspec.Struct, gc=False):
    model: object = None


_decode_model = msgspec.json.Decoder(_Model).decode


def request_model(body: bytes) -> str | None:
    """The ``model`` a request names (``None``: none, or not JSON)."""
    try:
        model = _decode_model(body).model
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return model if isinstance(model, str) else None


def server_of(config: ThinkExtractConfig) -> Server:
    """The server to write for: ``auto`` (nothing asked the upstream) writes for any (``generic``)."""
    server = config.upstream_server
    return "generic" if server == "auto" else server


def _continuing(
    side: RequestSide, body: bytes, states: CarriedStates, scope: bytes, most: int | None = None
) -> tuple[Any, tuple[object, Any]] | None:
    """A reading of ``body`` made from the scope's latest kept reading it continues byte for byte
    (its messages, then more: read without them), with that kept reading; ``None``: none it does
    (``most``: none that leaves more than about this many bytes of it to read, those it adds and
    those before and after its list)."""
    for kept in reversed(states.readings.of(scope)):
        earlier_side, earlier = kept
        if earlier_side is side and (most is None or len(body) - len(earlier.body) <= most):
            read = earlier.continued_by(body, most)
            if read is not None:
                return read, kept
    return None


class Request:
    """One request body, read once (a lean decode: what the request side places, every other value
    left as its raw bytes) for all it is asked: the plan for its model, the record's keys, the
    transform and, after the response, the record's entries."""

    __slots__ = ("_carried", "_kept", "_plan", "body", "fresh", "read", "side")

    def __init__(
        self,
        side: RequestSide,
        body: bytes,
        carry: tuple[CarriedStates, bytes] | None = None,
        *,
        continued: tuple[Any, tuple[object, Any]] | None = None,
    ) -> None:
        """``body`` read; with ``carry``, from the scope's kept reading it continues, if any
        (``continued``: that reading, made already, :meth:`continuing`)."""
        self.side = side
        self.body = body
        self._carried: tuple[CarriedStates, bytes, object] | None = None
        self._kept: tuple[CarriedStates, bytes, tuple[object, Any], int] | None = None
        """Where this reading is kept, as what, and the bytes of its rewritten body (:meth:`recount`)."""
        self._plan: tuple[ThinkExtractConfig, Plan] | None = None
        if continued is None and carry is not None and len(body) >= CARRIED_BYTES:
            continued = _continuing(side, body, *carry)  # an agent's next request: only its new bytes read
        self.read = side.read_history(body) if continued is None else continued[0]
        """``None``: no history in it (not JSON, no messages…): it goes as it came."""
        self.fresh = (len(body), 0 if self.read is None else self.read.count)
        """The bytes and the messages (or items) read of this body's own: all of them, but in an
        agent's next request (it continues a kept reading) only those after the ones it shares."""
        if continued is not None and self.read is not None:
            earlier = continued[1][1]
            self.fresh = (max(0, len(body) - len(earlier.body)), max(0, self.read.count - earlier.count))
        if carry is not None and self.read is not None and len(body) >= CARRIED_BYTES:
            # What the scope's earlier request learned of the messages it shares is taken, and this
            # one's reading (its digest's last states too) kept for the next.
            states, scope = carry
            self.read.thread().keep_states()
            self._carried = (states, scope, self._adopt(states, scope) if continued is None else continued[1])

    @classmethod
    def continuing(
        cls, side: RequestSide, body: bytes, carry: tuple[CarriedStates, bytes], most: int
    ) -> Request | None:
        """``body`` read from the scope's kept reading it continues (an agent's next request: only
        the bytes before and after the messages they share read, about ``most`` of them at most);
        ``None``: it continues none (then read it whole)."""
        if len(body) < CARRIED_BYTES:
            return None
        continued = _continuing(side, body, *carry, most)
        return None if continued is None else cls(side, body, carry, continued=continued)

    def _size(self, extra: int, bound: int) -> int:
        """The bytes a kept reading of this request holds: its body, ``extra``, its messages' readings
        and what they decoded (not measured when the rest is over ``bound`` already: such a reading
        is not kept, and measuring a long history's values costs a good part of reading it)."""
        assert self.read is not None
        size = len(self.body) + REQUEST_BYTES + READING_BYTES * self.count + extra
        size += decoded_bytes((self.read.controls.model,)) + self.read.thread().held()
        return size if size > bound else size + self.read.held()

    def _adopt(self, states: CarriedStates, scope: bytes) -> object:
        """Take what the scope's earlier request that shares most of this one learned of the messages
        they share; that request's kept reading when this one goes on from it (all its messages, or
        all but the last, whose cache marker moved: replaced by this one's, :meth:`keep`). One that
        shares only its first messages (a subagent begun as its agent was) stays kept beside it."""
        read = self.read
        assert read is not None
        best: tuple[int, tuple[object, Any] | None] = (0, None)
        for kept in states.readings.of(scope):
            side, earlier = kept
            if side is self.side:
                shared = read.shared(earlier)
                if shared > best[0]:
                    best = (shared, kept)
        shared, found = best
        if found is None:
            return None
        read.adopt(found[1], shared)
        return found if shared >= found[1].count - 1 else None

    def keep(self, rewritten: bytes | None = None) -> None:
        """Keep this request's reading for the scope's next request (once the transform is done with
        it: a later request takes what it learned, and nothing learns more of it after). ``rewritten``:
        the body the transform made, whose changed messages the reading holds too (counted at their
        length once more: the encoder's bytes hold up to half as much again as their length)."""
        if self._carried is not None:
            assert self.read is not None  # (carried only when read)
            states, scope, replaced = self._carried
            kept, extra = (self.side, self.read), 0 if rewritten is None else len(rewritten)
            size = self._size(extra, states.readings.max_bytes)
            states.readings.put(scope, kept, size, replaced)
            self._carried = None
            if size <= states.readings.max_bytes and self.read.reads_late:  # else counted for good
                self._kept = (states, scope, kept, extra)

    def recount(self) -> None:
        """Count the kept reading again, once the record's entries of its answer read more of it (a
        Responses history whose plan passed it on is read only then; a reading whose entries can
        read nothing more than it had when kept says so, :attr:`~.side.Reading.reads_late`)."""
        if self._kept is not None:
            states, scope, kept, extra = self._kept
            states.readings.recount(scope, kept, self._size(extra, states.readings.max_bytes))

    @property
    def model(self) -> str | None:
        return None if self.read is None else self.read.model

    @property
    def count(self) -> int:
        """How many messages (or items) the body's history holds (0: none read)."""
        return 0 if self.read is None else self.read.count

    @property
    def unhashed(self) -> int:
        """How many of the messages it shares with a kept reading its conversation's digest still
        hashes: those past the last state that reading kept (an answer that moved no reasoning left
        the conversation undigested; its keys, as far as its latest turn)."""
        fresh = self.fresh[1]
        if self.read is None or fresh == self.count:
            return 0
        return min(self.count - fresh, max(0, self.read.thread().unhashed - fresh))

    @property
    def controls(self) -> ControlFields | None:
        """The body's reasoning control fields, read in the same pass (``None``: not read)."""
        return None if self.read is None else self.read.controls

    def texts(self) -> list[Any] | None:
        """The texts a reasoning control's text switch may end (``None``: not read)."""
        return None if self.read is None else self.read.texts()

    @property
    def blobs(self) -> bool:
        """Whether the client asks for reasoning it can send back in ``encrypted_content``."""
        return self.side.asks_for_blobs(self.read, self.body)

    def plan(self, config: ThinkExtractConfig) -> Plan:
        """The plan for the request's model under ``config`` (decided once: the keys and the
        transform share it)."""
        if self._plan is None or self._plan[0] is not config:
            plan = plan_for(config, self.model, server_of(config), self.side.unknown_family)
            self._plan = (config, plan)
        return self._plan[1]


def record_keys(side: RequestSide, body: bytes | Request, config: ThinkExtractConfig | None = None) -> list[str]:
    """The keys the reasoning record is asked for before :func:`transform_request` runs: those of
    the latest turns, at most :data:`MAX_RECALL_KEYS`. With ``config``, only those of turns whose
    reasoning the transform would take from the record (a turn that carries its own needs none)."""
    request = body if isinstance(body, Request) else Request(side, body)
    if request.read is None:
        return []
    plan = None if config is None else request.plan(config)
    return side.history_keys(request.read, MAX_RECALL_KEYS, plan)[-MAX_RECALL_KEYS:]


def record_entries(
    side: RequestSide,
    request: bytes | Request,
    said: list[Said],
    config: ThinkExtractConfig,
    model: str | EllipsisType | None = ...,
) -> dict[str, Recalled]:
    """What the reasoning record keeps of a response to ``request``: for each answer that moved
    reasoning, its reasoning and the model's text, under every key a later request may name it by,
    each in the conversation it follows (its tool calls' ids, the ids of its items, what it said —
    its text and its calls' names and arguments; and, for a response of one answer, the
    conversation itself). ``model``: the request's, when it was read already (:attr:`Request.model`):
    the body is then read again only when an answer moved reasoning."""
    if model is ...:
        if isinstance(request, bytes):
            request = Request(side, request)
        model = request.model
    cfg = config.for_model(model)
    moved: list[tuple[Said, str, str]] = []
    for answer in said:
        if not answer.original or not may_hold_reasoning(answer.original, cfg):
            continue
        reasoning, content = split_written(answer.original, cfg)
        if reasoning:
            moved.append((answer, reasoning, content))
    if not moved:
        return {}
    # The conversation's digest: from the request's reading, or from the body read for it alone.
    if isinstance(request, Request):
        prefix = None if request.read is None else side.answer_prefix(request.read)
        request.recount()
    else:
        prefix = side.answer_prefix(request)
    if prefix is None:
        return {}
    out: dict[str, Recalled] = {}
    for answer, reasoning, content in moved:
        entry = Recalled(reasoning=reasoning, original=answer.original, calls=answer.call_ids)
        keys = [call_key(prefix, c) for c in answer.call_ids] + [item_key(i, prefix) for i in answer.item_ids]
        if not answer.call_ids or answer.calls:  # what it said: found by a client that keeps no ids
            keys.append(answer_key(prefix, content, answer.calls))
        if len(said) == 1:
            keys.append(after_key(prefix))
        for key in keys:
            out[key] = entry
    return out


def transform_request(
    side: RequestSide, body: bytes | Request, config: ThinkExtractConfig, recall: Recall = NOTHING
) -> bytes | None:
    """``body`` with the reasoning of its earlier turns where the upstream reads it; ``None`` when
    nothing changes."""
    request = body if isinstance(body, Request) else Request(side, body)
    if request.read is not None:  # read: no lone surrogate escape in it (the decoder refuses one anywhere)
        return side.transform_history(request.read, request.plan(config), recall)
    # Not read: maybe a lone surrogate escape kept a string from being read (no decoder takes one).
    masked = surrogates.mask(request.body)
    if masked is None:
        return None
    again = Request(side, masked)
    if again.read is None:
        return None
    new = side.transform_history(again.read, again.plan(config), recall)
    return None if new is None else surrogates.lifted(new, masked)
