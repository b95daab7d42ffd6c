"""Gemini's failures: its error object, as an HTTP error body or inside a stream, to a typed
`Failure`, and back (for a gateway that answers a Gemini client).

The error object is Google's ``google.rpc.Status`` in JSON (Gemini API reference, "API
troubleshooting"; the ``google-genai`` SDK's ``errors.APIError`` reads the same fields):
``{"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED", "details": [...]}}``.

Rule 1: the kind comes first from what only Gemini says: ``ErrorInfo.reason``
    ``API_KEY_INVALID`` is an authentication failure whatever its 400; a context overflow
    is an ``INVALID_ARGUMENT`` whose message says the input "exceeds the maximum number of
    tokens"; a svir peer's ``ErrorInfo`` (domain ``svir-proto``) names its kind and code.
    Then from the shared classifier (`svir_proto.openai._failures.classify`: every server's
    words for an overflow or an overload), then from ``status`` (the ``google.rpc.Code`` name),
    then from the HTTP status as `svir_proto.openai.body_outcome` reads it.
Rule 2: ``Failure.code`` is ``status`` (``RESOURCE_EXHAUSTED``), or the svir peer's code.
Rule 3: ``RetryInfo.retryDelay`` (``"37s"``, a protobuf Duration) gives ``retry_after`` when no
    ``Retry-After`` header does; both are bounded as `parse_retry_after` bounds them.
Rule 4: a body may be the object, or a one-element JSON array of it (the non-SSE stream's
    framing); anything else is read by `svir_proto.openai.body_outcome`'s rules (plain text,
    an empty body, a success that is not a stream).

Rule 5 (written): `error_object` writes the failure's own HTTP status when it has one, and the
    ``google.rpc.Code`` name Google gives that status (a 500 is ``INTERNAL``, a 503
    ``UNAVAILABLE``: attack 62 F6, an upstream's 500 said ``UNAVAILABLE``, its kind's);
    a status with no such name, or none, the kind's (`_wire.STATUS_OF`).

Heads are decided by `svir_proto.openai.head_outcome` (401 and 403 from the head alone; a
stream is ``text/event-stream``), which Gemini's responses follow. No I/O here.
"""

from __future__ import annotations

import re
from typing import Any, Final

from .._json import canonical, dumps
from ..errors import Failure, FailureKind
from ..events import RequestFailed
from ..openai import status as shared
from ..openai._failures import classify
from ..openai.status import MAX_ERROR_BODY, Headers, parse_retry_after
from ._wire import ERROR_INFO, RETRY_INFO, STATUS_KIND, STATUS_OF, SVIR_DOMAIN

__all__ = ["body_outcome", "error_body", "error_object", "error_status", "failure_from_error"]

_OVERFLOW: Final = "exceeds the maximum number of tokens"
"""Gemini's words for a prompt longer than the model's context: "The input token count
(1048580) exceeds the maximum number of tokens allowed (1048576)."."""
_AUTH_REASONS: Final = frozenset(
    {"API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED", "ACCESS_TOKEN_TYPE_UNSUPPORTED"}
)
_DURATION: Final = re.compile(r"([0-9]{1,9})(?:\.([0-9]{1,9}))?s")
_KINDS: Final = {k.value.upper(): k for k in FailureKind}


def _details(error: dict[str, Any]) -> list[dict[str, Any]]:
    details = error.get("details")
    if not isinstance(details, list):
        return []
    return [d for d in details if isinstance(d, dict)]


def retry_delay(error: object) -> float | None:
    """Seconds from the error's ``RetryInfo.retryDelay`` (Rule 3), or ``None``."""
    if not isinstance(error, dict):
        return None
    for d in _details(error):
        if d.get("@type") == RETRY_INFO:
            m = _DURATION.fullmatch(str(d.get("retryDelay", "")))
            if m:
                return int(m.group(1)) + (int((m.group(2) or "0").ljust(9, "0")) / 1e9)
    return None


