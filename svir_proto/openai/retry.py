"""What to send after a failure, if anything (wire reference 2.4, 2.5 and 5).

Rule 1: a content-filter rejection is never retried: the prompt's evaluation is billed again.
Rule 2: nothing is retried once the answer has begun (``generated``): a retry would generate
    it again; the caller decides.
Rule 3: a strict server's 400/422 to a request carrying the optional ``stream_options`` or
    ``reasoning_effort`` or, in ``extra_body``, the hub's `svir_proto.hub.SERVICE` options
    (``store``, ``service_tier``...: what a request translated from the Responses API
    carries), is retried at once without the ones it carried (the reason names them): nothing
    was generated. Only a rejection that can be about them is: one that names one of them (as
    a word), that complains of an unknown field, or that says nothing at all (an empty body, a
    422 whose body the error reader found no message in). A 400 that says something else (an
    unknown model, a bad message) stands.
Rule 4: LM Studio's rejections of a named ``tool_choice`` and of ``json_object``, recognised by
    their messages, are retried at once with the nearest form it accepts.
Rule 5: rate limits, timeouts, overload and transient failures are retried after
    ``Retry-After`` or an exponential backoff; nothing else is.

The planner adds no jitter (the core has no randomness); a caller that runs many clients
should add its own.
"""

from __future__ import annotations

import re
from typing import Final, final

import attrs

from ..errors import Failure, FailureKind
from .request import JSON_OBJECT_AS_SCHEMA, ChatRequest, JSONObjectFormat, NamedToolChoice

__all__ = ["RetryPlan", "plan_retry", "retry_delay"]

# Rule 3: how servers say that a field is not theirs (OpenAI: "Unrecognized request argument";
# pydantic: "Extra inputs are not permitted"; others: "unknown field", "unexpected keyword")
_UNKNOWN_FIELD: Final = re.compile(
    r"unrecogni[sz]ed|unknown|unexpected|not permitted|not allowed|extra (?:field|input|key)"
    r"|additional propert",
    re.IGNORECASE,
)
_SAYS_NOTHING: Final = ("without a message", "with an empty body")
_SERVED: Final = ("store", "service_tier", "prompt_cache_key", "safety_identifier", "verbosity")
"""The hub's `svir_proto.hub.SERVICE` options a Chat request carries in ``extra_body`` (not
``user``, a field of its own, which a rejection of a "user message" would seem to name)."""

_WAIT: Final = frozenset(
    {FailureKind.RATE_LIMITED, FailureKind.TIMEOUT, FailureKind.OVERLOADED, FailureKind.TRANSIENT}
)


@final
@attrs.frozen(kw_only=True)
class RetryPlan:
    """Send ``request`` after ``delay`` seconds, because ``reason``."""

    request: ChatRequest
    delay: float
    reason: str


def plan_retry(
    request: ChatRequest,
    failure: Failure,
    *,
    generated: bool = False,
    attempt: int = 1,
    max_attempts: int = 3,
    base_delay: float = 0.5,
    max_delay: float = 60.0,
) -> RetryPlan | None:
    """The next request to send after ``failure``, or ``None`` to stop.

    Args:
        attempt: how many times ``request`` (or its ancestors) has been sent, from 1.
        generated: the answer had begun when it failed (an error inside the stream).
    """
    if attempt >= max_attempts:
        return None
    if failure.kind is FailureKind.CONTENT_FILTER:  # Rule 1
        return None
    if generated:  # Rule 2
        return None
    message = failure.message
    if failure.kind is FailureKind.REJECTED and failure.status in (400, 422, None):
        if "Invalid tool_choice type" in message and isinstance(
            request.tool_choice, NamedToolChoice
        ):
            return RetryPlan(  # Rule 4
                request=attrs.evolve(request, tool_choice="required"),
                delay=0.0,
                reason="the server takes tool_choice strings only: sent 'required'",
            )
        if "response_format.type" in message and isinstance(
            request.response_format, JSONObjectFormat
        ):
            return RetryPlan(
                request=attrs.evolve(request, response_format=JSON_OBJECT_AS_SCHEMA),
                delay=0.0,
                reason="the server takes no json_object: sent a json_schema of any object",
            )
        sent = [
            name
            for name, carried in (
                ("stream_options", request.include_usage),
                ("reasoning_effort", request.reasoning_effort is not None),
            )
            if carried
        ]
        served = [name for name in _SERVED if name in request.extra_body]
        if (sent or served) and _about_optional_fields(message, [*sent, *served]):  # Rule 3
            rest = {k: v for k, v in request.extra_body.items() if k not in _SERVED}
            return RetryPlan(
                request=attrs.evolve(
                    request, include_usage=False, reasoning_effort=None, extra_body=rest
                ),
                delay=0.0,
                reason="a strict server rejected the request: sent without "
                + " and ".join([*sent, *served]),
            )
        return None
    delay = retry_delay(failure, attempt=attempt, base_delay=base_delay, max_delay=max_delay)
    if delay is None:
        return None
    return RetryPlan(request=request, delay=delay, reason=f"{failure.kind.value}: retry")


def _about_optional_fields(message: str, names: list[str]) -> bool:
    """Rule 3: whether a rejection can be about the optional fields ``names``."""
    text = message.lower()
    return (
        any(re.search(rf"\b{name}\b", text) for name in (*names, "include_usage"))
        or _UNKNOWN_FIELD.search(message) is not None
        or any(words in text for words in _SAYS_NOTHING)
    )


def retry_delay(
    failure: Failure, *, attempt: int = 1, base_delay: float = 0.5, max_delay: float = 60.0
) -> float | None:
    """Rule 5 alone, for any dialect: seconds to wait before sending the same request again
    after ``failure``, or ``None`` when waiting does not help (or would take over
    ``max_delay``: a wait that long is the server saying no)."""
    if failure.kind not in _WAIT:
        return None
    delay = failure.retry_after
    if delay is None:
        delay = base_delay * 2 ** (attempt - 1)
    return None if delay > max_delay else delay
