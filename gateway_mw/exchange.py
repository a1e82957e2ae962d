"""One exchange on a translated route: what decides and counts it (:class:`Session`), and the
payload writer that translates its response on the way out (:class:`TranslatingWriter`).

The middleware puts the writer in place of the request's own before the handler runs, so every
byte of the response passes through it whatever the handler does: return a ``web.Response``,
prepare and write a ``StreamResponse`` by hand, or use ``aiohttp_sse``.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any, NamedTuple

from aiohttp import ClientConnectionResetError, HttpVersion11, hdrs, web
from aiohttp.abc import AbstractStreamWriter
from multidict import CIMultiDict

from .aio import app_setting, restore_writer
from .channels import Said
from .config import Surface, ThinkExtractConfig
from .incoming import Incoming, remember
from .marks import NewId
from .pipeline import StreamPipeline, transform_body, translate_body
from .record import DEFAULT_MAX_ENTRY_BYTES, ReasoningRecord, RecordBase
from .stats import ThinkExtractStats
from .surfaces import Counts
from .surfaces.budgeting import BudgetCounter, Collector
from .surfaces.registry import SURFACES
from .surfaces.usage import with_counted
from .tokencount import THINKEXTRACT_REASONING_TOKENS, THINKEXTRACT_TOKEN_COUNTER, ReasoningTokens, count_tokens

__all__ = ["THINKEXTRACT_BUDGET", "BudgetSpent", "Budgeted", "Session", "TranslatingWriter"]

log = logging.getLogger("gateway_mw")


class Budgeted(NamedTuple):
    """What came of a reasoning budget the gateway enforced on one answer."""

    counted: int
    """The reasoning events that went to the client (servers stream one token per event)."""
    outcome: str
    """``within``, ``continued``, ``continuation_failed``, ``not_continued``, ``client_gone`` or
    ``not_relayed``."""


THINKEXTRACT_BUDGET = web.RequestKey("THINKEXTRACT_BUDGET", Budgeted)
"""Set on a request whose reasoning budget the gateway enforced, once it is known what came of it."""

_PASS, _SSE, _JSON = "pass", "sse", "json"  # how the writer treats a response (_SSE: any stream)
_HELD_PIECE = 64 * 1024


class Session:
    """One response on a translated route: the decisions and the bookkeeping."""

    def __init__(
        self,
        request: web.Request,
        surface: Surface,
        config: ThinkExtractConfig,
        stats: ThinkExtractStats | None,
        new_id: NewId,
    ) -> None:
        self.request = request
        self.surface = surface
        self.definition = SURFACES[surface]
        self.config = config
        self.new_id = new_id
        self.stats = stats
        self.record: ReasoningRecord | None = None  # where what the answers said is kept, if anywhere
        self.incoming: Incoming | None = None
        self.made: list[str] = []  # the ids the translator made up (a Responses body's items)
        if stats is not None:
            stats.surface(surface).seen += 1

    def response_kind(self, status: int, headers: CIMultiDict[str], compressing: bool) -> str:
        """``"sse"``, ``"json"``, or the reason the response passes through untouched."""
        if not 200 <= status < 300:
            return "status"
        if status == 204:
            return "empty"
        if status == 206:
            return "partial"  # a byte range of a document is not a document
        encoding = headers.get(hdrs.CONTENT_ENCODING, "identity").strip().lower()
        if encoding != "identity" and not compressing:
            return "content_encoding"  # bytes the handler encoded itself: not ours to read
        ctype = headers.get(hdrs.CONTENT_TYPE, "").partition(";")[0].strip().lower()
        if ctype in self.definition.stream_types:
            return _SSE  # a stream, in the framing of the surface
        if ctype == "application/json" or ctype.endswith("+json"):
            return _JSON
        return "content_type"

    def passed(self, reason: str) -> None:
        if self.stats is not None:
            self.stats.passed(self.surface, reason)

    def keep(self, record: ReasoningRecord, incoming: Incoming) -> None:
        """Keep what this response's answers say in ``record``, for the request's next turns."""
        self.record, self.incoming = record, incoming
        made_up, made = self.new_id, self.made

        def new_id(prefix: str) -> str:
            item_id = made_up(prefix)
            made.append(item_id)
            return item_id

        self.new_id = new_id

    def pipeline(self, config: ThinkExtractConfig) -> StreamPipeline:
        """A stream's translator, keeping what the model wrote while the record wants it."""
        record = self.record
        # A record of the package's own says how large an entry it stores; beyond that, no transcript.
        limit = record.max_entry_bytes if isinstance(record, RecordBase) else DEFAULT_MAX_ENTRY_BYTES
        return StreamPipeline(self.surface, config, self.new_id, keep=record is not None, keep_limit=limit)

    def remember(self, said: list[Said]) -> None:
        """After the response: what its answers said goes to the record (in the background)."""
        if self.record is None or self.incoming is None:
            return
        try:
            remember(self.record, self.incoming, self.surface, said, self.config)
        except Exception:  # the record is a convenience: never a failed response
            log.exception("gateway_mw: the reasoning record could not be written")

    def history(self, outcome: str) -> None:
        if self.stats is not None:
            counter = self.stats.surface(self.surface).history
            counter[outcome] = counter.get(outcome, 0) + 1

    def budgeted(self, counted: int, outcome: str) -> None:
        """The reasoning budget the gateway enforced: ``counted`` reasoning events, and its outcome."""
        self.request[THINKEXTRACT_BUDGET] = Budgeted(counted, outcome)
        if self.stats is not None:
            self.stats.budgeted(self.surface, counted, outcome)

    def translated(self, counts: Counts, error: BaseException | None) -> None:
        if counts.reasoning_written:
            self.request[THINKEXTRACT_REASONING_TOKENS] = ReasoningTokens(counts.reasoning_events, "reasoning events")
        if self.stats is not None:
            self.stats.translated(self.surface, counts, error is not None)

    async def rewrite_response(self, response: web.Response, body: bytes) -> None:
        """Translate a ``web.Response`` body before aiohttp prepares (and maybe compresses) it."""
        kind = self.response_kind(response.status, response.headers, compressing=False)
        if kind not in (_SSE, _JSON):
            self.passed(kind)
            return
        if len(body) > self.config.max_body_bytes:
            self.passed("too_large")
            return
        if kind == _SSE:
            new, counts, error = transform_body(self.surface, body, True, self.config, self.new_id)
            self.translated(counts, error)
        else:
            new = await self.translate_json(body)
        if new is not None:
            response.headers.popall(hdrs.CONTENT_LENGTH, None)
            response.body = new

    async def translate_json(self, body: bytes | bytearray) -> bytes | None:
        """A JSON body translated (``None``: nothing changed), counted and kept in the record, its
        usage given the reasoning count it lacks where a token counter is installed."""
        counter = app_setting(self.request, THINKEXTRACT_TOKEN_COUNTER)
        new, counts, error, to_count = translate_body(
            self.surface, body, self.config, self.new_id, count=counter is not None
        )
        self.translated(counts, error)
        if self.record is not None:
            self.remember(self.definition.said_of_body(bytes(body), tuple(self.made)))
        if to_count is None or counter is None:
            return new
        tokens = to_count.known
        if tokens is None:
            tokens = await count_tokens(counter, to_count.model, to_count.text)
        filled = with_counted(self.definition.usage, body if new is None else new, tokens) if tokens else None
        if filled is None or tokens is None:
            return new
        self.request[THINKEXTRACT_REASONING_TOKENS] = ReasoningTokens(
            tokens, "tokenizer" if to_count.known is None else "server"
        )
        return filled


