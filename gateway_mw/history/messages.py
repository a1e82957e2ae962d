"""Anthropic messages requests: each earlier assistant message's reasoning, from its ``thinking``
blocks, the gateway's own ``redacted_thinking`` (decoded) or the model's tags in its text, given to
the upstream in the form of the plan.

``field`` is one ``thinking`` block in front of the content (several are joined: Ollama keeps only
the last), signed as the gateway signs. Before Anthropic itself the blocks the gateway made are
dropped (a signature it did not make is refused there) and the upstream's own pass untouched; before
any other server a ``redacted_thinking`` the gateway did not make is dropped (it can read none, and
SGLang refuses the block).
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from typing import Any, ClassVar, NamedTuple

import msgspec

from ..controls.fields import ControlFields
from ..controls.text import SPEAKERS, conversation_texts, message_content, role_of
from ..marks import SIGNATURE_PREFIX, decode_redacted, gateway_signature
from ..rawjson import UNREADABLE, Obj, all_objects, encode
from . import splice, tail
from .carry import Asked, Facts, Known, asked_before, kept_role, latest_index, shared_prefix
from .plan import Plan
from .recall import Recall, Recalled, Thread, canonical, canonical_json, recalled, turn_keys
from .text import inline, split_inline, split_written

__all__ = ["Messages", "keys", "prefix", "read", "transform"]

_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_any = msgspec.json.Decoder().decode


class _Block(msgspec.Struct, gc=False):
    type: Any = None


class _Message(msgspec.Struct, gc=False):
    """What is read of every message: its role and its blocks' types (a tool result's bytes skipped)."""

    role: Any = None
    content: str | list[_Block] | None = None


class _Whole(msgspec.Struct, gc=False):
    """A message read whole (an assistant's, or one whose content is no list of blocks)."""

    role: Any = None
    content: Any = None


class _Request(ControlFields, gc=False):
    """The model, the system prompt, the messages, and the reasoning controls' fields (one pass)."""

    system: msgspec.Raw = msgspec.Raw()
    messages: list[msgspec.Raw] | None = None


_decode_request = msgspec.json.Decoder(_Request).decode


class _Part(_Request, gc=False):
    """What is read of a body before or after the messages it shares with an earlier one (the
    model unset when absent there, so that the later one named wins)."""

    model: Any = msgspec.UNSET


_decode_part = msgspec.json.Decoder(_Part).decode
_decode_message = msgspec.json.Decoder(_Message).decode
_decode_whole = msgspec.json.Decoder(_Whole).decode


class Messages:
    """A messages request read once: its model, its system prompt and messages, each as it came and
    as far as it is read (an assistant message whole, another one's role and blocks' types); what
    the record's keys and the transform read of it is kept here, so that nothing is read twice —
    nor, in a later request proven to share its first messages (:meth:`adopt`), read again there."""

    reads_late: ClassVar[bool] = False  # the record's entries read nothing the transform did not

    __slots__ = (
        "_places",
        "_thread",
        "asked",
        "body",
        "contents",
        "controls",
        "model",
        "queries",
        "raws",
        "readings",
        "roles",
        "system",
        "unchanged",
        "verdicts",
    )

    def __init__(
        self, body: bytes, model: str | None, system: msgspec.Raw, raws: list[msgspec.Raw], controls: ControlFields
    ) -> None:
        self.body = body
        self.model = model
        self.controls = controls
        """The body's reasoning control fields, read in the same pass."""
        self.system = system
        self.raws = raws
        # Each message's outline, read when first asked for (:meth:`outlined`): a later request
        # takes that of the messages it shares with an earlier one before anything reads them.
        self.roles: list[Any] = []
        self.queries: list[bool] = []
        """Whether each message is a user message that asks something (not only tool results)."""
        self.contents = Known()
        """The content of each assistant message, decoded."""
        self._thread: Thread | None = None
        self._places: splice.Places | None = None
        self.readings = Facts()
        """What each assistant message carries (:class:`_Reading`), under the server and settings read for."""
        self.verdicts = Facts()
        """What the transform made of each assistant message that needed no record, under its plan."""
        self.unchanged: tuple[Plan, int, int] | None = None
        """The transform left the first ``n`` messages as they came, nothing read of the record, under
        its plan, the latest query at ``last_query``: ``(plan, n, last_query)``."""
        self.asked: Asked | None = None
        """Which assistant messages need the record (:data:`~.carry.Asked`)."""

    def outlined(self) -> Messages:
        """This reading, each message's role (and an assistant's content) read: those not read yet."""
        for i in range(len(self.roles), len(self.raws)):
            role, query, content = _outline(self.raws[i])
            self.roles.append(role)
            self.queries.append(query)
            if role == "assistant":
                self.contents[i] = content
        return self

    def shared(self, earlier: object) -> int:
        """How many first messages this request is proven to share with ``earlier`` (a reading of the
        same surface, model and system prompt): equal values, byte for byte."""
        if not isinstance(earlier, Messages) or earlier.model != self.model or earlier.system != self.system:
            return 0
        return shared_prefix(earlier.raws, self.raws)

    def continued_by(self, body: bytes, most: int | None = None) -> Messages | None:
        """A reading of ``body`` when it holds this one's messages byte for byte from its start, or
        all but the last (Claude Code moves its cache marker from it to the new last one): only the
        bytes before and after them are decoded (:mod:`.tail`), and what this one learned of them is
        taken; ``None`` when it does not, or those bytes are over ``most`` (it is then read whole)."""
        places, raws = self.places(), self.raws
        first = places.element(0, raws[0])
        for count in range(len(raws), max(len(raws) - 2, 0), -1):
            last = places.element(count - 1, raws[count - 1])
            decoded = tail.decoded(body, places, first, last, "messages", most, _decode_part)
            if decoded is not None:
                break
        else:
            return None
        found, head, after = decoded
        new = after.messages
        if not new or bytes(new[0]) != tail.MARKER or not all_objects(new):  # its list named again
            return None
        taken = raws[:count] + new[1:]
        controls = _Request(*tail.fields(head, after))
        controls.messages = taken
        model = controls.model if isinstance(controls.model, str) else None
        if model != self.model or controls.system != self.system:
            return None
        read = Messages(body, model, controls.system, taken, controls)
        read._places = found.places
        read._places.known.update({at: span for at, span in places.known.items() if at < count})
        read.adopt(self, count)
        return read

    def adopt(self, earlier: object, shared: int) -> None:
        """Take what ``earlier`` learned of the first ``shared`` messages (:meth:`shared`): decoded
        values and new bytes, none of its body."""
        assert isinstance(earlier, Messages)
        taken = min(shared, len(earlier.roles))
        self.roles = earlier.roles[:taken]
        self.queries = earlier.queries[:taken]
        self.contents = earlier.contents.upto(taken)  # all of it, in an agent's next request
        self.readings.carried_from(earlier.readings, shared)
        self.verdicts.carried_from(earlier.verdicts, shared)
        if earlier.unchanged is not None:  # as far as they share (Claude Code moves its cache marker)
            plan, left, last_query = earlier.unchanged
            self.unchanged = (plan, min(left, shared), last_query)
        if earlier.asked is not None:
            how, asked, wanted = earlier.asked
            self.asked = (how, min(asked, shared), wanted if asked <= shared else [i for i in wanted if i < shared])
        if self._thread is None:  # the same model and system prompt (:meth:`shared`): its head
            self._thread = earlier.thread().following(self.raws)
        self.thread().go_on_from(earlier.thread(), shared)

    def places(self) -> splice.Places:
        """Where its messages stand in its body, as far as found (:mod:`.splice`)."""
        if self._places is None:
            self._places = splice.Places(self.body)
        return self._places

    @property
    def count(self) -> int:
        return len(self.raws)

    def held(self) -> int:
        """The bytes what was decoded of the messages holds (each assistant message's content, what
        the readings learned and the transform made), besides the body (a role is kept short,
        :func:`~.carry.kept_role`)."""
        retained = 0 if self._places is None else self._places.retained  # an earlier body its values view
        asked = 0 if self.asked is None else sys.getsizeof(self.asked[2])  # (small integers: shared)
        return self.contents.held() + self.readings.held() + self.verdicts.held() + retained + asked

    def texts(self) -> list[msgspec.Raw]:
        """The texts a text switch may end, latest first: the conversation's, then the system prompt."""
        roles, raws = self.outlined().roles, self.raws
        texts = conversation_texts(latest_index(roles, SPEAKERS), roles[0], lambda at: message_content(raws[at]))
        return [*texts, self.system] if self.system else texts

    def thread(self) -> Thread:
        """The digests of the conversation's prefixes, the system prompt its head."""
        if self._thread is None:
            self._thread = _thread(self.model, self.system, self.raws)
        return self._thread

    def assistant_readings(self, plan: Plan) -> dict[int, _Reading | None]:
        """What each assistant message carries, by index: each read once per request (or taken from
        an earlier request's reading)."""
        known: dict[int, _Reading | None] = self.readings.under((plan.server, plan.config))
        contents = self.outlined().contents
        if len(known) < len(contents):
            for at, content in contents.items():
                if at not in known:
                    known[at] = _reading(content, plan)
        return known


def _outline(raw: msgspec.Raw) -> tuple[Any, bool, Any]:
    """A message's role, whether it asks something, and an assistant's content (decoded)."""
    try:
        lean = _decode_message(raw)
    except msgspec.ValidationError:  # blocks that are not all objects, say: read whole
        try:
            whole = _decode_whole(raw)
        except msgspec.ValidationError:  # a number out of a double's range: its role alone
            whole = _Whole(role_of(raw))
        return kept_role(whole.role), whole.role == "user" and _is_query(whole.content), whole.content
    query = lean.role == "user" and (
        not isinstance(lean.content, list) or not lean.content or any(b.type != "tool_result" for b in lean.content)
    )
    if lean.role != "assistant":
        return kept_role(lean.role), query, None
    try:
        return "assistant", query, _decode_whole(raw).content
    except msgspec.ValidationError:  # a number out of a double's range: its content left as it came
        return "assistant", query, None


def read(body: bytes) -> Messages | None:
    """The request's messages (``None``: none, or not a messages request: not JSON, or a message that
    is no object)."""
    try:
        request = _decode_request(body)
    except UNREADABLE:
        return None
    raws = request.messages
    if not raws or not all_objects(raws):
        return None
    model = request.model if isinstance(request.model, str) else None
    return Messages(body, model, request.system, raws, request)


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_ids(content: Any) -> list[str]:
    return [b["id"] for b in _blocks(content) if b.get("type") == "tool_use" and isinstance(b.get("id"), str)]


def _is_query(content: Any) -> bool:
    blocks = _blocks(content)
    return not blocks or any(b.get("type") != "tool_result" for b in blocks)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in _blocks(content) if b.get("type") == "text")


