"""How a decoder's output is written down in the conformance files: a compact, reviewable form.

``summary(events, result)`` gives the events with adjacent deltas joined (so any split of a body
gives the same list) and the `Completion`'s fields that a reader checks.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from svir_proto.events import Completion, Event, ReasoningDelta, RefusalDelta, TextDelta


def joined(events: list[Event]) -> list[Event]:
    out: list[Event] = []
    for e in events:
        prev = out[-1] if out else None
        if isinstance(e, (TextDelta, RefusalDelta)) and type(prev) is type(e):
            out[-1] = attrs.evolve(prev, text=prev.text + e.text)  # type: ignore[union-attr]
        elif (
            isinstance(e, ReasoningDelta)
            and isinstance(prev, ReasoningDelta)
            and prev.carrier == e.carrier
        ):
            out[-1] = attrs.evolve(prev, text=prev.text + e.text)
        else:
            out.append(e)
    return out


LATER: frozenset[str] = frozenset(
    {"reasoning_blocks", "cached_tokens", "cache_creation_tokens", "segments"}
)
"""Fields added after most vectors were written: written down only when they are set, so the
older vectors stay as they were (and still check every field they name)."""


def plain(value: Any) -> Any:
    if attrs.has(type(value)):
        return {
            f.name: plain(getattr(value, f.name))
            for f in attrs.fields(type(value))
            if f.name not in LATER or getattr(value, f.name) != f.default
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


def summary(events: list[Event], result: Completion) -> dict[str, Any]:
    return {
        "events": [[type(e).__name__, plain(e)] for e in joined(events)],
        "result": plain(result),
    }
