"""The Responses API's wire vocabulary both directions share: the endpoint, finish reasons,
error codes and token counts (OpenAI API reference, "Responses" and "Streaming events").

A finish is a response's ``status``, and for ``incomplete`` its ``incomplete_details.reason``:

=================================  ======================  ===================================
on the wire                        `FinishReason`          ``Finished.raw``
=================================  ======================  ===================================
``response.completed``             ``STOP``, or            ``"completed"`` (the status)
                                   ``TOOL_CALLS`` when a
                                   ``function_call`` item
                                   is in the output
``response.incomplete``,           ``LENGTH``              ``"max_output_tokens"``
``max_output_tokens``
``response.incomplete``,           ``CONTENT_FILTER``      ``"content_filter"``
``content_filter``
``response.incomplete``, other     ``OTHER``               the reason (``"max_messages"``...),
                                                           or ``"incomplete"`` without one
=================================  ======================  ===================================

Usage (``response.usage``) is counted as `Usage` counts, so it maps field for field:
``input_tokens`` (cache reads and writes included) -> ``prompt_tokens``,
``input_tokens_details.cached_tokens`` -> ``cached_tokens``,
``input_tokens_details.cache_write_tokens`` -> ``cache_creation_tokens``, ``output_tokens``
(reasoning included) -> ``completion_tokens``, ``output_tokens_details.reasoning_tokens`` ->
``reasoning_tokens``, ``total_tokens`` -> ``total_tokens``.
"""

from __future__ import annotations

from typing import Any, Final

from ..errors import Failure, FailureKind
from ..events import FinishReason, Usage
from ..openai._failures import failure_from_error_object

__all__ = ["RESPONSES_PATH"]

RESPONSES_PATH: Final = "/v1/responses"
CARRIERS: Final = ("summary", "reasoning_text")
"""The carriers of the Responses API's own reasoning: a reasoning item's summary and its
content; a signature of another is another vendor's (`svir_proto.hub`, carried)."""
"""Where a Responses request goes (``POST``), below the server's base URL without ``/v1``."""

INCOMPLETE: Final = {
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}
REASON_OF: Final = {
    FinishReason.LENGTH: "max_output_tokens",
    FinishReason.CONTENT_FILTER: "content_filter",
}
"""The ``incomplete_details.reason`` an encoder writes for a finish that cut the answer."""

# error.code values of the API reference ("The error code for the response"), and the codes
# its error events carry, whose kind the shared classifier (openai._failures) cannot tell
_KINDS: Final = {
    "insufficient_quota": FailureKind.REJECTED,  # a quota, not a rate: waiting does not help
    "invalid_prompt": FailureKind.REJECTED,
    "bio_policy": FailureKind.CONTENT_FILTER,
    "misalignment_policy_violation": FailureKind.CONTENT_FILTER,
    "image_content_policy_violation": FailureKind.CONTENT_FILTER,
    "vector_store_timeout": FailureKind.TIMEOUT,
    "server_error": FailureKind.SERVER_ERROR,
    "data_residency_mismatch": FailureKind.REJECTED,
}
_IMAGE_CODES: Final = frozenset(
    {
        "invalid_image",
        "invalid_image_format",
        "invalid_base64_image",
        "invalid_image_url",
        "image_too_large",
        "image_too_small",
        "image_parse_error",
        "invalid_image_mode",
        "image_file_too_large",
        "unsupported_image_media_type",
        "empty_image_file",
        "failed_to_download_image",
        "image_file_not_found",
    }
)
CODE_OF: Final = {
    FailureKind.RATE_LIMITED: "rate_limit_exceeded",
    FailureKind.CONTEXT_OVERFLOW: "context_length_exceeded",
    FailureKind.REJECTED: "invalid_prompt",
    FailureKind.CONTENT_FILTER: "content_filter",
    FailureKind.TIMEOUT: "timeout",
    FailureKind.AUTHENTICATION: "invalid_api_key",
}
"""The code an encoder writes for a failure that has none of its own (else ``server_error``)."""


