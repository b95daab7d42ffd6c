"""Hypothesis: whole answers (`svir_proto.answer`, Rule 2 of `GatewayConnection`).

A `GatewaySession` answering a Messages client that asked for no stream from an OpenAI upstream
gives the same answer (status and body) whatever the upstream's chunks and reads: the answer of
one read. And `AnswerFold` of any events folds `replay` of its result into the same result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from svir_proto.answer import AnswerFold, replay, unsigned_reasoning
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
