"""What the Responses transform made of an item is carried to the scope's next request only when it
came of the item alone: an item the record was read for (a reference to a message, a reasoning item
the gateway made that lost its text) is worked on again, for the next request's record may hold
another answer. So a carried reading tells a request, under any record, what reading it afresh does."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.config import ThinkExtractConfig
from gateway_mw.history import Recalled, Request, record_keys, transform_request
from gateway_mw.history.carry import CARRIED_BYTES, CarriedStates
from gateway_mw.surfaces.registry import SURFACES

from .strategies import REASONING, configs, responses_requests, tagged

SIDE = SURFACES["responses"]


def _body(request: dict[str, Any]) -> bytes:
    return json.dumps({**request, "x_pad": "." * CARRIED_BYTES}).encode()  # large enough to carry its reading


def _record(keys: list[str], data: st.DataObject) -> dict[str, Recalled]:
    """A record that holds an answer for every key a request names (or for none of them)."""
    if not data.draw(st.booleans()):
        return {}
    return {
        key: Recalled(reasoning=data.draw(REASONING) or "recalled", original=data.draw(st.none() | tagged()))
        for key in keys
    }


def _keys(request: Request, config: ThinkExtractConfig) -> list[str]:
    return record_keys(SIDE, request, config) + record_keys(SIDE, request)


@given(
    data=st.data(),
    shared=st.integers(0, 12),
    settings=st.tuples(configs(), configs()),
    same_settings=st.booleans(),
)
def test_a_carried_responses_reading_tells_what_reading_afresh_does_under_any_record(
    data: st.DataObject, shared: int, settings: tuple[ThinkExtractConfig, ThinkExtractConfig], same_settings: bool
) -> None:
    earlier, more = data.draw(responses_requests()), data.draw(responses_requests())
    later = {**more, "input": earlier["input"][:shared] + more["input"]}
    first_config, later_config = settings[0], settings[0] if same_settings else settings[1]
    states = CarriedStates()
    first = Request(SIDE, _body(earlier), (states, b"scope"))
    transform_request(SIDE, first, first_config, _record(_keys(first, first_config), data))
    first.keep()
    carried = Request(SIDE, _body(later), (states, b"scope"))
    afresh = Request(SIDE, _body(later))
    keys = _keys(afresh, later_config)
    assert _keys(carried, later_config) == keys
    record = _record(keys, data)
    assert transform_request(SIDE, carried, later_config, record) == transform_request(
        SIDE, afresh, later_config, record
    )
