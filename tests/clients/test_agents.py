"""The OpenAI Agents SDKs on chat completions, through the proxy with its default settings.

The JavaScript SDK (``@openai/agents``) reads only ``message.reasoning`` / ``delta.reasoning``; the
proxy used to write reasoning it took out of the tags only as ``reasoning_content``, so this SDK showed
none. With the default ``chat_reasoning_field="both"`` it shows the reasoning once, whichever name the
upstream wrote: inline tags, ``reasoning`` only (vLLM), ``reasoning_content`` only (SGLang, llama.cpp).

The Python SDK (``openai-agents``) reads ``reasoning_content`` into a reasoning item's summary and,
in a stream, ``reasoning`` into its content: streamed, the one item carries the text in each place
once (docs/clients.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Proxy
from .drive_agents import run_js, run_python
from .expect import PLAIN, demo_turn
from .scripted import ScriptedUpstream

# The scripted upstream's styles: inline tags, SGLang's null-spelled tags, and a server's own field.
UPSTREAMS = ["demo", "scripted", "sglang", "native-reasoning", "native-reasoning_content"]


def turn_of(upstream: str) -> tuple[str, str]:
    turn = demo_turn() if upstream == "demo" else PLAIN
    return turn.reasoning, turn.answer


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_agents_js_shows_the_reasoning_once(
    upstream: str,
    stream: bool,
    node_modules: Path,
    demo_proxy: Proxy,
    scripted_proxy: Proxy,
    scripted: ScriptedUpstream,
) -> None:
    proxy = demo_proxy if upstream == "demo" else scripted_proxy
    reasoning, answer = turn_of(upstream)
    shown = run_js(node_modules, proxy.base, upstream, stream)
    assert shown == {
        "output": answer,
        "reasoning": [reasoning],
        "items": ["reasoning_item", "message_output_item"],
        "deltas": [reasoning] if stream else None,
    }


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_agents_python_shows_the_reasoning_once_in_each_place(
    upstream: str, stream: bool, demo_proxy: Proxy, scripted_proxy: Proxy, scripted: ScriptedUpstream
) -> None:
    proxy = demo_proxy if upstream == "demo" else scripted_proxy
    reasoning, answer = turn_of(upstream)
    shown = run_python(proxy.base, upstream, stream)
    if stream:
        events = {"response.reasoning_summary_text.delta": reasoning, "response.reasoning_text.delta": reasoning}
        assert shown == {"output": answer, "summary": [[reasoning]], "content": [[reasoning]], "events": events}
    else:
        assert shown == {"output": answer, "summary": [[reasoning]], "content": [[]], "events": None}
