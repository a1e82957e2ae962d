"""The chat fast paths against the full path, for the settings and spellings the other tests leave out.

``tests/chat/test_fastpath.py`` holds every fast path to the full path with the default settings
and plain keys. Here the same streams run under the settings that change what a block's first
text, a tag alone or a held chunk gives (``trim_tag_edges``, ``trim_reasoning_tail``,
``strip_whitespace``, ``code_aware``, ``placement="leading"``, ``stream_mode="buffered"``,
``start_with_reasoning``, separators, the ``reasoning`` field and its mirror, tool-call markers, the
harmony protocol), with keys spelled with ``\\uXXXX`` escapes, duplicate and nested members, one
event per feed, cut in pieces, or in one read.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig

from ..chatlayouts import LAYOUTS, body
from ..hypothesis_examples import examples
from ..spelling import SPACING, Spelling
from ..ssecompare import events_of
from .support import EXTRA, TEXT, WORDS, run_events

HARMONY = st.sampled_from(
    [
        "<|channel|>",
        "analysis",
        "<|message|>",
        "<|end|>",
        "<|start|>",
        "assistant",
        "final",
        "<|channel|>analysis<|message|>",
        "<|end|><|start|>assistant<|channel|>final<|message|>",
        "<|",
        "|>",
    ]
)
FAMILY = st.sampled_from(["<tool_call>", "<tool_", "call>", "<think", "</thi", "nk>", "`", "```\n", "\n"])
DELTAS = st.one_of(WORDS, WORDS, TEXT, HARMONY, FAMILY)
CONFIGS = st.builds(
    ThinkExtractConfig,
    protocol=st.sampled_from(["tags", "tags", "harmony"]),
    stream_mode=st.sampled_from(["live", "buffered"]),
    start_with_reasoning=st.booleans(),
    separator=st.sampled_from(["", "\n"]),
    placement=st.sampled_from(["anywhere", "leading"]),
    code_aware=st.booleans(),
    strip_whitespace=st.booleans(),
    trim_tag_edges=st.booleans(),
    trim_reasoning_tail=st.booleans(),
    max_buffer_bytes=st.sampled_from([5, 16, 65536]),
    chat_reasoning_field=st.sampled_from(["reasoning_content", "reasoning"]),
    chat_mirror_reasoning=st.booleans(),
    tool_call_markers=st.sampled_from([(), ("<tool_call>",)]),
)
MEMBERS = ["extra", "usage", "tool_calls", "role", "reasoning_content", "reasoning", "content", "index", "logprobs"]


@st.composite
def hostile_stream(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """A stream in one server's layout, keys reordered and spaced, some keys escaped, members added
    (a duplicate of a key the translator reads included): the stream and its events."""
    layout = draw(st.sampled_from(LAYOUTS))
    rnd = draw(st.randoms(use_true_random=False))
    comma, colon = draw(st.sampled_from(SPACING))
    ascii_only, reorder = draw(st.booleans()), draw(st.booleans())
    slash, lt = draw(st.booleans()), draw(st.booleans())
    key_escapes = draw(st.sampled_from([0.0, 0.2, 0.5]))

    def key(value: str) -> str | None:
        if not value or rnd.random() >= key_escapes:
            return None
        i = rnd.randrange(len(value))  # one letter of the key as an escape
        return '"' + value[:i] + f"\\u{ord(value[i]):04x}" + value[i + 1 :] + '"'

    encode = Spelling(comma, colon, ascii_only, slash, lt, rnd if reorder else None, key).encode

    start = draw(st.sampled_from(["", "<think>", "<think>\n", "Hello", "<think>r</think>", "<|channel|>analysis"]))
    deltas = [start, *draw(st.lists(DELTAS, min_size=1, max_size=40))]
    docs = [body(layout, "", first=True)] + [body(layout, d) for d in deltas] + [body(layout, None, "stop")]
    for doc in docs[1:-1]:
        if draw(st.integers(0, 4)) == 0:
            where = draw(st.sampled_from([doc, doc["choices"][0], doc["choices"][0]["delta"]]))
            value = draw(st.one_of(EXTRA, st.sampled_from(["<think>", "y", None, 0])))
            where[draw(st.sampled_from(MEMBERS))] = value
    events = [b"data: " + encode(doc).encode() + b"\n\n" for doc in docs] + [b"data: [DONE]\n\n"]
    return b"".join(events), events


@settings(max_examples=examples(400), deadline=None)
@given(case=hostile_stream(), config=CONFIGS, piece=st.sampled_from([0, 0, 1, 700, 1500, 1 << 20]))
def test_every_setting_and_spelling_gives_what_the_full_path_gives(
    case: tuple[bytes, list[bytes]], config: ThinkExtractConfig, piece: int
) -> None:
    upstream, events = case
    feeds = events if not piece else [upstream[i : i + piece] for i in range(0, len(upstream), piece)]
    fast, fast_counts = run_events(feeds, False, config)
    full, full_counts = run_events(events, True, config)
    assert events_of(fast) == events_of(full)
    assert fast_counts == full_counts
