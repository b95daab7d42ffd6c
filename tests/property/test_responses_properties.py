"""Hypothesis: Responses streams split anywhere decode alike; the encoder's output decodes back
to the events it was given; requests survive the hub; streams cross to the other dialects and
back, keeping their Completion up to what the target cannot carry (listed per test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svir_proto import (
    Completion,
    Failure,
    FailureKind,
    Finished,
    FinishReason,
    PeerProtocolError,
    ReasoningDelta,
    ReasoningSignature,
    RefusalDelta,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder, ChatStreamEncoder
from svir_proto.responses import (
    FunctionCall,
    FunctionCallOutput,
    FunctionTool,
    InputImage,
    InputMessage,
    InputText,
    OtherItem,
    OutputText,
    ReasoningConfig,
    ReasoningItem,
    ResponsesRequest,
    ResponsesStreamDecoder,
    ResponsesStreamEncoder,
)
from svir_proto.responses.hub import from_hub, to_hub
from svir_proto.translate import OpenAIToLLMStream
from tests.conformance.openai_results import joined
from tests.helpers import CONFORMANCE, run, splits, unkept

DIR = CONFORMANCE / "responses"
FIXTURES = sorted(DIR.glob("*.sse"))
OTHERS = sorted((CONFORMANCE / "openai").glob("*.sse")) + sorted(
    (CONFORMANCE / "llamacpp").glob("*.sse")
)
DRAFT = sorted((CONFORMANCE / "llmstream").glob("*.sse"))


def options(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(path.with_suffix(".json").read_text("utf-8"))
    return dict(meta["options"])


def decode(body: bytes | list[bytes], **opts: Any) -> tuple[list[Any], Completion]:
    d = ResponsesStreamDecoder(**opts)
    events = run(d, [body] if isinstance(body, bytes) else body)
    return events, d.result


# -- any split ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@settings(max_examples=25)
@given(data=st.data())
def test_any_split_of_a_fixture_decodes_alike(path: Path, data: st.DataObject) -> None:
    body = path.read_bytes()
    opts = options(path)
    whole_events, whole = decode(body, **opts)
    pieces = data.draw(splits(body))
    events, result = decode(pieces, **opts)
    assert joined(events) == joined(whole_events)
    assert result == whole
    events, relay = decode(pieces, **opts, keep_text=False)  # a gateway's: no text kept
    assert joined(events) == joined(whole_events)
    assert (relay.text, unkept(relay)) == ("", unkept(whole))


def broken(body: bytes, how: int) -> bytes:
    """A fixture broken one way: a sequence number skipped, JSON cut, a byte not UTF-8."""
    at = body.index(b"output_text.delta", len(body) // 3)
    if how == 0:
        start = body.index(b'"sequence_number":', at) + 18
        end = start
        while body[end : end + 1].isdigit():
            end += 1
        return body[:start] + str(int(body[start:end]) + 2).encode() + body[end:]
    if how == 1:
        brace = body.index(b"}\n\n", at)
        return body[:brace] + body[brace + 1 :]
    quote = body.index(b'"delta":"', at) + 9
    return body[:quote] + b"\xc3(" + body[quote:]


@pytest.mark.parametrize("how", [0, 1, 2], ids=["gap", "json", "utf8"])
@settings(max_examples=25)
@given(data=st.data())
def test_any_split_of_a_broken_stream_fails_alike(how: int, data: st.DataObject) -> None:
    body = broken((DIR / "openai-text.sse").read_bytes(), how)
    with pytest.raises(PeerProtocolError) as whole:
        decode(body)
    with pytest.raises(PeerProtocolError) as split:
        decode(data.draw(splits(body)))
    assert (type(split.value), split.value.offset, str(split.value)) == (
        type(whole.value),
        whole.value.offset,
        str(whole.value),
    )


# -- the encoder's output decodes back ------------------------------------------------------

TEXT = st.text(max_size=8)
NONEMPTY = st.text(min_size=1, max_size=8)
REASONS = [FinishReason.STOP, FinishReason.LENGTH, FinishReason.CONTENT_FILTER]


@st.composite
def streams(draw: st.DrawFn) -> list[Any]:
    """Events in an order our decoders emit them: a start, segments of text, refusal,
    reasoning (one carrier a stream) and tool-call deltas, then the finish, usage, the whole
    calls and the end; or a failure anywhere; or a cut."""
    carrier = draw(st.sampled_from(["summary", "reasoning_content", "thinking"]))
    out: list[Any] = [StreamStarted(response_id="resp_p", model=draw(TEXT), created=1)]
    calls: list[ToolCall] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["text", "refusal", "reasoning", "signed", "call"]))
        if kind == "text":
            out.append(TextDelta(text=draw(TEXT)))
        elif kind == "refusal":
            out.append(RefusalDelta(text=draw(TEXT)))
        elif kind in ("reasoning", "signed"):
            out += [
                ReasoningDelta(text=t, carrier=carrier)
                for t in draw(st.lists(NONEMPTY, max_size=3))
            ]
            if kind == "signed":
                signed = sum(isinstance(e, ReasoningSignature) for e in out)
                out.append(
                    ReasoningSignature(
                        signature=draw(NONEMPTY), carrier=carrier, item_id=f"rs_up{signed}"
                    )
                )
        else:
            index = len(calls)
            pieces = draw(st.lists(NONEMPTY, max_size=3))
            call = ToolCall(
                index=index,
                id=f"call_{index}",
                name=draw(st.sampled_from(["f", "get_weather"])),
                arguments="".join(pieces),
            )
            calls.append(call)
            out.append(ToolCallDelta(index=index, id=call.id, name=call.name, arguments=""))
            out += [ToolCallDelta(index=index, arguments=p) for p in pieces]
    end = draw(st.sampled_from(["complete", "failed", "cut"]))
    if end == "failed":
        kind = draw(
            st.sampled_from(
                [FailureKind.RATE_LIMITED, FailureKind.SERVER_ERROR, FailureKind.CONTEXT_OVERFLOW]
            )
        )
        out.append(StreamFailed(error=Failure(kind=kind, message=draw(NONEMPTY))))
        return [*out, StreamEnded(complete=False, done=True)]
    reason = FinishReason.TOOL_CALLS if calls else draw(st.sampled_from(REASONS))
    out.append(Finished(reason=reason, raw=reason.value))
    if draw(st.booleans()):
        out.append(
            Usage(
                prompt_tokens=draw(st.integers(0, 10**6)),
                completion_tokens=draw(st.integers(0, 10**6)),
                reasoning_tokens=draw(st.integers(0, 100)),
                cached_tokens=draw(st.integers(0, 100)),
                cache_creation_tokens=draw(st.none() | st.integers(0, 100)),
            )
        )
    out += calls
    return [*out, StreamEnded(complete=end == "complete", done=end == "complete")]


def expected(events: list[Any]) -> dict[str, Any]:
    """What the decoder must read back from the encoder's bytes for these events."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    refusal = "".join(e.text for e in events if isinstance(e, RefusalDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    signatures = [e.signature for e in events if isinstance(e, ReasoningSignature)]
    calls = [(c.id, c.name, c.arguments) for c in events if isinstance(c, ToolCall)]
    failed = next((e.error for e in events if isinstance(e, StreamFailed)), None)
    finish = next((e.reason for e in events if isinstance(e, Finished)), None)
    usage = next((e for e in events if isinstance(e, Usage)), None)
    ended = events[-1]
    return {
        "text": text,
        "refusal": refusal,
        "reasoning": reasoning,
        "signatures": signatures,
        "calls": calls if ended.done and failed is None else [],
        "finish": None if failed is not None or not ended.done else finish,
        "error": None if failed is None else failed.kind,
        "complete": ended.done and failed is None,
        "usage": None
        if usage is None or failed is not None or not ended.done
        else Usage(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.prompt_tokens + usage.completion_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            cached_tokens=usage.cached_tokens,
            cache_creation_tokens=usage.cache_creation_tokens,
        ),
    }


