"""HTTP outcomes (wire reference section 5): stream, or a typed failure."""

from __future__ import annotations

import json

import pytest

from svir_proto import FailureKind, RequestFailed, ResponseStarted
from svir_proto.openai import body_outcome, head_outcome, parse_retry_after

SSE = [(b"Content-Type", b"text/event-stream; charset=utf-8")]
JSON = [("content-type", "application/json")]


def failure(
    status: int,
    body: object,
    headers: list[tuple[str, str]] | None = None,
    now: float | None = None,
) -> RequestFailed:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    assert head_outcome(status, headers or JSON) is None
    return body_outcome(status, headers or JSON, raw, now=now)


def test_a_stream_is_decided_from_the_head() -> None:
    started = head_outcome(200, SSE)
    assert isinstance(started, ResponseStarted)
    assert started.headers == (("content-type", "text/event-stream; charset=utf-8"),)


@pytest.mark.parametrize("status", [401, 403])
def test_authentication_is_decided_from_the_head_alone(status: int) -> None:
    out = head_outcome(status, JSON)
    assert isinstance(out, RequestFailed)
    assert out.failure.kind is FailureKind.AUTHENTICATION
    assert out.failure.status == status
    assert not out.failure.retryable


@pytest.mark.parametrize("status", [0, 99, 600, 999])
def test_a_status_outside_100_to_599_is_decided_from_the_head(status: int) -> None:
    """RFC 9110 15: a status outside 100-599 is invalid, read as a server's error (attack
    round 31, F5: a 999 upstream reached a Responses client as it came)."""
    out = head_outcome(status, SSE)
    assert isinstance(out, RequestFailed)
    assert out.failure.kind is FailureKind.UNEXPECTED
    assert out.failure.status == status
    assert "no HTTP status" in out.failure.message


def test_a_success_that_is_not_a_stream() -> None:
    out = failure(200, {"id": "x", "choices": []})
    assert out.failure.kind is FailureKind.NOT_A_STREAM
    assert "application/json" in out.failure.message
    assert "a whole answer, not the stream asked for" in out.failure.message  # (attack 37:
    assert "error" not in out.failure.message  # "an error without a message", of no error)
    said = failure(200, {"error": {"message": "no streams here"}})
    assert said.failure.message.endswith("application/json: no streams here")


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, FailureKind.RATE_LIMITED),
        (408, FailureKind.TIMEOUT),
        (504, FailureKind.TIMEOUT),
        (500, FailureKind.TRANSIENT),
        (502, FailureKind.TRANSIENT),
        (503, FailureKind.TRANSIENT),
        (529, FailureKind.OVERLOADED),
        (400, FailureKind.REJECTED),
        (413, FailureKind.REJECTED),
        (422, FailureKind.REJECTED),
        (418, FailureKind.UNEXPECTED),
        (404, FailureKind.UNEXPECTED),
    ],
)
def test_status_classes(status: int, kind: FailureKind) -> None:
    out = failure(status, {"error": {"message": "m", "code": "c"}})
    assert out.failure.kind is kind
    assert (out.failure.code, out.failure.message) == ("c", "m")


def test_503_overloaded_and_insufficient_quota() -> None:
    assert (
        failure(503, {"error": {"message": "Server overloaded"}}).failure.kind
        is FailureKind.OVERLOADED
    )
    quota = failure(
        429, {"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}}
    )
    assert quota.failure.kind is FailureKind.REJECTED
    assert not quota.failure.retryable


@pytest.mark.parametrize(
    "body",
    [
        {
            "error": {
                "message": "This model's maximum context length is 4096 tokens.",
                "code": "context_length_exceeded",
            }
        },
        {"error": {"message": "too long", "code": "context_window_exceeded"}},
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 5000,
                "n_ctx": 4096,
            }
        },
    ],
)
def test_context_overflow_in_every_servers_style(body: object) -> None:
    assert failure(400, body).failure.kind is FailureKind.CONTEXT_OVERFLOW


