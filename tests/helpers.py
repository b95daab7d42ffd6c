"""Shared test helpers: splitting bodies into pieces and normalising event lists."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import attrs
from hypothesis import strategies as st

from svir_proto import Completion, ReasoningDelta, SvirProtocolError, TextDelta

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "tests" / "conformance"

T = TypeVar("T")


class Feedable(Protocol[T]):  # the pull API's helpers
    def feed(self, data: bytes) -> list[T]: ...
    def close(self) -> list[T]: ...


def split_at(body: bytes, cuts: Iterable[int]) -> list[bytes]:
    """Cut ``body`` at the given offsets (any order, duplicates allowed: empty pieces skipped)."""
    points = sorted({c for c in cuts if 0 < c < len(body)})
    pieces = []
    last = 0
    for p in [*points, len(body)]:
        pieces.append(body[last:p])
        last = p
    return [p for p in pieces if p]


def run(decoder: Feedable[T], pieces: Sequence[bytes]) -> list[T]:
    out: list[T] = []
    for piece in pieces:
        out.extend(decoder.feed(piece))
    out.extend(decoder.close())
    return out


def bytewise(body: bytes) -> list[bytes]:
    return [body[i : i + 1] for i in range(len(body))]


MODES = ("whole", "bytewise", "sevens")


def pieces(mode: str, body: bytes) -> list[bytes]:
    """A body whole, a byte at a time, or in pieces of 7: the conformance suites' three feeds."""
    if mode == "whole":
        return [body] if body else []
    if mode == "bytewise":
        return bytewise(body)
    return [body[i : i + 7] for i in range(0, len(body), 7)]


FEEDS = ("whole", "events", "bytewise")
"""The feeds that reach each of a dialect decoder's paths: the lanes (a whole body), the
express (one event a read, a live stream's reads) and the general way (a byte at a time)."""


def feed_as(mode: str, body: bytes) -> list[bytes]:
    """`pieces`, or with ``"events"`` one event a read (each ends at its blank line)."""
    if mode == "events":
        return re.findall(rb".*?(?:\r\n\r\n|\n\n)|.+", body, re.S)
    return pieces(mode, body)


def relayed(make: Callable[..., Any], body: bytes, mode: str, **options: Any) -> tuple[Any, Any]:
    """``body``, a valid stream, decoded by ``make(**options)`` keeping the text, and by
    ``make(keep_text=False, **options)`` fed as ``mode`` says: the same events (the relay's
    must not fail on a ``max_result_size`` that the text exceeds), none of the text kept, the
    same tool calls. Returns both results, the kept one first."""
    kept = make()
    expected = run(kept, [body])
    relay = make(keep_text=False, **options)
    assert run(relay, feed_as(mode, body)) == expected
    result = relay.result
    assert (result.text, result.reasoning, result.refusal) == ("", "", "")
    assert all(not block.text for block in result.reasoning_blocks)
    assert result.complete
    assert result.tool_calls == kept.result.tool_calls
    return kept.result, result


def unkept(result: Completion) -> Completion:
    """``result`` without what a decoder with ``keep_text=False`` does not keep: the text,
    reasoning and refusal, the text of the reasoning blocks (and the reasoning carrier, which
    some dialects read off the reasoning kept)."""
    blocks = tuple(attrs.evolve(b, text="") for b in result.reasoning_blocks)
    return attrs.evolve(
        result, text="", reasoning="", refusal="", reasoning_carrier=None, reasoning_blocks=blocks
    )


@st.composite
def splits(draw: st.DrawFn, body: bytes) -> list[bytes]:
    """A strategy: any split of ``body`` into pieces."""
    if not body:
        return []
    cuts = draw(st.lists(st.integers(0, len(body)), max_size=min(len(body), 40)))
    return split_at(body, cuts)