def prefix(request: Messages | bytes) -> bytes | None:
    """The digest of the request's whole conversation: what its answer follows (from a body, read
    for that alone: its system prompt and messages as raw values; ``None``: no conversation in it)."""
    if isinstance(request, bytes):
        try:
            lean = _decode_request(request)
        except UNREADABLE:
            return None
        if not lean.messages or not all_objects(lean.messages):
            return None  # what a read of the messages refuses
        model = lean.model if isinstance(lean.model, str) else None
        return _thread(model, lean.system, lean.messages).upto(len(lean.messages))
    return request.thread().upto(len(request.raws))


def _thread(model: str | None, system: msgspec.Raw, raws: list[msgspec.Raw]) -> Thread:
    head = canonical({"system": system}) if bytes(system) else b""
    return Thread(model, head, raws, lambda raw: canonical_json(raw))


def keys(request: Messages, turns: int, plan: Plan | None = None) -> list[str]:
    """The record keys of the latest ``turns`` assistant messages that need the record (with a
    ``plan``: those that carry no reasoning of their own)."""
    if plan is not None and plan.form == "pass":
        return []
    contents = request.outlined().contents
    if plan is None:
        wanted = list(contents)
    else:
        readings = request.assistant_readings(plan)
        how = (plan.server, plan.config)  # what the readings are read under
        start, wanted = asked_before(request.asked, how)
        indices = list(contents)  # in index order: those from ``start`` on read, the rest known
        wanted += [i for i in indices[bisect_left(indices, start) :] if not _carries_reasoning(readings[i])]
        request.asked = (how, len(request.raws), wanted)
    out: list[str] = []
    for i in wanted[-turns:]:
        content = contents[i]
        ids = _tool_ids(content)
        out += turn_keys(request.thread().upto(i), ids, "" if ids else _text(content))
    return out


