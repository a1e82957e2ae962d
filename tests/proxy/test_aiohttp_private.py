"""The private parts of aiohttp the gateway builds on (``gateway_mw/proxy/connections.py``: its
connections, server and runner; ``gateway_mw/proxy/logsafe.py``: its access log): still there,
still what the gateway relies on, and none of the names its subclasses add taken by aiohttp. The
middleware's own are pinned in ``tests/middleware/test_aio.py``. A failure names what an aiohttp
release changed."""

from __future__ import annotations

import asyncio
import inspect

import aiohttp
import pytest
from aiohttp import web
from aiohttp.base_protocol import BaseProtocol
from aiohttp.web_log import AccessLogger
from aiohttp.web_protocol import RequestHandler

from gateway_mw.proxy import connections
from gateway_mw.proxy.connections import GatewayRunner
from gateway_mw.proxy.logsafe import GatewayAccessLogger

_OVERRIDDEN = [
    (web.AppRunner, "_make_server", ("self",)),  # rebuilt as the gateway's server
    (AccessLogger, "_format_line", ("self", "request", "response", "time")),  # each value made safe
    (RequestHandler, "finish_response", ("self", "request", "resp", "start_time")),  # the request's end
    (RequestHandler, "connection_made", ("self", "transport")),
    (RequestHandler, "data_received", ("self", "data")),
    (RequestHandler, "connection_lost", ("self", "exc")),
    (RequestHandler, "handle_error", ("self", "request", "status", "exc", "message")),  # a refused request
]


@pytest.mark.parametrize(("owner", "name", "parameters"), _OVERRIDDEN, ids=lambda v: getattr(v, "__name__", None))
def test_each_method_the_gateway_overrides_is_aiohttps_with_the_same_parameters(
    owner: type, name: str, parameters: tuple[str, ...]
) -> None:
    method = getattr(owner, name, None)
    assert method is not None, f"aiohttp {aiohttp.__version__} no longer has {owner.__name__}.{name}"
    assert tuple(inspect.signature(method).parameters) == parameters, (
        f"aiohttp {aiohttp.__version__}: {owner.__name__}.{name} takes other arguments now"
    )


def test_the_protocol_attributes_the_connections_read_are_aiohttps() -> None:
    # _loop (every timer of a connection) and _reading_paused (a body the gateway stopped reading is
    # not a silent client) are BaseProtocol's; RequestHandler keeps its state in slots.
    assert {"_loop", "_reading_paused"} <= set(BaseProtocol.__slots__)


async def test_the_server_aiohttp_builds_keeps_the_arguments_the_gateway_passes_on() -> None:
    app = web.Application(handler_args={"max_field_size": 12345})
    runner = GatewayRunner(app, header_timeout=5.0, body_timeout=5.0)
    await runner.setup()
    try:
        server = runner.server
        assert isinstance(server, connections._Server)
        assert server._kwargs["max_field_size"] == 12345  # the application's handler_args, passed on
        assert server._loop is asyncio.get_running_loop()
        protocol = server()
        assert isinstance(protocol, connections._Connection)
        assert protocol.max_field_size == 12345
        # The slots the gateway's connection adds and the methods it defines clash with no name of
        # aiohttp's but the overrides (a slot of the same name would shadow aiohttp's state).
        theirs: set[str] = set()
        for klass in RequestHandler.__mro__:
            theirs |= set(getattr(klass, "__slots__", ())) | set(vars(klass))
        ours = {n for n in vars(connections._Connection) if not n.startswith("__")}
        assert set(connections._Connection.__slots__) <= ours
        assert not hasattr(protocol, "__dict__")  # every attribute it sets is a slot, compared here
        assert ours & theirs == {name for owner, name, _ in _OVERRIDDEN if owner is RequestHandler}
    finally:
        await runner.cleanup()


def test_the_access_logger_is_aiohttps_with_one_method_replaced() -> None:
    assert issubclass(GatewayAccessLogger, AccessLogger)
    assert {n for n in vars(GatewayAccessLogger) if not n.startswith("__")} - {"_abc_impl"} == {"_format_line"}
