"""The retry planner's rules (svir_proto.openai.retry)."""

from __future__ import annotations

from svir_proto import Failure, FailureKind
from svir_proto.openai import (
    ChatRequest,
    JSONObjectFormat,
    JSONSchemaFormat,
    NamedToolChoice,
    Tool,
    UserMessage,
    plan_retry,
)

REQ = ChatRequest(
    model="m", messages=[UserMessage(content="x")], include_usage=True, reasoning_effort="low"
)


def fail(
    kind: FailureKind,
    message: str = "m",
    status: int | None = 400,
    retry_after: float | None = None,
) -> Failure:
    return Failure(kind=kind, message=message, status=status, retry_after=retry_after)


def test_content_filter_is_never_retried() -> None:
    assert plan_retry(REQ, fail(FailureKind.CONTENT_FILTER)) is None


def test_strict_server_rejection_drops_the_optional_fields() -> None:
    plan = plan_retry(REQ, fail(FailureKind.REJECTED, "unknown field stream_options", 422))
    assert plan is not None
    assert plan.delay == 0
    assert not plan.request.include_usage
    assert plan.request.reasoning_effort is None
    plain = ChatRequest(model="m", messages=[UserMessage(content="x")])
    assert plan_retry(plain, fail(FailureKind.REJECTED)) is None  # nothing left to drop


def test_how_a_translated_request_is_served_is_optional_too() -> None:
    """Review 37: a request translated from the Responses API carries ``store``,
    ``prompt_cache_key``..., which a strict server may refuse; a rejection that names them only
    inside a word, or names a user message, stands (review 38)."""
    served = ChatRequest(
        model="m",
        messages=[UserMessage(content="x")],
        user="u",
        extra_body={"store": False, "prompt_cache_key": "k", "top_k": 4},
    )
    plan = plan_retry(served, fail(FailureKind.REJECTED, "Unrecognized request argument: store"))
    assert plan is not None
    assert (plan.request.user, dict(plan.request.extra_body)) == ("u", {"top_k": 4})
    assert plan.reason.endswith("sent without store and prompt_cache_key")
    assert plan_retry(served, fail(FailureKind.REJECTED, "model m does not exist")) is None
    for said in ("the last message must be a user message", "cannot restore the session"):
        assert plan_retry(served, fail(FailureKind.REJECTED, said)) is None


def test_lm_studio_rejections_get_the_nearest_form() -> None:
    named = ChatRequest(
        model="m",
        messages=[UserMessage(content="x")],
        tools=[Tool(name="f")],
        tool_choice=NamedToolChoice("f"),
    )
    msg = "Invalid tool_choice type: 'object'. Supported string values: none, auto, required"
    plan = plan_retry(named, fail(FailureKind.REJECTED, msg))
    assert plan is not None
    assert plan.request.tool_choice == "required"
    obj = ChatRequest(
        model="m", messages=[UserMessage(content="x")], response_format=JSONObjectFormat()
    )
    plan = plan_retry(
        obj, fail(FailureKind.REJECTED, "'response_format.type' must be 'json_schema' or 'text'")
    )
    assert plan is not None
    assert isinstance(plan.request.response_format, JSONSchemaFormat)


def test_waits_honour_retry_after_and_back_off() -> None:
    plan = plan_retry(REQ, fail(FailureKind.RATE_LIMITED, status=429, retry_after=3.0))
    assert plan is not None
    assert (plan.request, plan.delay) == (REQ, 3.0)
    delays = [
        plan_retry(REQ, fail(FailureKind.TRANSIENT, status=503), attempt=a, max_attempts=9)
        for a in (1, 2, 3)
    ]
    assert [p.delay for p in delays if p] == [0.5, 1.0, 2.0]
    assert plan_retry(REQ, fail(FailureKind.RATE_LIMITED, status=429, retry_after=600.0)) is None


def test_stops() -> None:
    assert plan_retry(REQ, fail(FailureKind.TRANSIENT), attempt=3) is None
    assert plan_retry(REQ, fail(FailureKind.TRANSIENT), generated=True) is None
    assert plan_retry(REQ, fail(FailureKind.AUTHENTICATION, status=401)) is None
    assert plan_retry(REQ, fail(FailureKind.CONTEXT_OVERFLOW)) is None
