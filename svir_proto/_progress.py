"""What counts as a stream's progress: the events a relay's ``--timeout`` is reset by.

An upstream that sends nothing new for the gateway's ``progress_timeout`` loses its stream,
however many keep-alives it sends: SSE comments, ``ping`` events, chunks of empty content or of
no choice (attack 31). Keep-alives come in other shapes too (attack 35, F3): a chunk of nothing
but the usage it sent last, an empty piece of a call's arguments, an Anthropic ``message_delta``
that changes nothing. So:

Rule: an event is progress unless it is the answer's head (`ResponseStarted`), a `Usage` equal
    to the last one, or a `ToolCallDelta` that carries nothing (no id, no name, no arguments).
    Every path decides by this rule: a translated stream's events, and the events of a relay's
    watcher.

This module never does I/O.
"""

from __future__ import annotations

from .events import ResponseStarted, ToolCallDelta, Usage

__all__: list[str] = []


def news(event: object, usage: Usage | None) -> bool:
    """Whether ``event`` is progress (the Rule), ``usage`` the last `Usage` the stream gave."""
    kind = type(event)
    if kind is Usage:
        return event != usage
    if kind is ToolCallDelta:
        return bool(event.arguments or event.id or event.name)  # type: ignore[attr-defined]
    return kind is not ResponseStarted
