"""OpenAI Responses: inline reasoning → ``reasoning`` output items.

Every ``message`` item's ``output_text`` is one channel of the core's ``Channels`` (a reasoning
block may span its parts, a tag may not). A reasoning run becomes a ``reasoning`` output item placed
before the answer text that follows it; a reasoning run after answer text closes the message item,
and the answer after it goes on in a new message item whose id is derived from the upstream one
(``<id>_1``, ``<id>_2``…).

One idea per module, each above the ones it uses:

* ``heads`` — what is read of an upstream event (leniently, as the SDKs read it), and event writing;
* ``numbering`` — the stream's one numbering map (``output_index``, ``sequence_number``), applied to
  every event that goes out, translated, forwarded or passed on unread;
* ``items`` — the client items of a message item and the events that write them;
* ``messages`` — the open message items on the channel core, and what each event does to one;
* ``oversized`` — events too large to hold, renumbered on their bytes as they go by;
* ``body`` — a non-stream body's plain output, its items written directly (``rebuild`` its reference);
* ``rebuild`` — whole ``output`` lists through the same step logic: the non-stream body, and the
  output ``response.completed`` repeats;
* ``reference`` — the translator: which upstream event touches which item (the whole behaviour);
* ``fastpath`` — a layer over it: steady text deltas, one or a run, written without running it;
* ``stream`` — the translator as deployed: the reference with the layer.
"""

from .reference import ResponsesReference
from .stream import ResponsesStream, transform_body, translate_stream

__all__ = ["ResponsesReference", "ResponsesStream", "transform_body", "translate_stream"]
