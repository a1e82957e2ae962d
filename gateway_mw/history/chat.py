"""Chat completions requests: each earlier assistant message's reasoning, from whatever carrier the
client used, given to the upstream in the form of the plan.

Carriers read, in this order (the first that holds text wins; the others are dropped): the
``reasoning_content`` and ``reasoning`` fields, ``reasoning_details`` (its text or summary entries;
an encrypted entry is a blob no self-hosted server can use), ``{"type":"thinking"}`` content parts,
the model's own tags in the content, and the reasoning record.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import msgspec

from ..config import ThinkExtractConfig
from ..controls.fields import ControlFields
from ..controls.text import SPEAKERS, conversation_texts
from ..rawjson import UNREADABLE, Obj, encode
from . import splice, tail
from .carry import Asked, Facts, asked_before, kept_role, latest_index, shared_prefix
from .chat_message import Reading, call_ids, call_names, calls_tools, content_of, read_message, text_of
from .plan import CHAT_FIELDS, Plan
from .recall import Recall, Recalled, Thread, canonical, recalled, turn_keys
from .text import inline, split_written

__all__ = ["Chat", "keys", "keys_of", "prefix", "read", "transform", "transform_messages"]

_CARRIERS = ("reasoning_content", "reasoning", "reasoning_details")

_COUNTED_KEYS = 4
"""The members of a message its share of a kept reading (:data:`~.carry.READING_BYTES`) counts."""

_KEY_BYTES = 160
"""What each member beyond those holds in a kept reading: its key, its raw value, its place in the dict."""
_decode_any = msgspec.json.Decoder().decode


_ASSISTANT = b'"assistant"'


def _role_of(fields: Obj) -> Any:
    raw = fields.get("role")
    spelled = b"" if raw is None else bytes(raw)
    if not spelled:
        return None
    if spelled == _ASSISTANT:  # as nearly every client spells it: known without a decode
        return "assistant"
    try:
        return kept_role(_decode_any(spelled))
    except UNREADABLE:  # a number out of a double's range: no role (as the controls read it)
        return None


class _Request(ControlFields, gc=False):
    """The model, the messages, and the reasoning controls' fields (read in the same pass)."""

    messages: list[dict[str, msgspec.Raw]] | None = None


_decode_request = msgspec.json.Decoder(_Request).decode


class _Part(_Request, gc=False):
    """What is read of a body before or after the messages it shares with an earlier one (the
    model unset when absent there, so that the later one named wins)."""

    model: Any = msgspec.UNSET


_decode_part = msgspec.json.Decoder(_Part).decode
_CONTROLS = tuple(name for name in _Request.__struct_fields__ if name != "messages")
"""What the bytes after the shared messages are read after: a list of that one message, whose
other elements then are the new messages."""


class _Outline(ControlFields, gc=False):
    messages: list[msgspec.Raw] | None = None


_decode_outline = msgspec.json.Decoder(_Outline).decode
_decode_fields = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode

_ONE_PASS_BYTES = 1 << 20
"""A larger body is read in two passes (its outline, then each message), so that no one decoder call
holds Python's lock for long: a large body is read in a worker thread, and the event loop runs
between two calls (one pass over 60 MiB holds it for about 300 ms, the outline for about 75)."""


