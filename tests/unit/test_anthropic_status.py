"""Messages API error bodies, both ways (Anthropic's API reference, "Errors")."""

from __future__ import annotations

import json

import pytest

from svir_proto.anthropic import body_outcome, error_body, error_status, failure_from_error
from svir_proto.errors import Failure, FailureKind

JSON = [("content-type", "application/json")]


def body(error_type: str, message: str = "m") -> bytes:
    return json.dumps(
        {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_1"}
    ).encode()


@pytest.mark.parametrize(
    ("status", "error_type", "kind"),
    [
        (400, "invalid_request_error", FailureKind.REJECTED),
        (401, "authentication_error", FailureKind.AUTHENTICATION),
        (402, "billing_error", FailureKind.REJECTED),
        (403, "permission_error", FailureKind.AUTHENTICATION),
        (404, "not_found_error", FailureKind.REJECTED),
        (413, "request_too_large", FailureKind.REJECTED),
        (429, "rate_limit_error", FailureKind.RATE_LIMITED),
        (500, "api_error", FailureKind.TRANSIENT),
        (504, "timeout_error", FailureKind.TIMEOUT),
        (529, "overloaded_error", FailureKind.OVERLOADED),
        (418, "teapot_error", FailureKind.UNEXPECTED),
    ],
)
def test_every_error_type_of_the_reference(status: int, error_type: str, kind: FailureKind) -> None:
    failure = body_outcome(status, JSON, body(error_type)).failure
    assert (failure.kind, failure.code, failure.status, failure.message) == (
        kind,
        error_type,
        status,
        "m",
    )


def test_a_context_overflow_and_retry_after() -> None:
    headers = [*JSON, ("retry-after", "7")]
    long = body("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")
    failure = body_outcome(400, headers, long).failure
    assert (failure.kind, failure.retry_after) == (FailureKind.CONTEXT_OVERFLOW, 7.0)
    assert body_outcome(429, headers, body("rate_limit_error")).failure.retryable
    llama = (
        b'{"error":{"code":400,"message":"request (710 tokens) exceeds the available '
        b'context size (512 tokens)","type":"exceed_context_size_error"}}'
    )
    assert body_outcome(400, JSON, llama).failure.kind is FailureKind.CONTEXT_OVERFLOW
    assert (
        body_outcome(200, [("content-type", "text/html")], b"<html>").failure.kind
        is FailureKind.NOT_A_STREAM
    )


def test_in_stream_failures() -> None:
    assert (
        failure_from_error(None, "x", default=FailureKind.SERVER_ERROR).kind
        is FailureKind.SERVER_ERROR
    )
    f = failure_from_error(
        "invalid_request_error",
        "input length and `max_tokens` exceed context limit",
        default=FailureKind.SERVER_ERROR,
    )
    assert f.kind is FailureKind.CONTEXT_OVERFLOW


@pytest.mark.parametrize("kind", list(FailureKind))
def test_the_gateway_side_writes_the_same_shape(kind: FailureKind) -> None:
    failure = Failure(kind=kind, message="why")
    status = error_status(failure)
    out = body_outcome(status, JSON, error_body(failure)).failure
    assert json.loads(error_body(failure))["type"] == "error"
    if kind not in (
        FailureKind.CONTEXT_OVERFLOW,
        FailureKind.CONTENT_FILTER,
        FailureKind.NOT_A_STREAM,
        FailureKind.SERVER_ERROR,
        FailureKind.UNEXPECTED,
    ):
        assert out.kind is kind
    assert out.message == "why"


def test_a_failure_keeps_its_own_status_and_type() -> None:
    failure = Failure(kind=FailureKind.OVERLOADED, message="x", code="overloaded_error", status=503)
    assert error_status(failure) == 503
    assert json.loads(error_body(failure))["error"]["type"] == "overloaded_error"
    other = Failure(kind=FailureKind.REJECTED, message="x", code="rate_limit_error")
    assert json.loads(error_body(other))["error"]["type"] == "invalid_request_error"
