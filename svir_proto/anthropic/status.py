"""HTTP error bodies of the Messages API, both ways: a status and body from an Anthropic server
to a typed `Failure`, and a `Failure` to the body and status a gateway answers an Anthropic
client with (Anthropic's API reference, "Errors").

Rule 1: an error body is ``{"type": "error", "error": {"type": TYPE, "message": ...},
    "request_id": ...}``; ``error.type`` decides the kind (`ERROR_TYPES` in ``_wire``), then
    the status, as `svir_proto.openai.status.body_outcome` decides it for the rest: the head
    rules, the bounded body, ``Retry-After`` and the context-overflow signs are that module's,
    reused (llama.cpp answers ``/v1/messages`` with its OpenAI-shaped error body, which is read
    the same way).
Rule 2: a context overflow is an ``invalid_request_error`` whose message says so ("prompt is
    too long", or any server's sign of it).
Rule 3: the gateway's side writes the same shape, the type for the failure's kind and the
    status Anthropic uses for that type (`error_status`): 529 for overloaded.
"""

from __future__ import annotations

from .._json import dumps
from ..errors import Failure, FailureKind
from ..events import RequestFailed
from ..openai.status import Headers
from ..openai.status import body_outcome as _openai_body_outcome
from ._wire import ERROR_OF, ERROR_TYPES, OVERFLOW_PHRASES, STATUS_TYPES

__all__ = ["body_outcome", "error_body", "error_status", "failure_from_error"]


def failure_from_error(
    error_type: str | None, message: str, *, default: FailureKind, status: int | None = None
) -> Failure:
    """The `Failure` of an Anthropic error object (``error.type`` and ``error.message``)."""
    kind = ERROR_TYPES.get(error_type or "", default)
    text = message.lower()
    if kind is FailureKind.REJECTED and any(p in text for p in OVERFLOW_PHRASES):
        kind = FailureKind.CONTEXT_OVERFLOW  # Rule 2
    return Failure(kind=kind, message=message, code=error_type, status=status)


def body_outcome(
    status: int, headers: Headers, body: bytes, *, now: float | None = None
) -> RequestFailed:
    """The failure a Messages API response that is not a stream reports (Rules 1 and 2).

    Args:
        status: the HTTP status.
        headers: the response headers.
        body: the first bytes of the body, at most `svir_proto.openai.MAX_ERROR_BODY`.
        now: the current time (seconds since the epoch), for a ``Retry-After`` date.
    """
    base = _openai_body_outcome(status, headers, body, now=now).failure
    error_type = base.code  # error.type, when error.code is absent or a number (llama.cpp)
    kind = base.kind
    mapped = ERROR_TYPES.get(error_type or "")
    if (
        mapped is not None
        and base.kind is not FailureKind.NOT_A_STREAM
        and base.kind is not FailureKind.CONTEXT_OVERFLOW
        and not (mapped is FailureKind.SERVER_ERROR and base.kind is FailureKind.TRANSIENT)
    ):
        kind = mapped  # an api_error on a 500/502/503 stays transient, as the status says
    if kind is FailureKind.REJECTED and any(p in base.message.lower() for p in OVERFLOW_PHRASES):
        kind = FailureKind.CONTEXT_OVERFLOW
    return RequestFailed(
        failure=Failure(
            kind=kind,
            message=base.message,
            code=error_type,
            status=status,
            retry_after=base.retry_after,
            filter_results=base.filter_results,
        )
    )


def error_status(failure: Failure) -> int:
    """The HTTP status a gateway answers ``failure`` with, Anthropic's for its type (Rule 3):
    the failure's own status when it is an error status, else the type's."""
    if failure.status is not None and 400 <= failure.status < 600:
        return failure.status
    return ERROR_OF[failure.kind][1]


def error_object(failure: Failure) -> dict[str, str]:
    """``{"type": TYPE, "message": ...}`` for ``failure``: its own Anthropic type if it came
    with one, else Anthropic's type for the status it is answered with (`error_status`: a 404
    is a ``not_found_error``, as the anthropic SDK's class for it says), else the type for
    its kind."""
    code = failure.code
    error_type = code if code in ERROR_TYPES and ERROR_TYPES[code] is failure.kind else None
    if error_type is None:
        error_type = STATUS_TYPES.get(error_status(failure))
    return {"type": error_type or ERROR_OF[failure.kind][0], "message": failure.message}


def error_body(failure: Failure) -> bytes:
    """The body of a gateway's error reply to an Anthropic client (Rule 3), ``application/json``,
    sent with `error_status`."""
    return dumps({"type": "error", "error": error_object(failure)})
