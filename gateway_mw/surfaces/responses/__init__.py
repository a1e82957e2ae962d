"""OpenAI Responses: inline reasoning → ``reasoning`` output items.

Every ``message`` item's ``output_text`` runs through one Scanner (a channel per message item; a
reasoning block may span its parts, a tag may not). A reasoning run becomes a ``reasoning`` output
item placed before the answer text that follows it; a reasoning run after answer text closes the
message item, and the answer after it goes on in a new message item whose id is derived from the
upstream one (``<id>_1``, ``<id>_2``…).

One idea per module:

* ``wire`` — what is read of an upstream event (leniently, as the SDKs read it), and event writing;
* ``numbering`` — the stream's one numbering map (``output_index``, ``sequence_number``), applied to
  every event that goes out, translated, forwarded or passed on unread;
* ``items`` — the client items of a channel and the events that write them;
* ``stream`` — the translator: which upstream event touches which channel;
* ``fastpath`` — steady text deltas, one or a run, without the per-event rebuild;
* ``rebuild`` — whole ``output`` lists through the same step logic: the non-stream body, and the
  output ``response.completed`` repeats.
"""

from .stream import ResponsesStream, transform_body, translate_stream

__all__ = ["ResponsesStream", "transform_body", "translate_stream"]
