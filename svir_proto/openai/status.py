"""HTTP outcomes (wire reference section 5): a response head, and if needed a bounded error
body, become either "this is a stream" or a typed `Failure`.

Rule 1: 401 and 403 are decided from the head alone: some servers stall the error body, and
    waiting for it would hang the caller.
Rule 2: a success is a stream only if it is ``text/event-stream``; anything else is
    ``NOT_A_STREAM``, whatever the status says.
Rule 3: every other failure is read from a bounded body (at most `MAX_ERROR_BODY` bytes; the
    caller stops reading there): ``{"error": {...}}``, ``{"error": "..."}`` (LM Studio), or
    plain text. Context overflow and content filters are recognised in all three servers'
    styles (the classifier is shared with errors inside streams).
Rule 4: ``Retry-After`` is seconds or an HTTP date (turned into seconds with the ``now`` the
    caller passes: this module reads no clock); ``retry-after-ms`` is preferred when present.
Rule 5 (RFC 9110 8.4 and 12.5.3): a body in a content coding other than ``identity``, which is
    all a client of this API asks for, cannot be read: the failure is decided from the head, with
    code ``unexpected_content_encoding`` and, for an error status, the kind that status gives
    (so a gzip 429 is still rate limited). Authentication (Rule 1) is decided first.

A proxy must keep its own 401 apart from the upstream's: a `Failure` from here is always the
upstream's, and the gateway adds its own before any upstream request is made.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from .._json import canonical
from ..errors import Failure, FailureKind
from ..events import RequestFailed, ResponseStarted
from ._failures import failure_from_error_object

__all__ = [
    "MAX_ERROR_BODY",
    "UNEXPECTED_CONTENT_ENCODING",
    "body_outcome",
    "error_body",
    "error_json",
    "error_status",
    "head_outcome",
    "parse_retry_after",
]

MAX_ERROR_BODY: Final = 64 * 1024
"""Bytes of an error body worth reading: error objects are small; Azure's with its filter
verdicts is about 1 KB. Past this, the rest is not read (h11 bounds heads at 16 KiB alike)."""

UNEXPECTED_CONTENT_ENCODING: Final = "unexpected_content_encoding"
"""The `Failure.code` of a response in a content coding that was not asked for (Rule 5)."""

_MAX_DIGITS: Final = 9  # seconds: about 30 years; more digits are not a delay anyone means

Headers = Iterable[tuple[bytes | str, bytes | str]]

_BY_STATUS: Final = {
    401: FailureKind.AUTHENTICATION,
    403: FailureKind.AUTHENTICATION,
    429: FailureKind.RATE_LIMITED,
    408: FailureKind.TIMEOUT,
    504: FailureKind.TIMEOUT,
    500: FailureKind.TRANSIENT,
    502: FailureKind.TRANSIENT,
    503: FailureKind.TRANSIENT,
    529: FailureKind.OVERLOADED,
    400: FailureKind.REJECTED,
    413: FailureKind.REJECTED,
    422: FailureKind.REJECTED,
}


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _normal(headers: Headers) -> tuple[tuple[str, str], ...]:
    return tuple((_text(k).lower(), _text(v).strip()) for k, v in headers)


def _get(headers: tuple[tuple[str, str], ...], name: str) -> str | None:
    for k, v in headers:
        if k == name:
            return v
    return None


def _media_type(headers: tuple[tuple[str, str], ...]) -> str:
    value = _get(headers, "content-type") or ""
    return value.split(";", 1)[0].strip().lower()


def head_outcome(
    status: int, headers: Headers, *, now: float | None = None, normal: bool = False
) -> ResponseStarted | RequestFailed | None:
    """Decide from the head alone where that is possible (Rules 1, 2 and 5).

    Args:
        now: as for `body_outcome`, for the ``Retry-After`` of a failure decided here.
        normal: ``headers`` is a tuple of ``str`` pairs, names lower-cased and values
            stripped already (`ResponseStarted.headers`).

    Returns:
        `ResponseStarted` for a stream, `RequestFailed` for an authentication failure or a body
        that cannot be read, or ``None``: read at most `MAX_ERROR_BODY` bytes of the body and
        call `body_outcome`.
    """
    h: tuple[tuple[str, str], ...] = headers if normal else _normal(headers)  # type: ignore[assignment]
    if not 100 <= status < 600:  # RFC 9110 15: invalid, to be read as a server's error
        message = f"HTTP {status}, which is no HTTP status (RFC 9110 15: 100 to 599)"
        return RequestFailed(
            failure=Failure(kind=FailureKind.UNEXPECTED, message=message, status=status)
        )
    if status in (401, 403):
        kind = FailureKind.AUTHENTICATION
        message = "the server refused the credentials" if status == 401 else "access is forbidden"
        return RequestFailed(failure=Failure(kind=kind, message=message, status=status))
    coding = (_get(h, "content-encoding") or "identity").lower()
    if coding not in ("identity", ""):  # Rule 5
        kind = (
            FailureKind.UNEXPECTED
            if 200 <= status < 300
            else _BY_STATUS.get(status, FailureKind.UNEXPECTED)
        )
        message = (
            f"HTTP {status} with a body in the content coding {coding!r}, which cannot be "
            "read: the request asked for 'identity' (Accept-Encoding); a proxy between may "
            "compress anyway"
        )
        return RequestFailed(
            failure=Failure(
                kind=kind,
                message=message,
                code=UNEXPECTED_CONTENT_ENCODING,
                status=status,
                retry_after=parse_retry_after(h, now=now),
            )
        )
    if 200 <= status < 300 and _media_type(h) == "text/event-stream":
        return ResponseStarted(status=status, headers=h)
    return None


def body_outcome(
    status: int, headers: Headers, body: bytes, *, now: float | None = None
) -> RequestFailed:
    """The failure a response that is not a stream reports (Rules 2 to 4).

    Args:
        body: the first bytes of the body, at most `MAX_ERROR_BODY` of them.
        now: the current time in seconds since the epoch, to turn a ``Retry-After`` date into
            seconds; without it a date gives no delay.
    """
    h = _normal(headers)
    if 200 <= status < 300:
        default = FailureKind.NOT_A_STREAM
    else:
        default = _BY_STATUS.get(status, FailureKind.UNEXPECTED)
    text = body[:MAX_ERROR_BODY].decode("utf-8", "replace").strip()
    parsed: object
    try:
        parsed = canonical(text) if text[:1] in ("{", "[") else text
    except (ValueError, RecursionError):
        parsed = text
    if not text:  # (an empty object says nothing either, but is no empty body: attack 69)
        parsed = f"HTTP {status} with an empty body"
    failure = failure_from_error_object(parsed, status=status, default=default)
    kind = failure.kind
    if default is FailureKind.NOT_A_STREAM:
        kind = default  # Rule 2: a success that is not a stream, whatever the body says
        media = _media_type(h) or "no content type"
        said = failure.message
        if isinstance(parsed, dict) and "error" not in parsed:  # (attack 37: "an error
            said = "a whole answer, not the stream asked for"
        failure = Failure(  # without a message", said of an answer the server sent whole)
            kind=kind,
            message=f"expected text/event-stream, got {media}: {said}"[:500],
            code=failure.code,
            status=status,
        )
    elif status in (401, 403):
        kind = FailureKind.AUTHENTICATION
    elif failure.code == "insufficient_quota":
        kind = FailureKind.REJECTED  # a quota, not a rate: waiting does not help
    elif default is FailureKind.TRANSIENT and kind is FailureKind.TRANSIENT and status == 503:
        kind = FailureKind.OVERLOADED if "overload" in failure.message.lower() else kind
    delay = parse_retry_after(h, now=now)
    return RequestFailed(
        failure=Failure(
            kind=kind,
            message=failure.message,
            code=failure.code,
            status=status,
            retry_after=delay,
            filter_results=failure.filter_results,
        )
    )


def parse_retry_after(headers: Headers, *, now: float | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``Retry-After`` (Rule 4), or ``None``."""
    h = _normal(headers)
    ms = _get(h, "retry-after-ms")
    if ms is not None:
        try:
            value = float(ms)
        except ValueError:
            value = -1.0
        if 0 <= value < 10**12:
            return value / 1000
    raw = _get(h, "retry-after")
    if raw is None:
        return None
    if raw.isascii() and raw.isdigit():  # "²" is a digit to str.isdigit, not to float
        return float(raw) if len(raw) <= _MAX_DIGITS else None
    if now is None:
        return None
    import email.utils  # it imports socket and random: loaded only for a date

    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def error_json(message: str, code: str, **extra: Any) -> bytes:
    """OpenAI's error object (wire reference 5), the shape every OpenAI client reads."""
    body = {"error": {"message": message, "type": code, "code": code, **extra}}
    return json.dumps(body, ensure_ascii=False).encode()


def error_body(failure: Failure) -> bytes:
    """The error object a server of this dialect answers ``failure`` with."""
    return error_json(failure.message, failure.code or failure.kind.value, kind=failure.kind.value)


def error_status(failure: Failure) -> int:
    """The HTTP status for ``failure``: its own when it has one (4xx, 5xx), else the one its
    kind stands for (a failure inside a stream has none: a rate limit is 429, which the SDKs
    retry, a context too long 400, which they do not; fidelity 43 F07), else 502 (a 3xx, or a
    number no HTTP status has, such as 999: attack round 31)."""
    status = failure.status
    if status is not None and 400 <= status < 600:
        return status
    return failure.kind.status  # (`FailureKind.status`: the table every dialect shares)
