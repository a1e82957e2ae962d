"""The raw-JSON tools the surfaces share: values kept as bytes, and the rewriter of events too large
to hold, whose output must not depend on how the bytes were cut."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.rawjson import TopLevelKeys, as_int, edit
from gateway_mw.sse import event_type

KEYS = frozenset({b"index", b"sequence_number"})

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.sampled_from('ab"\\{}[],:\n\t\u00e9\U0001f600 index'), max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["index", "x", "type"]), inner, max_size=3)
    ),
    max_leaves=8,
)


def bump(key: bytes, value: bytes) -> bytes | None:
    return b"%d" % (int(value) + 1000) if key in KEYS and value.lstrip(b"-").isdigit() else None


def rewrite(data: bytes, cuts: list[int]) -> bytes:
    rewriter = TopLevelKeys(KEYS, bump)
    out, last = [], 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        out.append(rewriter.feed(data[last:cut]))
        last = cut
    out.append(rewriter.feed(data[last:]))
    out.append(rewriter.finish())
    return b"".join(out)


@given(
    st.dictionaries(st.sampled_from(["type", "index", "sequence_number", "delta", "item"]), values, min_size=1),
    st.integers(0, 50),
    st.integers(0, 50),
    st.sampled_from([(",", ":"), (", ", ": "), (" ,  ", " :\t")]),
    st.lists(st.integers(0, 10_000), max_size=12),
)
def test_top_level_keys_are_rewritten_whatever_the_cuts(
    doc: dict[str, Any], index: int, seq: int, separators: tuple[str, str], cuts: list[int]
) -> None:
    doc = {**doc, "index": index, "sequence_number": seq}
    data = b"event: x\ndata: " + json.dumps(doc, separators=separators).encode() + b"\n\n"
    out = rewrite(data, cuts)
    assert out == rewrite(data, [])  # chunking invariance
    assert out.startswith(b"event: x\ndata: ") and out.endswith(b"\n\n")
    assert json.loads(out[15:-2]) == {**doc, "index": index + 1000, "sequence_number": seq + 1000}
    # Nothing but the two values changed: not a byte more or less than their new spelling.
    grown = len(str(index + 1000)) - len(str(index)) + len(str(seq + 1000)) - len(str(seq))
    assert len(out) == len(data) + grown


def test_a_nested_or_quoted_index_is_left_alone_and_the_type_is_noted() -> None:
    data = b'data: {"type":"content_block_start","note":"\\"index\\":3","content_block":{"index":5},"index":1}\n\n'
    rewriter = TopLevelKeys(KEYS, bump)
    out = b"".join(rewriter.feed(data[i : i + 3]) for i in range(0, len(data), 3)) + rewriter.finish()
    assert out == data.replace(b'"index":1}', b'"index":1001}')
    assert rewriter.seen == {b"type": b'"content_block_start"', b"index": b"1"}


def test_event_type_is_read_from_the_event_line_or_the_first_key_only() -> None:
    assert event_type(b"event: response.completed\ndata: {}") == b"response.completed"
    assert event_type(b'data: { "type" : "response.created", "x":1') == b"response.created"
    assert event_type(b': comment\nid: 4\ndata: {"type":"a"}') == b"a"
    # The model's text may hold any name: it never decides.
    assert event_type(b'data: {"delta":"response.created","type":"response.output_text.delta"}') is None
    assert event_type(b'data: {"type":"response.output_text.delta","delta":"response.created"') == (
        b"response.output_text.delta"
    )


def test_whole_numbers_are_read_as_the_sdks_read_them_and_edits_keep_raw_values() -> None:
    spellings = (b"4", b"4.0", b"4.5", b'"4"', b'" 4 "', b'"4a"', b'"-4"', b"true")
    assert [as_int(msgspec.Raw(v)) for v in spellings] == [4, 4, None, 4, 4, None, None, None]
    assert edit(b'{"a":1.50,"index":0.0,"b":"\\u00e9"}', {"index": 3}) == b'{"a":1.50,"index":3,"b":"\\u00e9"}'
