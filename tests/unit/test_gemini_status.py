"""Gemini's failures: the error object in every form it takes, and the one a gateway writes."""

from __future__ import annotations

import json

import pytest

from svir_proto.errors import Failure, FailureKind
from svir_proto.events import Usage
from svir_proto.gemini import (
    body_outcome,
    error_body,
    error_object,
    error_status,
    failure_from_error,
)
from svir_proto.gemini._wire import usage_in, usage_out
from svir_proto.gemini.status import retry_delay

DEFAULT = FailureKind.SERVER_ERROR


def error(**fields: object) -> dict[str, object]:
    return {"error": fields}


@pytest.mark.parametrize(
    ("body", "kind", "code", "message"),
    [
        ("plain words", DEFAULT, None, "plain words"),
        (None, DEFAULT, None, "the server reported an error without a message"),
        (error(code=500), DEFAULT, None, "the server reported an error without a message"),
        (error(message="m", status=7), DEFAULT, None, "m"),
        (error(message="m", status="INTERNAL"), FailureKind.TRANSIENT, "INTERNAL", "m"),
        (
            error(message="Server overloaded", status="INTERNAL"),
            FailureKind.OVERLOADED,
            "INTERNAL",
            "Server overloaded",
        ),
        (
            error(message="try later", status="UNAVAILABLE"),
            FailureKind.TRANSIENT,
            "UNAVAILABLE",
            "try later",
        ),
        (
            error(
                message="too long",
                status="INVALID_ARGUMENT",
                details=[
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "CONTEXT_OVERFLOW",
                        "domain": "svir-proto",
                        "metadata": {"code": "exceed_context_size_error"},
                    }
                ],
            ),
            FailureKind.CONTEXT_OVERFLOW,
            "exceed_context_size_error",
            "too long",
        ),
        (
            error(
                message="x",
                status="INVALID_ARGUMENT",
                details=[
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "SERVER_ERROR",
                        "domain": "svir-proto",
                    }
                ],
            ),
            FailureKind.SERVER_ERROR,
            None,
            "x",
        ),
        (
            error(
                message="x",
                status="INVALID_ARGUMENT",
                details=[
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "NOT_A_KIND",
                        "domain": "svir-proto",
                    },
                    5,
                ],
            ),
            FailureKind.REJECTED,
            "INVALID_ARGUMENT",
            "x",
        ),
        (
            error(
                message="k",
                status="INVALID_ARGUMENT",
                details=[
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                        "domain": "googleapis.com",
                    }
                ],
            ),
            FailureKind.AUTHENTICATION,
            "INVALID_ARGUMENT",
            "k",
        ),
        (error(message="x", details="not a list"), DEFAULT, None, "x"),
    ],
)
def test_a_failure_from_each_form_of_the_error_object(
    body: object, kind: FailureKind, code: str | None, message: str
) -> None:
    failure = failure_from_error(body, status=None, default=DEFAULT)
    assert (failure.kind, failure.code, failure.message) == (kind, code, message)


def test_retry_info_gives_the_delay() -> None:
    def info(delay: object) -> object:
        return {
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]
        }

    assert retry_delay(info("37s")) == 37.0
    assert retry_delay(info("1.5s")) == 1.5
    assert retry_delay(info("soon")) is None
    assert retry_delay(info(3)) is None
    assert retry_delay("not an object") is None
    assert retry_delay({}) is None


def test_an_http_body_that_is_not_geminis_is_read_by_the_shared_rules() -> None:
    bad = body_outcome(400, [("content-type", "application/json")], b"{not json").failure
    assert (bad.kind, bad.message) == (FailureKind.REJECTED, "{not json")
    success = body_outcome(200, [("content-type", "application/json")], b'{"error": {}}')
    assert success.failure.kind is FailureKind.NOT_A_STREAM
    listed = body_outcome(500, [], b'[{"a": 1}, {"b": 2}]').failure
    assert listed.kind is FailureKind.TRANSIENT
    plain = body_outcome(502, [("content-type", "text/html")], b"<html>Bad Gateway</html>")
    assert (plain.failure.kind, plain.failure.message) == (
        FailureKind.TRANSIENT, "<html>Bad Gateway</html>"
    )  # fmt: skip
    one = error(code=429, message="slow down", status="RESOURCE_EXHAUSTED")
    wrapped = body_outcome(429, [], json.dumps([one]).encode()).failure  # (as Google wraps it)
    assert (wrapped.kind, wrapped.message) == (FailureKind.RATE_LIMITED, "slow down")
    auth = body_outcome(
        401, [], json.dumps(error(message="no", status="INVALID_ARGUMENT")).encode()
    )
    assert (auth.failure.kind, auth.failure.code) == (
        FailureKind.AUTHENTICATION,
        "INVALID_ARGUMENT",
    )


@pytest.mark.parametrize(
    ("failure", "status", "rpc"),
    [
        (Failure(kind=FailureKind.RATE_LIMITED, message="m"), 429, "RESOURCE_EXHAUSTED"),
        (
            Failure(kind=FailureKind.CONTEXT_OVERFLOW, message="m", code="c"),
            400,
            "INVALID_ARGUMENT",
        ),
        (Failure(kind=FailureKind.OVERLOADED, message="m", status=529), 529, "UNAVAILABLE"),
        (Failure(kind=FailureKind.TRANSIENT, message="m", status=200), 503, "UNAVAILABLE"),
        (Failure(kind=FailureKind.UNEXPECTED, message="m"), 502, "UNKNOWN"),
        # Rule 5 (attack 62 F6): an upstream's 500, retried as transient, is Google's INTERNAL
        (Failure(kind=FailureKind.TRANSIENT, message="m", status=500), 500, "INTERNAL"),
        (Failure(kind=FailureKind.REJECTED, message="m", status=404), 404, "NOT_FOUND"),
    ],
)
def test_the_error_a_gateway_writes_reads_back_as_the_same_failure(
    failure: Failure, status: int, rpc: str
) -> None:
    code, body = error_status(failure), error_body(failure)
    obj = json.loads(body)
    assert (code, obj["error"]["code"], obj["error"]["status"]) == (status, status, rpc)
    again = body_outcome(status, [], body).failure
    assert (again.kind, again.code, again.message) == (failure.kind, failure.code, failure.message)
    assert error_object(failure) == obj


def test_usage_both_ways_with_what_is_missing_left_out() -> None:
    assert usage_out(Usage()) == {}
    assert usage_out(Usage(completion_tokens=5, reasoning_tokens=9)) == {
        "candidatesTokenCount": 0,
        "thoughtsTokenCount": 9,
    }
    assert usage_in({"candidatesTokenCount": 3}) == Usage(completion_tokens=3)
    assert usage_in({"promptTokenCount": -1, "vendor:svir": 5}) == Usage()
