"""Hypothesis strategies for requests that carry earlier turns, shared by the request-side tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from gateway_mw import ThinkExtractConfig

MODELS = st.sampled_from(["llama-3.1-8b", "qwen3-8b", "deepseek-r1", "gpt-oss-20b", "kimi-k2-thinking", "glm-4.5"])
SERVERS = st.sampled_from(["vllm", "sglang", "llamacpp", "ollama", "openai", "anthropic", "generic"])
FORMS = st.sampled_from(["auto", "pass", "field", "inline", "strip"])
SCOPES = st.sampled_from(["auto", "all", "current_turn", "tool_turns"])
WORDS = st.sampled_from(["It is 4.", "", " ", "a\nb", "é🙂", "<b>x</b>", "`<think>`"])
REASONING = st.sampled_from(["", "2+2", "first\nsecond", " spaced ", "🙂 ok"])


@st.composite
def configs(draw: st.DrawFn) -> ThinkExtractConfig:
    return ThinkExtractConfig(history_reasoning=draw(FORMS), history_scope=draw(SCOPES), upstream_server=draw(SERVERS))


@st.composite
def tagged(draw: st.DrawFn) -> str:
    """An answer, maybe with the model's tags in front as a client without a gateway keeps them."""
    answer = draw(WORDS)
    if draw(st.booleans()):
        return f"<think>{draw(REASONING)}</think>{answer}"
    return answer


@st.composite
def chat_assistant(draw: st.DrawFn, n: int) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant"}
    shape = draw(st.sampled_from(["string", "parts", "null", "absent"]))
    if shape == "string":
        msg["content"] = draw(tagged())
    elif shape == "parts":
        parts: list[Any] = [{"type": "text", "text": draw(tagged())}]
        if draw(st.booleans()):
            parts.insert(0, {"type": "thinking", "thinking": draw(REASONING)})
        msg["content"] = parts
    elif shape == "null":
        msg["content"] = None
    for key in ("reasoning_content", "reasoning"):
        if draw(st.booleans()):
            msg[key] = draw(REASONING)
    if draw(st.booleans()):
        msg["reasoning_details"] = [{"type": "reasoning.text", "text": draw(REASONING)}]
    if draw(st.booleans()):
        msg["tool_calls"] = [{"id": f"call_{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    return msg


@st.composite
def chat_requests(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[Any] = [{"role": "system", "content": "Be brief."}]
    for n in range(draw(st.integers(1, 4))):
        messages.append({"role": "user", "content": f"question {n}"})
        for k in range(draw(st.integers(0, 2))):
            assistant = draw(chat_assistant(10 * n + k))
            messages.append(assistant)
            if "tool_calls" in assistant:
                messages.append({"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "5"})
    return {"model": draw(MODELS), "messages": messages, "stream": draw(st.booleans())}


@st.composite
def messages_assistant(draw: st.DrawFn, n: int) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"role": "assistant", "content": draw(tagged())}
    blocks: list[Any] = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["thinking", "redacted", "foreign_redacted", "anthropic_thinking"]))
        reasoning = draw(REASONING)
        if kind == "thinking":
            blocks.append(
                {"type": "thinking", "thinking": reasoning, "signature": draw(st.sampled_from(["", "gw1:x"]))}
            )
        elif kind == "redacted":
            import base64

            blocks.append({"type": "redacted_thinking", "data": base64.b64encode(reasoning.encode()).decode()})
        elif kind == "foreign_redacted":
            blocks.append({"type": "redacted_thinking", "data": "EuYBCkQYAiJA/8w0LwH+u3cO5YL9wQ=="})
        else:
            blocks.append({"type": "thinking", "thinking": reasoning, "signature": "EqQBCkgIAhABGAIiQL"})
    if draw(st.booleans()):
        blocks.append({"type": "text", "text": draw(tagged())})
    if draw(st.booleans()):
        blocks.append({"type": "tool_use", "id": f"toolu_{n}", "name": "f", "input": {}})
    return {"role": "assistant", "content": blocks}


@st.composite
def messages_requests(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[Any] = []
    for n in range(draw(st.integers(1, 4))):
        messages.append({"role": "user", "content": f"question {n}"})
        for k in range(draw(st.integers(0, 2))):
            assistant = draw(messages_assistant(10 * n + k))
            messages.append(assistant)
            tools = [b for b in assistant["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
            if tools and isinstance(assistant["content"], list):
                result = {"type": "tool_result", "tool_use_id": tools[0]["id"], "content": "5"}
                messages.append({"role": "user", "content": [result]})
    return {"model": draw(MODELS), "max_tokens": 64, "messages": messages}


@st.composite
def responses_turn(draw: st.DrawFn, n: int) -> list[Any]:
    from gateway_mw.marks import encode_blob, random_id

    items: list[Any] = []
    for k in range(draw(st.integers(0, 2))):
        kind = draw(
            st.sampled_from(["full", "summary", "content_null", "content_empty", "blob", "reference", "foreign"])
        )
        reasoning = draw(REASONING)
        rid = random_id("rs_") if kind != "foreign" else f"rs_upstream{n}{k}"
        summary = [{"type": "summary_text", "text": reasoning}]
        content = [{"type": "reasoning_text", "text": reasoning}]
        if kind == "full":
            items.append({"type": "reasoning", "id": rid, "summary": summary, "content": content})
        elif kind == "summary":
            items.append({"type": "reasoning", "id": rid, "summary": summary})
        elif kind == "content_null":
            items.append(
                {"type": "reasoning", "id": rid, "summary": summary, "content": None, "encrypted_content": None}
            )
        elif kind == "content_empty":
            items.append({"type": "reasoning", "id": rid, "summary": summary, "content": []})
        elif kind == "blob":
            items.append({"type": "reasoning", "summary": [], "encrypted_content": encode_blob(reasoning)})
        elif kind == "reference":
            items.append({"type": "item_reference", "id": rid})
        else:
            items.append({"type": "reasoning", "id": rid, "summary": [], "encrypted_content": "gAAAAABfore1gn"})
    if draw(st.booleans()):
        text = draw(tagged())
        items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
    if draw(st.booleans()):
        items.append({"type": "function_call", "call_id": f"call_{n}", "name": "f", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"call_{n}", "output": "5"})
    return items


@st.composite
def responses_requests(draw: st.DrawFn) -> dict[str, Any]:
    items: list[Any] = []
    for n in range(draw(st.integers(1, 4))):
        items.append({"role": "user", "content": f"question {n}"})
        items += draw(responses_turn(n))
    return {"model": draw(MODELS), "input": items}
