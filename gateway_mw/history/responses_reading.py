"""An OpenAI Responses request read once: its input's items (the assistant side's read whole, the
client's as far as its type and role), each item's kind, the turns, and the digests of the
conversation before each item.

The items are read when first asked for, not when the body is: a request proven to share its first
items with the scope's earlier one (:meth:`Responses.shared`) takes them, and what the transform
made of them, from that one's reading (:meth:`Responses.adopt`) and reads only the items that are new.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, overload

import msgspec

from ..controls.fields import ControlFields
from ..controls.text import SPEAKERS, conversation_texts, message_content
from ..rawjson import UNREADABLE
from . import splice, tail
from .carry import Facts, Sizes, decoded_bytes, shared_prefix
from .recall import Thread, canonical, canonical_decoded, sorted_json
from .responses_items import ASSISTANT_SIDE, Unread, kind_of, read_item

__all__ = ["CALLS", "Responses", "Unchanged", "asks", "asks_for_blobs", "read"]

_decode_any = msgspec.json.Decoder().decode
CALLS = frozenset({"function_call", "custom_tool_call"})
"""The kinds of the items that call a tool."""


class _Request(ControlFields, gc=False):
    """The model, the instructions, the input, ``include``, and the reasoning controls' fields (one pass)."""

    instructions: msgspec.Raw = msgspec.Raw()
    input: list[msgspec.Raw] | str | None = None
    include: Any = None


class _Include(msgspec.Struct, gc=False):
    include: Any = None


_decode_request = msgspec.json.Decoder(_Request).decode


class _Part(_Request, gc=False):
    """What is read of a body before or after the items it shares with an earlier one (the model
    unset when absent there, so that the later one named wins)."""

    model: Any = msgspec.UNSET
    include: Any = msgspec.UNSET


_decode_part = msgspec.json.Decoder(_Part).decode
_decode_include = msgspec.json.Decoder(_Include).decode


class Unchanged(NamedTuple):
    """The first ``items`` of a reading, which its transform left as they came, nothing pending
    after them and nothing read of the record for them, under ``plan``, with these ``scopes`` and
    the record's reasoning for the turns at ``recalled`` (each ignored)."""

    plan: object
    items: int
    scopes: list[bool]
    recalled: frozenset[int]