def read_back(r: Completion) -> dict[str, Any]:
    return {
        "text": r.text,
        "refusal": r.refusal,
        "reasoning": r.reasoning,
        "signatures": [b.signature for b in r.reasoning_blocks],
        "calls": [(c.id, c.name, c.arguments) for c in r.tool_calls],
        "finish": r.finish_reason,
        "error": None if r.error is None else r.error.kind,
        "complete": r.complete,
        "usage": r.usage,
    }


@settings(max_examples=200)
@given(events=streams(), data=st.data())
def test_the_encoders_output_decodes_back_to_its_events(
    events: list[Any], data: st.DataObject
) -> None:
    e = ResponsesStreamEncoder(model="m", created=1)
    raw = b"".join(e.encode(x) for x in events)
    decoded, result = decode(data.draw(splits(raw)))
    assert read_back(result) == expected(events)
    cut = not events[-1].done
    assert result.problems == (("the body ended before response.completed",) if cut else ())
    starts = [x for x in decoded if isinstance(x, StreamStarted)]
    model = events[0].model or "m"  # the encoder's own when the upstream names none
    assert starts == [StreamStarted(response_id="resp_p", model=model, created=1)]


# -- requests survive the hub ---------------------------------------------------------------

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4b000000000"
    "49454e44ae426082"
)
WORD = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=10)
IDS = st.none() | st.from_regex(r"[a-z]{2}_[0-9]{1,3}", fullmatch=True)


