"""What the reasoning record gives back for a replayed turn, and the keys it is found by.

The request side is sans-I/O: it first names the keys it would look up (:func:`keys` per surface),
the adapter fetches what the record holds for them, and the transform then reads that mapping.

Every key but a gateway-made item id holds the digest of the conversation before the turn (a
:class:`Thread` prefix): the model, what stands before the messages (a system prompt) and every
message as the model sees it (all content parts, images and files included, tool calls and results),
less what a client may or may not send back (reasoning, cache markers). An id a server made (Kimi K2's
``functions.get_weather:0`` is the same in every conversation) is a key only together with it.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from ..config import ThinkExtractConfig
from ..marks import is_gateway_id
from ..rawjson import UNREADABLE
from .carry import CHECKPOINTS
from .text import split_written

__all__ = [
    "MAX_RECALL_KEYS",
    "NOTHING",
    "Recall",
    "Recalled",
    "Thread",
    "after_key",
    "answer_key",
    "call_key",
    "canonical",
    "canonical_decoded",
    "canonical_json",
    "echoes",
    "item_key",
    "recalled",
    "sorted_json",
    "turn_keys",
]

MAX_RECALL_KEYS = 256
"""Keys one request looks up at most (those of its latest turns): a request that names thousands of
tool calls costs the record what any other does, and cannot hold up other clients' reads."""


class Recalled(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One assistant turn the gateway translated: the reasoning it moved out of the text, the text
    exactly as the model wrote it (tags included) when known, and the ids of its tool calls."""

    reasoning: str
    original: str | None = None
    calls: tuple[str, ...] = ()


Recall = Mapping[str, Recalled]
NOTHING: Recall = {}

_PERSON = b"gateway_mw.thr1"  # BLAKE2b's personalisation: digests of conversations, version 1
_decode_fields = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_parts = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_objects = msgspec.json.Decoder(list[dict[str, msgspec.Raw]]).decode
_LENGTH = struct.Struct(">Q")
_LENGTHS = struct.Struct(">IQ")
_encode_sorted = msgspec.json.Encoder(order="sorted").encode
_VOLATILE = frozenset({"cache_control"})  # moved from message to message by clients (Claude Code)
_REASONING_TYPES = ("thinking", "redacted_thinking")
_REASONING_PARTS = frozenset(msgspec.json.encode(kind) for kind in _REASONING_TYPES)


def call_key(prefix: bytes, call_id: str) -> str:
    """A tool call's id (chat ``tool_calls[].id``, Responses ``call_id``, messages ``tool_use.id``) in
    the conversation ``prefix`` (the digest of what came before the turn that made it)."""
    return f"call:{prefix.hex()}:{call_id}"


def answer_key(prefix: bytes, text: str, calls: Sequence[str] = ()) -> str:
    """What a turn said after the conversation ``prefix``: the answer's text as the client was given
    it and its tool calls' names and arguments (:func:`~gateway_mw.calls.call_spellings`), so that
    two answers to one question that call other tools are other keys."""
    digest = hashlib.blake2b(prefix, digest_size=32, person=_PERSON)
    digest.update(text.encode("utf-8", "surrogatepass"))
    for call in calls:
        spelled = call.encode("utf-8", "surrogatepass")
        digest.update(_LENGTH.pack(len(spelled)))
        digest.update(spelled)
    return "answer:" + digest.hexdigest()


def after_key(prefix: bytes) -> str:
    """The answer given to the conversation ``prefix``, whatever shape the client echoes it in (an
    agent that writes its tool calls as text): found only when the echo holds its text and call ids
    (:func:`echoes`)."""
    return "after:" + prefix.hex()


def item_key(item_id: str, prefix: bytes) -> str:
    """A Responses item id: one the gateway made (random, unique) alone; any other in its
    conversation."""
    return "item:" + item_id if is_gateway_id(item_id) else f"item:{prefix.hex()}:{item_id}"


def echoes(found: Recalled, answer: str, text: str) -> bool:
    """Whether a turn the client sent without tool calls (its ``text``) is the answer ``found``
    holds (``answer``: its text as the client was given it), however the client wrote it down:
    smolagents writes ``"Calling tools:\n[{'id': 'call_1', …}]"`` after the answer's text."""
    return answer.strip() in text and all(call in text for call in found.calls)


def turn_keys(prefix: bytes, calls: Sequence[str], text: str, said: Sequence[str] = ()) -> list[str]:
    """The keys an assistant turn may be held under: its first tool call's id, or, for a turn
    without ids, what it said (its text and ``said``, its calls' names and arguments) and the
    conversation's before it."""
    if calls:
        return [call_key(prefix, calls[0])]
    return [answer_key(prefix, text, said), after_key(prefix)]


def recalled(
    recall: Recall,
    prefix: bytes,
    calls: Sequence[str],
    text: str,
    config: ThinkExtractConfig,
    said: Sequence[str] = (),
) -> Recalled | None:
    """What the record holds for an assistant turn after the conversation ``prefix``: by its first
    tool call's id, else by what it said (``text`` and ``said``), else the answer to that
    conversation if the turn echoes it."""
    if calls:
        return recall.get(call_key(prefix, calls[0]))
    found = recall.get(answer_key(prefix, text, said))
    if found is not None:
        return found
    found = recall.get(after_key(prefix))
    if found is None or found.original is None or not echoes(found, split_written(found.original, config)[1], text):
        return None
    return found


def canonical(fields: Mapping[str, msgspec.Raw], skip: frozenset[str] = frozenset()) -> bytes:
    """One message (or item) as the model sees it, in fields of any order: its fields but ``skip``
    (reasoning carriers) and cache markers, its content parts but reasoning ones, each value as the
    client spelled it (JSON, its keys sorted)."""
    kept = {key: value for key, value in fields.items() if key not in skip and key not in _VOLATILE}
    for key in ("content", "system"):
        value = kept.get(key)
        if value is not None and bytes(memoryview(value)[:1]) == b"[":
            kept[key] = _parts(value)
    return _encode_sorted(kept)


def canonical_json(raw: msgspec.Raw | bytes, skip: frozenset[str] = frozenset()) -> bytes:
    """:func:`canonical` of a message's JSON (a value that is no object: its bytes)."""
    try:
        fields = _decode_fields(raw)
    except UNREADABLE:
        return bytes(raw)
    return canonical(fields, skip)


def canonical_decoded(fields: Mapping[str, Any]) -> bytes:
    """:func:`canonical` of decoded fields, each value spelled as JSON with its keys sorted: when
    nothing is left out (no cache marker, no reasoning part, at any depth :func:`canonical` reads),
    that is the fields encoded whole in one call."""
    if _keeps_all(fields):
        try:
            whole: bytes = _encode_sorted(fields)
        except (msgspec.EncodeError, UnicodeEncodeError, TypeError, ValueError):
            pass  # spelled value by value below (what cannot be encoded is spelled as its repr)
        else:
            return whole
    return canonical({key: sorted_json(value) for key, value in fields.items()})


def _keeps_all(fields: Mapping[str, Any]) -> bool:
    """Whether :func:`canonical` keeps every field and content part of ``fields`` (decoded)."""
    if any(key in _VOLATILE for key in fields):
        return False
    for key in ("content", "system"):
        parts = fields.get(key)
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, dict) and (part.get("type") in _REASONING_TYPES or not _keeps_all(part)):
                    return False
    return True


