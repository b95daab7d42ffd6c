"""Gemini's safety ratings as filter verdicts, and back (Gemini API reference, "Safety
settings" and "generateContent": ``SafetyRating``).

A rating ``{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "LOW", "blocked": true}``
is a `FilterResult`: ``category`` as it is, ``filtered`` from ``blocked``, ``severity`` the
``probability`` (Vertex AI's ``severity`` and scores are not kept). A verdict ``detected``
something when a rating is blocked or above ``NEGLIGIBLE`` (`FilterVerdict`: "rated above
safe"); it is ``filtered`` when a rating is blocked, or, for the prompt, when a
``blockReason`` came.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import FilterResult
from ..events import FilterVerdict
from ._wire import HARM_PREFIX, SAFE_PROBABILITIES

__all__: list[str] = []


def results(raw: object) -> tuple[FilterResult, ...]:
    """A ``safetyRatings`` list as results; entries that are not objects are skipped."""
    if not isinstance(raw, list):
        return ()
    out = []
    for r in raw:
        if isinstance(r, dict):
            category = r.get("category")
            probability = r.get("probability")
            out.append(
                FilterResult(
                    category=category if isinstance(category, str) else "",
                    filtered=r.get("blocked") is True,
                    severity=probability if isinstance(probability, str) else None,
                )
            )
    return tuple(out)


def verdict(
    scope: Literal["prompt", "completion"], found: tuple[FilterResult, ...], blocked: bool
) -> FilterVerdict:
    return FilterVerdict(
        scope=scope,
        results=found,
        filtered=blocked or any(r.filtered for r in found),
        detected=blocked or any(r.filtered or r.severity not in SAFE_PROBABILITIES for r in found),
    )


def ratings(found: tuple[FilterResult, ...]) -> list[dict[str, Any]]:
    """Results as ``safetyRatings``: only Gemini's own categories (``HARM_CATEGORY_*``) have
    a form; the caller lists the others as lost."""
    out: list[dict[str, Any]] = []
    for r in found:
        if r.category.startswith(HARM_PREFIX):
            rating: dict[str, Any] = {
                "category": r.category,
                "probability": r.severity or "HARM_PROBABILITY_UNSPECIFIED",
            }
            if r.filtered:
                rating["blocked"] = True
            out.append(rating)
    return out
