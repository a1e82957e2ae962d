"""OpenAI Responses requests: the reasoning items of earlier turns (and the model's tags in their
messages' text), given to the upstream in the form of the plan and the shape its server reads.

A reasoning item's text is read from its ``content``, else its ``summary``, else an
``encrypted_content`` the gateway made, else the reasoning record (an ``item_reference`` to an id the
gateway made, or an item that lost its text). In the ``field`` form each server gets the shape it reads:

* vLLM and llama.cpp: ``summary`` (an array) and ``content: [{"type":"reasoning_text","text":…}]``,
  no ``encrypted_content`` (vLLM refuses any; llama.cpp refuses an item without content text);
* Ollama: the text in ``encrypted_content`` as well, the only place it reads;
* OpenAI: the items the gateway made are dropped (it refuses ids and blobs it did not issue);
* any other: ``summary`` and ``content``.

An ``item_reference`` to a reasoning id the gateway made (``rs_…``) that the record cannot resolve is
dropped: no server issued that id. A reference to a message goes on as it came when the record lacks it.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any

import msgspec

from ..marks import decode_blob, is_gateway_id
from ..rawjson import Obj, encode
from . import splice
from .plan import Plan
from .recall import Recall, item_key, recalled, turn_keys
from .responses_items import kind_of, written
from .responses_reading import CALLS, Responses, Unchanged, asks, asks_for_blobs, read
from .serverblobs import decode_server_blob
from .text import inline, split_inline, split_written

__all__ = ["Responses", "asks_for_blobs", "keys", "prefix", "read", "transform"]

_decode_obj = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_ITSELF = object()
"""In what an item made, as the transform keeps it: the item itself (as the request that reads it has it)."""
_AS_IT_CAME = [_ITSELF]
"""What an item made that goes on as it came, as the transform keeps it (one list for all: only read)."""
_REWRITTEN = frozenset({"reasoning", "item_reference", "message"})
"""The kinds of the items the transform may change with no reasoning pending."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _calls(items: list[Any], kinds: list[str]) -> list[str]:
    calls = (it.get("call_id") for it, kind in zip(items, kinds, strict=True) if kind in CALLS)
    return [call_id for call_id in calls if isinstance(call_id, str)]


def _bare(kinds: list[str]) -> bool:
    """A turn (its items' kinds) that carries no reasoning of its own (the record may have it)."""
    return "reasoning" not in kinds and "item_reference" not in kinds


def prefix(request: Responses | bytes) -> bytes | None:
    """The digest of the request's whole conversation: what its answer follows (``None``: no
    conversation in the body)."""
    read_now = read(request) if isinstance(request, bytes) else request
    return None if read_now is None else read_now.before(len(read_now.items))


def _turn_text(turn: list[Any], kinds: list[str]) -> str:
    return "".join(_text(it.get("content")) for it, kind in zip(turn, kinds, strict=True) if kind == "message")


def keys(request: Responses, turns: int, plan: Plan | None = None) -> list[str]:
    """The record keys of the latest ``turns`` assistant turns (those of a turn that carries
    reasoning only for the items that name the record)."""
    if request.said_as_text or (plan is not None and plan.form == "pass"):
        return []
    items, kinds, known, every = request.items, request.kinds, request.keyed.under(None), request.turns
    # The first turns that name nothing for the record are known so from the earlier request (the
    # last of them read again: this request's items may go on in it).
    skip = max(len(every) - turns, request.quiet - 1, 0)
    quiet = skip if skip <= request.quiet else None
    out = []
    for t in range(skip, len(every)):
        start, end = every[t]
        said = known.get(end - 1)  # by its last item: a turn an earlier request shared whole
        if said is None or said[0] != start:
            said = known[end - 1] = _said(items[start:end], kinds[start:end], start)
        _, named, bare, calls, text = said
        if quiet == t and not named and not bare:
            quiet = t + 1
        # The conversation's digest only for a key that holds it: a gateway-made id is a key alone,
        # and a turn that carries its own reasoning and names no other has none to ask for.
        before = request.before(start) if bare or not all(map(is_gateway_id, named)) else b""
        out += [item_key(item_id, before) for item_id in named]
        if bare:
            out += turn_keys(before, calls, text)
    if quiet is not None:
        request.quiet = quiet
    return out


