"""The Gemini wire vocabulary both directions share: finish and block reasons, the error
statuses and their HTTP codes, and the token counts of ``usageMetadata``.

Sources: the Gemini API reference, "generateContent" (``Candidate.FinishReason``,
``PromptFeedback.BlockReason``, ``UsageMetadata``) and "API troubleshooting" (the error
statuses), checked against the ``google-genai`` SDK's ``types.py`` enums.

Usage is counted as `Usage` says (the OpenAI way): Gemini's ``candidatesTokenCount`` leaves the
thoughts out, so ``completion_tokens`` is candidates plus thoughts; ``promptTokenCount``
includes the cached content already, and ``toolUsePromptTokenCount`` (the results of the tools
the server ran) is input too, so ``prompt_tokens`` is prompt plus tool-use prompt. The encoder
takes the thoughts out again; the tool-use share stays inside ``promptTokenCount`` (the count
survives, its split does not).
"""

from __future__ import annotations

from typing import Any, Final

from ..errors import FailureKind
from ..events import FinishReason, Usage

__all__: list[str] = []

SVIR_EXTENSION: Final = "vendor:svir"
"""What a svir encoder adds where Gemini has no field: ``usageMetadata["vendor:svir"]``
``{"cacheCreationTokenCount": N}`` (Anthropic's cache writes)."""
CARRIER: Final = "thought"
"""Gemini's reasoning: parts with ``"thought": true``, signed by ``thoughtSignature``."""

FINISH: Final = {
    "STOP": FinishReason.STOP,  # TOOL_CALLS when the answer called functions (stream Rule 5)
    "MAX_TOKENS": FinishReason.LENGTH,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "SPII": FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": FinishReason.CONTENT_FILTER,
    "IMAGE_PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "IMAGE_RECITATION": FinishReason.CONTENT_FILTER,
    "MODEL_ARMOR": FinishReason.CONTENT_FILTER,
}
"""``Candidate.FinishReason`` values that have a normal form other than OTHER. Every other value
(``MALFORMED_FUNCTION_CALL``, ``OTHER``, ``LANGUAGE``, ``FINISH_REASON_UNSPECIFIED``,
``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``, ``NO_IMAGE``, ``IMAGE_OTHER``, one added
later) is OTHER, with the raw value kept."""

FINISH_OF: Final = {
    FinishReason.STOP: "STOP",
    FinishReason.TOOL_CALLS: "STOP",  # Gemini ends an answer that calls functions with STOP
    FinishReason.LENGTH: "MAX_TOKENS",
    FinishReason.CONTENT_FILTER: "SAFETY",
    FinishReason.OTHER: "OTHER",
}
"""The value the encoder writes for a normal form whose raw value is not Gemini's own."""

BLOCK_REASONS: Final = frozenset(
    {
        "BLOCK_REASON_UNSPECIFIED",
        "SAFETY",
        "OTHER",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "IMAGE_SAFETY",
        "MODEL_ARMOR",
        "JAILBREAK",
    }
)
"""``PromptFeedback.BlockReason``: why the prompt itself was blocked (no candidate at all)."""

SAFE_PROBABILITIES: Final = frozenset({"NEGLIGIBLE", "HARM_PROBABILITY_UNSPECIFIED"})
"""``SafetyRating.probability`` values that found nothing: anything above ``NEGLIGIBLE`` is
"rated above safe" (`FilterVerdict.detected`)."""
HARM_PREFIX: Final = "HARM_CATEGORY_"

