"""What every fuzz target checks (STYLE.md 4 and 8): for any bytes, a decoder raises only
`RemoteProtocolError`, and feeding the bytes whole, byte by byte, or cut after each blank line
gives the same outcome: the same events (deltas joined), the same error, and the same result.

``check(make, data)`` is the invariant; the atheris entry points and the pytest corpus replay
both call it, so the two can never disagree about what a crash is.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import attrs

from svir_proto import ForwardBody, ReasoningDelta, RefusalDelta, RemoteProtocolError, TextDelta


def outcome(decoder: Any, pieces: list[bytes]) -> tuple[list[object], object, object]:
    """The events, the error (offset and limit), and the decoder's result if it keeps one."""
    events: list[object] = []
    error = None
    try:
        for piece in pieces:
            events += decoder.feed(piece)
        events += decoder.close()
    except RemoteProtocolError as exc:
        events += exc.pending_events
        error = (exc.offset, exc.limit)
    return events, error, getattr(decoder, "result", None)


DELTAS = (TextDelta, ReasoningDelta, RefusalDelta)


def normalise(events: list[object]) -> list[object]:
    """Join adjacent deltas of one kind (and carrier), and adjacent pieces of a body the gateway
    forwards, so that splits that cut them compare equal. Nothing else is joined: two
    comments, say, stay two items."""
    out: list[object] = []
    for e in events:
        prev = out[-1] if out else None
        if isinstance(e, ForwardBody) and isinstance(prev, ForwardBody):
            out[-1] = ForwardBody(data=prev.data + e.data)
        elif (
            isinstance(e, DELTAS)
            and type(prev) is type(e)
            and getattr(prev, "carrier", None) == getattr(e, "carrier", None)
        ):
            out[-1] = attrs.evolve(prev, text=prev.text + e.text)  # type: ignore[union-attr]
        else:
            out.append(e)
    return out


def flushes(data: bytes) -> list[bytes]:
    """The body cut after every blank line, as a server that flushes each event sends it: the
    shape the decoders' fast lanes take."""
    pieces = data.split(b"\n\n")
    return [p + b"\n\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])


def check(make: Callable[[], Any], data: bytes) -> None:
    whole = outcome(make(), [data] if data else [])
    a = (normalise(whole[0]), whole[1], whole[2])
    for name, pieces in (
        ("bytewise", [data[i : i + 1] for i in range(len(data))]),
        ("flushed", flushes(data)),
    ):
        split = outcome(make(), pieces)
        b = (normalise(split[0]), split[1], split[2])
        if a != b:
            raise AssertionError(f"whole and {name} differ for {data!r}:\n{a}\n{b}")


def differential(make: Callable[[], Any], data: bytes) -> None:
    """The same bytes through a decoder made with each JSON backend (orjson, the standard
    library): the same events, the same error (offset and limit) and the same result."""
    from svir_proto import _json

    if _json.orjson is None:  # pragma: no cover - one backend: nothing to compare
        return
    before = _json.BACKEND
    seen = []
    try:
        for backend in ("orjson", "json"):
            _json.use(backend)  # type: ignore[arg-type]
            events, error, result = outcome(make(), [data] if data else [])
            seen.append((normalise(events), error, result))
    finally:
        _json.use(before)
    if seen[0] != seen[1]:
        raise AssertionError(f"orjson and json differ for {data!r}:\n{seen[0]}\n{seen[1]}")


def fuzz(test_one_input: Callable[[bytes], None]) -> None:
    """Run a target under atheris with the command line's corpus and options."""
    import atheris  # only the fuzzer needs it

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