def failure_from_error(body: object, *, status: int | None, default: FailureKind) -> Failure:
    """A `Failure` from a Gemini error body or error chunk (``{"error": {...}}``) (Rules 1-3).

    Args:
        body: the parsed JSON (anything: what is not an error object is its own message).
        status: the HTTP status, or ``None`` inside a stream.
        default: the kind when nothing in the body says more.
    """
    error: object = body.get("error", body) if isinstance(body, dict) else body
    if not isinstance(error, dict):
        text = str(error) if error is not None else ""
        message = text or "the server reported an error without a message"
        return Failure(kind=classify(message, None, None, default), message=message, status=status)
    raw_message = error.get("message")
    message = (
        raw_message if isinstance(raw_message, str) and raw_message else None
    ) or "the server reported an error without a message"
    rpc = error.get("status")
    rpc = rpc if isinstance(rpc, str) and rpc else None
    code: str | None = rpc
    kind: FailureKind | None = None
    for d in _details(error):
        if d.get("@type") != ERROR_INFO:
            continue
        reason = d.get("reason")
        if d.get("domain") == SVIR_DOMAIN and isinstance(reason, str) and reason in _KINDS:
            kind = _KINDS[reason]
            meta = d.get("metadata")
            peer = meta.get("code") if isinstance(meta, dict) else None
            code = peer if isinstance(peer, str) else None
            break
        if reason in _AUTH_REASONS:
            kind = FailureKind.AUTHENTICATION
    if kind is None:
        lowered = message.lower()
        if _OVERFLOW in lowered:
            kind = FailureKind.CONTEXT_OVERFLOW
        else:
            by_status = STATUS_KIND.get(rpc or "", default)
            kind = classify(message, rpc, None, by_status)  # "overloaded" is OVERLOADED
    return Failure(
        kind=kind, message=message, code=code, status=status, retry_after=retry_delay(error)
    )


def body_outcome(
    status: int, headers: Headers, body: bytes, *, now: float | None = None
) -> RequestFailed:
    """The failure a Gemini response that is not a stream reports (Rules 1 to 4).

    Args:
        body: the first bytes of the body, at most `MAX_ERROR_BODY` of them.
        now: the current time in seconds since the epoch, for a ``Retry-After`` date.
    """
    common = shared.body_outcome(status, headers, body, now=now).failure  # Rule 4, defaults
    text = body[:MAX_ERROR_BODY].decode("utf-8", "replace").strip()
    parsed: object = None
    if text[:1] in ("{", "["):
        try:
            parsed = canonical(text)
        except (ValueError, RecursionError):
            parsed = None
    if isinstance(parsed, list) and len(parsed) == 1:
        parsed = parsed[0]
    if (
        common.kind is FailureKind.NOT_A_STREAM
        or not isinstance(parsed, dict)
        or not isinstance(parsed.get("error"), dict)
    ):
        return RequestFailed(failure=common)
    failure = failure_from_error(parsed, status=status, default=common.kind)
    kind = failure.kind
    if status in (401, 403):
        kind = FailureKind.AUTHENTICATION
    header_delay = parse_retry_after(headers, now=now)
    return RequestFailed(
        failure=Failure(
            kind=kind,
            message=failure.message,
            code=failure.code,
            status=status,
            retry_after=header_delay if header_delay is not None else failure.retry_after,
        )
    )


_RPC_OF_STATUS: Final = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL",
    501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}  # fmt: skip
"""The ``google.rpc.Code`` name of each HTTP status Google maps one to (google/rpc/code.proto)."""


def error_object(failure: Failure) -> dict[str, Any]:
    """A failure as Gemini's ``{"error": {...}}``, with its kind and code in an ``ErrorInfo``
    of domain ``svir-proto`` (Rule 1), and its delay as ``RetryInfo``."""
    code, rpc = STATUS_OF[failure.kind]
    status = failure.status if failure.status is not None and 400 <= failure.status < 600 else code
    rpc = _RPC_OF_STATUS.get(status, rpc) if status != code else rpc  # Rule 5
    details: list[dict[str, Any]] = [
        {
            "@type": ERROR_INFO,
            "reason": failure.kind.value.upper(),
            "domain": SVIR_DOMAIN,
            "metadata": {} if failure.code is None else {"code": failure.code},
        }
    ]
    if failure.retry_after is not None:
        details.append({"@type": RETRY_INFO, "retryDelay": f"{failure.retry_after:.3f}s"})
    return {
        "error": {"code": status, "message": failure.message, "status": rpc, "details": details}
    }


def error_status(failure: Failure) -> int:
    """The HTTP status a gateway answers a Gemini client's ``failure`` with: its own when it
    came with one (4xx, 5xx), else Google's for its kind (``error.code``)."""
    code: int = error_object(failure)["error"]["code"]
    return code


def error_body(failure: Failure) -> bytes:
    """The body of a gateway's error reply to a Gemini client (``application/json``), as Google
    writes it, sent with `error_status`."""
    return dumps(error_object(failure))