@st.composite
def requests(draw: st.DrawFn) -> ResponsesRequest:
    items: list[Any] = []
    for _ in range(draw(st.integers(0, 7))):
        kind = draw(
            st.sampled_from(
                ["user", "system", "developer", "assistant", "call", "output", "reasoning", "other"]
            )
        )
        if kind == "assistant":
            items.append(
                InputMessage(
                    role="assistant",
                    content=[OutputText(text=draw(WORD))],
                    id=draw(IDS),
                    status=draw(st.none() | st.just("completed")),
                )
            )
        elif kind in ("user", "system", "developer"):
            parts = draw(
                st.one_of(
                    WORD,
                    st.lists(
                        st.one_of(
                            WORD.map(lambda t: InputText(text=t)),
                            st.just(InputImage.from_bytes(PNG)),
                            st.just(InputImage(file_id="file-1", detail="low")),
                        ),
                        max_size=3,
                    ),
                )
            )
            items.append(InputMessage(role=kind, content=parts))
        elif kind == "call":
            items.append(
                FunctionCall(call_id=f"c{len(items)}", name="f", arguments=draw(WORD), id=draw(IDS))
            )
        elif kind == "output":
            items.append(
                FunctionCallOutput(
                    call_id="c0",
                    output=draw(
                        st.one_of(WORD, st.lists(WORD.map(lambda t: InputText(text=t)), max_size=2))
                    ),
                )
            )
        elif kind == "reasoning":
            items.append(
                ReasoningItem(
                    id=draw(IDS),
                    summary=draw(st.lists(WORD.filter(bool), max_size=2)),
                    encrypted_content=draw(st.none() | WORD),
                )
            )
        else:
            items.append(OtherItem(data={"type": "item_reference", "id": draw(WORD)}))
    instructions = draw(st.none() | WORD)
    if not items and instructions is None:
        instructions = "x"
    return ResponsesRequest(
        model="m",
        input=draw(st.just(items) | WORD) if items else items,
        instructions=instructions,
        tools=draw(
            st.lists(st.just(FunctionTool(name="f", parameters={"type": "object"})), max_size=1)
        ),
        max_output_tokens=draw(st.none() | st.integers(1, 10**6)),
        temperature=draw(st.none() | st.floats(0, 2)),
        reasoning=draw(st.none() | st.just(ReasoningConfig(effort="low"))),
        parallel_tool_calls=draw(st.none() | st.booleans()),
        store=draw(st.none() | st.booleans()),
        previous_response_id=draw(st.none() | st.just("resp_0")),
        stream=draw(st.booleans()),
    )


@settings(max_examples=200)
@given(request=requests())
def test_a_request_survives_the_hub(request: ResponsesRequest) -> None:
    neutral = to_hub(request)
    lost: list[str] = []
    assert from_hub(neutral, lost=lost) == request
    assert lost == []
    wire = from_hub(type(neutral).parse(neutral.body().read()))
    assert wire.body().read() == request.body().read()


# -- across the dialects ----------------------------------------------------------------------

CHAT_LOSES = ("reasoning_blocks", "reasoning_carrier", "finish_raw", "usage", "problems")
"""Chat Completions has no signed reasoning, writes reasoning as reasoning_content, has its own
finish values, no cache-write count (and writes the details it has as zero), and its decoder
notes its own problems."""


