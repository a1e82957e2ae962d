"""What the gateway passes on of a request's and an answer's head, and what it adds: the hop-by-hop
fields dropped, ``Via``, the request id; and the paths it refuses to pass on at all."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from urllib.parse import unquote_to_bytes

from aiohttp import hdrs, web
from multidict import CIMultiDict

__all__ = [
    "HOP_BY_HOP",
    "REQUEST_ID",
    "REQUEST_ID_HEADER",
    "VIA",
    "append_to",
    "path_refusal",
    "request_id",
    "sendable",
    "strip_hop_by_hop",
]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""RFC 9110 §7.6.1 connection-specific fields, plus those a ``Connection`` header names."""
_SEPARATOR = re.compile(r"\\|%(?:25)?(?:2f|5c)", re.IGNORECASE)
_DOUBLE_ENCODED_DOT = re.compile(r"%252e", re.IGNORECASE)
REQUEST_ID_HEADER = "X-Request-Id"
_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")
VIA = "1.1 gateway-mw"
"""What the gateway adds to ``Via`` (RFC 9110 §7.6.3): the protocol it received, and its name."""
REQUEST_ID = web.RequestKey("gateway_mw.request_id", str)


def request_id(request: web.Request) -> str:
    """The client's ``X-Request-Id`` when it is a plain token, else a new one (kept on the request)."""
    if REQUEST_ID in request:
        found: str = request[REQUEST_ID]
        return found
    sent = request.headers.get(REQUEST_ID_HEADER, "")
    rid = sent if _CLIENT_REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex
    request[REQUEST_ID] = rid
    return rid


def path_refusal(raw_path: str) -> str | None:
    """Why a path (as sent, percent-encoded) must not be forwarded, or ``None``.

    The upstream decodes the path again, and maybe normalises it: a dot segment, in any spelling,
    could take the request out of the prefix there, and so could a slash or backslash that is one only
    once decoded (or decoded twice: ``%252f``). Each segment is decoded once, as the upstream does;
    ``%25`` followed by an encoded dot, slash or backslash is refused wherever it stands, as is a path
    that is not UTF-8 once decoded (an overlong ``%c0%ae`` is a dot to some decoders).
    """
    if _SEPARATOR.search(raw_path):
        return "encoded slashes and backslashes are not allowed in the path"
    if _DOUBLE_ENCODED_DOT.search(raw_path):
        return "dot segments are not allowed in the path"
    try:
        segments = [unquote_to_bytes(segment).decode("utf-8") for segment in raw_path.split("/")]
    except UnicodeDecodeError:
        return "the path is not UTF-8 once percent-decoded"
    # A segment's ";" parameters are dropped by servlet containers before they resolve dot segments.
    if any(segment.partition(";")[0] in (".", "..") for segment in segments):
        return "dot segments are not allowed in the path"
    return None


def strip_hop_by_hop(headers: Mapping[str, str], also: frozenset[str] = frozenset()) -> CIMultiDict[str]:
    named = {
        token.strip().lower()
        for value in CIMultiDict(headers).getall(hdrs.CONNECTION, [])
        for token in value.split(",")
    }
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        lname = name.lower()
        if lname not in HOP_BY_HOP and lname not in named and lname not in also:
            out.add(name, value)
    return out


_UNSENDABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""What aiohttp refuses to write in a header or a status line (a header injection): a control
character, the tab aside."""


def sendable(headers: CIMultiDict[str], reason: str | None) -> tuple[CIMultiDict[str], str | None]:
    """An upstream's answer's ``headers`` and status ``reason``, less what aiohttp would refuse to
    write: a header whose name or value holds a control character is dropped, such a reason left to
    aiohttp (its standard phrase). The client gets the rest of the answer, not a 500."""
    if _UNSENDABLE.search("".join([*headers.keys(), *headers.values(), reason or ""])) is None:
        return headers, reason
    kept: CIMultiDict[str] = CIMultiDict(
        (name, value) for name, value in headers.items() if not _UNSENDABLE.search(name + value)
    )
    return kept, None if reason is None or _UNSENDABLE.search(reason) else reason


def append_to(headers: CIMultiDict[str], name: str, value: str) -> None:
    """Add ``value`` to a comma-separated list header, after what is there."""
    present = headers.getall(name, [])
    headers.popall(name, None)
    headers[name] = ", ".join([*present, value])