class Chat:
    """A chat request (or Ollama ``/api/chat``) read once: its model and messages, each in its fields
    as they came (one decoder pass over the body); what the record's keys, the transform and the
    record's entries read of it is kept here, so that nothing is read twice — nor, in a later
    request proven to share its first messages (:meth:`adopt`), read again there."""

    reads_late: ClassVar[bool] = False  # the record's entries read nothing the transform did not

    __slots__ = (
        "_members",
        "_places",
        "_thread",
        "asked",
        "body",
        "controls",
        "fields",
        "model",
        "readings",
        "roles",
        "unchanged",
        "verdicts",
    )

    def __init__(self, body: bytes, model: str | None, fields: list[Obj], controls: ControlFields) -> None:
        self.body = body
        self.model = model
        self.controls = controls
        """The body's reasoning control fields, read in the same pass."""
        self.fields = fields
        """Each message's fields, each value as it came."""
        self.roles: list[Any] | None = None
        self._thread: Thread | None = None
        self._places: splice.Places | None = None
        self._members: int | None = None
        self.readings = Facts()
        """What each assistant message carries (:class:`Reading`), under the settings it was read with."""
        self.verdicts = Facts()
        """What the transform made of each assistant message that needed no record, under its plan."""
        self.asked: Asked | None = None
        """Which assistant messages need the record (:data:`~.carry.Asked`)."""
        self.unchanged: tuple[object, int, int] | None = None
        """The transform left the first ``n`` messages as they came, nothing read of the record, under
        its plan, carriers and fields, the last user message at ``last_user``: ``(how, n, last_user)``."""

    @property
    def count(self) -> int:
        return len(self.fields)

    def all_roles(self) -> list[Any]:
        """Each message's role (decoded once, or taken from an earlier reading)."""
        if self.roles is None:
            self.roles = [_role_of(f) for f in self.fields]
        return self.roles

    def shared(self, earlier: object) -> int:
        """How many first messages this request is proven to share with ``earlier`` (a reading of the
        same surface): equal values, byte for byte."""
        if not isinstance(earlier, Chat) or earlier.model != self.model:
            return 0
        before, now, shared = earlier.fields, self.fields, shared_prefix(earlier.fields, self.fields)
        # Dicts are equal in any key order, but a changed message is written in its own: its keys too.
        return next((at for at in range(shared) if list(before[at]) != list(now[at])), shared)

    def adopt(self, earlier: object, shared: int) -> None:
        """Take what ``earlier`` learned of the first ``shared`` messages (:meth:`shared`)."""
        assert isinstance(earlier, Chat)
        self._take(earlier, shared)
        if earlier._places is not None:  # placing a message from its members costs more than proving it
            self.places().carried_from(earlier._places, shared, lambda at: self.places().of_object(self.fields[at]))

    def _take(self, earlier: Chat, shared: int) -> None:
        roles = earlier.all_roles()[:shared]
        self.roles = roles + [_role_of(f) for f in self.fields[shared:]]
        # What was worked out of its first messages, where this one shares them all: only the rest is read.
        if earlier.asked is not None and earlier.asked[1] <= shared:
            self.asked = earlier.asked
        if earlier.unchanged is not None:  # each message was left as it came: as far as they share
            how, left, last_user = earlier.unchanged
            self.unchanged = (how, min(left, shared), last_user)
        self.readings.carried_from(earlier.readings, shared)
        self.verdicts.carried_from(earlier.verdicts, shared)
        self.thread().go_on_from(earlier.thread(), shared)

    def continued_by(self, body: bytes, most: int | None = None) -> Chat | None:
        """A reading of ``body`` when it holds this one's messages byte for byte from its start, as
        an agent's next request does: only the bytes before and after them are decoded (:mod:`.tail`),
        and what this one learned of them is taken; ``None`` when it does not, or those bytes are over
        ``most`` (it is then read whole)."""
        places, count = self.places(), len(self.fields)
        first = places.element_object(0, self.fields[0])
        last = places.element_object(count - 1, self.fields[-1])
        decoded = tail.decoded(body, places, first, last, "messages", most, _decode_part)
        if decoded is None:
            return None
        found, head, after = decoded
        if not after.messages or list(after.messages[0]) != [tail.MARKER_KEY]:  # its list named again
            return None
        fields = self.fields + after.messages[1:]
        controls = _Request(*tail.fields(head, after))
        controls.messages = fields
        model = controls.model if isinstance(controls.model, str) else None
        if model != self.model:
            return None
        chat = Chat(body, model, fields, controls)
        chat._places = found.places
        chat._places.known.update(places.known)
        chat._take(self, count)
        return chat

    def places(self) -> splice.Places:
        """Where its messages stand in its body, as far as found (:mod:`.splice`)."""
        if self._places is None:
            self._places = splice.Places(self.body)
        return self._places

    def held(self) -> int:
        """The bytes what the readings decoded and what the transform made hold, and the members of
        messages with more than a few, besides the body (a role is kept short, :func:`~.carry.kept_role`)."""
        if self._members is None:  # counted once: the fields are the body's
            self._members = _KEY_BYTES * max(0, sum(map(len, self.fields)) - _COUNTED_KEYS * len(self.fields))
        retained = 0 if self._places is None else self._places.retained  # an earlier body its values view
        asked = 0 if self.asked is None else sys.getsizeof(self.asked[2])  # (small integers: shared)
        return self.readings.held() + self.verdicts.held() + self._members + retained + asked

    def texts(self) -> list[msgspec.Raw]:
        """The contents a text switch may end (``/no_think``), latest first
        (:func:`~..controls.text.conversation_texts`)."""
        roles, fields = self.all_roles(), self.fields
        return conversation_texts(latest_index(roles, SPEAKERS), roles[0], lambda at: content_of(fields[at]))

    def thread(self) -> Thread:
        """The digests of the conversation's prefixes (each computed once, when first asked for)."""
        if self._thread is None:
            self._thread = _thread(self.model, self.fields)
        return self._thread

    def reading(self, at: int, config: ThinkExtractConfig, carriers: tuple[str, ...]) -> Reading | None:
        """What the assistant message ``at`` carries (``None``: unreadable), read once per request."""
        known = self.readings.under((config, carriers))
        if at not in known:
            known[at] = read_message(self.fields[at], config, carriers)
        reading: Reading | None = known[at]
        return reading


