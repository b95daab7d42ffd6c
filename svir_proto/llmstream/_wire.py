"""The LLM-Stream wire vocabulary both directions share: the version, the stop reasons and
error codes and their meanings, and the svir extension.

What the draft has no event for travels in an extension field, ``"vendor:svir"``, on the event
it belongs with, so two svir peers round-trip it and any other conforming parser ignores it:

=============================  ==================================================================
vocabulary                     on the wire
=============================  ==================================================================
``ReasoningDelta``             ``content.delta`` with ``delta.text`` "" and
                               ``"vendor:svir": {"reasoning": TEXT, "carrier": KEY}``
``ReasoningSignature``         ``content.delta``, text "", ``{"signature": S, "carrier": KEY}``
                               and ``"redacted": true``, ``"item_id": ID`` when they apply
``RefusalDelta``               ``content.delta``, text "", ``{"refusal": TEXT}``
``FilterVerdict``              ``content.delta``, text "", ``{"filter": {scope, results, offsets}}``
``Finished.raw``               ``content.stop`` ``{"finish": RAW}`` when RAW is not the standard
                               value (``stop_reason`` is then the nearest of the four)
``Usage`` extras               ``usage`` ``{"total_tokens": N, "reasoning_tokens": N,
                               "cached_tokens": N, "cache_creation_tokens": N}``, each if known
``Failure`` kind and code      ``error`` ``{"kind": KIND, "code": CODE or null}``; so too on an
                               HTTP error's body (`svir_proto.llmstream._status`), in its object
=============================  ==================================================================
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

from ..errors import Failure, FailureKind, FilterResult
from ..events import FilterOffsets, FilterVerdict, FinishReason

__all__ = ["ERROR_CODES", "MAX_SEQ", "STOP_REASONS", "SVIR_EXTENSION"]

SVIR_EXTENSION: Final = "vendor:svir"
MAX_SEQ: Final = 2**53
"""Section 8.4: past the safe integer limit of JSON numbers a stream is pathological."""
VERSION: Final = "1.0"

STOP_REASONS: Final = {
    "end_turn": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}
STOP_OF: Final = {
    FinishReason.STOP: "end_turn",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.TOOL_CALLS: "tool_use",
    FinishReason.CONTENT_FILTER: "content_filter",
    FinishReason.OTHER: "end_turn",
}
DEFAULT_RAW: Final = {  # the OpenAI finish_reason each stop_reason stands for
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
}

ERROR_CODES: Final = {
    "rate_limited": FailureKind.RATE_LIMITED,
    "context_length_exceeded": FailureKind.CONTEXT_OVERFLOW,
    "content_filtered": FailureKind.CONTENT_FILTER,
    "internal_error": FailureKind.SERVER_ERROR,
    "overloaded": FailureKind.OVERLOADED,
}
CODE_OF: Final = {
    FailureKind.RATE_LIMITED: "rate_limited",
    FailureKind.CONTEXT_OVERFLOW: "context_length_exceeded",
    FailureKind.CONTENT_FILTER: "content_filtered",
    FailureKind.OVERLOADED: "overloaded",
}


def error_code(kind: FailureKind) -> str:
    """The draft's error code for a failure kind (``internal_error`` for the rest)."""
    return CODE_OF.get(kind, "internal_error")


def failure_out(failure: Failure) -> dict[str, Any]:
    """What the draft's code does not say of ``failure``, under `SVIR_EXTENSION` (the table)."""
    return {"kind": failure.kind.value, "code": failure.code}


def failure_in(ext: object, kind: FailureKind, code: str | None) -> tuple[FailureKind, str | None]:
    """A failure's kind and code, read back from what `failure_out` wrote (``ext``): its kind
    if it is one this library knows, else ``kind``; its code, null included, if it gives one,
    else ``code`` (a peer that is not svir's gives neither)."""
    if not isinstance(ext, dict):
        return kind, code
    with contextlib.suppress(ValueError, TypeError):  # (a kind this library does not know)
        kind = FailureKind(ext.get("kind", kind.value))
    if "code" in ext:
        code = ext["code"] if isinstance(ext["code"], str) else None
    return kind, code


def verdict_out(v: FilterVerdict) -> dict[str, Any]:
    out: dict[str, Any] = {
        "scope": v.scope,
        "results": [
            {k: getattr(r, k) for k in ("category", "filtered", "detected", "severity", "id")}
            for r in v.results
        ],
        "filtered": v.filtered,
        "detected": v.detected,
    }
    if v.offsets is not None:
        out["offsets"] = {
            k: getattr(v.offsets, k) for k in ("check_offset", "start_offset", "end_offset")
        }
    return out


def verdict_in(raw: object) -> FilterVerdict | None:
    if not isinstance(raw, dict) or raw.get("scope") not in ("prompt", "completion"):
        return None
    results = []
    for r in raw.get("results") or ():
        if isinstance(r, dict) and isinstance(r.get("category"), str):
            results.append(
                FilterResult(
                    category=r["category"],
                    filtered=r.get("filtered") is True,
                    detected=r.get("detected") if isinstance(r.get("detected"), bool) else None,
                    severity=r.get("severity") if isinstance(r.get("severity"), str) else None,
                    id=r.get("id") if isinstance(r.get("id"), str) else None,
                )
            )
    offsets = raw.get("offsets")
    return FilterVerdict(
        scope=raw["scope"],
        results=tuple(results),
        offsets=FilterOffsets(
            **{
                k: v
                for k, v in offsets.items()
                if k in ("check_offset", "start_offset", "end_offset")
                and (v is None or type(v) is int)
            }
        )
        if isinstance(offsets, dict)
        else None,
        filtered=raw.get("filtered") is True,
        detected=raw.get("detected") is True,
    )
