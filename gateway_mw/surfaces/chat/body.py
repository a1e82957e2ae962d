"""A non-stream ``chat.completion`` body: each choice's message text through a channel of its own,
reasoning moved to the reasoning field. Only the objects on the way to each message's text are
decoded; every other value is re-emitted as its original bytes."""

from __future__ import annotations

from typing import Any

import msgspec

from ...channels import Channels, Counts
from ...config import ThinkExtractConfig
from ...rawjson import as_str, obj, raw_list
from ...scanner import CONTENT, merge_segments
from .chunks import EMPTY_RAW, NAMES, Obj, decode_list, decode_obj, encode, mirror_of, with_mirror

__all__ = ["transform_body"]

_NATIVE_MESSAGE_KEYS = ("reasoning_content", "reasoning", "reasoning_details")


def transform_body(body: bytes | bytearray, config: ThinkExtractConfig) -> tuple[bytes | None, Counts]:
    """A non-stream ``chat.completion`` body with reasoning moved out of ``message.content``.

    Returns ``None`` for the body when nothing changed (the caller then sends the original bytes).
    Only the objects on the way to each message's text are decoded; every other value is re-emitted
    as its original bytes.
    """
    counts = Counts()
    try:
        doc: Obj = decode_obj(body)
        choices: list[Obj] | None = decode_list(doc["choices"]) if "choices" in doc else None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None, counts
    if not choices:
        return None, counts
    try:
        model = msgspec.json.decode(doc["model"], type=str) if "model" in doc else None
    except (msgspec.DecodeError, msgspec.ValidationError):
        model = None
    channels = Channels(config, parallel=True)  # one per choice, side by side
    if not channels.resolve(model).enabled:
        return None, counts
    changed = False
    for at, choice in enumerate(choices):
        changed = _split_message(choice, channels, at) or changed
    if not changed:
        return None, channels.counts
    doc["choices"] = choices
    return encode(doc), channels.counts


def _split_message(choice: Obj, channels: Channels, at: int) -> bool:
    """Move the reasoning out of ``choice``'s message text, in place; whether anything changed.

    A function of its own so that the decoded text and its segments are freed on return, before
    the body is encoded again: a large body is then held about twice, not four times.
    """
    cfg = channels.resolve(None)
    message = obj(choice.get("message"))
    if message is None or "content" not in message:
        return False
    if any(k in message and bytes(message[k]) not in EMPTY_RAW for k in _NATIVE_MESSAGE_KEYS):
        return _mirror_message(choice, message, cfg)  # upstream reasoning wins
    original = as_str(message["content"])
    if original is None:
        parts = _split_parts(message["content"], channels, at)  # a list of parts, or not text at all
        if parts is None:
            return False
        message["content"], reasoning = parts
        if reasoning:
            message.update(dict.fromkeys(NAMES[cfg.chat_reasoning_field], reasoning))
        choice["message"] = message
        return True
    segments = channels.at_once(at, original)
    if segments is None:
        segments = merge_segments(channels.text(at, original) + channels.end(at))
    content = "".join(s.text for s in segments if s.kind == CONTENT)
    reasoning = "".join(s.text for s in segments if s.kind != CONTENT)
    if content == original and not reasoning:
        return False
    del segments, original
    message["content"] = content
    if reasoning:
        message.update(dict.fromkeys(NAMES[cfg.chat_reasoning_field], reasoning))
    choice["message"] = message
    return True


def _mirror_message(choice: Obj, message: Obj, cfg: ThinkExtractConfig) -> bool:
    """With ``chat_mirror_reasoning``: a message whose reasoning came under one name only gets it
    under the name of ``chat_reasoning_field`` it lacks too, right after it; whether anything changed."""
    if not cfg.chat_mirror_reasoning:
        return False
    names = mirror_of(
        cfg.chat_reasoning_field,
        bool(as_str(message.get("reasoning_content"))),
        bool(as_str(message.get("reasoning"))),
    )
    if names is None:
        return False
    choice["message"] = with_mirror(message, *names)
    return True


def _split_parts(raw: Any, channels: Channels, at: int) -> tuple[list[Any], str] | None:
    """A content list's text parts through channel ``at`` (a block may span them, a tag may not),
    the other parts kept in place: the new list and the reasoning; ``None`` when nothing changes."""
    parts = raw_list(raw)
    if not parts:
        return None
    reasoning: list[str] = []
    texts: list[list[str]] = []  # per text part, its content
    places: list[tuple[int, Obj]] = []  # the text parts: position, fields
    for place, part in enumerate(parts):
        fields = obj(part)
        text = as_str(fields.get("text")) if fields is not None and as_str(fields.get("type")) == "text" else None
        if fields is None or text is None:
            continue
        segments = channels.text(at, text) + [seg for _, held in channels.flush() for seg in held]
        places.append((place, fields))
        texts.append([])
        for seg in segments:
            (texts[-1] if seg.kind == CONTENT else reasoning).append(seg.text)
    if not places:
        return None
    for seg in channels.end(at):
        (texts[-1] if seg.kind == CONTENT else reasoning).append(seg.text)
    if not reasoning and all("".join(t) == as_str(f["text"]) for (_, f), t in zip(places, texts, strict=True)):
        return None
    new: list[Any] = list(parts)
    for (place, fields), pieces in zip(places, texts, strict=True):
        new[place] = {**fields, "text": "".join(pieces)}
    return new, "".join(reasoning)