STATUS_KIND: Final = {
    "INVALID_ARGUMENT": FailureKind.REJECTED,
    "FAILED_PRECONDITION": FailureKind.REJECTED,
    "NOT_FOUND": FailureKind.REJECTED,
    "OUT_OF_RANGE": FailureKind.REJECTED,
    "UNIMPLEMENTED": FailureKind.REJECTED,
    "ALREADY_EXISTS": FailureKind.REJECTED,
    "PERMISSION_DENIED": FailureKind.AUTHENTICATION,
    "UNAUTHENTICATED": FailureKind.AUTHENTICATION,
    "RESOURCE_EXHAUSTED": FailureKind.RATE_LIMITED,
    "UNAVAILABLE": FailureKind.TRANSIENT,
    "INTERNAL": FailureKind.TRANSIENT,
    "ABORTED": FailureKind.TRANSIENT,
    "UNKNOWN": FailureKind.TRANSIENT,
    "DEADLINE_EXCEEDED": FailureKind.TIMEOUT,
    "CANCELLED": FailureKind.UNEXPECTED,
    "DATA_LOSS": FailureKind.SERVER_ERROR,
}
"""``google.rpc.Code`` names, as ``error.status`` carries them, to failure kinds (the API
troubleshooting page: 400 INVALID_ARGUMENT and FAILED_PRECONDITION, 403 PERMISSION_DENIED, 404
NOT_FOUND, 429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED)."""

STATUS_OF: Final = {
    FailureKind.AUTHENTICATION: (401, "UNAUTHENTICATED"),
    FailureKind.RATE_LIMITED: (429, "RESOURCE_EXHAUSTED"),
    FailureKind.TIMEOUT: (504, "DEADLINE_EXCEEDED"),
    FailureKind.TRANSIENT: (503, "UNAVAILABLE"),
    FailureKind.OVERLOADED: (503, "UNAVAILABLE"),
    FailureKind.REJECTED: (400, "INVALID_ARGUMENT"),
    FailureKind.CONTEXT_OVERFLOW: (400, "INVALID_ARGUMENT"),
    FailureKind.CONTENT_FILTER: (400, "INVALID_ARGUMENT"),
    FailureKind.NOT_A_STREAM: (502, "UNAVAILABLE"),
    FailureKind.SERVER_ERROR: (500, "INTERNAL"),
    FailureKind.UNEXPECTED: (502, "UNKNOWN"),  # an answer the gateway could not use
}
"""What a failure of each kind is written as (``error.code``, ``error.status``)."""

SVIR_DOMAIN: Final = "svir-proto"
"""The ``ErrorInfo.domain`` a svir peer writes, with the failure's kind as ``reason`` and its
code in ``metadata.code``, so that a kind and a code survive a Gemini hop."""
ERROR_INFO: Final = "type.googleapis.com/google.rpc.ErrorInfo"
RETRY_INFO: Final = "type.googleapis.com/google.rpc.RetryInfo"


def count(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def usage_in(raw: dict[str, Any]) -> Usage:
    """``usageMetadata`` as a `Usage`, normalised (module docstring)."""
    prompt = count(raw.get("promptTokenCount"))
    tool = count(raw.get("toolUsePromptTokenCount"))
    candidates = count(raw.get("candidatesTokenCount"))
    thoughts = count(raw.get("thoughtsTokenCount"))
    return Usage(
        prompt_tokens=prompt if tool is None else (prompt or 0) + tool,
        completion_tokens=candidates
        if thoughts is None
        else thoughts
        if candidates is None
        else candidates + thoughts,
        total_tokens=count(raw.get("totalTokenCount")),
        reasoning_tokens=thoughts,
        cached_tokens=count(raw.get("cachedContentTokenCount")),
        cache_creation_tokens=count(ours.get("cacheCreationTokenCount"))
        if isinstance(ours := raw.get(SVIR_EXTENSION), dict)
        else None,
    )


def usage_out(usage: Usage) -> dict[str, int]:
    """A `Usage` as ``usageMetadata``: the thoughts taken out of the candidates again."""
    out: dict[str, int] = {}
    if usage.prompt_tokens is not None:
        out["promptTokenCount"] = usage.prompt_tokens
    if usage.cached_tokens is not None:
        out["cachedContentTokenCount"] = usage.cached_tokens
    if usage.completion_tokens is not None:
        out["candidatesTokenCount"] = max(
            0, usage.completion_tokens - (usage.reasoning_tokens or 0)
        )
    if usage.reasoning_tokens is not None:
        out["thoughtsTokenCount"] = usage.reasoning_tokens
    if usage.total_tokens is not None:
        out["totalTokenCount"] = usage.total_tokens
    return out