def read(body: bytes) -> Chat | None:
    """The request's messages (``None``: none, or not a chat request)."""
    try:
        head: ControlFields
        if len(body) <= _ONE_PASS_BYTES:
            request = _decode_request(body)
            head, messages = request, request.messages
        else:
            outline = _decode_outline(body)
            head = outline
            messages = None if outline.messages is None else [_decode_fields(m) for m in outline.messages]
    except UNREADABLE:
        return None
    if not messages:
        return None
    model = head.model
    # The same fields however the body was read (``messages``: a controls writer asks whether there are any).
    controls = _Request(**{name: getattr(head, name) for name in _CONTROLS}, messages=messages)
    return Chat(body, model if isinstance(model, str) else None, messages, controls)


_UNSAID = frozenset({*_CARRIERS, "thinking"})  # reasoning a client may or may not send back (Ollama: thinking)


def prefix(chat: Chat | bytes) -> bytes | None:
    """The digest of the request's whole conversation: what its answer follows (from a body, read
    for that alone: its messages as raw values; ``None``: no conversation in it)."""
    if isinstance(chat, bytes):
        try:
            request = _decode_request(chat)
        except UNREADABLE:
            return None
        if not request.messages:
            return None
        model = request.model if isinstance(request.model, str) else None
        return _thread(model, request.messages).upto(len(request.messages))
    return chat.thread().upto(len(chat.fields))


def _thread(model: str | None, fields: list[Obj]) -> Thread:
    return Thread(model, b"", fields, lambda message: canonical(message, _UNSAID))


def keys(chat: Chat, turns: int, plan: Plan | None = None) -> list[str]:
    """The record keys of the latest ``turns`` assistant messages that need the record: its first
    tool call's, else its answer's and the conversation's before it. With a ``plan``, a message that
    carries its own reasoning needs none (the transform would not read what the record holds)."""
    return keys_of(chat, turns, plan, _CARRIERS)