def same(a: Completion, b: Completion, lost: tuple[str, ...]) -> None:
    fields = (
        "text",
        "reasoning",
        "refusal",
        "finish_reason",
        "complete",
        "reasoning_blocks",
        "reasoning_carrier",
        "finish_raw",
        "usage",
    )
    for name in fields:
        if name not in lost:
            assert getattr(a, name) == getattr(b, name), name
    assert [(c.id, c.name, c.arguments) for c in a.tool_calls] == [
        (c.id, c.name, c.arguments) for c in b.tool_calls
    ]
    assert (a.error is None) == (b.error is None)
    if a.error is not None and b.error is not None:
        assert a.error.kind is b.error.kind


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_a_responses_stream_through_chat_completions(path: Path) -> None:
    events, result = decode(path.read_bytes(), **options(path))
    encoder = ChatStreamEncoder(tool_call_deltas=True)
    chat = b"".join(encoder.encode(e) for e in events)
    d = ChatStreamDecoder(**{k: v for k, v in options(path).items() if k == "declared_tools"})
    run(d, [chat])
    lost = CHAT_LOSES + (("complete",) if result.error is not None else ())
    if result.cut or not result.done:
        lost += ("complete",)
    same(d.result, result, lost)
    if result.usage is not None:
        u, v = d.result.usage, result.usage
        assert (u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.reasoning_tokens) == (
            v.prompt_tokens,
            v.completion_tokens,
            v.cached_tokens,
            v.reasoning_tokens,
        )


LLMSTREAM_LOSES = ("finish_raw", "problems")
"""LLM-Stream carries all but the raw finish value (its stop reasons are the draft's four, the
raw one under vendor:svir only when it is not the default), and notes its own problems."""


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_a_responses_stream_through_llm_stream(path: Path) -> None:
    events, result = decode(path.read_bytes(), **options(path))
    translator = OpenAIToLLMStream(model="m")
    wire = b"".join(translator.feed(e) for e in events)
    d = LLMStreamDecoder()
    run(d, [wire])
    same(d.result, result, LLMSTREAM_LOSES)


RESPONSES_LOSES = ("reasoning_carrier", "reasoning_blocks", "finish_raw", "usage", "problems")
"""Through this dialect: reasoning is a summary or reasoning_text; a finish is a status or an
incomplete reason; counts not reported are written as zero; the decoders note their own
problems; a signed block's text is read back joined with the blank lines of the parts."""


@pytest.mark.parametrize("path", OTHERS + DRAFT, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_the_other_dialects_fixtures_through_this_one(path: Path) -> None:
    meta = json.loads(path.with_suffix(".json").read_text("utf-8"))
    source: ChatStreamDecoder | LLMStreamDecoder = (
        LLMStreamDecoder(**meta["options"])
        if path in DRAFT
        else ChatStreamDecoder(**meta["options"])
    )
    events = run(source, [path.read_bytes()])
    first = source.result
    encoder = ResponsesStreamEncoder(model="m")
    raw = b"".join(encoder.encode(e) for e in events)
    _, result = decode(raw)
    lost = RESPONSES_LOSES
    if first.finish_reason is None and first.done and first.error is None:
        lost += ("finish_reason", "complete")  # written as response.incomplete (encoder.lost)
        assert encoder.lost
    if not first.done:
        lost += ("finish_reason",)  # a cut: this dialect says its finish only at the end
    if first.filtered:  # blocked, after it finished too: incomplete (fidelity 43 F01)
        assert result.finish_reason is FinishReason.CONTENT_FILTER
        lost += ("finish_reason",)
    same(result, first, lost)
    assert result.reasoning_carrier in (None, "summary", "reasoning_text")
    if any(v.filtered or v.detected for v in first.filter_verdicts):
        assert "content-filter verdicts have no field in the Responses API" in encoder.lost


def test_what_crossing_loses_is_what_the_lists_say() -> None:
    """The lists above name fields of Completion, so a renamed field cannot hide a loss."""
    names = {f.name for f in attrs.fields(Completion)}
    for lost in (CHAT_LOSES, LLMSTREAM_LOSES, RESPONSES_LOSES):
        assert set(lost) <= names