def _carries_reasoning(reading: _Reading | None) -> bool:
    return reading is None or bool(reading.reasoning)


def transform(request: Messages, plan: Plan, recall: Recall) -> bytes | None:
    if plan.form == "pass":
        return None
    readings = request.assistant_readings(plan)
    queries = request.queries  # the latest that asks something, looked for from the end in C
    last_query = len(queries) - 1 - queries[::-1].index(True) if True in queries else -1
    verdicts = request.verdicts.under(plan)
    changed: dict[int, bytes] = {}
    first = _unchanged_before(request, plan, recall, last_query)
    for i, content in request.contents.since(first):
        reading = readings[i]
        if reading is None:
            continue
        asks = bool(recall) and not reading.reasoning  # the record holds reasoning for a turn that carries none
        ids = _tool_ids(content) if asks or plan.scope == "tool_turns" else []
        if plan.scope == "current_turn":
            in_scope = i > last_query
        elif plan.scope == "tool_turns":
            in_scope = bool(ids)
        else:
            in_scope = True
        found = None
        if asks:
            found = recalled(recall, request.thread().upto(i), ids, "" if ids else _text(content), plan.config)
        if found is not None:
            new = _message(request.raws[i], content, reading, plan, in_scope, found)
        else:  # what it makes depends on the message's bytes and its scope: learned once
            known = verdicts.get(i)
            if known is None or known[0] != in_scope:
                known = verdicts[i] = (in_scope, _message(request.raws[i], content, reading, plan, in_scope, None))
            new = known[1]
        if new is not None:
            changed[i] = new
    if not changed:
        if not recall:
            request.unchanged = (plan, len(request.raws), last_query)
        return None
    # Only the messages that changed are encoded; every other byte is copied as it came.
    return splice.elements_written(request.places(), "messages", request.raws, changed)