def test_azure_content_filter_with_verdicts_is_not_retryable() -> None:
    body = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy.",
            "type": None,
            "param": "prompt",
            "code": "content_filter",
            "status": 400,
            "innererror": {
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    "hate": {"filtered": False, "severity": "safe"},
                    "jailbreak": {"detected": True, "filtered": True},
                },
            },
        }
    }
    out = failure(400, body).failure
    assert out.kind is FailureKind.CONTENT_FILTER
    assert not out.retryable
    jail = next(r for r in out.filter_results if r.category == "jailbreak")
    assert (jail.detected, jail.filtered) == (True, True)


def test_lm_studio_plain_string_error_and_text_bodies() -> None:
    lm = failure(400, {"error": "'response_format.type' must be 'json_schema' or 'text'"})
    assert lm.failure.kind is FailureKind.REJECTED
    assert lm.failure.message.startswith("'response_format.type'")
    text = failure(502, b"<html>Bad Gateway</html>", [("content-type", "text/html")])
    assert text.failure.message == "<html>Bad Gateway</html>"
    assert failure(500, b"").failure.message == "HTTP 500 with an empty body"
    assert failure(500, b" \r\n").failure.message == "HTTP 500 with an empty body"
    # an empty object is a body, which says nothing (attack 69: "with an empty body")
    assert failure(418, b"{}").failure.message == "the server reported an error without a message"


def test_retry_after_seconds_date_and_ms() -> None:
    assert failure(429, {}, [("retry-after", "7")]).failure.retry_after == 7.0
    now = 1_780_000_000.0  # 2026-05-28
    date = "Thu, 28 May 2026 20:27:10 GMT"
    assert parse_retry_after([("Retry-After", date)], now=now) == pytest.approx(
        1_780_000_030.0 - now
    )
    assert parse_retry_after([("Retry-After", date)]) is None  # a date needs the caller's now
    assert parse_retry_after([("retry-after-ms", "1500"), ("retry-after", "9")]) == 1.5
    assert parse_retry_after([("retry-after", "soon")], now=now) is None
    assert parse_retry_after([("retry-after", "9" * 20)]) is None
    assert parse_retry_after([]) is None
    # attack 27: Latin-1 superscripts are digits to str.isdigit, not to float
    for odd in ("\u00b2", "1\u00b3", "\u00b9"):
        assert parse_retry_after([("retry-after", odd)], now=now) is None
        assert parse_retry_after([("retry-after-ms", odd), ("retry-after", "2")]) == 2.0
    assert failure(429, {}, [("retry-after", "\u00b2")]).failure.retry_after is None


def test_retry_after_ms_that_is_not_a_number_falls_back_to_retry_after() -> None:
    assert parse_retry_after([("retry-after-ms", "soon"), ("retry-after", "3")]) == 3.0
    assert parse_retry_after([("retry-after-ms", "-5"), ("retry-after", "4")]) == 4.0
    assert parse_retry_after([("retry-after-ms", "1e13")]) is None
    # a date with "-0000" has no time zone (RFC 5322): no honest delay
    assert parse_retry_after([("retry-after", "Thu, 28 May 2026 20:27:10 -0000")], now=0.0) is None


def test_a_body_that_looks_like_json_but_is_not_is_kept_as_text() -> None:
    got = failure(500, b'{"error": "half').failure
    assert got.kind is FailureKind.TRANSIENT
    assert '{"error": "half' in got.message


def test_a_401_body_read_for_its_message_is_still_authentication() -> None:
    body = json.dumps({"error": {"message": "bad key", "type": "invalid_request_error"}})
    got = body_outcome(401, JSON, body.encode())
    assert got.failure.kind is FailureKind.AUTHENTICATION
    assert got.failure.message == "bad key"


def test_a_request_for_what_the_server_cannot_do_is_rejected_not_transient() -> None:
    # llama.cpp (build 11434) answers an image sent to a text-only model with a 500
    body = {
        "error": {
            "code": 500,
            "message": "image input is not supported - hint: if this is unexpected, you may "
            "need to provide the mmproj",
            "type": "server_error",
        }
    }
    out = failure(500, body)
    assert out.failure.kind is FailureKind.REJECTED
    assert not out.failure.retryable
    assert failure(500, {"error": {"message": "out of memory"}}).failure.kind is (
        FailureKind.TRANSIENT
    )