class _Items:
    """The input's items, read when first asked for (by the transform, the keys or the digest), so
    that a request that shares its first items with an earlier one takes those instead (:meth:`take`),
    and what was worked out of them: their kinds, the turns and the items the digest reads."""

    __slots__ = ("_counted", "_from", "_items", "_kinds", "_latest", "_latest_from", "_sizes", "_turns", "raws")

    def __init__(self, raws: list[msgspec.Raw], items: list[Any] | None) -> None:
        self.raws = raws
        self._items = items
        self._sizes = Sizes()
        self._kinds: list[str] | None = None
        self._turns: list[tuple[int, int]] | None = None
        self._counted: tuple[list[int], list[Any]] | None = None
        self._from: tuple[int, list[int], list[Any]] | None = None
        """What :meth:`counted` goes on from (an earlier reading's, for the items it shares)."""
        self._latest: dict[Callable[[Any, str], bool], int] = {}
        self._latest_from: dict[Callable[[Any, str], bool], tuple[int, int]] = {}
        """What :meth:`latest` goes on from: the shared items' latest, found by an earlier reading."""

    @property
    def unread(self) -> bool:
        """Whether none of the items was read yet (nothing asked for them)."""
        return self._items is None

    def items(self) -> list[Any]:
        if self._items is None:
            self._items = [read_item(raw) for raw in self.raws]
        return self._items

    def kinds(self) -> list[str]:
        if self._kinds is None:
            self._kinds = [kind_of(item) for item in self.items()]
        return self._kinds

    def take(self, earlier: _Items, shared: int, same: bool) -> bool:
        """Start from what ``earlier`` read of the first ``shared`` items (proven the same): their
        decoded values and kinds (a client item's head, over this body's bytes), the turns among them
        and, where its very values are taken (``same``: a continued reading), the items its digest
        reads."""
        assert self._items is None
        if earlier._items is None:
            return False  # it read none (its plan passed the body on): they are read here when asked for
        raws = self.raws
        if same:
            items = earlier._items[:shared]
        else:
            taken = enumerate(earlier._items[:shared])
            items = [item.again(raws[at]) if isinstance(item, Unread) else item for at, item in taken]
        self._items = items + [read_item(raw) for raw in raws[shared:]]
        self._sizes.carried_from(earlier._sizes, self._items, shared, same=same)
        if earlier._kinds is None:
            return same
        self._kinds = earlier._kinds[:shared] + [kind_of(item) for item in self._items[shared:]]
        if earlier._turns is not None:
            # The turns that end before the shared items do stand; the one at their end may go on.
            turns, ended = earlier._turns, len(earlier._turns)
            while ended and turns[ended - 1][1] >= shared:  # (in order: all but the last few, looked at from the end)
                ended -= 1
            kept = turns[:ended]
            start = turns[ended][0] if ended < len(turns) else shared
            self._turns = kept + _turns(self._items, self._kinds, min(start, shared))
        if same and earlier._counted is not None:
            before, counted = earlier._counted
            self._from = (shared, before[:shared], counted[: before[shared]])
        self._latest_from = {test: (shared, at) for test, at in earlier._latest.items() if at < shared}
        return same

    def latest(self, test: Callable[[Any, str], bool]) -> int:
        """The index of the latest item that passes ``test`` (given the item and its kind; -1: none)."""
        found = self._latest.get(test)
        if found is None:
            items, kinds = self.items(), self.kinds()
            start, known = self._latest_from.get(test, (0, -1))
            found = next((at for at in range(len(items) - 1, start - 1, -1) if test(items[at], kinds[at])), known)
            self._latest[test] = found
        return found

    def turns(self) -> list[tuple[int, int]]:
        """The runs of the assistant side's items: [start, end) of each turn."""
        if self._turns is None:
            self._turns = _turns(self.items(), self.kinds(), 0)
        return self._turns

    def held(self) -> int:
        """The bytes the items read hold (the assistant side's decoded, the client's heads), besides
        the body (their kinds and digest's lists are the items' own values)."""
        return 0 if self._items is None else self._sizes.of_whole(self._items)

    def counted(self) -> tuple[list[int], list[Any]]:
        """The items the conversation's digest reads (reasoning, which a client may or may not send
        back, left out), and how many of them stand before each item."""
        if self._counted is None:
            start, before, counted = self._from if self._from is not None else (0, [], [])
            items, kinds = self.items(), self.kinds()
            for at in range(start, len(items)):
                before.append(len(counted))
                if _in_thread(items[at], kinds[at]):
                    counted.append(items[at])
            before.append(len(counted))
            self._counted, self._from = (before, counted), None
        return self._counted


class _Counted(Sequence[Any]):
    """The items the digest reads, worked out when the digest first reads one: the thread is made
    before a carried reading is taken."""

    __slots__ = ("_items",)

    def __init__(self, items: _Items) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items.counted()[1])

    @overload
    def __getitem__(self, at: int) -> Any: ...
    @overload
    def __getitem__(self, at: slice) -> list[Any]: ...
    def __getitem__(self, at: int | slice) -> Any:
        return self._items.counted()[1][at]