def _unchanged_before(request: Messages, plan: Plan, recall: Recall, last_query: int) -> int:
    """How many first messages the transform leaves as they came, known from the earlier request
    this one goes on from (:attr:`Messages.unchanged`): under the same plan, nothing read of the
    record, each message in the same scope (a later query moves the current turn)."""
    unchanged = request.unchanged
    request.unchanged = None  # until this transform says again
    if unchanged is None or recall or unchanged[0] != plan:
        return 0
    if plan.scope == "current_turn" and unchanged[2] != last_query:
        return 0
    return unchanged[1]


class _Reading(NamedTuple):
    """What an assistant message's content carries: the reasoning of its thinking blocks, whether
    it holds one this side answers for, the signature of the first, the reasoning in the model's
    tags, and the content without all of it."""

    texts: list[str]
    carried: bool
    signature: str
    tagged: str
    rest: list[Any]

    @property
    def reasoning(self) -> str:
        return "\n".join(self.texts) or self.tagged


def _reading(content: Any, plan: Plan) -> _Reading | None:
    """``None``: a content that is neither text nor blocks (left as it came)."""
    anthropic = plan.server == "anthropic"
    texts: list[str] = []
    carried = False  # a thinking or redacted_thinking block this request side answers for
    signature = ""
    tagged = ""
    rest: list[Any] = []  # the content without the reasoning it carries, in order
    if isinstance(content, str):
        tagged, answer = split_inline(content, plan.config)
        rest = [answer] if answer or not tagged else []
    elif isinstance(content, list):
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "thinking":
                sig = block.get("signature")
                if anthropic and not (isinstance(sig, str) and sig.startswith(SIGNATURE_PREFIX)):
                    rest.append(block)  # Anthropic's own: it checks it, nothing to do here
                    continue
                carried = True
                if isinstance(block.get("thinking"), str) and block["thinking"]:
                    texts.append(block["thinking"])
                    signature = signature or (sig if isinstance(sig, str) else "")
            elif kind == "redacted_thinking":
                if anthropic:
                    rest.append(block)  # Anthropic's own ciphertext
                    continue
                carried = True
                data = block.get("data")
                text = decode_redacted(data) if isinstance(data, str) else None
                if text:
                    texts.append(text)
            elif kind == "text" and isinstance(block.get("text"), str):
                found_here, answer = split_inline(block["text"], plan.config)
                tagged = tagged or found_here
                rest.append({**block, "text": answer} if found_here else block)
            else:
                rest.append(block)
    else:
        return None
    return _Reading(texts, carried, signature, tagged, rest)