def _said(turn: list[Any], kinds: list[str], start: int) -> tuple[int, list[str], bool, list[str], str]:
    """What a turn's keys are made of besides the conversation before it: its first item, the ids
    of its items that name the record, whether it carries no reasoning (bare), and then its calls
    and its text."""
    named = [item["id"] for item, kind in zip(turn, kinds, strict=True) if _names_record(item, kind)]
    bare = _bare(kinds)
    calls = _calls(turn, kinds) if bare else []
    return start, named, bare, calls, "" if calls or not bare else _turn_text(turn, kinds)


def _names_record(item: Any, kind: str) -> bool:
    """Whether an item (of ``kind``) names reasoning the record may hold by its id: a reference to an
    item, or a reasoning item the gateway made."""
    if kind not in ("item_reference", "reasoning"):
        return False
    item_id = item.get("id")
    return isinstance(item_id, str) and (kind == "item_reference" or is_gateway_id(item_id))


def _recalled(request: Responses, recall: Recall, plan: Plan) -> dict[int, str]:
    """Turns that carry no reasoning, by their first item: the reasoning the record holds for them."""
    out = {}
    for start, end in request.turns:
        turn, kinds = request.items[start:end], request.kinds[start:end]
        if not _bare(kinds) or any(
            kind == "message" and split_inline(_text(it.get("content")), plan.config)[0]
            for it, kind in zip(turn, kinds, strict=True)
        ):
            continue
        calls = _calls(turn, kinds)
        text = "" if calls else _turn_text(turn, kinds)
        found = recalled(recall, request.before(start), calls, text, plan.config)
        if found is not None and found.reasoning:
            out[start] = found.reasoning
    return out


def _reasoning_text(item: dict[str, Any]) -> str:
    for key in ("content", "summary"):
        parts = item.get(key)
        if isinstance(parts, list):
            texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
            if any(texts):
                return "\n".join(t for t in texts if t)
    blob = item.get("encrypted_content")
    if not isinstance(blob, str):
        return ""
    return decode_blob(blob) or decode_server_blob(blob) or ""  # the gateway's, else SGLang's own


def _shaped(item: dict[str, Any], reasoning: str, plan: Plan) -> dict[str, Any]:
    """A reasoning item holding ``reasoning`` in the shape the plan's server reads."""
    out: dict[str, Any] = {"type": "reasoning"}
    out.update((k, v) for k, v in item.items() if k not in ("type", "summary", "content", "encrypted_content"))
    summary = item.get("summary")
    if plan.server in ("vllm", "llamacpp"):
        out["summary"] = summary if isinstance(summary, list) and _summary_ok(summary, reasoning) else []
    else:
        out["summary"] = [{"type": "summary_text", "text": reasoning}]
    out["content"] = [{"type": "reasoning_text", "text": reasoning}]
    if plan.server == "ollama":
        out["encrypted_content"] = reasoning  # Ollama reads the thinking text from here only
    return out


def _summary_ok(summary: list[Any], reasoning: str) -> bool:
    texts = [p.get("text") for p in summary if isinstance(p, dict)]
    strings = [t for t in texts if isinstance(t, str)]
    return len(strings) == len(texts) and (not strings or "\n".join(strings) == reasoning)


def _scopes(request: Responses, plan: Plan) -> list[bool]:
    """Whether each item is in a turn that keeps its reasoning."""
    items, kinds = request.items, request.kinds
    out = [True] * len(items)
    if plan.scope == "all":
        return out
    last_query = request.latest(asks)
    current = plan.scope == "current_turn"
    for start, end in request.turns:
        if current:
            if start > last_query:
                break  # (in order) this turn and every later one answer the latest query
            out[start:end] = [at > last_query for at in range(start, end)]  # all of it, but in a hostile input
        elif CALLS.isdisjoint(kinds[start:end]):
            out[start:end] = [False] * (end - start)
    return out


