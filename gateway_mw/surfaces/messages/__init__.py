"""Anthropic messages: inline reasoning → ``thinking`` or ``redacted_thinking`` content blocks.

``messages_policy`` decides the block: ``unsigned`` gives a ``thinking`` block carrying a gateway
signature (:func:`gateway_signature`), ``redacted`` a ``redacted_thinking`` block whose ``data`` is
the base64 of the reasoning text, ``off`` leaves the surface alone.

Stream: one Scanner per upstream ``text`` block. Each run of one kind becomes a block of its own;
output blocks are numbered 0, 1, 2… in the order they start, and every other upstream block
(``tool_use``…) is renumbered to follow. One numbering map (upstream index → output index) applies
to every event that carries an ``index``, also to those passed on unread: events of unknown types,
and events over ``max_event_bytes`` (:meth:`MessagesStream.oversized`, on their bytes as they go by).
An event the translator leaves as it is goes out with its bytes unchanged; a renumbered one has only
the value of its ``"index"`` keys replaced (all of them: parsers keep the last). Events msgspec's
strict decoder rejects but the SDKs' ``json`` accepts (``"index":0.0``, lone surrogate escapes) are
read with the standard library and translated alike. Three paths, cheapest first:

* **fast forward** (``fast_forward``, one event or a run of them): while the one open text block is
  steady in one kind, each event is decoded alone into the fields the translator reads; a
  ``text_delta`` of that block whose text holds none of its scanner's triggers goes out as it came,
  renumbered, or renamed into a ``thinking_delta`` on its bytes, without the scanner;
* **unchanged** (``event``): the few fields read here are decoded into a small struct; answer text
  the scanner passes through goes out as the same bytes (renumbered if it must be), reasoning text
  it passes whole gets the same rename as on the fast path, where that provably is the rewrite;
* **rewritten**: the events of the new blocks are written afresh; an upstream event's fields the
  translator does not own ride, as their raw bytes, on the first event written for it.

Non-stream: each ``text`` block of ``content`` is split into the blocks of its runs, in order.

One idea per module:

* ``events`` — what is read of an upstream event (leniently, as the SDKs read it), and event writing;
* ``blocks`` — the numbering map and the output blocks a text block's runs become;
* ``oversized`` — an event over the cap, renumbered on its bytes as they go by;
* ``reference`` — the translator, plainly: every event decoded, translated and written;
* ``fastpath`` — the production translator: the reference, and a layer that passes steady text
  without decoding event by event (giving exactly what the reference gives);
* ``body`` — the non-stream body.
"""

from .body import transform_body
from .events import SIGNATURE_PREFIX, gateway_signature
from .fastpath import MessagesStream, translate_stream
from .reference import MessagesReference

__all__ = [
    "SIGNATURE_PREFIX",
    "MessagesReference",
    "MessagesStream",
    "gateway_signature",
    "transform_body",
    "translate_stream",
]