def _message(
    raw: msgspec.Raw, content: Any, reading: _Reading, plan: Plan, in_scope: bool, found: Recalled | None
) -> bytes | None:
    anthropic = plan.server == "anthropic"
    carried, signature, tagged, rest = reading.carried, reading.signature, reading.tagged, reading.rest
    reasoning = reading.reasoning
    original = None
    if not reasoning and found is not None:
        reasoning, original = found.reasoning, found.original
    form = plan.form if reasoning and in_scope else "strip"
    if form == "field" and anthropic:
        form = "strip"  # a thinking block it did not sign would be refused
    if form == "inline" and reasoning == tagged and not carried:
        return None  # written inline already, as the model wrote it
    if form == "field":
        if not (signature.startswith(SIGNATURE_PREFIX) and signature == gateway_signature(reasoning)):
            signature = gateway_signature(reasoning)
        new_content: Any = [{"type": "thinking", "thinking": reasoning, "signature": signature}, *_as_blocks(rest)]
    elif form == "inline":
        new_content = _inline(rest, reasoning, plan, original)
    else:
        new_content = rest if isinstance(content, list) else ("".join(r for r in rest if isinstance(r, str)))
    if new_content == content:
        return None
    try:
        msg: Obj = _decode_obj(raw)
    except UNREADABLE:
        return None
    msg["content"] = new_content if new_content != [] else ""
    out: bytes = encode(msg)
    return out


def _as_blocks(rest: list[Any]) -> list[Any]:
    return [{"type": "text", "text": r} if isinstance(r, str) else r for r in rest if r != ""]


def _inline(rest: list[Any], reasoning: str, plan: Plan, original: str | None) -> Any:
    if len(rest) <= 1 and all(isinstance(r, str) for r in rest):
        answer = rest[0] if rest else ""
        if original is not None and split_written(original, plan.config)[1] == answer:
            return original
        return inline(reasoning, answer, plan.config)
    blocks = _as_blocks(rest)
    for at, block in enumerate(blocks):
        if isinstance(block, dict) and block.get("type") == "text":
            blocks[at] = {**block, "text": inline(reasoning, block.get("text", ""), plan.config)}
            return blocks
    return [{"type": "text", "text": inline(reasoning, "", plan.config)}, *blocks]
