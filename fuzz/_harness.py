"""What every fuzz target checks (STYLE.md 4 and 8): for any bytes, a decoder raises only
`PeerProtocolError`, and feeding the bytes whole or cut where the input's own bytes say
(`cuts`: a few bytes at a time, or up to each blank line, as a server that flushes each event
sends them) gives the same outcome: the same events (deltas joined), the same error, and the
same result. The fuzzer explores splits as it mutates the bytes, for one more decode; the
property tests feed every split, byte by byte included.
``check(make, data)`` is the invariant; the atheris entry points and the pytest corpus replay
both call it, so the two can never disagree about what a crash is. Under atheris only
svir_proto's own code is instrumented (`fuzz`).
"""

from __future__ import annotations

import gc
import os
import sys
import types
from collections.abc import Callable
from typing import Any

import attrs

from svir_proto import (
    ForwardBody,
    PeerProtocolError,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    TextRun,
)


def outcome(decoder: Any, pieces: list[bytes]) -> tuple[list[object], object, object]:
    """The events, the error (offset and limit), and the decoder's result if it keeps one."""
    events: list[object] = []
    error = None
    try:
        for piece in pieces:
            events += decoder.feed(piece)
        events += decoder.close()
    except PeerProtocolError as exc:
        events += exc.pending_events
        error = (exc.offset, exc.limit)
    return events, error, getattr(decoder, "result", None)


DELTAS = (TextDelta, ReasoningDelta, RefusalDelta)


def normalise(events: list[object]) -> list[object]:
    """Join adjacent deltas of one kind (and carrier), and adjacent pieces of a body the gateway
    forwards, so that splits that cut them compare equal; a run of text deltas (`TextRun`)
    is the deltas it stands for. Nothing else is joined: two comments, say, stay two items."""
    out: list[object] = []
    for e in expand(events):
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


def expand(events: list[object]) -> list[object]:
    """``events`` with each `TextRun` as the `TextDelta` events it stands for."""
    out: list[object] = []
    for e in events:
        if isinstance(e, TextRun):
            out += e.deltas()
        else:
            out.append(e)
    return out


def cuts(data: bytes) -> list[bytes]:
    """The body in pieces the input's own bytes choose: at each piece's first byte, a value of
    128 or more makes the piece run to the end of the next blank line (as a server that
    flushes each event sends it: the shape the fast lanes take), a smaller one makes it that
    many bytes long, plus one."""
    pieces = []
    i = 0
    n = len(data)
    while i < n:
        size = data[i]
        if size < 128:
            end = i + size + 1
        else:
            end = data.find(b"\n\n", i)
            end = n if end < 0 else end + 2
        pieces.append(data[i:end])
        i = end
    return pieces


def check(make: Callable[[], Any], data: bytes) -> None:
    whole = outcome(make(), [data] if data else [])
    a = (normalise(whole[0]), whole[1], whole[2])
    split = outcome(make(), cuts(data))
    b = (normalise(split[0]), split[1], split[2])
    if a != b:
        raise AssertionError(f"whole and cut differ for {data!r}:\n{a}\n{b}")


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
    """Run a target under atheris with the command line's corpus and options.

    Only svir_proto's functions are instrumented (the standard library, h11 and attrs are not
    what we fuzz; instrumenting them made every input ten times slower), for coverage; with
    ``SVIR_FUZZ_DATAFLOW=1`` their comparisons too, which finds magic values by itself at half
    the speed (fuzz/tokens.dict gives libFuzzer ours instead).
    """
    import atheris  # only the fuzzer needs it

    dataflow = os.environ.get("SVIR_FUZZ_DATAFLOW") == "1"
    for obj in gc.get_objects():
        if (
            isinstance(obj, types.FunctionType)
            and (getattr(obj, "__module__", None) or "").startswith("svir_proto")
            and isinstance(obj.__code__, types.CodeType)
        ):
            obj.__code__ = atheris.patch_code(obj.__code__, trace_dataflow=dataflow)
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
