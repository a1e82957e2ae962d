"""A gateway error in the shape OpenAI's APIs write one (chat completions, Responses): the shape a
surface's clients read when its definition names no other."""

from __future__ import annotations

from typing import Any

__all__ = ["openai_error"]


def openai_error(status: int, code: str, message: str) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
