"""Hypothesis: LLM-Stream events encode, split anywhere, and decode back to themselves; OpenAI
streams translated to LLM-Stream (and back) keep their Completion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svir_proto import (
    Completion,
    Failure,
    FailureKind,
    FilterOffsets,
    FilterResult,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningDelta,
    RefusalDelta,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    Usage,
)
from svir_proto.llmstream import LLMStreamDecoder, LLMStreamEncoder
from svir_proto.openai import ChatStreamDecoder
from svir_proto.translate import LLMStreamToOpenAI, OpenAIToLLMStream
from tests.conformance.openai_results import joined
from tests.helpers import CONFORMANCE, run, splits, unkept

TEXT = st.text(max_size=12)
RAWS = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool_calls",
    FinishReason.CONTENT_FILTER: "content_filter",
}


@st.composite
def event_streams(draw: st.DrawFn) -> list[Any]:
    """A stream the lifecycle allows, from every kind of event the vocabulary can carry."""
    out: list[Any] = [
        StreamStarted(
            response_id="",
            model=draw(TEXT),
            created=draw(st.integers(0, 2**40)),
            request_id=draw(st.none() | TEXT),
        )
    ]
    ids = iter(range(1000))
    stopped = False
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(
            st.sampled_from(["text", "reason", "refusal", "filter", "call", "usage", "stop"])
        )
        if kind == "text" and not stopped:
            out.append(TextDelta(text=draw(TEXT.filter(bool))))
        elif kind == "reason" and not stopped:
            out.append(
                ReasoningDelta(
                    text=draw(TEXT.filter(bool)),
                    carrier=draw(st.sampled_from(["reasoning_content", "reasoning", "think"])),
                )
            )
        elif kind == "refusal" and not stopped:
            out.append(RefusalDelta(text=draw(TEXT.filter(bool))))
        elif kind == "filter" and not stopped:
            results = tuple(
                FilterResult(
                    category=draw(st.sampled_from(["hate", "jailbreak"])),
                    filtered=draw(st.booleans()),
                )
                for _ in range(draw(st.integers(0, 2)))
            )
            out.append(
                FilterVerdict(
                    scope=draw(st.sampled_from(["prompt", "completion"])),
                    results=results,
                    offsets=draw(
                        st.none() | st.builds(FilterOffsets, start_offset=st.integers(0, 99))
                    ),
                    filtered=any(r.filtered for r in results),
                )
            )
        elif kind == "call":
            out.append(
                ToolCall(
                    index=draw(st.integers(0, 3)),
                    id=f"call_{next(ids)}",
                    name=draw(st.from_regex(r"[a-z]{1,6}", fullmatch=True)),
                    arguments=draw(TEXT),
                )
            )
        elif kind == "usage":
            out.append(
                Usage(
                    prompt_tokens=draw(st.integers(0, 99)),
                    completion_tokens=draw(st.integers(0, 99)),
                    total_tokens=draw(st.none() | st.integers(0, 200)),
                    reasoning_tokens=draw(st.none() | st.integers(0, 9)),
                )
            )
        elif kind == "stop" and not stopped:
            reason = draw(st.sampled_from(list(FinishReason)))
            raw = RAWS.get(reason) or draw(st.sampled_from(["abort", "eos"]))
            out.append(Finished(reason=reason, raw=raw))
            stopped = True
    if draw(st.booleans()):
        out.append(
            StreamFailed(
                error=Failure(
                    kind=draw(
                        st.sampled_from(
                            [
                                FailureKind.RATE_LIMITED,
                                FailureKind.CONTEXT_OVERFLOW,
                                FailureKind.SERVER_ERROR,
                            ]
                        )
                    ),
                    message=draw(TEXT),
                    code=draw(st.none() | TEXT),
                )
            )
        )
    return out


@given(event_streams(), st.data())
def test_events_encode_split_and_decode_back(events: list[Any], data: st.DataObject) -> None:
    enc = LLMStreamEncoder(request_id=events[0].request_id)
    body = b"".join(enc.encode(e) for e in events) + enc.end()
    pieces = data.draw(splits(body))
    decoder = LLMStreamDecoder()
    decoded = run(decoder, pieces)
    assert decoded[-1] == StreamEnded(complete=decoder.result.complete, done=decoder.result.done)
    assert joined(decoded[:-1]) == joined(events)
    relay = LLMStreamDecoder(keep_text=False)  # a gateway's: no text kept
    assert run(relay, pieces) == decoded
    assert (relay.result.text, unkept(relay.result)) == ("", unkept(decoder.result))


FIXTURES = sorted((CONFORMANCE / "openai").glob("*.sse"))
KEPT = (
    "text",
    "reasoning",
    "reasoning_carrier",
    "refusal",
    "tool_calls",
    "finish_reason",
    "finish_raw",
    "usage",
    "filter_verdicts",
    "error",
    "filtered",
    "complete",
)


def kept(c: Completion) -> dict[str, Any]:
    return {k: getattr(c, k) for k in KEPT}


def openai_fixture(path: Path) -> tuple[ChatStreamDecoder, list[Any]]:
    options = json.loads(path.with_suffix(".json").read_text())["options"]
    d = ChatStreamDecoder(**options)
    events = run(d, [path.read_bytes()])
    return d, events


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@settings(max_examples=max(10, settings().max_examples // 10))  # per fixture
@given(st.data())
def test_openai_fixtures_translated_to_llm_stream_keep_their_completion(
    path: Path, data: st.DataObject
) -> None:
    original, events = openai_fixture(path)
    options = json.loads(path.with_suffix(".json").read_text())["options"]
    translator = OpenAIToLLMStream(model="fallback-model", request_id="r-1")
    body = b"".join(translator.feed(e) for e in events)
    llm = LLMStreamDecoder(declared_tools=options.get("declared_tools"))
    run(llm, data.draw(splits(body)))
    assert kept(llm.result) == kept(original.result), path.name


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_and_back_to_the_openai_dialect(path: Path) -> None:
    original, events = openai_fixture(path)
    there = OpenAIToLLMStream(model="fallback-model")
    llm = LLMStreamDecoder()
    llm_events = run(llm, [b"".join(there.feed(e) for e in events)])
    back = LLMStreamToOpenAI()
    again = ChatStreamDecoder()
    run(again, [b"".join(back.feed(e) for e in llm_events)])
    a, b = kept(again.result), kept(original.result)
    if b["reasoning_carrier"] == "think":  # an OpenAI client has the field: no markers needed
        b["reasoning_carrier"] = "reasoning_content"
    for call in b["tool_calls"]:
        assert call.declared in (None, True, False)
    if b["error"] is not None and b["error"].code is None:
        # the OpenAI error schema cannot say "no code": the kind travels in error.type
        assert a["error"].code == b["error"].kind.value
        a["error"] = b["error"]
    a["tool_calls"] = [(c.id, c.name, c.arguments) for c in a["tool_calls"]]
    b["tool_calls"] = [(c.id, c.name, c.arguments) for c in b["tool_calls"]]
    assert a == b, path.name
