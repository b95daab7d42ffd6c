"""Telling failures apart from what a server said: one place for every server's signs.

Used for errors inside a stream (wire reference 3.5) and for HTTP error bodies (section 5), so
the two can never disagree about what a context overflow or a content filter looks like.
"""

from __future__ import annotations

from typing import Final

from ..errors import Failure, FailureKind, FilterResult

__all__ = ["classify", "failure_from_error_object", "filter_results"]

# Wire reference section 5, "Servers agree on no single sign of a context overflow".
_OVERFLOW_CODES: Final = frozenset(
    {"context_length_exceeded", "context_window_exceeded", "exceed_context_size_error"}
)
_OVERFLOW_PHRASES: Final = (
    "maximum context length",  # OpenAI schema servers
    "exceeds the available context size",  # llama.cpp
    "greater than the context length",  # LM Studio (in-stream event: error)
    "context length exceeded",
    "context window",
)
# A request for something the server cannot do: sending it again gets the same answer, whatever
# the status (llama.cpp answers an image sent to a text-only model with 500 "image input is not
# supported").
_UNSUPPORTED_PHRASES: Final = ("is not supported", "are not supported", "unsupported")
_RATE_CODES: Final = frozenset({"rate_limit_exceeded", "rate_limited", "too_many_requests"})
_OVERLOAD_CODES: Final = frozenset({"overloaded", "server_overloaded", "overloaded_error"})
# A svir peer (ChatStreamEncoder, so the gateway) writes a failure's kind as error.type. Every
# kind name but "server_error", which OpenAI itself sends on a 500 that should stay transient.
_KIND_TYPES: Final = frozenset(k.value for k in FailureKind) - {FailureKind.SERVER_ERROR.value}


def classify(
    message: str, code: str | None, type_: str | None, default: FailureKind
) -> FailureKind:
    """The kind of a failure from its message, ``error.code`` and ``error.type``."""
    marks = {m.lower() for m in (code, type_) if m}
    text = message.lower()
    if marks & _OVERFLOW_CODES or any(p in text for p in _OVERFLOW_PHRASES):
        return FailureKind.CONTEXT_OVERFLOW
    if "content_filter" in marks:
        return FailureKind.CONTENT_FILTER
    if marks & _RATE_CODES:
        return FailureKind.RATE_LIMITED
    if marks & _OVERLOAD_CODES or "overloaded" in text:
        return FailureKind.OVERLOADED
    if type_ in _KIND_TYPES:
        return FailureKind(type_)
    if any(p in text for p in _UNSUPPORTED_PHRASES):
        return FailureKind.REJECTED
    return default


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def failure_from_error_object(body: object, *, status: int | None, default: FailureKind) -> Failure:
    """A `Failure` from an error body: ``{"error": {...}}``, ``{"error": "..."}`` (LM Studio),
    ``{"message": ...}``, or anything else (then its text is the message)."""
    error: object = body.get("error", body) if isinstance(body, dict) else body
    filters: tuple[FilterResult, ...] = ()
    if isinstance(error, dict):
        message = _text(error.get("message")) or (
            _text(body.get("message")) if isinstance(body, dict) else None
        )
        code = _text(error.get("code"))
        type_ = _text(error.get("type"))
        inner = error.get("innererror")
        if isinstance(inner, dict):
            filters = filter_results(inner.get("content_filter_result"))
    else:
        message = _text(error)
        code = type_ = None
    message = message or "the server reported an error without a message"
    kind = classify(message, code, type_, default)
    # llama.cpp puts the HTTP status in a numeric code and the meaning in the type
    if type_ and (code is None or code.isdigit()):
        code = type_
    return Failure(kind=kind, message=message, code=code, status=status, filter_results=filters)


def filter_results(raw: object) -> tuple[FilterResult, ...]:
    """Azure ``content_filter_results`` (or ``innererror.content_filter_result``) as results:
    one per category; a list-valued category (custom blocklists) gives one per entry."""
    if not isinstance(raw, dict):
        return ()
    out: list[FilterResult] = []
    for category, value in raw.items():
        entries = value if isinstance(value, list) else [value]
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            detected = entry.get("detected")
            severity = entry.get("severity")
            ident = entry.get("id")
            out.append(
                FilterResult(
                    category=str(category),
                    filtered=entry.get("filtered") is True,
                    detected=detected if isinstance(detected, bool) else None,
                    severity=severity if isinstance(severity, str) else None,
                    id=ident if isinstance(ident, str) else None,
                )
            )
    return tuple(out)
