"""The forwarding proxy: one pooled upstream session per worker, requests streamed both ways.

Every request under the prefix goes to the upstream with its method, path, query, headers (minus
hop-by-hop ones and the client's credentials when the gateway checks them) and body; the answer
comes back as it arrives. Failures map to the surface's own error shape: an upstream that cannot be
reached (refused, or no connection within ``connect_timeout``) is a 502, one that does not answer
within ``read_timeout`` a 504; one that fails after its answer has started cuts the client's
connection, with one WARNING line naming the request id. Streams are counted as they open and by how
they end; the usage the upstream reports is counted by client key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
from aiohttp import hdrs, web
from multidict import CIMultiDict
from yarl import URL

from ..aio import read_already
from ..config import Surface
from ..controls import ModelInfo
from ..exchange import BudgetSpent
from ..incoming import CLIENT_GONE, THINKEXTRACT_REQUEST_BODY, RequestBodyTimeout
from ..surfaces.registry import SURFACES
from .auth import ClientKeys
from .detect import detect_server
from .errors import body_timed_out, error_response, error_shape
from .heads import REQUEST_ID_HEADER, VIA, append_to, path_refusal, request_id, sendable, strip_hop_by_hop
from .logsafe import printable, request_line
from .metrics import Counters, GatewayMetrics
from .modelinfo import OllamaModels
from .notes import RequestNote, note_of
from .routes import parse_routes
from .settings import Secret, Settings, SettingsError, read_client_keys
from .tokenize import UpstreamTokenizer
from .usage import UsageTap

__all__ = ["Proxy", "UpstreamDropped"]

log = logging.getLogger("gateway_mw.proxy")

_NOT_FORWARDED = frozenset({"host", "expect", "accept-encoding"})
_AUTH = ("authorization", "x-api-key")
DETECT_TIMEOUT = 3.0  # seconds the upstream's GET /v1/models may take
DETECT_RETRY = 30.0  # seconds between two tries while it has not answered
PROCESS_SAMPLE_EVERY = 5.0  # seconds between two samples of a worker's memory, CPU and descriptors
STREAM_TYPES = frozenset().union(*(surface.stream_types for surface in SURFACES.values()))
"""Content types of a streamed answer: those any surface streams in (Ollama's native routes stream JSON lines)."""
_USAGE_TYPES = STREAM_TYPES | {"application/json"}
_PIECE = 256 * 1024


class UpstreamDropped(Exception):
    """The upstream failed after the response had started: the client connection is cut."""

    def __init__(self, message: str, response: web.StreamResponse) -> None:
        super().__init__(message)
        self.response = response


class Proxy:
    """Per-worker state: one pooled upstream session, the in-flight requests, the demo model."""

    disconnect_poll = 0.2
    """Seconds between checks for clients that went away while their upstream is silent."""

    def __init__(
        self,
        settings: Settings,
        metrics: GatewayMetrics | None = None,
        local_upstream: Callable[[], contextlib.AbstractAsyncContextManager[int]] | None = None,
    ) -> None:
        self.settings = settings
        self.local_upstream = local_upstream
        """Without ``settings.upstream``: serves the upstream on loopback for the app's life, giving its port."""
        self.counters = metrics.counters if metrics is not None else Counters()
        self.metrics = metrics if metrics is not None else GatewayMetrics(None, self.counters)
        self.keys = _client_keys(settings.client_keys)
        self.routes = parse_routes(settings.forward_routes, settings.prefix)
        self.draining = False
        """Set on SIGTERM: ``/readyz`` fails and answers close their connections, while serving goes on."""
        self.session: aiohttp.ClientSession | None = None
        self.origin = ""
        self.base_path = ""
        self._inflight: dict[asyncio.Task[Any], web.Request] = {}
        configured = settings.think_extract.upstream_server
        # The upstream's server, for the request side; asked of the upstream when set to auto.
        self.server: str | None = None if configured == "auto" else configured
        self.models: OllamaModels | None = None
        """What an Ollama upstream says of each model, once the session is open."""
        self.tokenizer: UpstreamTokenizer | None = None
        """The upstream's ``/tokenize``, once the session is open."""

    def reload_keys(self, env: Mapping[str, str]) -> int:
        """Read the client keys again (``client_keys_env``, ``client_keys_file``) and use them from the
        next request on; open requests go on. Returns how many there are now. Raises
        :class:`SettingsError`, the keys in use left as they were."""
        s = self.settings
        if s.client_keys_env is None and s.client_keys_file is None:
            raise SettingsError("no client keys are configured (client_keys_env, client_keys_file)")
        self.keys = _client_keys(read_client_keys(s, env))
        return len(self.keys)

    def set_upstream(self, upstream: str) -> None:
        url = URL(upstream)
        self.origin = f"{url.scheme}://{url.raw_authority}"
        self.base_path = url.raw_path.rstrip("/")

    @property
    def upstream(self) -> str:
        return self.origin + self.base_path

    async def context(self, app: web.Application) -> AsyncIterator[None]:
        """``cleanup_ctx``: the local upstream (if any), the session and the disconnect watcher."""
        async with contextlib.AsyncExitStack() as stack:
            if self.settings.upstream is not None:
                self.set_upstream(self.settings.upstream)
            elif self.local_upstream is not None:
                port = await stack.enter_async_context(self.local_upstream())
                self.set_upstream(f"http://127.0.0.1:{port}")
            else:
                raise SettingsError("no upstream: set one, or give the Proxy a local upstream to serve")
            s = self.settings
            self.session = await stack.enter_async_context(
                aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True),
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=s.connect_timeout, sock_read=s.read_timeout),
                    auto_decompress=False,
                    cookie_jar=aiohttp.DummyCookieJar(),  # one session serves every client: keep none
                    skip_auto_headers=(hdrs.USER_AGENT,),
                )
            )
            if self.settings.upstream is not None:
                own = self._own_headers()
                self.models = OllamaModels(self.session, self.upstream, own)
                stack.push_async_callback(self.models.close)
                self.tokenizer = UpstreamTokenizer(self.session, self.upstream, own, self.upstream_server)
            tasks = [asyncio.create_task(self._watch_disconnects()), asyncio.create_task(self._sample_process())]
            if self.server is None and self.settings.upstream is not None:
                tasks.append(asyncio.create_task(self._ask_upstream()))
            elif self.server is None:
                self.server = "generic"  # the embedded demo model
            try:
                yield
            finally:
                for task in tasks:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _sample_process(self) -> None:
        while True:
            self.metrics.sample_process()
            await asyncio.sleep(PROCESS_SAMPLE_EVERY)

    def upstream_server(self) -> str:
        """The server the upstream is: ``settings.think_extract.upstream_server``, or what it says of
        itself (asked in the background from the start); until it has said, ``generic``."""
        return self.server or "generic"

    async def model_info(self, model: str) -> ModelInfo | None:
        """``THINKEXTRACT_MODEL_INFO``: what the upstream says of ``model``, where it can be asked (an
        Ollama upstream); ``None`` (not known) otherwise."""
        if self.models is None or self.upstream_server() != "ollama":
            return None
        return await self.models(model)

    async def count_tokens(self, model: str | None, text: str) -> int | None:
        """``THINKEXTRACT_TOKEN_COUNTER``: ``text``'s tokens, as the upstream's ``/tokenize`` says,
        where it has one (vLLM, SGLang, llama.cpp); ``None`` (not counted) otherwise."""
        if self.tokenizer is None:
            return None
        return await self.tokenizer(model, text)

    def _own_headers(self) -> dict[str, str]:
        """The head fields of the gateway's own calls to the upstream: its key, if it has one."""
        key = self.settings.upstream_key
        return {} if key is None else {"Authorization": f"Bearer {key.value}"}

    async def _ask_upstream(self) -> None:
        """Ask the upstream which server it is, until it answers (never in a request's way)."""
        assert self.session is not None
        headers = self._own_headers()
        while self.server is None:
            found = await detect_server(self.session, self.upstream, headers, DETECT_TIMEOUT)
            if found is not None:
                self.server = found
                log.info("upstream %s is %s: replayed reasoning is written where it reads it", self.upstream, found)
                return
            await asyncio.sleep(DETECT_RETRY)

    async def _watch_disconnects(self) -> None:
        """Cancel handlers whose client is gone, even while their upstream sends nothing.

        aiohttp does not cancel handlers on disconnect by default (``handler_cancellation``), and a
        write is what would notice; a silent upstream (a long prompt, a stalled model) writes nothing.
        """
        while True:
            await asyncio.sleep(self.disconnect_poll)
            for task, request in list(self._inflight.items()):
                transport = request.transport
                if transport is None or transport.is_closing():
                    self._client_left(task, request)
                    task.cancel()

    def _client_left(self, task: asyncio.Task[Any], request: web.Request) -> None:
        """Count a client that went away before its answer's end, once: the watcher and a failed
        write may both see it."""
        if self._inflight.pop(task, None) is not None:
            whole = not request.body_exists or request.content.is_eof()
            self.client_left(request, "the answer" if whole else "its body")

    def client_left(self, request: web.Request, before: str) -> None:
        """Count a client that went away before the end of ``before`` (one DEBUG line)."""
        note_of(request).client_gone = True
        self.counters.client_disconnects += 1
        rid = request_id(request)
        log.debug("request %s: %s: the client left before the end of %s", rid, request_line(request), before)

    def _upstream_headers(self, request: web.Request, rid: str) -> CIMultiDict[str]:
        headers = strip_hop_by_hop(request.headers, _NOT_FORWARDED)
        headers[hdrs.ACCEPT_ENCODING] = "identity"  # the middleware reads plain bytes
        sent = [name for name in _AUTH if name in headers]
        key = self.settings.upstream_key
        if key is not None or self.keys:  # the client's credentials are for the gateway: never sent on
            for name in _AUTH:
                headers.popall(name, None)
        if key is not None:
            for name in sent or _AUTH:
                headers[name] = f"Bearer {key.value}" if name == "authorization" else key.value
        headers[REQUEST_ID_HEADER] = rid
        if self.settings.forwarded_headers:
            if request.remote:
                append_to(headers, "X-Forwarded-For", request.remote)
            headers.setdefault("X-Forwarded-Proto", request.scheme)
            append_to(headers, hdrs.VIA, VIA)
        return headers

    async def forward(self, request: web.Request) -> web.StreamResponse:
        start = time.monotonic()
        surface = self.settings.think_extract.surface_for_path(request.path)
        raw_path = request.rel_url.raw_path  # the origin form, even for an absolute-form target
        refusal = path_refusal(raw_path)
        if refusal is not None:
            return error_response(error_shape(self.settings, request.path), 400, "invalid_request", refusal)
        query = request.rel_url.raw_query_string
        url = URL(self.origin + self.base_path + raw_path + ("?" + query if query else ""), encoded=True)
        task = asyncio.current_task()
        assert task is not None and self.session is not None
        self._inflight[task] = request
        try:
            return await self._exchange(request, url, surface or "other", start)
        except asyncio.CancelledError:
            note = note_of(request)
            if not note.client_gone:
                raise
            # The disconnect watcher cancelled it: its client left. A handler that returns gets its
            # access line (aiohttp logs none for a cancelled one), as every other request does.
            if sys.version_info >= (3, 11):
                task.uncancel()
            return note.response if note.response is not None else web.Response(status=CLIENT_GONE)
        finally:
            self._inflight.pop(task, None)
            self.metrics.latency.labels(surface=surface or "other").observe(time.monotonic() - start)

    async def _exchange(self, request: web.Request, url: URL, surface: str, start: float) -> web.StreamResponse:
        assert self.session is not None
        rid = request_id(request)
        shape = error_shape(self.settings, request.path)
        headers = self._upstream_headers(request, rid)
        rewritten = request.get(THINKEXTRACT_REQUEST_BODY)  # the history in the upstream's form
        whole = rewritten if rewritten is not None else read_already(request)  # a body read whole already
        data: Any = request.content if request.body_exists else None
        if whole:
            headers[hdrs.CONTENT_LENGTH] = str(len(whole))  # the client's length was its own body's
            data = _pieces(whole)
        try:
            upstream = await self.session.request(
                request.method, url, headers=headers, data=data, allow_redirects=False
            )
        except aiohttp.ConnectionTimeoutError:
            self.counters.upstream_connect_errors += 1
            log.warning(
                "request %s: upstream %s: no connection within %gs", rid, self.upstream, self.settings.connect_timeout
            )
            return error_response(shape, 502, "upstream_unreachable", "the upstream model server is unreachable")
        except asyncio.TimeoutError:
            if (failed := self._body_failed(request, shape)) is not None:
                return failed  # the client's body timed out (raised as it was set), not the upstream
            self.counters.upstream_timeouts += 1
            log.warning("request %s: upstream %s: no answer within %gs", rid, self.upstream, self.settings.read_timeout)
            return error_response(shape, 504, "upstream_timeout", "the upstream model server did not answer in time")
        except aiohttp.ClientConnectorError as exc:
            self.counters.upstream_connect_errors += 1
            log.warning("request %s: upstream %s unreachable: %s", rid, self.upstream, exc.os_error.strerror or exc)
            return error_response(shape, 502, "upstream_unreachable", "the upstream model server is unreachable")
        except aiohttp.ClientError as exc:
            if (failed := self._body_failed(request, shape)) is not None:
                return failed
            self.counters.upstream_dropped += 1
            log.warning("request %s: upstream %s failed before answering: %s", rid, self.upstream, _describe(exc))
            return error_response(shape, 502, "upstream_error", "the upstream model server failed to answer")
        note = note_of(request)
        ctype = upstream.headers.get(hdrs.CONTENT_TYPE, "").partition(";")[0].strip().lower()
        stream = ctype in STREAM_TYPES and 200 <= upstream.status < 300
        tap = UsageTap() if request.method == hdrs.METH_POST and ctype in _USAGE_TYPES else None
        complete = opened = False
        outcome = "cancelled"  # unless it ends otherwise: the gateway's stop cancelled it
        try:
            headers, reason = sendable(strip_hop_by_hop(upstream.headers), upstream.reason)
            resp = web.StreamResponse(status=upstream.status, reason=reason)
            resp.headers.extend(headers)
            resp.headers.setdefault(REQUEST_ID_HEADER, rid)
            if self.settings.forwarded_headers:
                append_to(resp.headers, hdrs.VIA, VIA)
            if self.draining:
                resp.force_close()  # the client's next request goes to another instance
            await resp.prepare(request)
            note.status, note.response = upstream.status, resp
            if stream:
                self.metrics.open_streams.labels(surface=surface).inc()
                opened = True
            reader = upstream.content
            first = True
            while True:
                try:
                    piece = await reader.readany()
                except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                    self.counters.upstream_dropped += 1
                    timed_out = isinstance(exc, asyncio.TimeoutError)
                    outcome = "timed_out" if timed_out else "upstream_dropped"
                    why = f"no bytes for {self.settings.read_timeout:g}s" if timed_out else _describe(exc)
                    raise UpstreamDropped(f"upstream {self.upstream} failed mid-response: {why}", resp) from exc
                if first:
                    first = False
                    self.metrics.ttfb.labels(surface=surface).observe(time.monotonic() - start)
                if not piece:
                    break
                if tap is not None:
                    tap.feed(piece)
                await resp.write(piece)  # waits while the client's socket buffer is full
            complete = True
            await resp.write_eof()  # the stream's end (and what the middleware held) can find the client gone too
            outcome = "completed"
            return resp
        except BudgetSpent:  # the reasoning budget ended the answer: the middleware asks for the rest
            outcome = "budget"
            return resp
        except ConnectionResetError:  # any write to a client that left, the last one included
            task = asyncio.current_task()
            assert task is not None
            self._client_left(task, request)
            return resp  # aiohttp's own write_eof then fails quietly
        finally:
            if complete:
                upstream.release()
            else:
                upstream.close()  # closes the upstream connection: the model stops generating
            if opened:
                note.outcome = "client_gone" if note.client_gone else outcome
                self.metrics.open_streams.labels(surface=surface).dec()
                self.metrics.streams.labels(surface=surface, outcome=note.outcome).inc()
            if tap is not None and 200 <= upstream.status < 300:
                self._count_usage(tap, surface, note)

    def _body_failed(self, request: web.Request, shape: Surface | None) -> web.Response | None:
        """The answer when what failed the exchange was the client's body, not the upstream: a client
        that left before its body's end (499, nothing sent), or a body that stopped arriving (408, the
        connection closed); ``None`` when the body did not fail."""
        failed = request.content.exception() if request.body_exists else None
        if isinstance(failed, ConnectionError):
            task = asyncio.current_task()
            assert task is not None
            self._client_left(task, request)
            return web.Response(status=CLIENT_GONE)
        if isinstance(failed, RequestBodyTimeout):
            return body_timed_out(request, shape)
        return None

    def _count_usage(self, tap: UsageTap, surface: str, note: RequestNote) -> None:
        note.usage = tap.usage()
        for kind, tokens in note.usage.items():
            self.metrics.tokens.labels(surface=surface, key=note.alias, kind=kind).inc(tokens)
        if log.isEnabledFor(logging.DEBUG):  # only the per-request debug line shows it
            note.model = tap.model()


async def _pieces(body: bytes) -> AsyncIterator[memoryview]:
    """A body in memory, in pieces: each written as the upstream's connection takes it, where the
    whole written at once would be copied into the transport's buffer on the event loop."""
    view = memoryview(body)
    for start in range(0, len(body), _PIECE):
        yield view[start : start + _PIECE]


def _client_keys(keys: tuple[Secret, ...]) -> ClientKeys:
    return ClientKeys((key.alias, key.value) for key in keys)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientResponseError):
        # Its text holds the request's whole address (a key in its query) and its message quotes the
        # bytes the upstream sent (the request echoed, say): only the kind of fault is told.
        kind = str(exc.message).partition(":")[0].partition("\n")[0][:80]
        return printable(f"{type(exc).__name__} {exc.status}" + (f" ({kind})" if kind else ""))
    text = printable(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
