"""A whole answer: a stream's events folded (`svir_proto.answer.AnswerFold`) and written as each
dialect's one JSON object (`DialectSpec.answer`), what the gateway does for every client that
asked for no stream.

    python -m benchmarks.answer [--deltas 20000] [--repeat 9] [--shape text,tools,...]

The shapes, events as a decoder gives them (deltas of 1 to 8 characters, from a seed):

- ``text``: text deltas only, then the finish, the usage and the end.
- ``thinking``: a quarter of the deltas signed reasoning (one block), then text.
- ``tools``: a tenth text, then four calls whose arguments come in the rest of the deltas, then
  the whole calls at the end, as every decoder emits them.
- ``interleaved``: signed reasoning, a call, signed reasoning, text, a call, text (an agent's
  turn with interleaved thinking), the deltas shared among them.
- ``alternating``: text and reasoning deltas by turns, a new run at every delta: the worst
  case for the fold's record of the order.

Per shape: ns per event for the fold (`add` of every event, then ``result()``), and µs for each
whole answer written from the result (``chat``, ``messages``, ``responses``). The best of
``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from functools import partial

from benchmarks._timing import best_of, table
from svir_proto.answer import AnswerFold
from svir_proto.dialects import dialect
from svir_proto.events import (
    Completion,
    Event,
    Finished,
    FinishReason,
    ReasoningSignature,
    StreamEnded,
    ToolCall,
    Usage,
    reasoning_delta,
    text_delta,
    tool_call_delta,
)

WORDS = "the quick brown fox jumps over a lazy dog while it rains in the city".split()


def _pieces(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(WORDS)[: rng.randint(1, 8)] + " " for _ in range(n)]


def _text(rng: random.Random, n: int) -> list[Event]:
    return [text_delta(p) for p in _pieces(rng, n)]


def _thinking(rng: random.Random, n: int, signature: str) -> list[Event]:
    out: list[Event] = [reasoning_delta(p, "thinking") for p in _pieces(rng, n)]
    return [*out, ReasoningSignature(signature=signature, carrier="thinking")]


def _call(rng: random.Random, index: int, n: int, calls: list[ToolCall]) -> list[Event]:
    pieces = ['{"q":"', *(p.strip() for p in _pieces(rng, max(n - 2, 0))), '"}']
    calls.append(
        ToolCall(index=index, id=f"call_{index}", name="lookup", arguments="".join(pieces))
    )
    first = tool_call_delta(index, pieces[0], f"call_{index}", "lookup")
    return [first, *(tool_call_delta(index, p) for p in pieces[1:])]


def _end(calls: list[ToolCall]) -> list[Event]:
    reason = FinishReason.TOOL_CALLS if calls else FinishReason.STOP
    return [
        Finished(reason=reason, raw=reason.value),
        Usage(prompt_tokens=10, completion_tokens=20, total_tokens=30),
        *calls,
        StreamEnded(complete=True, done=True),
    ]


def shape(name: str, deltas: int, seed: int = 7) -> list[Event]:
    """The events of one answer of ``deltas`` deltas, of the shape ``name``."""
    rng = random.Random(seed)
    calls: list[ToolCall] = []
    if name == "text":
        body = _text(rng, deltas)
    elif name == "thinking":
        body = _thinking(rng, deltas // 4, "sig") + _text(rng, deltas - deltas // 4)
    elif name == "tools":
        body = _text(rng, deltas // 10)
        for i in range(4):
            body += _call(rng, i, (deltas - deltas // 10) // 4, calls)
    elif name == "interleaved":
        part = deltas // 6
        body = _thinking(rng, part, "s1") + _call(rng, 0, part, calls)
        body += _thinking(rng, part, "s2") + _text(rng, part)
        body += _call(rng, 1, part, calls) + _text(rng, deltas - 5 * part)
    elif name == "alternating":
        body = [
            text_delta(p) if i % 2 else reasoning_delta(p, "thinking")
            for i, p in enumerate(_pieces(rng, deltas))
        ]
    else:
        raise ValueError(f"no shape {name!r}")
    return body + _end(calls)


def writer(name: str, result: Completion) -> Callable[[], object]:
    """Dialect ``name``'s whole answer of ``result``, to time."""
    answer = dialect(name).answer
    assert answer is not None
    return partial(answer, result, "m", "id", 1)


SHAPES = ("text", "thinking", "tools", "interleaved", "alternating")


def run(deltas: int = 20000, repeat: int = 9, shapes: list[str] | None = None) -> str:
    rows = []
    for name in shapes or SHAPES:
        events = shape(name, deltas)

        def fold(events: list[Event] = events) -> AnswerFold:
            f = AnswerFold(max_size=1 << 30)
            add = f.add
            for event in events:
                add(event)
            f.result()
            return f

        result = fold().result()
        writers = [writer(d, result) for d in ("chat", "messages", "responses")]
        per_event = best_of(repeat, fold) / len(events)
        row = [name, str(len(events)), f"{per_event * 1e9:.0f}"]
        row += [f"{best_of(repeat, w) * 1e6:.0f}" for w in writers]
        rows.append(row)
    head = ["shape", "events", "fold ns/event", "chat µs", "messages µs", "responses µs"]
    return table(head, rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deltas", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--shape", default=",".join(SHAPES))
    a = ap.parse_args(argv)
    print(run(a.deltas, a.repeat, [s for s in a.shape.split(",") if s]))


if __name__ == "__main__":
    main()