def keys_of(chat: Chat, turns: int, plan: Plan | None, carriers: tuple[str, ...]) -> list[str]:
    """:func:`keys` for messages whose reasoning comes in ``carriers``."""
    if plan is not None and plan.form == "pass":
        return []  # nothing is rewritten: nothing to restore
    messages, roles = chat.fields, chat.all_roles()
    if plan is None:
        wanted = [i for i, role in enumerate(roles) if role == "assistant"]
    else:
        how = (plan.config, carriers)
        start, wanted = asked_before(chat.asked, how)
        wanted += [
            i
            for i in range(start, len(roles))
            if roles[i] == "assistant" and not _carries_reasoning(chat.reading(i, plan.config, carriers))
        ]
        chat.asked = (how, len(roles), wanted)
    out: list[str] = []
    for i in wanted[-turns:]:
        calls = call_ids(messages[i])
        said = () if calls else call_names(messages[i])
        out += turn_keys(chat.thread().upto(i), calls, "" if calls else text_of(content_of(messages[i])), said)
    return out


def _unchanged_before(
    chat: Chat, how: tuple[Plan, tuple[str, ...], tuple[str, ...]], recall: Recall, last_user: int
) -> int:
    """How many first messages the transform leaves as they came, known from the earlier request
    this one goes on from (:attr:`Chat.unchanged`): under the same plan, carriers and fields, nothing
    read of the record, each message in the same scope (a later user message moves the current turn)."""
    unchanged = chat.unchanged
    chat.unchanged = None  # until this transform says again
    if unchanged is None or recall or unchanged[0] != how:
        return 0
    if how[0].scope == "current_turn" and unchanged[2] != last_user:
        return 0
    return unchanged[1]


def _carries_reasoning(reading: Reading | None) -> bool:
    """Whether a message needs nothing of the record: it carries reasoning, or cannot be read."""
    return reading is None or bool(reading.reasoning)


def _in_scope(plan: Plan, message: Obj, current: bool) -> bool:
    """Whether the plan keeps the reasoning of ``message`` (``current``: no user message after it)."""
    if plan.scope == "current_turn":
        return current
    if plan.scope == "tool_turns":
        return calls_tools(message)
    return True


def transform(chat: Chat, plan: Plan, recall: Recall) -> bytes | None:
    """The request with every assistant message's reasoning in the plan's form; ``None`` when
    nothing changes (the caller forwards the original bytes)."""
    return transform_messages(chat, plan, recall, _CARRIERS, CHAT_FIELDS[plan.server])


def transform_messages(
    chat: Chat, plan: Plan, recall: Recall, carriers: tuple[str, ...], fields: tuple[str, ...]
) -> bytes | None:
    """:func:`transform` for any list of role messages: ``carriers`` are the fields reasoning may come
    in (all of them dropped), ``fields`` those the upstream reads it from (Ollama's ``/api/chat``:
    ``thinking`` alone)."""
    if plan.form == "pass":
        return None
    roles = chat.all_roles()
    last_user = len(roles) - 1 - roles[::-1].index("user") if "user" in roles else -1
    how = (plan, carriers, fields)
    verdicts = chat.verdicts.under(how)
    changed: dict[int, bytes] = {}
    for i in range(_unchanged_before(chat, how, recall, last_user), len(roles)):
        if roles[i] != "assistant":
            continue
        reading = chat.reading(i, plan.config, carriers)
        if reading is None:
            continue
        m = chat.fields[i]
        in_scope = _in_scope(plan, m, i > last_user)
        found = None
        if recall and not reading.reasoning:
            calls = call_ids(m)
            text, said = ("", ()) if calls else (text_of(content_of(m)), call_names(m))
            found = recalled(recall, chat.thread().upto(i), calls, text, plan.config, said)
        if found is not None:
            new = _message(m, reading, plan, in_scope, calls_tools(m), found, carriers, fields)
        else:  # what it makes depends on the message's bytes and its scope: learned once
            known = verdicts.get(i)
            if known is None or known[0] != in_scope:
                made = _message(m, reading, plan, in_scope, calls_tools(m), None, carriers, fields)
                known = verdicts[i] = (in_scope, made)
            new = known[1]
        if new is not None:
            changed[i] = new
    if not changed:
        if not recall:
            chat.unchanged = (how, len(roles), last_user)
        return None
    # Only the messages that changed are encoded; every other byte is copied as it came.
    return splice.objects_written(chat.places(), "messages", chat.fields, changed)


