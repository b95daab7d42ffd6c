"""Hypothesis: whole answers (`svir_proto.answer`, Rule 2 of `GatewayConnection`).

A `GatewaySession` answering a Messages client that asked for no stream from an OpenAI upstream
gives the same answer (status and body) whatever the upstream's chunks and reads: the answer of
one read. And `AnswerFold` of any events folds `replay` of its result into the same result, its
parts in the same order; and however the deltas of an answer are cut, the fold keeps the same
order (Rule 6: fidelity 43 F08).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from svir_proto.answer import AnswerFold, ordered_parts, replay, unsigned_reasoning
from svir_proto.errors import Failure, FailureKind
from svir_proto.events import (
    Event,
    Finished,
    FinishReason,
    ReasoningDelta,
    ReasoningSignature,
    RefusalDelta,
    StreamEnded,
    StreamFailed,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tests.helpers import CONFORMANCE, split_at
from tests.property.test_gateway_relay_properties import HEAD, client_view, served

FIXTURES = sorted((CONFORMANCE / "openai").glob("*.sse"))
BODY = json.dumps(
    {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}],
     "tools": [{"name": n, "input_schema": {"type": "object"}}
               for n in ("get_weather", "lookup", "get_time")]}
).encode()  # fmt: skip
REQUEST = (
    b"POST /v1/messages HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
)


def answer(reads: list[bytes]) -> tuple[int, bytes, bool]:
    """What the client got: the status, the body, and whether the body ended."""
    out = served(REQUEST, reads)
    body, ended, _ = client_view(out)
    return int(out.split(b" ", 2)[1]), body, ended


@st.composite
def upstream(draw: st.DrawFn, body: bytes) -> list[bytes]:
    chunks = split_at(body, draw(st.lists(st.integers(0, len(body)), max_size=30)))
    wire = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in chunks) + b"0\r\n\r\n"
    reads = split_at(wire, draw(st.lists(st.integers(0, len(wire)), max_size=30)))
    return [HEAD + reads[0], *reads[1:]]


def one_read(body: bytes) -> list[bytes]:
    return [HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@given(data=st.data())
def test_a_whole_answer_is_the_same_whatever_the_reads(path: Path, data: st.DataObject) -> None:
    body = path.read_bytes()
    want = answer(one_read(body))
    assert want[2]  # a whole answer always ends: the answer, or an error status
    assert answer(data.draw(upstream(body))) == want


def test_the_whole_answers_of_the_recordings_are_answers_or_errors() -> None:
    """The property above is not vacuous: answers and error statuses both occur, and an
    answer is a Messages object."""
    statuses = set()
    for path in FIXTURES:
        status, body, _ = answer(one_read(path.read_bytes()))
        statuses.add(status)
        doc = json.loads(body)
        assert doc["type"] == ("message" if status == 200 else "error")
    assert 200 in statuses
    assert any(s >= 500 for s in statuses)


TEXT = st.text(max_size=12)
CARRIERS = st.sampled_from(["reasoning_content", "thinking", "summary", "thought"])
EVENTS = st.one_of(
    st.builds(TextDelta, text=TEXT),
    st.builds(ReasoningDelta, text=TEXT, carrier=CARRIERS),
    st.builds(ReasoningSignature, signature=TEXT, carrier=CARRIERS, redacted=st.booleans()),
    st.builds(RefusalDelta, text=TEXT),
    st.builds(
        ToolCall,
        index=st.integers(0, 3),
        id=TEXT,
        name=TEXT,
        arguments=st.sampled_from(["", "{}", '{"a": 1}', "[1]"]),
    ),
    st.builds(ToolCallDelta, index=st.integers(0, 4), arguments=TEXT),
    st.builds(Finished, reason=st.sampled_from(list(FinishReason)), raw=TEXT),
    st.builds(
        Usage, prompt_tokens=st.none() | st.integers(0, 99), completion_tokens=st.integers(0, 9)
    ),
    st.builds(
        StreamFailed,
        error=st.builds(Failure, kind=st.sampled_from(list(FailureKind)), message=TEXT),
    ),
)


def kept(fold: AnswerFold) -> dict[str, Any]:
    r = fold.result()
    return {k: getattr(r, k) for k in ("text", "reasoning", "reasoning_blocks", "refusal",
            "tool_calls", "finish_reason", "usage", "error", "done", "complete")}  # fmt: skip


def in_order(fold: AnswerFold) -> list[object]:
    """The fold's parts in order, reasoning no signature closed as its text (its carrier is
    the first event's, which a replay may give another: a signature before an empty delta)."""
    return [p.text if type(p) is ReasoningDelta else p for p in ordered_parts(fold.result())]


