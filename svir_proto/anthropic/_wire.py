"""The Anthropic Messages API's fixed values, in one place for the request, the decoder, the
encoder and the error bodies: the path and headers, the stop reasons and the error types.

Sources: Anthropic's API reference, "Messages" (``stop_reason``), "Streaming Messages" (event
types) and "Errors" (HTTP errors and their ``error.type``); the ``anthropic`` SDK's types agree.
This module holds values only.
"""

from __future__ import annotations

from typing import Final

from ..errors import FailureKind
from ..events import FinishReason

__all__: list[str] = []

PATH: Final = "/v1/messages"
API_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` every client sends (the only version of the Messages API)."""

STOP_REASONS: Final = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    # 2025: the answer filled the model's context window (Messages, stop_reason): cut short
    "model_context_window_exceeded": FinishReason.LENGTH,
    "refusal": FinishReason.CONTENT_FILTER,
    "pause_turn": FinishReason.OTHER,  # a server tool's long turn, to be continued
}
"""``stop_reason`` to the vocabulary; any other value is `FinishReason.OTHER` (raw kept)."""

STOP_OF: Final = {
    FinishReason.STOP: "end_turn",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.TOOL_CALLS: "tool_use",
    FinishReason.CONTENT_FILTER: "refusal",
    FinishReason.OTHER: "end_turn",
}
"""The ``stop_reason`` an encoder writes for a finish whose raw value is not Anthropic's."""

ERROR_TYPES: Final = {
    "invalid_request_error": FailureKind.REJECTED,
    "request_too_large": FailureKind.REJECTED,
    "not_found_error": FailureKind.REJECTED,
    "billing_error": FailureKind.REJECTED,  # paying, not waiting, helps
    "authentication_error": FailureKind.AUTHENTICATION,
    "permission_error": FailureKind.AUTHENTICATION,
    "rate_limit_error": FailureKind.RATE_LIMITED,
    "timeout_error": FailureKind.TIMEOUT,
    "gateway_timeout_error": FailureKind.TIMEOUT,
    "overloaded_error": FailureKind.OVERLOADED,
    "api_error": FailureKind.SERVER_ERROR,
}
"""``error.type`` (Errors) to a failure kind; another type is the HTTP status's kind, or
`FailureKind.SERVER_ERROR` inside a stream."""

ERROR_OF: Final = {
    FailureKind.AUTHENTICATION: ("authentication_error", 401),
    FailureKind.RATE_LIMITED: ("rate_limit_error", 429),
    FailureKind.TIMEOUT: ("timeout_error", 504),
    FailureKind.TRANSIENT: ("api_error", 500),
    FailureKind.OVERLOADED: ("overloaded_error", 529),
    FailureKind.REJECTED: ("invalid_request_error", 400),
    FailureKind.CONTEXT_OVERFLOW: ("invalid_request_error", 400),
    FailureKind.CONTENT_FILTER: ("invalid_request_error", 400),
    FailureKind.NOT_A_STREAM: ("api_error", 502),
    FailureKind.SERVER_ERROR: ("api_error", 500),
    FailureKind.UNEXPECTED: ("api_error", 502),  # an answer the gateway could not use
}
"""A failure kind to the ``error.type`` and HTTP status a gateway answers with (Errors)."""

STATUS_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""The ``error.type`` Anthropic answers each of its error statuses with (Errors)."""

OVERFLOW_PHRASES: Final = (
    "prompt is too long",  # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    "exceed context limit",  # Anthropic: "input length and `max_tokens` exceed context limit"
)
"""Anthropic's words for a context overflow (an ``invalid_request_error``); the other servers'
are `svir_proto.openai._failures`'s."""
