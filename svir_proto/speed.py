"""Tokens per second, from timestamps the caller supplies (wire reference 3.6).

The rate is honest only from the first visible token to the last: the wait for the first token
(prompt processing) does not drag it down. A token is a delta event that carried something a
person sees: text, reasoning, refusal, or a piece of a tool call. A chunk that was only a
``<think>`` marker, or part of one, produces no such event and counts for nothing. Servers send
one token per chunk; the one exception is a chunk that a marker splits between reasoning and
text (``a</think>b``), which the decoder gives as two events and this meter counts twice: at
most a token or two in a whole answer.

With one token, or a window shorter than ``min_window`` (50 ms), there is no honest rate:
`rate` is ``None``. This module never reads a clock.
"""

from __future__ import annotations

from typing import Final

from .events import Event, ReasoningDelta, RefusalDelta, TextDelta, ToolCallDelta

__all__ = ["MIN_WINDOW", "SpeedMeter"]

MIN_WINDOW: Final = 0.05
"""Seconds: below this, timer resolution and scheduling noise dominate the measurement."""


class SpeedMeter:
    """Count visible tokens and the window they arrived in.

    Args:
        min_window: the shortest window, in seconds, that gives a rate.
    """

    def __init__(self, *, min_window: float = MIN_WINDOW) -> None:
        if min_window < 0:
            raise ValueError(f"min_window must be >= 0, not {min_window}")
        self.min_window = min_window
        self.tokens = 0
        self.first: float | None = None
        self.last: float | None = None

    def observe(self, event: Event, now: float) -> None:
        """Count ``event`` if it is a visible token that arrived at ``now`` (seconds, from any
        monotonic clock). Timestamps must not go backwards."""
        if type(event) in (TextDelta, ReasoningDelta, RefusalDelta):
            visible = bool(event.text)  # type: ignore[union-attr]
        elif type(event) is ToolCallDelta:
            visible = bool(event.arguments or event.name)
        else:
            return
        if not visible:
            return
        if self.last is not None and now < self.last:
            raise ValueError(f"timestamps went backwards: {now} after {self.last}")
        if self.first is None:
            self.first = now
        self.last = now
        self.tokens += 1

    @property
    def window(self) -> float:
        """Seconds from the first visible token to the last (0 before two tokens)."""
        if self.first is None or self.last is None:
            return 0.0
        return self.last - self.first

    @property
    def rate(self) -> float | None:
        """Tokens per second over the window: the intervals between tokens divided by the
        window, or ``None`` when there is no honest rate (see the module docstring)."""
        if self.tokens < 2 or self.window < self.min_window:
            return None
        return (self.tokens - 1) / self.window