def sorted_json(value: Any) -> msgspec.Raw:
    """A decoded value as JSON, its keys sorted (what cannot be encoded: its ``repr``)."""
    try:
        return msgspec.Raw(_encode_sorted(value))
    except (msgspec.EncodeError, UnicodeEncodeError, TypeError, ValueError):  # a lone surrogate, say
        return msgspec.Raw(msgspec.json.encode(repr(value)))


def _parts(value: msgspec.Raw) -> msgspec.Raw:
    """A list of content parts, those that hold reasoning left out."""
    try:  # every part an object, as nearly always: the list read in one decoder pass
        objects = _decode_objects(value)
    except msgspec.ValidationError:
        return _mixed_parts(value)
    except UNREADABLE:
        return value
    kept = [msgspec.Raw(canonical(fields)) for fields in objects if not _reasoning_part(fields)]
    return msgspec.Raw(msgspec.json.encode(kept))


def _mixed_parts(value: msgspec.Raw) -> msgspec.Raw:
    """:func:`_parts` of a list whose parts are not all objects (each kept as it came)."""
    try:
        parts = _decode_parts(value)
    except UNREADABLE:
        return value
    kept: list[msgspec.Raw] = []
    for raw in parts:
        try:
            fields = _decode_fields(raw)
        except UNREADABLE:
            kept.append(raw)
            continue
        if not _reasoning_part(fields):
            kept.append(msgspec.Raw(canonical(fields)))
    return msgspec.Raw(msgspec.json.encode(kept))


def _reasoning_part(fields: Mapping[str, msgspec.Raw]) -> bool:
    kind = fields.get("type")
    return kind is not None and bytes(kind) in _REASONING_PARTS


T = TypeVar("T")


