"""A carried reading at its edges, as a hostile client meets it: messages equal as values but written
otherwise, settings that change between two requests of one scope, agents that rewind, requests of
one scope read at once in worker threads. Each request is told what the same request read afresh is."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import Request
from gateway_mw.history.carry import CarriedStates
from gateway_mw.surfaces.registry import SURFACES

from .strategies import chat_requests, configs
from .test_carried_readings import _body, _told


def _reordered(message: Any, order: list[int]) -> Any:
    """``message`` with its keys in another order (the same object as a value)."""
    if not isinstance(message, dict):
        return message
    keys = list(message)
    ranked = sorted(range(len(keys)), key=lambda at: order[at % len(order)] if order else at)
    return {keys[at]: message[keys[at]] for at in ranked}


@given(
    surface=st.sampled_from(["chat", "ollama"]),
    earlier=chat_requests(),
    more=chat_requests(),
    order=st.lists(st.integers(0, 9), max_size=8),
    config=configs(),
)
def test_a_message_whose_keys_come_in_another_order_is_rewritten_as_afresh(
    surface: str, earlier: dict[str, Any], more: dict[str, Any], order: list[int], config: ThinkExtractConfig
) -> None:
    """Two chat messages with the same keys and values in another order are equal as values, but the
    transform writes a changed message's keys in its own order: the later request's rewritten body is
    the one its own bytes give, not the earlier request's order."""
    side = SURFACES[surface]  # type: ignore[index]
    states = CarriedStates()
    first = Request(side, _body(earlier), (states, b"scope"))
    _told(side, first, config)
    first.keep()
    later = {**more, "messages": [_reordered(m, order) for m in earlier["messages"]] + more["messages"]}
    carried = Request(side, _body(later), (states, b"scope"))
    assert _told(side, carried, config) == _told(side, Request(side, _body(later)), config)
