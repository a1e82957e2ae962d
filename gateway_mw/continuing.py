"""The aiohttp side of a reasoning budget the gateway enforces: once the first answer's writer has
cut it (:class:`~gateway_mw.exchange.TranslatingWriter` with a surface's budget counter),
the same handler is asked again for the continuation, and what it writes goes to the client as the
rest of the same answer (:class:`ContinuingWriter`). What differs by surface is the surface's
:class:`~gateway_mw.surfaces.budgeting.BudgetSide`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from multidict import CIMultiDict

from .aio import clone_with, read_already
from .config import ThinkExtractConfig
from .controls.continuation import continuation
from .exchange import Session, TranslatingWriter
from .incoming import THINKEXTRACT_REQUEST_BODY, THINKEXTRACT_SERVER
from .pipeline import StreamPipeline
from .surfaces.budgeting import BudgetSide, Collector, Joiner, StreamFilter, joined_said, prefill

__all__ = ["ContinuingWriter", "continue_answer", "whole_body"]

log = logging.getLogger("gateway_mw")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def continuation_config(config: ThinkExtractConfig, model: str | None) -> ThinkExtractConfig:
    """The settings the continuation is read with: the model's, its answer starting after the
    reasoning (the prefill closed it), resolved already (no family or profile applies again)."""
    resolved = config.for_model(model)
    return resolved.replace(start_with_reasoning=False, families=False, profiles=())


class ContinuingWriter(TranslatingWriter):
    """The continuation's payload writer: its status and headers are not the client's (the first
    answer's went out); a stream's events go on, translated and joined (the counter's joiner);
    anything else (a refusal, an error) is not sent, and the first answer is ended instead."""

    def __init__(
        self,
        first: TranslatingWriter,
        inner: AbstractStreamWriter,
        session: Session,
        config: ThinkExtractConfig,
        side: BudgetSide,
        joined: Joiner,
        echo: StreamFilter,
    ) -> None:
        super().__init__(inner, session)
        self._side = side
        self._echo = echo
        self._first = first
        self._config = config
        self.joined = joined
        self.answered = False
        """The continuation came as a stream, and its events went to the client."""
        self.ended = False
        self._compressing = False  # the handler asked for it: its headers say so, its bytes come plain
        self._whole: bytearray | None = None
        """The continuation came as one JSON body though a stream was asked for: its bytes so far."""

    def enable_chunking(self) -> None:
        pass  # the stream's framing is the first answer's

    def enable_compression(self, encoding: str = "deflate", strategy: int | None = None) -> None:
        self._compressing = True  # the first answer's writer compresses the client's stream, if it does

    async def write_headers(self, status_line: str, headers: CIMultiDict[str]) -> None:
        session = self._session
        status = int(status_line.split(" ", 2)[1])
        kind = session.response_kind(status, headers, self._compressing)
        if kind in ("sse", "json"):
            self._pipeline = session.pipeline(self._config)
            self.answered = True
            if kind == "json":  # read whole, then sent on as the stream of the same answer
                self._whole = bytearray()
        else:
            log.warning("gateway_mw: the continuation after a reasoning budget was answered %s", status_line)

    def send_headers(self) -> None:
        pass

    def write(self, chunk: bytes | bytearray | memoryview) -> Coroutine[Any, Any, None]:
        if self._whole is not None:
            if len(self._whole) + len(chunk) <= self._config.max_body_bytes:
                self._whole += chunk
            else:  # past what the gateway reads of a body: no answer to send on
                self._whole, self.answered = None, False
                self._pipeline = None
        elif self._pipeline is not None and not self.ended and not self.joined.done:
            # (after the answer's end nothing goes to the client, nor to the record)
            out = self.joined.feed(self._pipeline.feed(self._echo.feed(bytes(chunk))))
            if out:
                return self._send(out, end=False)
        self._check_open()
        return _nothing()

    async def _send(self, out: bytes, end: bool) -> None:
        """To the client: the stream's bytes, or (no stream asked for) into the body it makes."""
        collect = self._first.collect
        if collect is None:
            await (self._inner.write_eof(out) if end else self._inner.write(out))
            return
        collect.feed(out)
        if end:
            await self._first.send_collected()

    async def write_eof(self, chunk: bytes = b"") -> None:
        if self.ended:
            return
        if self._pipeline is None:
            await self.end_first()
            return
        raw = bytes(chunk)
        if self._whole is not None:
            stream = self._side.as_stream(bytes(self._whole) + raw)
            if stream is None:
                self.answered = False
                self._pipeline = None
                await self.end_first()
                return
            raw = stream
        self.ended = True
        joined = self.joined
        raw = self._echo.feed(raw) + self._echo.finish()
        out = joined.feed(self._pipeline.feed(raw) + self._pipeline.finish())
        if not joined.done:  # its stream ended without the answer's end: a failure, which the joiner ends
            self.answered = False
        await self._send(out + joined.finish(), end=True)

    async def end_first(self) -> None:
        """No continuation, or what there was of it ended early: the answer ends where it is, with
        the reason ``length`` (chat's ``finish_reason``, messages' ``stop_reason: max_tokens``…)."""
        if self.ended:
            return
        self.ended = True
        out = b""
        if self._pipeline is not None:
            try:
                held = self._pipeline.feed(self._echo.finish()) + self._pipeline.finish()
                out = self.joined.feed(held) + self.joined.finish()
            except Exception:  # what it held is lost, the stream still ends well-formed
                log.exception("gateway_mw: the continuation's held text could not be sent")
        await self._send(out + self.joined.closing(), end=True)

    async def abort(self) -> None:
        try:
            await self.end_first()
        except Exception:
            log.debug("gateway_mw: could not end the answer after the continuation failed", exc_info=True)


async def continue_answer(
    request: web.Request,
    handler: Handler,
    session: Session,
    first_writer: TranslatingWriter,
    inner: AbstractStreamWriter,
    first: web.StreamResponse | None,
    error: BaseException | None,
) -> web.StreamResponse:
    """The first answer's reasoning was cut at ``budget``: ask ``handler`` for the rest, and send it
    on as the same answer. ``first`` is what the handler returned for the first answer (``None``:
    it raised ``error``, the budget's own error as a rule)."""
    budget = first_writer.budget
    side = session.definition.budget
    assert budget is not None and side is not None
    if _gone(request):  # the client left meanwhile: nothing to continue for
        session.budgeted(budget.counted, "client_gone")
        _remember(session, first_writer, None)
        if error is not None:
            raise error
        assert first is not None
        return first
    config = continuation_config(session.config, budget.model)
    joined = budget.joiner(config.max_event_bytes)
    pair = config.tag_pairs[0]
    text = prefill(pair.open, budget.reasoning, config.reasoning_budget_message, pair.close)
    echo = side.echo(text, config.max_event_bytes)
    writer = ContinuingWriter(first_writer, inner, session, config, side, joined, echo)
    answer = first if first is not None else web.StreamResponse()  # what aiohttp is handed: sent already
    body = read_already(request)
    server = request.get(THINKEXTRACT_SERVER) or config.upstream_server
    continued = None if body is None else continuation(body, text, side, session.surface, server, budget.counted)
    if continued is None:
        session.budgeted(budget.counted, "not_continued")
        await writer.abort()
        _remember(session, first_writer, None)
        return answer
    clone = clone_with(request, continued, writer)
    clone[THINKEXTRACT_REQUEST_BODY] = continued
    try:
        response = await handler(clone)
        if not response.prepared:  # a response the handler returned: it goes through the writer
            await response.prepare(clone)
        if not _gone(request):  # ended as aiohttp ends any response its handler returned
            await response.write_eof()
    except Exception:
        log.warning("gateway_mw: the continuation after a reasoning budget failed", exc_info=True)
    if writer.answered and writer.ended:
        session.budgeted(budget.counted, "continued")
    else:  # a client that left meanwhile is no failure of the upstream's
        session.budgeted(budget.counted, "client_gone" if _gone(request) else "continuation_failed")
        await writer.abort()
    _remember(session, first_writer, writer)
    return answer


def _remember(session: Session, first: TranslatingWriter, then: ContinuingWriter | None) -> None:
    """Keep in the record the one answer the client got: the reasoning of the cut answer as the
    client got it, then what the continuation wrote (none: it was not asked for, or failed before
    its stream), found by the keys an uncut answer's are (:func:`joined_said`). What an uncut
    answer would not leave in the record, this one does not either: a reasoning the server split
    itself (the gateway read none of it in the answer's text), an answer past what an entry holds."""
    budget = first.budget
    if session.record is None or budget is None:
        return
    first_said = first.said()
    if not any(said.original for said in first_said):
        return  # the server's own reasoning (or past an entry's size): not kept, as an uncut answer's is not
    if then is not None and not then.kept_whole:
        return
    resolved = session.config.for_model(budget.model)
    pair = resolved.tag_pairs[0]
    opening = "" if resolved.start_with_reasoning else pair.open  # as the uncut answer's text would read
    said = [] if then is None else then.said()
    session.remember(joined_said(opening, budget.reasoning, pair.close, first_said, said))


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def whole_body(session: Session, collect: Collector, stream: bytes) -> bytes:
    """The body a whole stream makes, translated (by ``collect``): the answer of a client that asked
    for no stream, when the handler returned the stream it was given in one piece."""
    pipeline = StreamPipeline(session.surface, session.config, session.new_id)
    collect.feed(pipeline.feed(stream) + pipeline.finish())
    session.translated(pipeline.counts, pipeline.error)
    return collect.body()


async def _nothing() -> None:
    """What :meth:`ContinuingWriter.write` awaits for a write that sends nothing now."""
