"""The aiohttp side of the way back in: a request body read once, bounded, given to the sans-I/O
request transform (``history``) and to the reasoning controls (``controls``: read from the same
body, written on the transform's result), and the result made what the handler reads.

A body that changes is handed on through the request's cached body (``read()``, ``text()``,
``json()``) and a fresh payload stream (``content``, a property aiohttp caches: its cache entry too),
private parts of aiohttp's request that only :mod:`gateway_mw.aio` touches. The request's
``Content-Length`` header still describes the client's body: a handler that forwards headers must
take the new one's length, which :data:`THINKEXTRACT_REQUEST_BODY` holds.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple, TypeVar

import msgspec
from aiohttp import hdrs, web
from aiohttp.streams import StreamReader

from .aio import app_setting, hand_over, raw_payload, read_already
from .channels import Said
from .config import Surface, ThinkExtractConfig
from .controls import (
    ControlFields,
    Controlled,
    Intent,
    ModelInfo,
    ModelInfoSource,
    apply_edits,
    needs_model_info,
    read_intent,
    read_with_texts,
    write_controls,
)
from .controls.read import Texts
from .credentials import credentials, scope_for
from .history import NOTHING, Recall, Recalled, Request, record_entries, record_keys, transform_request
from .history.carry import CARRIED_BYTES, STATES
from .history.passed import read_on, read_whole
from .record import ReasoningRecord
from .surfaces.registry import SURFACES

__all__ = [
    "CLIENT_GONE",
    "MESSAGE_WORK",
    "OFF_LOOP_BYTES",
    "THINKEXTRACT_CONTROLS",
    "THINKEXTRACT_MODEL_INFO",
    "THINKEXTRACT_REQUEST_BODY",
    "THINKEXTRACT_SCOPE",
    "THINKEXTRACT_SERVER",
    "Incoming",
    "RequestBodyTimeout",
    "Scope",
    "entries_handed_over",
    "reads_history",
    "remember",
    "rewrite_request",
    "scope_of",
]

log = logging.getLogger("gateway_mw")

THINKEXTRACT_REQUEST_BODY = web.RequestKey("THINKEXTRACT_REQUEST_BODY", bytes)
"""Set on a request whose body the middleware rewrote: the bytes the handler now reads."""
THINKEXTRACT_SERVER = web.RequestKey("THINKEXTRACT_SERVER", str)
"""Optional, set by an outer middleware: the server behind this request's upstream (``vllm``,
``llamacpp``…), over the configured ``upstream_server`` (a gateway that routes to several upstreams)."""


THINKEXTRACT_MODEL_INFO: web.AppKey[ModelInfoSource] = web.AppKey("THINKEXTRACT_MODEL_INFO")
"""Optional: where the middleware asks what the upstream says of a model (whether it can think, the
server's version) before it writes a reasoning control whose acceptance depends on it. The gateway
sets it; without it, a control is written in the form every version of the server accepts."""

THINKEXTRACT_CONTROLS = web.RequestKey("THINKEXTRACT_CONTROLS", Controlled)
"""Set on every request whose reasoning control was read: the intent and what was written for it."""

THINKEXTRACT_SCOPE = web.RequestKey("THINKEXTRACT_SCOPE", bytes)
"""Optional, set by an outer middleware: whose reasoning record this request reads and writes (bytes
no one can turn back into a credential). By default, a keyed digest of the API key the request
presents, the same as ``Authorization: Bearer`` or as ``x-api-key``, or one shared scope when it
presents none."""

OFF_LOOP_BYTES = 2 << 20
"""A request whose history is more work than a body of this many bytes is read (its keys, its
transform, its record entries) in a worker thread, so that the event loop serves other requests
meanwhile. The work is counted as the body's bytes and :data:`MESSAGE_WORK` more for each of its
messages (or items), once the body is read (on the loop up to 256 KiB, in the worker above).

Under Python's lock a worker thread helps other requests only at the lock's switch interval (5 ms):
until then the loop waits for the lock as it would for the work. So work shorter than about that
stays on the loop, where it costs no hand-over: end to end, the trip to a thread and back (twice:
the record's entries after the response) cost a 1 MB history about as much CPU as its reading
(``docs/performance.md``). 2 MiB of work is 5–8 ms on a 2-core Xeon."""

MESSAGE_WORK = 2048
"""What one message (or item) counts for in a history's work, in bytes: a history of many short
turns costs about 7.5 µs per message to read and rewrite, as much as 2 KiB of long tool results."""

CARRIED_WORK = 256
"""What a message (or item) an agent's next request shares with the request before counts for, in
bytes: read and learned already, it costs about a microsecond in the keys, the transform and the count
of what is kept."""

_READ_ON_LOOP_BYTES = 256 << 10
"""A larger body is read in a worker thread (its messages' count, which says where the rest of the
work runs, is known only once it is read): a quarter of a megabyte of the shortest turns takes about
2 ms to read, an agent's megabyte 0.5–1 ms, which the trip to the worker costs too. An agent's next
request is read on the loop when it leaves about this many bytes of its own to read: the rest is
one comparison of memory with the request before (a megabyte in about 35 µs)."""

CLIENT_GONE = 499
"""The status logged for a request whose client left before its body's end (nginx's "client closed
request"): nothing is sent, and it is no server error."""

_T = TypeVar("_T")


class RequestBodyTimeout(asyncio.TimeoutError):
    """Set by a server on the payload of a request whose body stopped arriving (the gateway's
    connections do, after ``read_timeout`` seconds without a byte): the middleware answers 408."""


class Incoming(NamedTuple):
    """What the way back in did with a request."""

    outcome: str
    """``rewritten``, ``unchanged``, or why the body was not read (``too_large``, ``chunked``…)."""
    body: bytes | None = None
    """The body as the client sent it (for the record's keys of the answer)."""
    blobs: bool = False
    """Whether the client asked for reasoning it can send back in ``encrypted_content``."""
    scope: Scope | None = None
    """The request's scope of the reasoning record (``None``: the record is not read)."""
    request: Request | None = None
    """The body as it was read (its model, its conversation's digests): the record's entries of the
    answer take that reading, so that the body is never read twice."""
    controls: Controlled | None = None
    """What the request's reasoning control asked and what was written for it (``None``: not read)."""


def scope_of(request: web.Request) -> bytes:
    """The reasoning record's scope of ``request`` (see :data:`THINKEXTRACT_SCOPE`)."""
    return Scope(request).value


class Scope:
    """The reasoning record's scope of one request (:func:`scope_of`), its keyed digest made the
    first time the record is read or written: a request that does neither (a short history with no
    turn to recall, whose answer moved no reasoning) costs none. The digest is of the request's
    headers, which do not change; an outer middleware's scope is taken when the request comes in."""

    __slots__ = ("_headers", "_value")

    def __init__(self, request: web.Request) -> None:
        given = request.get(THINKEXTRACT_SCOPE)
        self._value: bytes | None = None if given is None else bytes(given)
        self._headers = request.headers

    @property
    def value(self) -> bytes:
        if self._value is None:
            self._value = scope_for(credentials(self._headers))
        return self._value


async def rewrite_request(
    request: web.Request, surface: Surface, config: ThinkExtractConfig, record: ReasoningRecord | None
) -> Incoming:
    """Give the handler the request with its history in the upstream's form, reasoning the client
    did not send back restored from ``record`` where it holds some, and its reasoning control
    written where the upstream reads it (read from the same pass over the body; written on the
    history's result).

    Raises :class:`aiohttp.web.HTTPRequestTimeout` (connection closed after it) when the body stopped
    arriving; a client that left mid-body is ``Incoming("client_gone")``."""
    history = reads_history(config)
    if not history and not config.reasoning_controls:
        return Incoming("pass")
    server = request.get(THINKEXTRACT_SERVER)
    if server is not None and server != config.upstream_server:
        config = config.replaced(upstream_server=server)
    unread = read_already(request) is None
    body = await _read_bounded(request, config.max_body_bytes)
    if isinstance(body, str):  # unread: the history's outcome says why, unless it reads none
        return Incoming(body if history or body == "client_gone" else "pass")
    incoming, new = await _rewritten(request, surface, config, record, body, history)
    if new is not None:
        request[THINKEXTRACT_REQUEST_BODY] = new
    if new is not None or unread:  # what the handler reads, handed over once: as rewritten, or as it came
        hand_over(request, body if new is None else new)
    return incoming


async def _rewritten(
    request: web.Request,
    surface: Surface,
    config: ThinkExtractConfig,
    record: ReasoningRecord | None,
    body: bytes,
    history: bool,
) -> tuple[Incoming, bytes | None]:
    """:func:`rewrite_request` of the body read, and the body rewritten (``None``: it goes as it came)."""
    scope = Scope(request) if record is not None else None
    read: Request | None = None
    new: bytes | None = None
    try:
        if history:
            keyed = scope is not None
            # The scope's digest states, its own: only a body large enough to have its reading kept
            # takes them (a smaller one is read afresh), and only that one needs its scope now.
            carry = (STATES, scope.value) if scope is not None and len(body) >= CARRIED_BYTES else None
            side, large = SURFACES[surface], len(body) > _READ_ON_LOOP_BYTES
            reading: Request | None = None
            if large and carry is not None:  # an agent's next request is read on the loop after what it shares
                reading = Request.continuing(side, body, carry, _READ_ON_LOOP_BYTES)
            if reading is None and large:  # any other in a worker thread: its reading may be many messages' work
                reading = await _in_worker(Request, side, body, carry)
            elif reading is None:
                reading = Request(side, body, carry)
            keys, new, said = await _off_loop(_work(reading), _planned, reading, surface, config, keyed)
            if keys:  # asked for only with a record (keyed)
                recall = NOTHING if record is None or scope is None else await _recall(record, scope.value, keys)
                new = await _off_loop(_work(reading), transform_request, reading.side, reading, config, recall)
            # For the scope's next request, which takes what it learned: measured first (a first request's
            # every decoded value), where its reading's work runs.
            await _off_loop(_work(reading), reading.keep, new)
            read = reading
        else:
            # (a large one's controls read kept for the scope's next request, as a read history is)
            said = await _passed(surface, config, body, scope if len(body) >= CARRIED_BYTES else None)
        rewritten = new is not None  # by the history transform
        controlled = await _controls(request, surface, config, said)
        if controlled is not None and controlled.edits:  # written on the transform's result
            edited = await _off_loop(
                len(body), apply_edits, body if new is None else new, controlled.edits, controlled.appends
            )
            new = edited if edited is not None else new
    except RecursionError:  # nested deeper than a parser goes: no history to read in it
        return Incoming("too_deep" if history else "pass"), None
    except Exception:  # a bug must not fail the request: it goes as it came
        log.exception("gateway_mw: %s request transform failed; the request goes as it came", surface)
        return (Incoming("error", body, False, scope) if history else Incoming("pass")), None
    if controlled is not None:
        request[THINKEXTRACT_CONTROLS] = controlled
    if read is None:  # the history is not read: its outcome is ``pass``, whatever the controls did
        return Incoming("pass", controls=controlled), new
    return Incoming("rewritten" if rewritten else "unchanged", body, read.blobs, scope, read, controlled), new


_Said = tuple[Intent, ControlFields, "str | None"] | None
"""A body's reasoning control as read: the client's intent, the body's control fields, its model."""


async def _passed(surface: Surface, config: ThinkExtractConfig, body: bytes, scope: Scope | None) -> _Said:
    """The reasoning control of a body whose history goes on as it came: read on from the scope's
    kept reading when the body continues it (on the loop: only its own bytes are read), otherwise
    whole, as the history side reads one (in a worker thread when it is large)."""
    if not config.reasoning_controls:
        return None
    side = SURFACES[surface].controls
    if scope is None:  # nothing kept for it: read alone
        both = await _off_loop(len(body), read_with_texts, body, side)
    else:
        carry, large = (STATES, scope.value), len(body) > _READ_ON_LOOP_BYTES
        both = read_on(body, side, carry, _READ_ON_LOOP_BYTES if large else None)
        if both is None:
            both = await _in_worker(read_whole, body, side, carry) if large else read_whole(body, side, carry)
    return None if both is None else _intent(surface, body, *both)


def _read_controls(surface: Surface, body: bytes, read: Request, config: ThinkExtractConfig) -> _Said:
    """The reasoning control of ``body``, read with its history (``None``: controls are off, or the
    body is no JSON object)."""
    if not config.reasoning_controls:
        return None
    fields = read.controls
    texts: Texts
    if fields is not None:  # read in the history's pass; the texts when asked
        texts = read.texts
    else:
        both = read_with_texts(body, SURFACES[surface].controls)
        if both is None:
            return None
        fields, texts = both
    return _intent(surface, body, fields, texts)


def _intent(surface: Surface, body: bytes, fields: ControlFields, texts: Texts) -> _Said:
    model = fields.model
    return read_intent(body, SURFACES[surface], fields, texts), fields, model if isinstance(model, str) else None


async def _controls(
    request: web.Request, surface: Surface, config: ThinkExtractConfig, said: _Said
) -> Controlled | None:
    """What to write for the reasoning control read (asking the upstream about the model first
    when what it accepts depends on it)."""
    if said is None:
        return None
    intent, fields, model = said
    resolved = config.for_model(model)
    server = config.upstream_server
    info = None
    if model is not None and needs_model_info(intent, SURFACES[surface], server, resolved):
        source = app_setting(request, THINKEXTRACT_MODEL_INFO)
        if source is not None:
            info = await _model_info(source, model)
    return write_controls(intent, fields, SURFACES[surface], server, resolved, info)


async def _model_info(source: ModelInfoSource, model: str) -> ModelInfo | None:
    """What the upstream says of ``model``; nothing known when the source fails (never the request)."""
    try:
        return await source(model)
    except Exception:
        log.exception("gateway_mw: asking the upstream about model %r failed; writing as for any model", model)
        return None


def _work(request: Request) -> int:
    """How much work the history of ``request`` is (see :data:`OFF_LOOP_BYTES`): of an agent's next
    request, what it read of its own and the messages its digest hashes again, and what it learned
    already of the rest (:data:`CARRIED_WORK`)."""
    fresh_bytes, fresh_count = request.fresh
    if request.read is None:  # maybe read again, whole and masked (a lone surrogate escape): as its first read
        return fresh_bytes if fresh_bytes <= _READ_ON_LOOP_BYTES else OFF_LOOP_BYTES + 1
    unhashed = request.unhashed  # shared, but digested again: as much work as reading them afresh
    learned = request.count - fresh_count - unhashed
    return fresh_bytes + MESSAGE_WORK * (fresh_count + unhashed) + CARRIED_WORK * learned


async def _off_loop(size: int, work: Callable[..., _T], *args: Any) -> _T:
    """``work(*args)`` of ``size`` (:func:`_work`, or a body's bytes): in a worker thread when it is large."""
    return await _in_worker(work, *args) if size > OFF_LOOP_BYTES else work(*args)


async def _in_worker(work: Callable[..., _T], *args: Any) -> _T:
    return await asyncio.get_running_loop().run_in_executor(_workers(), work, *args)


_pool: tuple[int, ThreadPoolExecutor] | None = None


def _workers() -> ThreadPoolExecutor:
    """The request side's own threads, one per CPU (the work holds the GIL: more would only queue
    there), so that large bodies never take the loop's default executor from what else uses it
    (aiohttp's DNS lookups do). Made in each process that uses it: a forked child has none of its
    parent's threads."""
    global _pool
    if _pool is None or _pool[0] != os.getpid():
        _pool = (os.getpid(), ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="gateway_mw-request"))
    return _pool[1]


def _planned(
    read: Request, surface: Surface, config: ThinkExtractConfig, keyed: bool
) -> tuple[list[str], bytes | None, _Said]:
    """The record keys to look up for ``read`` and, when there are none, the new body already; and
    its reasoning control."""
    keys = record_keys(read.side, read, config) if keyed else []
    said = _read_controls(surface, read.body, read, config)
    return keys, None if keys else transform_request(read.side, read, config), said


_decode_recalled = msgspec.json.Decoder(Recalled).decode


async def _recall(record: ReasoningRecord, scope: bytes, keys: list[str]) -> Recall:
    """What the record holds for the turns of a body, by their ``keys`` (its own timeout bounds the wait)."""
    found = await record.get(scope, keys)
    out: dict[str, Recalled] = {}
    for key, value in found.items():
        try:
            out[key] = _decode_recalled(value)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue  # written by another version: no record
    return out


def remember(
    record: ReasoningRecord, incoming: Incoming, surface: Surface, said: list[Said], config: ThinkExtractConfig
) -> None:
    """Keep what the answers to a request said, after the response (written in the background; the
    keys of a large request, when an answer moved reasoning, worked out in a worker thread)."""
    body, scope = incoming.body, incoming.scope
    if body is None or scope is None or not said:  # no body read, or no record read for it
        return
    # The request side's reading when there is one: the body is not read again.
    request = body if incoming.request is None else incoming.request
    if (len(body) if isinstance(request, bytes) else _work(request)) <= OFF_LOOP_BYTES:
        _keep(record, scope, record_entries(SURFACES[surface], request, said, config))
        return
    task = asyncio.get_running_loop().run_in_executor(
        _workers(), record_entries, SURFACES[surface], request, said, config
    )
    _reading.add(task)
    task.add_done_callback(lambda done: _kept_off_loop(record, scope, done))


_reading: set[asyncio.Future[dict[str, Recalled]]] = set()
"""The large requests being read for their record entries (held: the loop keeps only weak references)."""


async def entries_handed_over() -> None:
    """Until every large request being read for its record entries has handed them to its record's
    ``put_soon`` (so that the record's ``drain()`` or ``close()`` then waits for their writes too)."""
    while _reading:  # a future's own callback (the hand-over) runs before gather's: FIFO
        await asyncio.gather(*_reading, return_exceptions=True)


def _kept_off_loop(record: ReasoningRecord, scope: Scope, done: asyncio.Future[dict[str, Recalled]]) -> None:
    _reading.discard(done)
    if done.cancelled():
        return
    error = done.exception()
    if isinstance(error, RecursionError):
        return  # nested deeper than a parser goes: nothing to keep
    if error is not None:
        log.error("gateway_mw: the reasoning record could not be written", exc_info=error)
        return
    _keep(record, scope, done.result())


_encode_entry = msgspec.json.Encoder().encode


def _keep(record: ReasoningRecord, scope: Scope, entries: dict[str, Recalled]) -> None:
    """Hand ``entries`` to the record, each answer's entry encoded once for all the keys it is kept
    under (its calls' ids, its items' ids, what it said, the conversation before it)."""
    if not entries:
        return
    encoded: dict[int, bytes] = {}  # by the entry's identity: the entries hold them meanwhile
    values = {}
    for key, entry in entries.items():
        value = encoded.get(id(entry))
        if value is None:
            value = encoded[id(entry)] = _encode_entry(entry)
        values[key] = value
    record.put_soon(scope.value, values)


def reads_history(config: ThinkExtractConfig) -> bool:
    """Whether any model may have its requests rewritten (``pass`` everywhere: bodies are not read)."""
    if config.history_reasoning != "pass":
        return True
    return any(p.history_reasoning not in (None, "pass") for p in config.profiles)


async def _read_bounded(request: web.Request, cap: int) -> bytes | str:
    """The request body, read once; or why it is left unread."""
    if request.method != hdrs.METH_POST or not request.body_exists:
        return "no_body"
    cached = read_already(request)  # an outer middleware read it already
    if cached is not None:
        return cached
    length = request.content_length
    if length is None:
        return "chunked"  # no length to check first: it streams on as it comes
    if length > cap:
        return "too_large"
    if request.headers.get(hdrs.CONTENT_ENCODING, "identity").strip().lower() != "identity":
        return "content_encoding"
    try:
        body = await _read_all(raw_payload(request), length)
    except RequestBodyTimeout:
        refused = web.HTTPRequestTimeout(text="the request body stopped arriving")
        refused.force_close()  # what is left of the body is never read
        raise refused from None
    except ConnectionError:  # the client left before its body's end: nothing to answer
        return "client_gone"
    return body  # (handed back by the caller, once it knows which body the handler reads)


_JOIN_OFF_LOOP_BYTES = 8 << 20
"""A body at least this large is joined in a worker thread, where ``bytes.join`` lets the loop run
while it copies (it lets go of Python's lock from 1 MiB up). Below it the copy is joined on the loop:
8 MiB take under a millisecond, and end to end the trip to a thread and back cost a 1 MiB request
about 0.35 ms of CPU, more than copying it eight times over."""


async def _read_all(payload: StreamReader, length: int) -> bytes:
    """The body's pieces as they come, joined once (``bytes.join`` of one piece is that piece)."""
    pieces = []
    while piece := await payload.readany():
        pieces.append(piece)
    if length < _JOIN_OFF_LOOP_BYTES:
        return b"".join(pieces)
    return await asyncio.get_running_loop().run_in_executor(_workers(), b"".join, pieces)