def transform(request: Responses, plan: Plan, recall: Recall) -> bytes | None:
    if plan.form == "pass" or request.said_as_text:
        return None
    items, kinds = request.items, request.kinds
    scopes = _scopes(request, plan)
    found = _recalled(request, recall, plan) if recall else {}
    verdicts = request.verdicts.under(plan)
    spellings = request.spelled.under(plan)
    # An agent's next request under the same: what its earlier request left as it came goes on so.
    first = _unchanged_before(request, plan, scopes, found)
    if first == len(items):  # all of them, and nothing after: as they came
        request.unchanged = Unchanged(plan, first, scopes, frozenset(found))
        return None
    starts = _starts(request, first)

    def before(at: int) -> bytes:
        """The digest of the conversation before the turn of ``items[at]``: only the record reads it."""
        start = starts[at]
        return request.before(at if start is None else start) if recall else b""

    new: list[Any] = items[:first]
    settled: dict[int, Any] = {}  # the items that went on as their verdict says, and that verdict
    starts_in_new = list(range(first))  # where what each item goes on as starts (messages put before it included)
    pending = ""  # reasoning to write inline into the next assistant message of the turn
    own_only = True  # nothing read of the record for the items so far
    for at in range(first, len(items)):
        item = items[at]
        starts_in_new.append(len(new))
        if pending and starts[at] is None:
            new.append(_assistant_message(pending, plan))  # the turn ended with no message of its own
            pending = ""
        if at in found and scopes[at] and plan.form in ("field", "inline") and plan.server != "openai":
            if plan.form == "field":
                new.append(_shaped({}, found[at], plan))  # what the client did not send back
            else:
                pending = found[at]
        kind = kinds[at]
        if not pending and kind not in _REWRITTEN:
            new.append(item)  # a client's item, a tool call: as it came
            continue
        if pending:
            made, pending, own = _made(item, kind, plan, scopes[at], pending, recall, before, at)
            new += _as_it_came(made, item)
            own_only = own_only and own
            continue
        # With nothing pending, what an item makes depends on its bytes and its scope alone, unless it
        # reads the record: learned once (an agent's next request takes it, :meth:`Responses.adopt`).
        known = verdicts.get(at)
        if known is None or known[0] != scopes[at]:
            made, pending, own = _made(item, kind, plan, scopes[at], "", recall, before, at)
            made = _as_it_came(made, item)
            new += made
            own_only = own_only and own
            if own:
                verdicts[at] = settled[at] = (scopes[at], _kept(made, item), pending)
            continue
        settled[at] = known
        made = known[1]
        if made is _AS_IT_CAME:
            new.append(item)
        else:
            new += [item if one is _ITSELF else one for one in made] if _ITSELF in made else made
        pending = known[2]
    if pending:
        new.append(_assistant_message(pending, plan))
    if len(new) == len(items) and all(map(operator.is_, new, items)):  # each item itself: its bytes go on
        if own_only:
            request.unchanged = Unchanged(plan, len(items), scopes, frozenset(found))
        return None
    if new == items:
        return None
    return _written(request, new, starts_in_new, settled, spellings)


def _unchanged_before(request: Responses, plan: Plan, scopes: list[bool], found: dict[int, str]) -> int:
    """How many first items the transform leaves as they came, known from the earlier request this
    one goes on from (:attr:`Responses.unchanged`): under the same plan, each item in the same scope,
    the record giving reasoning for the same turns among them (none of it written: it was not)."""
    unchanged = request.unchanged
    if unchanged is None:
        return 0
    request.unchanged = None  # until this transform says again
    n = unchanged.items
    if unchanged.plan != plan or scopes[:n] != unchanged.scopes[:n]:
        return 0
    if frozenset(at for at in found if at < n) != unchanged.recalled:
        return 0
    return n


