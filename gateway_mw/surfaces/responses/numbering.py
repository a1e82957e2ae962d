"""The one numbering map of a Responses stream, applied to every event that goes out.

Upstream items are known by their *ordinal*: their ``output_index`` when the upstream sends one,
else their place in the order of ``output_item.added`` (llama.cpp sends no index at all; its events
name their item by ``item_id``). The client sees ``output_index`` values 0, 1, 2… in the order it
sees items added, and ``sequence_number`` 0, 1, 2… over every event that carries one.
"""

from __future__ import annotations

import msgspec

from ...rawjson import TopLevelKeys, as_int, as_str
from .heads import Head, item_id_of, whole

__all__ = ["Numbering"]

_KEYS = frozenset({b"sequence_number", b"output_index"})


class Numbering:
    __slots__ = ("_by_ordinal", "_next_index", "_next_ordinal", "_ordinal_of_id", "seq")

    def __init__(self) -> None:
        self.seq = 0  # the next sequence_number
        self._next_index = 0  # the next client output_index
        self._next_ordinal = 0  # the ordinal of the next item an upstream without indexes adds
        self._by_ordinal: dict[int, int] = {}  # upstream ordinal → client index, items sent as they are
        self._ordinal_of_id: dict[str, int] = {}

    def take_seq(self) -> int:
        seq = self.seq
        self.seq += 1
        return seq

    def take_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    # -- upstream items -----------------------------------------------------------------------------

    def ordinal(self, head: Head) -> int | None:
        """The upstream item an event is about, by its index or else by its item id."""
        index = whole(head.output_index)
        if index is not None:
            return index
        item_id = item_id_of(head)
        if item_id is None and head.item is not None:
            item_id = as_str(head.item.id)
        return self._ordinal_of_id.get(item_id) if item_id is not None else None

    def added(self, head: Head, item_id: str | None) -> int:
        """The ordinal of the item an ``output_item.added`` introduces."""
        index = whole(head.output_index)
        ordinal = index if index is not None else self._next_ordinal
        self._next_ordinal = max(self._next_ordinal, ordinal + 1)
        if item_id is not None:
            self._ordinal_of_id[item_id] = ordinal
        return ordinal

    def pass_item(self, ordinal: int) -> int:
        """A new client index for an upstream item that goes to the client as it is."""
        index = self._by_ordinal[ordinal] = self.take_index()
        return index

    def point(self, ordinal: int, index: int) -> None:
        """Events about upstream item ``ordinal`` go to client item ``index`` from now on."""
        self._by_ordinal[ordinal] = index

    def client_index(self, ordinal: int | None) -> int | None:
        return self._by_ordinal.get(ordinal) if ordinal is not None else None

    # -- events passed on unread ---------------------------------------------------------------------

    def raw_rewriter(self) -> TopLevelKeys:
        """A rewriter of an event's bytes into this numbering: for an event passed on unread
        (invalid JSON, a type not read here, one too large to hold)."""

        def value_for(key: bytes, value: bytes) -> bytes | None:
            if key == b"sequence_number":
                return b"%d" % self.take_seq()
            if key == b"output_index":
                ordinal = as_int(msgspec.Raw(value))
                if ordinal is None:
                    return None
                index = self._by_ordinal.get(ordinal)
                if index is None and rewriter.seen.get(b"type") == b'"response.output_item.added"':
                    index = self.pass_item(ordinal)
                    self._next_ordinal = max(self._next_ordinal, ordinal + 1)
                return None if index is None else b"%d" % index
            return None

        rewriter = TopLevelKeys(_KEYS, value_for)
        return rewriter

    def renumber_raw(self, raw: bytes) -> bytes:
        rewriter = self.raw_rewriter()
        return rewriter.feed(raw) + rewriter.finish()
