"""Hypothesis: Messages streams split anywhere decode the same; invalid ones fail the same way
however split; what the encoder writes decodes back to the same events; requests go through the
hub and back unchanged; streams cross to the OpenAI and LLM-Stream dialects and back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svir_proto.anthropic import (
    Message,
    MessagesRequest,
    MessagesStreamDecoder,
    MessagesStreamEncoder,
    RedactedThinkingBlock,
    TextBlock,
    Thinking,
    ThinkingBlock,
    Tool,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    from_hub,
    to_hub,
)
from svir_proto.errors import Failure, FailureKind, PeerProtocolError
from svir_proto.events import (
    Completion,
    Finished,
    FinishReason,
    ReasoningDelta,
    ReasoningSignature,
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
from svir_proto.translate import OpenAIToLLMStream
from tests.conformance.openai_results import joined
from tests.helpers import CONFORMANCE, run, splits, unkept

FIXTURES = sorted((CONFORMANCE / "anthropic").glob("*.sse"))
TEXT = st.text(max_size=10)
WORD = st.text("abcxyz_", min_size=1, max_size=6)


def options(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(path.with_suffix(".json").read_text("utf-8"))
    return meta["options"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@settings(max_examples=25)
@given(data=st.data())
def test_any_split_of_a_fixture_gives_the_same_events_and_result(
    path: Path, data: st.DataObject
) -> None:
    body = path.read_bytes()
    whole = MessagesStreamDecoder(**options(path))
    expected = joined(run(whole, [body]))
    pieces = data.draw(splits(body))
    split = MessagesStreamDecoder(**options(path))
    assert joined(run(split, pieces)) == expected
    assert split.result == whole.result
    relay = MessagesStreamDecoder(**options(path), keep_text=False)  # a gateway's: no text kept
    assert joined(run(relay, pieces)) == expected
    assert (relay.result.text, unkept(relay.result)) == ("", unkept(whole.result))


@st.composite
def event_streams(draw: st.DrawFn) -> list[Any]:
    """Vocabulary events in the order our decoders emit them, as this dialect carries them."""
    out: list[Any] = [StreamStarted(response_id=draw(WORD), model=draw(WORD))]
    calls = 0
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["text", "reasoning", "signed", "redacted", "call"]))
        if kind == "text":
            out.append(TextDelta(text=draw(st.text(min_size=1, max_size=8))))
        elif kind == "reasoning":
            out.append(
                ReasoningDelta(text=draw(st.text(min_size=1, max_size=8)), carrier="thinking")
            )
        elif kind in ("signed", "redacted"):
            out.append(
                ReasoningSignature(
                    signature=draw(WORD), carrier="thinking", redacted=kind == "redacted"
                )
            )
        elif calls < 3:
            out.append(
                ToolCallDelta(index=calls, id=f"call_{calls}", name=draw(WORD), arguments="")
            )
            for piece in draw(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=3)):
                out.append(ToolCallDelta(index=calls, arguments=piece))
            calls += 1
    ending = draw(st.sampled_from(["finish", "fail", "cut"]))
    if ending == "fail":
        kind = draw(
            st.sampled_from(
                [FailureKind.OVERLOADED, FailureKind.RATE_LIMITED, FailureKind.AUTHENTICATION]
            )
        )
        return [*out, StreamFailed(error=Failure(kind=kind, message=draw(WORD)))]
    reason = draw(
        st.sampled_from(
            ["end_turn", "max_tokens", "tool_use", "refusal", "pause_turn", "stop_sequence"]
        )
    )
    normal = {
        "end_turn": FinishReason.STOP,
        "stop_sequence": FinishReason.STOP,
        "max_tokens": FinishReason.LENGTH,
    }
    normal |= {"tool_use": FinishReason.TOOL_CALLS, "refusal": FinishReason.CONTENT_FILTER}
    out.append(Finished(reason=normal.get(reason, FinishReason.OTHER), raw=reason))
    prompt, read, made, output = (draw(st.integers(0, 1000)) for _ in range(4))
    thinking = draw(st.none() | st.integers(0, 10))
    out.append(
        Usage(
            prompt_tokens=prompt + read + made,
            completion_tokens=output,
            total_tokens=prompt + read + made + output,
            reasoning_tokens=thinking,
            cached_tokens=read,
            cache_creation_tokens=made,
        )
    )
    return [*out, StreamEnded(complete=True, done=ending == "finish")]


def _kinds(events: list[Any]) -> dict[str, Any]:
    """What a stream said, kind by kind: the order between a held tool call and what followed
    it is the one thing the encoder may change (Rule 3)."""
    args: dict[int, str] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            args[e.index] = args.get(e.index, "") + e.arguments
    return {
        "text": "".join(e.text for e in events if isinstance(e, TextDelta)),
        "reasoning": "".join(e.text for e in events if isinstance(e, ReasoningDelta)),
        "signatures": [e for e in events if isinstance(e, ReasoningSignature)],
        "calls": args,
        "rest": [e for e in events if isinstance(e, (StreamStarted, Finished, Usage))],
    }


@settings(max_examples=200)
@given(events=event_streams(), data=st.data())
def test_what_the_encoder_writes_decodes_back_to_the_same_events(
    events: list[Any], data: st.DataObject
) -> None:
    encoder = MessagesStreamEncoder()
    body = b"".join(encoder.encode(e) for e in events)
    decoder = MessagesStreamDecoder()
    back = run(decoder, data.draw(splits(body)))
    calls = {e.index for e in events if isinstance(e, ToolCallDelta)}
    if len(calls) <= 1:  # nothing held: the very same events
        expected = joined([e for e in events if not isinstance(e, StreamFailed)])
        got = joined([e for e in back if not isinstance(e, (ToolCall, StreamFailed))])
        if isinstance(events[-1], StreamEnded) and events[-1].done:
            expected[-1] = StreamEnded(complete=True, done=True)
        elif isinstance(events[-1], StreamFailed):
            expected.append(StreamEnded(complete=False, done=True))
        else:
            expected[-1] = StreamEnded(complete=False, done=False)
        assert got == expected
    assert _kinds(back) == _kinds(events)
    if isinstance(events[-1], StreamFailed):
        failed = back[-2]
        assert isinstance(failed, StreamFailed)
        assert (failed.error.kind, failed.error.message) == (
            events[-1].error.kind,
            events[-1].error.message,
        )
    elif events[-1].done:
        assert decoder.result.complete
        assert [c.id for c in decoder.result.tool_calls] == [f"call_{i}" for i in sorted(calls)]
    assert encoder.lost == []


def _bytes(events: list[Any], encoder: Any) -> bytes:
    feed = getattr(encoder, "feed", None) or encoder.encode
    return b"".join(feed(e) for e in events)


CARRIED = ("text", "tool_calls", "finish_reason", "complete", "done")


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_messages_streams_cross_to_openai_and_llm_stream_and_back(path: Path) -> None:
    """What a target cannot carry, and so is not compared: the signatures and redacted blocks
    (neither OpenAI nor LLM-Stream signs: LLM-Stream carries them under vendor:svir, OpenAI
    drops them), the raw stop reason (mapped to the target's), the cache counts (OpenAI has
    only cached_tokens), the ``declared`` flag of calls (the decoders were told nothing)."""
    source = MessagesStreamDecoder()
    events = run(source, [path.read_bytes()])
    first = source.result
    for target, decoder_class in (
        (ChatStreamEncoder(), ChatStreamDecoder),
        (OpenAIToLLMStream(model="m"), LLMStreamDecoder),
    ):
        decoder = decoder_class()
        try:
            run(decoder, [_bytes(events, target)])
        except PeerProtocolError:  # pragma: no cover - a bug: shown by the assertion below
            pytest.fail(f"{type(target).__name__} wrote what {decoder_class.__name__} refuses")
        second: Completion = decoder.result
        keep = ("text", "reasoning", "finish_reason")
        assert {k: getattr(second, k) for k in keep} == {k: getattr(first, k) for k in keep}
        assert [(c.id, c.name, c.arguments) for c in second.tool_calls] == [
            (c.id, c.name, c.arguments) for c in first.tool_calls
        ]
        assert second.complete == first.complete or first.error is not None
        if first.usage is not None and second.usage is not None:
            assert second.usage.prompt_tokens == first.usage.prompt_tokens
            assert second.usage.completion_tokens == first.usage.completion_tokens
        if isinstance(target, OpenAIToLLMStream):
            assert [(b.signature, b.redacted) for b in second.reasoning_blocks] == [
                (b.signature, b.redacted) for b in first.reasoning_blocks
            ]


OTHER = (
    [(p, ChatStreamDecoder) for p in sorted((CONFORMANCE / "openai").glob("*.sse"))]
    + [(p, ChatStreamDecoder) for p in sorted((CONFORMANCE / "llamacpp").glob("*.sse"))]
    + [(p, LLMStreamDecoder) for p in sorted((CONFORMANCE / "llmstream").glob("*.sse"))]
)


@pytest.mark.parametrize(("path", "decoder_class"), OTHER, ids=lambda p: getattr(p, "stem", ""))
def test_openai_and_llm_stream_fixtures_through_our_encoder_and_decoder(
    path: Path, decoder_class: Any
) -> None:
    """The same, the other way: what this dialect cannot carry is not compared (refusals are
    written as text, a turn they stop ``refusal``; filter verdicts are lost; a finish is mapped
    to a stop_reason)."""
    meta = json.loads(path.with_suffix(".json").read_text("utf-8"))
    source = decoder_class(**meta.get("options", {}))
    try:
        events = run(source, [path.read_bytes()])
    except PeerProtocolError:
        pytest.skip("a fixture of a stream that breaks the protocol")
    first: Completion = source.result
    encoder = MessagesStreamEncoder()
    decoder = MessagesStreamDecoder()
    run(decoder, [_bytes(events, encoder)])
    second = decoder.result
    assert second.text == first.text + first.refusal or first.refusal
    assert second.reasoning == first.reasoning
    if first.complete:
        assert [(c.id, c.arguments) for c in second.tool_calls] == [
            (c.id, c.arguments) for c in first.tool_calls
        ]
        finish = first.finish_reason  # a refusal that stopped is Anthropic's refusal, and so
        if (first.refusal or first.filtered) and finish is not None:  # is a blocked answer
            finish = FinishReason.CONTENT_FILTER
        assert second.finish_reason is finish or finish is FinishReason.OTHER
        assert second.complete
    assert (second.error is None) == (first.error is None)
    if first.usage is not None and (first.done or first.error is not None or first.finish_reason):
        assert second.usage is not None
        assert second.usage.prompt_tokens == (first.usage.prompt_tokens or 0)
        assert second.usage.completion_tokens == (first.usage.completion_tokens or 0)


# -- requests through the hub ----------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
JSONISH = st.dictionaries(WORD, st.integers() | TEXT | st.booleans(), max_size=3)


@st.composite
def requests(draw: st.DrawFn) -> MessagesRequest:
    tools = [
        Tool(name=n, description=draw(st.none() | TEXT), input_schema=SCHEMA)
        for n in draw(st.lists(WORD, max_size=2, unique=True))
    ]
    messages: list[Message] = []
    ids = iter(range(100))
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            blocks: list[Any] = []
            for _ in range(draw(st.integers(0, 3))):
                kind = draw(st.sampled_from(["text", "tool_use", "thinking", "redacted"]))
                if kind == "text":
                    blocks.append(TextBlock(text=draw(TEXT)))
                elif kind == "tool_use":
                    blocks.append(
                        ToolUseBlock(id=f"t{next(ids)}", name=draw(WORD), input=draw(JSONISH))
                    )
                elif kind == "thinking":
                    blocks.append(ThinkingBlock(thinking=draw(TEXT), signature=draw(WORD)))
                else:
                    blocks.append(RedactedThinkingBlock(data=draw(WORD)))
            content: Any = blocks or draw(TEXT)
            messages.append(Message(role="assistant", content=content))
        else:
            results = [
                ToolResultBlock(
                    tool_use_id=draw(WORD),
                    content=draw(st.none() | TEXT),
                    is_error=draw(st.none() | st.booleans()),
                )
                for _ in range(draw(st.integers(0, 2)))
            ]
            rest = [TextBlock(text=draw(TEXT)) for _ in range(draw(st.integers(0, 2)))]
            content = (results + rest) or draw(TEXT)
            if draw(st.booleans()):
                content = rest + results or content  # out of the usual order, sometimes
            messages.append(Message(role="user", content=content))
    choice = draw(st.none() | st.sampled_from(["auto", "any", "none"]))
    return MessagesRequest(
        model=draw(WORD),
        max_tokens=draw(st.integers(1, 10**6)),
        messages=messages,
        system=draw(st.none() | TEXT | st.lists(st.builds(TextBlock, text=TEXT), max_size=2)),
        tools=tools,
        tool_choice=None
        if choice is None
        else ToolChoice(type=choice, disable_parallel_tool_use=draw(st.none() | st.booleans())),  # type: ignore[arg-type]
        stop_sequences=draw(st.lists(TEXT, max_size=2)),
        temperature=draw(st.none() | st.floats(0, 1)),
        top_p=draw(st.none() | st.floats(0, 1)),
        top_k=draw(st.none() | st.integers(0, 100)),
        metadata=draw(st.sampled_from([{}, {"user_id": "u"}])),
        thinking=draw(
            st.none()
            | st.builds(Thinking, type=st.just("enabled"), budget_tokens=st.integers(1024, 4096))
            | st.just(Thinking(type="disabled"))
        ),
        stream=draw(st.booleans()),
        extra=draw(st.sampled_from([{}, {"service_tier": "auto"}])),
    )


@settings(max_examples=300)
@given(request=requests())
def test_a_request_through_the_hub_and_back_is_unchanged(request: MessagesRequest) -> None:
    hub = to_hub(request)
    assert from_hub(hub) == request
    assert MessagesRequest.parse(from_hub(hub).body().read()) == MessagesRequest.parse(
        request.body().read()
    )