def _spelled(raw: msgspec.Raw, item: Any, made: list[Any]) -> bytes | None:
    """What an item goes on as, spelled (``None``: it is left out): itself in the bytes it came in."""
    if not made:
        return None
    return b",".join(bytes(raw) if one is item else encode(written(one)) for one in made)


def _written(
    request: Responses, new: list[Any], starts: list[int], settled: dict[int, Any], spellings: dict[int, Any]
) -> bytes:
    """The body with its items as they go on: ``new``, where what each item goes on as ``starts``
    (the last one's up to the end: a message written after it). Only the items that changed are
    encoded: every other byte is copied as it came. An item that went on as its verdict says
    (``settled``: by item, that verdict) is spelled once for that verdict (``spellings``), and a
    later request that shares it takes its bytes."""
    items, raws = request.items, request.raws
    one_for_one = len(new) == len(items) and starts == list(range(len(items)))
    if one_for_one:
        # Which went on as something else, found in one pass of C over the list: only those are walked.
        moved = itertools.compress(range(len(new)), map(operator.is_not, new, items))
        changed = {at: [new[at]] for at in moved}
    else:
        ends = [*starts[1:], len(new)]
        made_of = {at: new[start:end] for at, (start, end) in enumerate(zip(starts, ends, strict=True))}
        changed = {at: made for at, made in made_of.items() if len(made) != 1 or made[0] is not items[at]}
    if raws and len(changed) * splice.ITEM_BYTES <= len(request.body):
        spelled: dict[int, bytes | None] = {}
        for at, made in changed.items():
            verdict = settled.get(at) if one_for_one else None  # else what it went on as holds more
            known = spellings.get(at) if verdict is not None else None
            if known is not None and known[0] is verdict:
                spelled[at] = known[1]
                continue
            spelled[at] = _spelled(raws[at], items[at], made)
            if verdict is not None:
                spellings[at] = (verdict, spelled[at])
        out = splice.replaced(request.places(), raws, spelled)
        if out is not None:
            return out
    doc: Obj = _decode_obj(request.body)
    doc["input"] = [written(item) for item in new]
    whole: bytes = encode(doc)
    return whole


def _as_it_came(made: list[Any], item: Any) -> list[Any]:
    """What an item made, the item itself where that is one item equal to it (a reasoning item
    already in the shape the server reads): it goes on in the bytes it came in, however the client
    spelled it, as it does in a request read on from one that left it so (:class:`Unchanged`)."""
    return [item] if len(made) == 1 and made[0] is not item and made[0] == item else made


def _kept(made: list[Any], item: Any) -> list[Any]:
    """What an item made, as the transform keeps it: without the item itself (it may hold this
    body's bytes, which a later request's reading must not keep)."""
    if len(made) == 1:
        return _AS_IT_CAME if made[0] is item else made
    return [_ITSELF if one is item else one for one in made]


def _made(
    item: Any,
    kind: str,
    plan: Plan,
    in_scope: bool,
    pending: str,
    recall: Recall,
    before: Callable[[int], bytes],
    at: int,
) -> tuple[list[Any], str, bool]:
    """What one item makes in the plan's form after ``pending`` (reasoning to write inline): the
    items it goes on as, the reasoning pending after it, and whether that came of the item alone
    (``False``: the record was read for it, after ``before(at)``, the conversation before the turn)."""
    own = True
    if kind == "item_reference" and not str(item.get("id")).startswith("rs_"):
        # A message the upstream may not have kept, as the record holds it.
        item, own = _resolved_message(item, recall, before(at), plan), False
        kind = kind_of(item)
        if kind == "item_reference":  # the record lacks it: it goes on as it came
            return [item], pending, own
    if kind in ("reasoning", "item_reference"):
        reasoning, made_here, own_text = _read_reasoning(item, kind, recall, before, at)
        own = own and own_text
        if kind == "item_reference" and reasoning is None and not made_here:
            return [item], pending, own  # the upstream's own reference
        if kind == "reasoning" and plan.server == "openai" and not made_here:
            return [item], pending, own  # OpenAI's own item: it reads it itself
        if not reasoning or not in_scope or plan.form == "strip" or plan.server == "openai":
            return [], pending, own
        if plan.form == "field":
            return [_shaped(item if kind == "reasoning" else {}, reasoning, plan)], pending, own
        return [], pending + "\n" + reasoning if pending else reasoning, own
    out = []
    if kind == "message" and item.get("role") == "assistant":
        item, tagged = _message(item, plan, pending if plan.form == "inline" else "")
        pending = ""
        if tagged and in_scope and plan.form == "field" and plan.server != "openai":
            out.append(_shaped({}, tagged, plan))
    elif pending and kind in CALLS:
        out.append(_assistant_message(pending, plan))
        pending = ""
    out.append(item)
    return out, pending, own


