"""SGLang's own ``encrypted_content`` read back: its text, or nothing for anything that is not whole."""

from __future__ import annotations

import base64
import zlib

from hypothesis import given
from hypothesis import strategies as st

from gateway_mw.history.serverblobs import decode_server_blob

from .servers import sglang_blob

PREFIX = "sglang-reasoning-v1."


@given(st.text())
def test_the_text_sglang_packed_is_read_back(text: str) -> None:
    assert decode_server_blob(sglang_blob(text)) == text


def test_a_model_looping_in_its_reasoning_is_read_back_whole() -> None:
    """Reasoning that repeats itself compresses far beyond what prose does: a small blob may hold a
    megabyte of it."""
    looping = "Wait, let me check that again. " * 30_000
    assert len(sglang_blob(looping)) < len(looping) // 64
    assert decode_server_blob(sglang_blob(looping)) == looping


def test_a_blob_that_is_not_sglangs_or_not_whole_is_not_read() -> None:
    packed = zlib.compress(b"I call the tool.")
    bomb = base64.urlsafe_b64encode(zlib.compress(b"a" * 10_000_000)).decode()
    cases = [
        "gw1:SSBjYWxsIHRoZSB0b29sLg==",  # the gateway's own: not this reader's
        "gAAAAABpZtK3mH8xYz2kL9nP4qR7sT0uW",  # ciphertext
        PREFIX + base64.urlsafe_b64encode(packed[:-1]).decode(),  # cut short
        PREFIX + base64.urlsafe_b64encode(packed + b"more").decode(),  # with bytes after the stream
        PREFIX + base64.urlsafe_b64encode(zlib.compress(b"\xff\xfe")).decode(),  # not UTF-8
        PREFIX + "not base64!",
        PREFIX + bomb,  # inflates 10 MB from 10 KB: refused, not inflated
    ]
    assert [decode_server_blob(case) for case in cases] == [None] * len(cases)