class BudgetSpent(ClientConnectionResetError):
    """What a handler's write raises once the reasoning budget ended the answer it is relaying: the
    error of a client that has gone, so that any handler stops reading its upstream (the server
    stops generating); the middleware then asks for the rest of the answer."""


class TranslatingWriter(AbstractStreamWriter):
    """Stands in for the request's payload writer and translates on the way through.

    SSE bodies stream through a :class:`StreamPipeline`; JSON bodies are collected (up to
    ``max_body_bytes``) and rewritten at EOF, headers held until then so that ``Content-Length``
    can be corrected. While nothing goes out, a write to a client that has gone away fails as
    aiohttp's own writer would, so that the handler stops reading its upstream.
    """

    def __init__(self, inner: AbstractStreamWriter, session: Session) -> None:
        self._inner = inner
        self._session = session
        self._mode: str | None = None  # None until the headers decide: _PASS, _SSE or _JSON
        self._chunking = False
        self._compression: tuple[str, int | None] | None = None
        self._pipeline: StreamPipeline | None = None
        self._held_headers: tuple[str, CIMultiDict[str]] | None = None
        self._body = bytearray()
        self._eof = False
        self.length: int | None = None
        self.budget: BudgetCounter | None = None
        """Set before the handler runs: the reasoning budget the gateway enforces on this stream."""
        self.collect: Collector | None = None
        """Set with :attr:`budget` when the client asked for no stream: the body the stream makes."""

    # Counters aiohttp reads from its writer.
    @property
    def buffer_size(self) -> int:
        return self._inner.buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        self._inner.buffer_size = value

    @property
    def output_size(self) -> int:
        return self._inner.output_size

    @output_size.setter
    def output_size(self, value: int) -> None:
        self._inner.output_size = value

    @property
    def transport(self) -> Any:
        return self._inner.transport

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def undecided(self) -> bool:
        return self._mode is None

    def pass_through(self) -> None:
        self._mode = _PASS

    # -- AbstractStreamWriter -------------------------------------------------------------------

    # Chunking and compression reach the real writer only with the headers, so that a JSON body
    # abandoned by a failing handler leaves it clean for aiohttp's error response.
    def enable_chunking(self) -> None:
        self._chunking = True

    def enable_compression(self, encoding: str = "deflate", strategy: int | None = None) -> None:
        self._compression = (encoding, strategy)  # aiohttp compresses what we write: we see plain bytes

    async def write_headers(self, status_line: str, headers: CIMultiDict[str]) -> None:
        if self.cut:
            return  # the response aiohttp is handed after a continuation: its answer went out already
        if self._mode is None:
            self._mode = self._choose(status_line, headers)
        if self._mode == _JSON or (self._mode == _SSE and self.collect is not None):
            self._held_headers = (status_line, headers)
            return
        await self._send_headers_inner(status_line, headers, self.length if self._mode == _PASS else None)

    async def _send_headers_inner(self, status_line: str, headers: CIMultiDict[str], length: int | None) -> None:
        inner = self._inner
        if self._chunking:
            inner.enable_chunking()
        if self._compression is not None:
            inner.enable_compression(*self._compression)
        inner.length = length  # a translated body's length is not the handler's
        await inner.write_headers(status_line, headers)

    def send_headers(self) -> None:
        if self._held_headers is None:
            self._inner.send_headers()

    def write(self, chunk: bytes | bytearray | memoryview) -> Coroutine[Any, Any, None]:
        # Not a coroutine itself: an SSE event hands on the real writer's coroutine, one frame
        # fewer for every event the handler writes.
        if self._mode == _SSE:
            assert self._pipeline is not None
            if self.budget is not None:
                return self._within_budget(self.budget, chunk)
            out = self._pipeline.feed(bytes(chunk))
            if out:
                return self._inner.write(out)
            self._check_open()
            return _nothing()
        if self._mode == _JSON:
            return self._collect(chunk)
        return self._inner.write(chunk)

    def said(self) -> list[Said]:
        """What the answers of the stream this writer translated said, so far (nothing when it
        translated none, or the record keeps nothing)."""
        return [] if self._pipeline is None else self._pipeline.said()

    @property
    def kept_whole(self) -> bool:
        """Whether :meth:`said` holds all the model wrote (no stream translated: nothing to hold)."""
        return self._pipeline is None or self._pipeline.kept_whole

    @property
    def cut(self) -> bool:
        """The budget ended this answer: the rest is the continuation's."""
        return self.budget is not None and self.budget.cut

    def _within_budget(self, budget: BudgetCounter, chunk: bytes | bytearray | memoryview) -> Coroutine[Any, Any, None]:
        """:meth:`write` of a stream under a budget: what the pipeline gives, up to the cut."""
        if budget.cut:
            raise BudgetSpent("the reasoning budget is spent")
        assert self._pipeline is not None
        out = budget.feed(self._pipeline.feed(bytes(chunk)))
        if budget.cut:  # neither write_eof nor abort ends the stream: the continuation does
            self._eof = True
            self._session.translated(self._pipeline.counts, self._pipeline.error)
        if out:
            if self.collect is None:
                return self._inner.write(out)
            self.collect.feed(out)
        self._check_open()
        return _nothing()

    async def _collect(self, chunk: bytes | bytearray | memoryview) -> None:
        self._check_open()
        self._body += chunk
        if len(self._body) > self._session.config.max_body_bytes:
            await self._give_up_json()

    def _check_open(self) -> None:
        """Fail like aiohttp's writer when the client is gone, though nothing is written now."""
        transport = self._inner.transport
        if transport is None or transport.is_closing():
            raise ClientConnectionResetError("Cannot write to closing transport")

    async def write_eof(self, chunk: bytes = b"") -> None:
        if self._eof:
            return
        self._eof = True
        try:
            await self._end(chunk)
        finally:
            if not self.cut:  # (a cut answer goes on in its continuation, which ends it)
                restore_writer(self._session.request, self, self._inner)

    async def _end(self, chunk: bytes) -> None:
        """:meth:`write_eof`: the rest of the response, as its kind ends."""
        if self._mode == _SSE:
            assert self._pipeline is not None
            out = self._pipeline.feed(bytes(chunk)) if chunk else b""
            budget = self.budget
            if budget is None:
                await self._inner.write_eof(out + self._end_stream(self._pipeline))
                return
            out = budget.feed(out + self._end_stream(self._pipeline, keep=False))
            out += budget.finish()
            if not budget.cut:  # one answer, as without a budget: kept as such
                self._session.budgeted(budget.counted, "within")
                self._keep(self._pipeline)
            if self.collect is not None:
                self.collect.feed(out)
                if not budget.cut:
                    await self.send_collected()
            elif not budget.cut:
                await self._inner.write_eof(out)
            elif out:  # spent at the very end: the continuation ends the stream
                await self._inner.write(out)
        elif self._mode == _JSON:
            if chunk:
                self._body += chunk
            await self._finish_json()
        else:
            await self._inner.write_eof(chunk)

    async def drain(self) -> None:
        await self._inner.drain()

    # -- internals ------------------------------------------------------------------------------

    def _choose(self, status_line: str, headers: CIMultiDict[str]) -> str:
        session = self._session
        status = int(status_line.split(" ", 2)[1])
        kind = session.response_kind(status, headers, self._compression is not None)
        if kind == _SSE:
            if hdrs.CONTENT_LENGTH in headers:
                # The usual proxy copies the upstream length; ours differs, so stream it chunked.
                if session.request.version < HttpVersion11:
                    session.passed("http10_length")
                    return _PASS
                del headers[hdrs.CONTENT_LENGTH]
                self._chunking = True
                headers[hdrs.TRANSFER_ENCODING] = "chunked"
            self._pipeline = session.pipeline(session.config)
            return _SSE
        if kind == _JSON:
            return _JSON
        session.passed(kind)
        return _PASS

    def _end_stream(self, pipeline: StreamPipeline, keep: bool = True) -> bytes:
        """What the pipeline still holds at the end of a stream; the response is counted, and kept
        in the record (``keep``; else the caller keeps it once it knows the answer is whole)."""
        out = pipeline.finish()
        self._session.translated(pipeline.counts, pipeline.error)
        if keep:
            self._keep(pipeline)
        return out

    def _keep(self, pipeline: StreamPipeline) -> None:
        if self._session.record is not None:
            self._session.remember(pipeline.said())

    def _take_held_headers(self) -> tuple[str, CIMultiDict[str]]:
        assert self._held_headers is not None
        held, self._held_headers = self._held_headers, None
        return held

    async def _give_up_json(self) -> None:
        """A JSON body too large to hold: send what we have as it is, and the rest as it comes."""
        status_line, headers = self._take_held_headers()
        self._mode = _PASS
        self._session.passed("too_large")
        body, self._body = self._body, bytearray()
        await self._send_headers_inner(status_line, headers, self.length)
        await self._write_held(body)

    async def _write_held(self, body: bytes | bytearray) -> None:
        """Send a held body in pieces, so that the transport's backpressure applies and it is never
        copied whole into the transport's buffer."""
        view = memoryview(body)
        try:
            for start in range(0, len(body), _HELD_PIECE):
                await self._inner.write(view[start : start + _HELD_PIECE])
        finally:
            view.release()

    async def _finish_json(self) -> None:
        status_line, headers = self._take_held_headers()
        body: bytes | bytearray = self._body
        self._body = bytearray()
        if len(body) > self._session.config.max_body_bytes:  # the last write took it over
            self._session.passed("too_large")
            await self._send_headers_inner(status_line, headers, self.length)
            await self._write_held(body)
            await self._inner.write_eof()
            return
        new = await self._session.translate_json(body)
        if new is not None:
            body = new
            if hdrs.CONTENT_LENGTH in headers:
                headers[hdrs.CONTENT_LENGTH] = str(len(body))
        await self._send_headers_inner(status_line, headers, None)
        await self._inner.write_eof(bytes(body) if isinstance(body, bytearray) else body)

    async def send_collected(self) -> None:
        """The answer of a client that asked for no stream: the body its stream made, with the
        stream's status and headers made a JSON body's."""
        assert self.collect is not None
        status_line, headers = self._take_held_headers()
        body = self.collect.body()
        headers[hdrs.CONTENT_TYPE] = "application/json"
        if self._compression is None:
            headers.popall(hdrs.TRANSFER_ENCODING, None)
            headers[hdrs.CONTENT_LENGTH] = str(len(body))
            self._chunking = False
        else:  # the writer compresses it: its length is not the body's
            headers.popall(hdrs.CONTENT_LENGTH, None)
        await self._send_headers_inner(status_line, headers, None)
        await self._inner.write_eof(body)

    async def abort(self) -> None:
        """The handler raised: send what the translator holds, so no character is lost."""
        if self._eof or self._mode != _SSE or self._pipeline is None:
            return
        self._eof = True
        try:
            out = self._end_stream(self._pipeline)
            if self.collect is not None:
                self.collect.feed(out)
                await self.send_collected()
            elif out:
                await self._inner.write(out)
        except Exception:
            log.debug("gateway_mw: could not flush after the handler failed", exc_info=True)


async def _nothing() -> None:
    """What :meth:`TranslatingWriter.write` awaits for a write that sends nothing now."""