def failure(error: object, *, default: FailureKind = FailureKind.SERVER_ERROR) -> Failure:
    """A `Failure` from what the stream said: an ``error`` event's fields (the reference's
    flat ``code``/``message``/``param``, or the ``error`` object the API has been recorded
    sending inside it), or a failed response's ``error`` object."""
    if isinstance(error, dict):
        inner = error.get("error")
        source = inner if isinstance(inner, dict) else error
        # the event's own "type" is "error": never the failure's type
        fields = {k: source[k] for k in ("message", "code", "type") if k in source}
        if source is error:
            fields.pop("type", None)
        parsed = failure_from_error_object({"error": fields}, status=None, default=default)
    else:
        parsed = failure_from_error_object(error, status=None, default=default)
    kind = parsed.kind
    if kind is default and parsed.code is not None:
        kind = (
            FailureKind.REJECTED if parsed.code in _IMAGE_CODES else _KINDS.get(parsed.code, kind)
        )
    return Failure(kind=kind, message=parsed.message, code=parsed.code)


def error_code(f: Failure) -> str:
    """The code to write for a failure: its own, else the one its kind stands for; another
    vendor's own too, when its kind has one here (fidelity 43 F07: Gemini's statuses are
    upper case, ``RESOURCE_EXHAUSTED``; Anthropic's and llama.cpp's types end in ``_error``,
    ``exceed_context_size_error``; OpenAI's ``server_error`` is its own). One that has none
    (``overloaded_error``) is kept: ``server_error`` would say it is not worth retrying."""
    code = f.code
    if not code:
        return CODE_OF.get(f.kind, "server_error")
    foreign = code.isupper() or (code.endswith("_error") and code not in _KINDS)
    return CODE_OF[f.kind] if foreign and f.kind in CODE_OF else code


def _count(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def usage_in(raw: object) -> Usage | None:
    """``response.usage`` as a `Usage` (the table in the module docstring); ``None`` when it is
    not an object. A proxy's Chat Completions keys (``prompt_tokens``...) are read too."""
    if not isinstance(raw, dict):
        return None
    inputs = raw.get("input_tokens_details")
    outputs = raw.get("output_tokens_details")
    if not isinstance(inputs, dict):
        inputs = raw.get("prompt_tokens_details")
    if not isinstance(outputs, dict):
        outputs = raw.get("completion_tokens_details")
    prompt = raw.get("input_tokens", raw.get("prompt_tokens"))
    completion = raw.get("output_tokens", raw.get("completion_tokens"))
    return Usage(
        prompt_tokens=_count(prompt),
        completion_tokens=_count(completion),
        total_tokens=_count(raw.get("total_tokens")),
        reasoning_tokens=_count(outputs.get("reasoning_tokens"))
        if isinstance(outputs, dict)
        else None,
        cached_tokens=_count(inputs.get("cached_tokens")) if isinstance(inputs, dict) else None,
        cache_creation_tokens=_count(inputs.get("cache_write_tokens"))
        if isinstance(inputs, dict)
        else None,
    )


def usage_out(u: Usage) -> dict[str, Any]:
    """A `Usage` as ``response.usage``. The API always sends every count, so one the upstream
    did not report is written as 0; ``cache_write_tokens`` only when it is known. (Not
    ``null`` for "unknown", audit 36: the openai SDK's types require integers there, and a
    client that validates the answer refuses it.)"""
    prompt = u.prompt_tokens or 0
    completion = u.completion_tokens or 0
    inputs: dict[str, int] = {"cached_tokens": u.cached_tokens or 0}
    if u.cache_creation_tokens is not None:
        inputs["cache_write_tokens"] = u.cache_creation_tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": inputs,
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens or 0},
        "total_tokens": u.total_tokens if u.total_tokens is not None else prompt + completion,
    }