class Responses:
    """A Responses request read once: its input's items (read when first asked for), the digests
    of the conversation before each, whether the input was a string (one user message), and
    whether it asks for blobs."""

    __slots__ = (
        "_include_bytes",
        "_items",
        "_places",
        "_thread",
        "blobs",
        "body",
        "controls",
        "instructions",
        "keyed",
        "model",
        "quiet",
        "said_as_text",
        "spelled",
        "unchanged",
        "verdicts",
    )

    def __init__(self, body: bytes, request: _Request) -> None:
        self.body = body
        self.controls: ControlFields = request
        """The body's reasoning control fields, read in the same pass."""
        self.instructions = request.instructions
        self.model = request.model if isinstance(request.model, str) else None
        value = request.input
        self.said_as_text = isinstance(value, str)
        if isinstance(value, list):
            self._items = _Items(value, None)
        else:
            self._items = _Items([], [{"role": "user", "content": value}])
        self._thread: Thread | None = None
        self._places: splice.Places | None = None
        include = request.include
        self.blobs = isinstance(include, list) and "reasoning.encrypted_content" in include
        self._include_bytes = decoded_bytes((include,))  # kept with the controls
        self.verdicts = Facts()
        self.spelled = Facts()
        """Each changed item's bytes as written in place (what the transform made of it, spelled)."""
        """What the transform made of each item it read no record for, under its plan."""
        self.keyed = Facts()
        """What each turn's record keys are made of (its ids, calls and text), by its last item."""
        self.quiet = 0
        """How many first turns name nothing the record is asked for (each carries its reasoning, and
        no id the gateway made): a later request's keys read on after them."""
        self.unchanged: Unchanged | None = None
        """How far the transform left the items as they came, and under what (its plan, each item's
        scope, the items the record gave reasoning for): a later request that goes on from them
        under the same goes on from there."""

    @property
    def reads_late(self) -> bool:
        """Its items unread so far: a plan that passed them on leaves them to the digest."""
        return self._items.unread

    @property
    def raws(self) -> list[msgspec.Raw]:
        """The input's items as they came (none when it was a string)."""
        return self._items.raws

    @property
    def items(self) -> list[Any]:
        """The input's items: the assistant side's decoded, the client's :class:`Unread`."""
        return self._items.items()

    @property
    def kinds(self) -> list[str]:
        """Each item's kind (a role message's: ``message``)."""
        return self._items.kinds()

    @property
    def turns(self) -> list[tuple[int, int]]:
        """The runs of the assistant side's items: [start, end) of each turn."""
        return self._items.turns()

    def latest(self, test: Callable[[Any, str], bool]) -> int:
        """The index of the latest item that passes ``test`` (given the item and its kind; -1: none)."""
        return self._items.latest(test)

    def before(self, at: int) -> bytes:
        """The digest of the items before ``items[at]`` (``at == len(items)``: all of them)."""
        return self.thread().upto(self._items.counted()[0][at])

    def shared(self, earlier: object) -> int:
        """How many first items this request is proven to share with ``earlier`` (a reading of the
        same surface and model): equal items, byte for byte. Nothing else a carried fact depends on
        is read before the items (the instructions enter only the digests, which carry apart)."""
        if not isinstance(earlier, Responses) or earlier.model != self.model:
            return 0
        return shared_prefix(earlier.raws, self.raws)

    def continued_by(self, body: bytes, most: int | None = None) -> Responses | None:
        """A reading of ``body`` when it holds this one's items byte for byte from its start, as an
        agent's next request does: only the bytes before and after them are decoded (:mod:`.tail`),
        and what this one learned of them is taken; ``None`` when it does not, or those bytes are over
        ``most`` (it is then read whole)."""
        raws = self.raws
        if self.said_as_text or not raws:
            return None
        places = self.places()
        first, last = places.element(0, raws[0]), places.element(len(raws) - 1, raws[-1])
        decoded = tail.decoded(body, places, first, last, "input", most, _decode_part)
        if decoded is None:
            return None
        found, head, after = decoded
        new = after.input
        if not isinstance(new, list) or not new or bytes(new[0]) != tail.MARKER:  # its list named again
            return None
        request = _Request(*tail.fields(head, after))
        request.input = raws + new[1:]
        read = Responses(body, request)
        if read.model != self.model:
            return None
        read._places = found.places
        read._places.known.update(places.known)
        read.adopt(self, len(raws), continued=True)
        return read

    def adopt(self, earlier: object, shared: int, *, continued: bool = False) -> None:
        """Take what ``earlier`` read of the first ``shared`` items (:meth:`shared`): their decoded
        values and kinds, the transform's verdicts on them and what the keys of the turns among them are
        made of (``continued``: its very items, this reading made of its body's, :meth:`continued_by`)."""
        assert isinstance(earlier, Responses)
        same = self._items.take(earlier._items, shared, continued)
        unchanged = earlier.unchanged
        if same and unchanged is not None and unchanged.items <= shared:  # its very items, left as they came
            self.unchanged = unchanged
        self.verdicts.carried_from(earlier.verdicts, shared)
        self.spelled.carried_from(earlier.spelled, shared)
        self.keyed.carried_from(earlier.keyed, shared)
        if earlier.quiet and earlier.turns[earlier.quiet - 1][1] <= shared:
            self.quiet = earlier.quiet
        counted = earlier._items._counted  # worked out when its digest was: else it kept no state
        if counted is not None:
            if self._thread is None and self.instructions == earlier.instructions:  # (and the model: shared)
                self._thread = earlier.thread().following(_Counted(self._items))
            self.thread().go_on_from(earlier.thread(), counted[0][shared])

    def places(self) -> splice.Places:
        """Where its items stand in its body, as far as found (:mod:`.splice`)."""
        if self._places is None:
            self._places = splice.Places(self.body)
        return self._places

    @property
    def count(self) -> int:
        return len(self.raws) if not self.said_as_text else 1

    def held(self) -> int:
        """The bytes what was decoded of the items holds (the items, what the transform and the keys
        learned), besides the body."""
        taken = self.verdicts.held() + self.spelled.held() + self.keyed.held()
        retained = 0 if self._places is None else self._places.retained  # an earlier body its values view
        unchanged = self.unchanged
        if unchanged is not None:  # its lists only: the plan is the settings', kept anyway
            taken += sys.getsizeof(unchanged.scopes) + sys.getsizeof(unchanged.recalled)
        return self._items.held() + taken + self._include_bytes + retained

    def thread(self) -> Thread:
        """The digests of the conversation's prefixes: the model, the instructions, the items of the
        conversation (read when the first digest is asked for)."""
        if self._thread is None:
            instructions = bytes(self.instructions)
            head = canonical({"system": self.instructions}) if instructions not in (b"", b"null") else b""
            self._thread = Thread(self.model, head, _Counted(self._items), _spelled)
        return self._thread

    def texts(self) -> list[Any]:
        """The texts a text switch may end (``/no_think``), latest first: the conversation's
        (:func:`~..controls.text.conversation_texts`), then the instructions."""
        items = self.items
        first = items[0].get("role") if items and isinstance(items[0], dict) else None
        texts = conversation_texts(self._items.latest(_speaks), first, lambda at: _content(items[at]))
        return [*texts, self.instructions] if self.instructions else texts


