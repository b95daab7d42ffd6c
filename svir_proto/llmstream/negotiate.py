"""Choosing the dialect (draft section 7): a request's ``Content-Type``, a client's ``Accept``,
the 415 answer, and when a client falls back to the OpenAI dialect.

Rule 1: a request body is LLM-Stream when its ``Content-Type`` is
    ``application/llm-request+json`` (its optional ``version`` parameter, if present, must be
    ``1.0``); it is OpenAI when it is ``application/json``. Anything else is not served: 415.
Rule 2: the response is LLM-Stream when the request was, or when ``Accept`` lists
    ``text/event-stream`` with ``profile="llm-stream-1.0"`` (a dual-format endpoint, 7.3);
    otherwise it is the OpenAI dialect.
Rule 3: a client that sent ``application/llm-request+json`` falls back to the OpenAI dialect on
    415 (7.2); a 2xx stream whose first event is not ``stream.start`` is not LLM-Stream either
    (5: conformance is signalled by ``stream.start`` first).

Media type parameters are parsed as RFC 9110 section 5.6.6 says: names case-insensitive,
values a token or a quoted string.
"""

from __future__ import annotations

import json
from typing import Final, Literal

from .request import MEDIA_TYPE

__all__ = [
    "ACCEPT_LLM_STREAM",
    "PROFILE",
    "Dialect",
    "parse_media_type",
    "request_dialect",
    "response_dialect",
    "should_fall_back",
    "unsupported_media_type",
]

PROFILE: Final = "llm-stream-1.0"
ACCEPT_LLM_STREAM: Final = f'text/event-stream; profile="{PROFILE}"'
"""The ``Accept`` header a client sends to ask for LLM-Stream events."""

Dialect = Literal["llm-stream", "openai"]


def parse_media_type(value: str) -> tuple[str, dict[str, str]]:
    """``type/subtype`` (lower-cased) and its parameters (names lower-cased)."""
    head, _, rest = value.partition(";")
    params: dict[str, str] = {}
    i = 0
    while i < len(rest):
        while i < len(rest) and rest[i] in " \t;":
            i += 1
        eq = rest.find("=", i)
        if eq < 0:
            break
        name = rest[i:eq].strip().lower()
        i = eq + 1
        if i < len(rest) and rest[i] == '"':
            i += 1
            chars = []
            while i < len(rest) and rest[i] != '"':
                if rest[i] == "\\" and i + 1 < len(rest):
                    i += 1
                chars.append(rest[i])
                i += 1
            i += 1
            val = "".join(chars)
        else:
            end = rest.find(";", i)
            end = len(rest) if end < 0 else end
            val = rest[i:end].strip()
            i = end
        if name:
            params[name] = val
    return head.strip().lower(), params


def request_dialect(content_type: str | None) -> Dialect | None:
    """The dialect of a request body (Rule 1), or ``None``: answer 415."""
    if not content_type:
        return None
    media, params = parse_media_type(content_type)
    if media == MEDIA_TYPE:
        return "llm-stream" if params.get("version", "1.0") == "1.0" else None
    if media == "application/json":
        return "openai"
    return None


def response_dialect(request: Dialect, accept: str | None) -> Dialect:
    """The dialect of the response (Rule 2)."""
    if request == "llm-stream":
        return "llm-stream"
    for item in (accept or "").split(","):
        media, params = parse_media_type(item)
        if media == "text/event-stream" and params.get("profile") == PROFILE:
            return "llm-stream"
    return "openai"


def unsupported_media_type(content_type: str | None) -> tuple[int, list[tuple[str, str]], bytes]:
    """The 415 answer for a body this endpoint does not serve: status, headers, body.

    ``Accept-Post`` lists what it does serve, so the client knows what to send instead.
    """
    body = json.dumps(
        {
            "error": {
                "code": "unsupported_media_type",
                "message": f"{content_type or 'no Content-Type'} is not served here; "
                f"send {MEDIA_TYPE} or application/json",
            }
        }
    ).encode()
    headers = [
        ("Content-Type", "application/json"),
        ("Accept-Post", f"{MEDIA_TYPE}, application/json"),
        ("Content-Length", str(len(body))),
    ]
    return 415, headers, body


def should_fall_back(status: int, first_event_type: str | None = None) -> bool:
    """Whether a client that sent an LLM-Stream request should resend it as OpenAI (Rule 3).

    Args:
        status: the response status.
        first_event_type: for a 2xx stream, the SSE type of its first event, if known.
    """
    if status == 415:
        return True
    return (
        200 <= status < 300 and first_event_type is not None and first_event_type != "stream.start"
    )