@given(st.lists(EVENTS, max_size=20), st.booleans())
@example(  # reasoning before a redacted block is the next signed block's
    [
        ReasoningDelta(text="ab", carrier="thinking"),
        ReasoningSignature(signature="r", carrier="thinking", redacted=True),
        ReasoningDelta(text="cd", carrier="thinking"),
        ReasoningSignature(signature="s", carrier="thinking"),
    ],
    True,
)
def test_a_replayed_result_folds_into_itself(events: list[Event], done: bool) -> None:
    fold = AnswerFold()
    fold.extend([*events, StreamEnded(complete=done, done=done)])
    again = AnswerFold()
    again.extend(replay(fold.result()))
    assert kept(again) == kept(fold)
    assert in_order(again) == in_order(fold)
    result = fold.result()
    assert result.text == "".join(e.text for e in events if type(e) is TextDelta)
    signed = "".join(b.text for b in result.reasoning_blocks)
    assert result.reasoning.startswith(signed)  # the blocks, then the unsigned tail
    tail = ""
    for e in events:
        if type(e) is ReasoningSignature and not e.redacted:
            tail = ""
        elif type(e) is ReasoningDelta:
            tail += e.text
    assert unsigned_reasoning(result) == tail


PARTS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["text", "reasoning", "refusal"]), st.text(min_size=1)),
        st.tuples(st.just("signature"), st.sampled_from(["s", ""])),  # "": redacted
        st.tuples(st.just("call"), st.just("")),
    ),
    max_size=12,
)


@given(PARTS, st.data())
def test_any_cut_of_an_answers_deltas_keeps_its_order(
    parts: list[tuple[str, str]], data: st.DataObject
) -> None:
    """An answer whose parts interleave, its texts cut anywhere (a decoder gives the deltas an
    upstream's chunks and reads made), folds to the same segments and the same ordered parts,
    and each kind of part in the order it came."""

    def events(cut: bool) -> list[Event]:
        out: list[Event] = []
        calls = 0
        for kind, text in parts:
            if kind == "signature":
                out.append(ReasoningSignature(signature=text or "r", carrier="thinking",
                                              redacted=not text))  # fmt: skip
                continue
            if kind == "call":
                out.append(ToolCallDelta(index=calls, id=f"c{calls}", name="f"))
                calls += 1
                continue
            at = data.draw(st.lists(st.integers(0, len(text)), max_size=4)) if cut else []
            for piece in split_at(text.encode("utf-32-le"), [4 * (i // 1) for i in at]):
                make = {"text": TextDelta, "reasoning": ReasoningDelta, "refusal": RefusalDelta}
                piece_text = piece.decode("utf-32-le")
                if kind == "reasoning":
                    out.append(ReasoningDelta(text=piece_text, carrier="thinking"))
                else:
                    out.append(make[kind](text=piece_text))  # type: ignore[call-arg]
        finished = Finished(reason=FinishReason.STOP, raw="stop")
        whole = [ToolCall(index=i, id=f"c{i}", name="f", arguments="{}") for i in range(calls)]
        return [*out, finished, *whole, StreamEnded(complete=True, done=True)]

    want, got = AnswerFold(), AnswerFold()
    want.extend(events(cut=False))
    got.extend(events(cut=True))
    assert got.result().segments == want.result().segments
    ordered = list(ordered_parts(got.result()))
    assert ordered == list(ordered_parts(want.result()))
    calls = [p.id for p in ordered if type(p) is ToolCall]
    assert calls == [f"c{i}" for i in range(len(calls))]  # in call order, each once
    texts = "".join(p.text for p in ordered if type(p) is TextDelta)
    assert texts == "".join(t for k, t in parts if k == "text")
