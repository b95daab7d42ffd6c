"""The LLM-Stream lifecycle (draft section 5, "Stream Lifecycle") as one table.

Rule 1: exactly one ``stream.start``, first (its ``seq`` is 0).
Rule 2: then any number of ``content.delta``, ``content.stop``, ``tool.call`` and ``usage``.
Rule 3: an ``error`` may come once; after it, only ``stream.end``.
Rule 4: exactly one ``stream.end``, last; nothing after it.

The encoder (our side broke the order: `CallerProtocolError`) and the decoder (the peer did:
`PeerProtocolError`) both apply this one table through `advance`; a rejected transition
changes nothing.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["EVENT_TYPES", "State", "TRANSITIONS", "advance"]


class State(enum.Enum):
    IDLE = "IDLE"
    STREAMING = "STREAMING"
    FAILED = "FAILED"
    ENDED = "ENDED"


EVENT_TYPES: Final = (
    "stream.start",
    "content.delta",
    "content.stop",
    "tool.call",
    "usage",
    "error",
    "stream.end",
)

TRANSITIONS: Final[dict[tuple[State, str], State]] = {
    (State.IDLE, "stream.start"): State.STREAMING,  # Rule 1
    **{
        (State.STREAMING, t): State.STREAMING
        for t in ("content.delta", "content.stop", "tool.call", "usage")
    },
    (State.STREAMING, "error"): State.FAILED,  # Rule 3
    (State.STREAMING, "stream.end"): State.ENDED,  # Rule 4
    (State.FAILED, "stream.end"): State.ENDED,
}


def advance(state: State, event_type: str) -> State | None:
    """The state after ``event_type``, or ``None`` if the table does not allow it there."""
    return TRANSITIONS.get((state, event_type))


def refusal(state: State, event_type: str, verb: str) -> str:
    """The message for a rejected transition, in h11's words."""
    return f"cannot {verb} {event_type} in state {state.value}"