def load_cases(path: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(path.read_text("utf-8"))["cases"]
    return cases


def case_body(case: dict[str, Any]) -> bytes:
    if "input_hex" in case:
        return bytes.fromhex(case["input_hex"])
    return str(case["input"]).encode("utf-8")


def every_event(
    decoder: Any, pieces: Sequence[bytes]
) -> tuple[list[Any], SvirProtocolError | None]:
    """Every event ``decoder`` gives for ``pieces`` and its ``close()``, those given before an
    error too (its ``pending_events``), and the error, if one came."""
    events: list[Any] = []
    try:
        for piece in pieces:
            events += decoder.feed(piece)
        events += decoder.close()
    except SvirProtocolError as exc:
        return events + list(exc.pending_events), exc
    return events, None


def seen_by_a_relay(decoder: Any, pieces: Sequence[bytes]) -> object:
    """What a relay watches of a Chat Completions stream (`ChatStreamWatcher`'s Rule 1): its
    events but text and reasoning, its result but those, its error and where."""
    events, exc = every_event(decoder, pieces)
    error = None if exc is None else (str(exc), getattr(exc, "offset", None))
    result = attrs.asdict(decoder.result)
    for key in ("text", "reasoning", "reasoning_carrier"):
        del result[key]
    return [e for e in events if not isinstance(e, (TextDelta, ReasoningDelta))], result, error


def carrying(body: bytes, **options: Any) -> int:
    """The events of a Chat Completions stream (each ending in a blank line) that carry
    something: those the decoder, fed one event at a time, gives an event for that is progress
    (`svir_proto._progress`: not the usage it gave last, nor a piece of a call that carries
    nothing) (with no
    ``<think>`` tags to find, for which it holds a ``<`` back), and before the end marker
    those whose delta holds a key but ``role`` that is not empty, nor an object of empty
    members (which the client reads though the decoder gives no event for it). What a
    relay's watcher counts as progress (`ChatStreamWatcher`'s Rule 2)."""
    from svir_proto.openai import ChatStreamDecoder

    nothing = ("", None, [], {})

    def full(value: object) -> bool:  # (one level down, as the watcher: review 51 r4)
        if isinstance(value, dict):
            return any(v not in nothing for v in value.values())
        return value not in nothing

    def held(event: bytes) -> bool:
        try:
            doc = json.loads(event.split(b"data: ", 1)[1])
        except (IndexError, ValueError):
            return False
        choices = doc.get("choices") if isinstance(doc, dict) else None
        deltas = [c.get("delta") for c in choices or () if isinstance(c, dict)]
        return any(
            key != "role" and full(value)
            for delta in deltas
            if isinstance(delta, dict)
            for key, value in delta.items()
        )

    from svir_proto._progress import news
    from svir_proto.events import Usage

    decoder = ChatStreamDecoder(think_tags=False, **options)
    count = 0
    usage = None  # the last one: the same again is no progress (nor an empty piece of a call)
    for event in body.split(b"\n\n")[:-1]:
        done = decoder.result.done
        moved = False
        events = decoder.feed(event + b"\n\n")
        for given in events:
            moved = moved or news(given, usage)
            usage = given if type(given) is Usage else usage
        count += moved or (not events and not done and held(event))
    return count


def finishes_linearly(code: str, what: str) -> None:
    """Run ``code`` (Python that should take milliseconds) in a process of its own, with a
    deadline a thousand times that: a pattern that backtracks on its input (the attacks'
    heads, URLs) would take far beyond it, and the test fails instead of hanging."""
    import subprocess
    import sys

    import pytest

    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} made a pattern backtrack")
    assert done.returncode == 0, done.stderr.decode()[-2000:]


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Coverage paused while memory is measured: a tracer records the lines it sees run in
    tables that grow, some 230 KB at once, which a measurement would count as held (the first
    run of a line, or a table's resize wherever it falls: a CI run of stop 40 measured 2.1x
    where 1.1x is held). The code measured runs traced before, so its lines are counted."""
    import warnings

    import coverage
    from coverage.exceptions import CoverageWarning

    cov = coverage.Coverage.current()
    if cov is None:
        yield
        return
    cov.stop()
    try:
        yield
    finally:
        with warnings.catch_warnings():  # (started again: what it measures is imported)
            warnings.simplefilter("ignore", CoverageWarning)
            cov.start()