def asks_for_blobs(body: bytes) -> bool:
    """Whether the request's ``include`` asks for ``reasoning.encrypted_content`` (Codex does, and the
    AI SDK with ``store: false``): the gateway's reasoning items then carry one it can read back."""
    try:
        include = _decode_include(body).include
    except UNREADABLE:
        return False
    return isinstance(include, list) and "reasoning.encrypted_content" in include


def read(body: bytes) -> Responses | None:
    """The request's input (``None``: none, or not a Responses request). Its items are read when
    first asked for: the body's decode refused any it could not read (a lone surrogate escape too)."""
    try:
        request = _decode_request(body)
    except UNREADABLE:
        return None
    if request.input is None:
        return None
    return Responses(body, request)


def _content(item: Any) -> Any:
    """An item's content: an unread one's from its bytes."""
    return message_content(item.raw) if isinstance(item, Unread) else item.get("content")


def _speaks(item: Any, kind: str) -> bool:
    """Whether an item (of ``kind``) is said by the user, the system or the developer."""
    return isinstance(item, dict) and item.get("role") in SPEAKERS


def asks(item: Any, kind: str) -> bool:
    """Whether an item (of ``kind``) is a message of the user."""
    return kind == "message" and item.get("role") == "user"


def _in_thread(item: Any, kind: str) -> bool:
    """Whether an item (of ``kind``) is part of the conversation's digest: reasoning, which a client
    may or may not send back, is not."""
    return kind != "reasoning" and not (kind == "item_reference" and str(item.get("id")).startswith("rs_"))


def _spelled(item: Any) -> bytes:
    """An item as :func:`canonical` spells a message (a role message is the same with or without
    its implied ``"type": "message"``)."""
    if isinstance(item, Unread):
        try:
            item = _decode_any(item.raw)
        except msgspec.ValidationError:  # a number out of a double's range: spelled as it came
            return bytes(item.raw)
    if not isinstance(item, dict):
        return bytes(sorted_json(item))
    return canonical_decoded({k: v for k, v in item.items() if not (k == "type" and v == "message")})


def _turns(items: list[Any], kinds: list[str], start: int) -> list[tuple[int, int]]:
    """The runs of assistant-side items from ``items[start]`` on: [start, end) of each turn."""
    out = []
    first = None  # of the turn the items reached are in
    for at in range(start, len(items)):
        kind = kinds[at]
        if kind in ASSISTANT_SIDE or (kind == "message" and items[at].get("role") == "assistant"):
            first = at if first is None else first
        elif first is not None:
            out.append((first, at))
            first = None
    if first is not None:
        out.append((first, len(items)))
    return out