def _starts(request: Responses, first: int) -> list[int | None]:
    """The first item of the turn each item from ``first`` on is in (``None``: in none, not of the
    assistant's side; and for each item before ``first``, which the transform does not read)."""
    out: list[int | None] = [None] * len(request.items)
    for start, end in reversed(request.turns):
        if end <= first:
            break
        out[start:end] = [start] * (end - start)
    return out


def _resolved_message(item: dict[str, Any], recall: Recall, before: bytes, plan: Plan) -> dict[str, Any]:
    """A reference to an answer's message item, as the message itself when the record holds that
    answer (its text as the client was given it); else the reference, as it came."""
    item_id = item.get("id")
    found = recall.get(item_key(item_id, before)) if isinstance(item_id, str) else None
    if found is None or found.original is None:
        return item
    answer = split_written(found.original, plan.config)[1]
    part = {"type": "output_text", "text": answer, "annotations": []}
    return {"type": "message", "role": "assistant", "id": item_id, "content": [part]}


def _read_reasoning(
    item: dict[str, Any], kind: str, recall: Recall, before: Callable[[int], bytes], at: int
) -> tuple[str | None, bool, bool]:
    """The text of a reasoning item or reference (``kind``), whether the gateway made it, and
    whether the text came of the item alone (``False``: the record was read for it, after
    ``before(at)``)."""
    item_id = item.get("id")
    made_here = isinstance(item_id, str) and is_gateway_id(item_id)
    blob = item.get("encrypted_content")
    if isinstance(blob, str) and decode_blob(blob) is not None:
        made_here = True
    text = _reasoning_text(item) if kind == "reasoning" else ""
    own = True
    if not text and made_here and isinstance(item_id, str):
        found = recall.get(item_key(item_id, before(at)))
        text, own = (found.reasoning if found is not None else ""), False
    if kind == "item_reference":
        return (text or None), made_here, own
    return text, made_here, own


def _message(item: dict[str, Any], plan: Plan, pending: str) -> tuple[dict[str, Any], str]:
    """An assistant message item: its output_text with the model's tags taken out (the reasoning they
    held is returned) or, for ``pending``, the reasoning written in front of its first text."""
    content = item.get("content")
    if isinstance(content, str):
        if pending:
            return {**item, "content": inline(pending, content, plan.config)}, ""
        found, answer = split_inline(content, plan.config) if plan.form != "inline" else ("", content)
        return ({**item, "content": answer} if found else item), found
    if not isinstance(content, list):
        return item, ""
    parts = list(content)
    tagged = ""
    for at, part in enumerate(parts):
        if not (isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str)):
            continue
        if pending:
            parts[at] = {**part, "text": inline(pending, part["text"], plan.config)}
            return {**item, "content": parts}, ""
        if plan.form != "inline":
            found, answer = split_inline(part["text"], plan.config)
            if found:
                tagged = tagged + "\n" + found if tagged else found
                parts[at] = {**part, "text": answer}
    if pending:
        parts.insert(0, {"type": "output_text", "text": inline(pending, "", plan.config), "annotations": []})
    return ({**item, "content": parts} if parts != content else item), tagged


def _assistant_message(reasoning: str, plan: Plan) -> dict[str, Any]:
    text = inline(reasoning, "", plan.config)
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