class Thread:
    """The digest of each prefix of one conversation: the model and ``head`` (what stands before the
    messages), then each message as ``spell(message)`` writes it (:func:`canonical`). Asked for
    prefixes in growing order, as a request's turns are, each message is read once: a long agent
    history costs linear time.

    An agent's next request repeats the conversation and adds a turn: a thread that keeps its states
    (:meth:`keep_states`) keeps those at the last few message boundaries as it hashes them
    (:attr:`kept`: its record keys hash as far as its latest turn, its answer's entries all of it),
    and the thread of a later request proven to share its first messages goes on from the latest of
    them it shares (:meth:`go_on_from`) instead of hashing them again."""

    __slots__ = ("_at", "_behind", "_done", "_head", "_known", "_messages", "_spell", "_states", "kept")

    def __init__(
        self,
        model: str | None,
        head: bytes,
        messages: Sequence[T],
        spell: Callable[[T], bytes],
    ) -> None:
        self._messages = messages
        self._spell = spell
        named = b"" if model is None else b"m" + model.encode("utf-8", "surrogatepass")
        self._head = _LENGTHS.pack(len(named), len(head)) + named + head
        self._at: hashlib.blake2b | None = None  # hashed when first asked for: a thread that goes on needs none
        self._done = 0  # the messages in _at
        self._behind: tuple[int, hashlib.blake2b] | None = None  # a prefix asked below _done, and its state
        self._known: dict[int, bytes] = {}
        self._states: dict[int, hashlib.blake2b] | None = None  # by message count, kept (keep_states)
        self.kept: dict[int, hashlib.blake2b] | None = None
        """The hash states after the last few messages (by their count) hashed so far (with
        :meth:`keep_states`): read by later requests' threads, never changed once given."""

    def following(self, messages: Sequence[Any]) -> Thread:
        """The thread of a later request with the same model and head (proven by the caller): its
        head taken as it is, not spelled again (a system prompt, or instructions, of many kilobytes)."""
        spell: Callable[[Any], bytes] = self._spell
        thread = Thread(None, b"", messages, spell)
        thread._head = self._head
        return thread

    def held(self) -> int:
        """The bytes its head holds (the model's name and the system prompt, spelled again)."""
        return sys.getsizeof(self._head)

    @property
    def unhashed(self) -> int:
        """How many messages a digest of the whole conversation still hashes (none carried past)."""
        return len(self._messages) - self._done

    def keep_states(self) -> None:
        """Keep the states at the last few message boundaries, for a later request's thread."""
        if self._states is None:
            self._states = {}

    def go_on_from(self, earlier: Thread, shared: int) -> None:
        """Go on from the latest state ``earlier`` kept after at most its first ``shared`` messages,
        which this conversation is proven to share with it (before any digest is asked for), and take
        the digests it gave of those messages' prefixes (its record keys': asked again here)."""
        if earlier._head != self._head or self._done or self._known:
            return
        known = earlier._known.copy()  # in one step: its request may still be asking for its answers' keys
        # Below ``shared``: the digest of all a rewound conversation shares is hashed here, keeping its states.
        # (An agent's next request shares all the earlier one's messages: every digest and state, as it is.)
        self._known = known if max(known, default=-1) < shared else {at: d for at, d in known.items() if at < shared}
        kept = earlier.kept
        if kept is None:
            return
        latest = max(kept, default=0)
        n = latest if latest <= shared else max((at for at in kept if at <= shared), default=0)
        if n:
            self._states = dict(kept) if n == latest else {at: state for at, state in kept.items() if at <= n}
            self._done, self._at = n, kept[n].copy()

    def upto(self, n: int) -> bytes:
        """The digest of the conversation's first ``n`` messages (after the head)."""
        known = self._known.get(n)
        if known is not None:
            return known
        if n < self._done:  # below where it went on from (or asked out of order): from the start again,
            behind = self._behind  # once for prefixes asked in growing order, as a request's turns are
            if behind is None or behind[0] > n:
                behind = (0, self._started())
            at = behind[1]
            self._feed(at, behind[0], n)
            self._behind = (n, at)
        else:
            if self._at is None:
                self._at = self._started()
            at = self._at
            self._feed(at, self._done, n, self._states)
            self._done = n
            if self._states:  # hashed as far as the last few boundaries: a later request goes on from there
                self.kept = dict(self._states)  # a new one each time: a later request's thread may be reading it
        digest = self._known[n] = at.digest()
        return digest

    def _started(self) -> hashlib.blake2b:
        return hashlib.blake2b(self._head, digest_size=32, person=_PERSON)

    def _feed(
        self, at: hashlib.blake2b, start: int, end: int, states: dict[int, hashlib.blake2b] | None = None
    ) -> None:
        spell, messages = self._spell, self._messages
        kept_from = len(messages) - CHECKPOINTS + 1 if states is not None else end + 1
        for i in range(start, end):
            message = spell(messages[i])
            at.update(_LENGTH.pack(len(message)))
            at.update(message)
            if i + 1 >= kept_from:
                assert states is not None
                states[i + 1] = at.copy()