def _message(
    msg: Obj,
    reading: Reading,
    plan: Plan,
    in_scope: bool,
    tool_turn: bool,
    found: Recalled | None,
    carriers: tuple[str, ...],
    targets: tuple[str, ...],
) -> bytes | None:
    """One assistant message in the plan's form (its bytes), or ``None`` when it is so already."""
    content, tagged, answer, parted = reading.content, reading.tagged, reading.answer, reading.parted
    reasoning = reading.reasoning
    original = None
    if not reasoning and found is not None:
        reasoning, original = found.reasoning, found.original
    keep = bool(reasoning) and in_scope and plan.form in ("field", "inline")
    if keep and plan.harmony and tool_turn and _has_text(answer):
        keep = False  # gpt-oss's template rejects a tool call with both content and reasoning
    if keep and plan.form == "inline" and reasoning == tagged and not parted:
        answer, reasoning = content, ""  # written inline already, as the model wrote it: kept so
    out: Obj = {}
    for key, value in msg.items():
        if key in carriers:
            continue
        if key == "content":
            out[key] = _content(answer, reasoning if keep and plan.form == "inline" else "", plan, original)
            if keep and plan.form == "field":
                for field in targets:
                    out[field] = reasoning
            continue
        out[key] = value
    if "content" not in out and keep:
        if plan.form == "inline":
            out["content"] = _content("", reasoning, plan, original)
        elif targets:
            if "tool_calls" not in out:
                out["content"] = ""  # llama.cpp refuses an assistant message with neither content nor tool calls
            for field in targets:
                out[field] = reasoning
    if out.get("content") is None and "tool_calls" not in out and any(k in out for k in carriers):
        out["content"] = ""  # llama.cpp refuses an assistant message with neither content nor tool calls
    if _same(msg, out):
        return None  # proven from what was read: nothing to encode
    new: bytes = encode(out)
    return new


def _has_text(answer: Any) -> bool:
    if isinstance(answer, str):
        return bool(answer.strip())
    if isinstance(answer, list):
        return any(isinstance(p, dict) and str(p.get("text", "")).strip() for p in answer)
    return False


def _content(answer: Any, reasoning: str, plan: Plan, original: str | None) -> Any:
    """The content to send: the answer, with the reasoning written in front of it inline."""
    if not reasoning:
        return answer
    if isinstance(answer, list):
        parts = list(answer)
        for at, part in enumerate(parts):
            if isinstance(part, dict) and part.get("type") == "text":
                parts[at] = {**part, "text": inline(reasoning, part.get("text", ""), plan.config)}
                return parts
        return [{"type": "text", "text": inline(reasoning, "", plan.config)}, *parts]
    text = answer if isinstance(answer, str) else ""
    if original is not None and split_written(original, plan.config)[1] == text:
        return original  # the model's own text, byte for byte: prefix caches keep hitting
    return inline(reasoning, text, plan.config)


def _same(before: Obj, after: Obj) -> bool:
    """Whether ``after`` (values decoded or raw) says exactly what ``before`` (raw) does, key order included."""
    if list(before) != list(after):
        return False
    for key, value in after.items():
        old = before[key]
        if isinstance(value, msgspec.Raw):
            if value is not old:
                return False
            continue
        try:
            if _decode_any(bytes(old)) != value:
                return False
        except UNREADABLE:
            return False
    return True
