"""ChatStreamEncoder: vocabulary events back to chat.completion.chunk bytes, read back by ours."""

from __future__ import annotations

from svir_proto import (
    Failure,
    FailureKind,
    Finished,
    FinishReason,
    ReasoningDelta,
    RefusalDelta,
    ResponseStarted,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai.encoder import ChatStreamEncoder
from tests.helpers import run


def test_events_encode_to_chunks_that_decode_to_the_same_result() -> None:
    enc = ChatStreamEncoder()
    events = [
        StreamStarted(response_id="chatcmpl-1", model="m", created=5),
        ReasoningDelta(text="hm", carrier="reasoning_content"),
        TextDelta(text="hi"),
        RefusalDelta(text="no"),
        ToolCall(index=0, id="c1", name="f", arguments='{"a":1}'),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5),
        StreamEnded(complete=True, done=True),
    ]
    body = b"".join(enc.encode(e) for e in events)
    d = ChatStreamDecoder()
    run(d, [body])
    r = d.result
    assert (r.text, r.reasoning, r.refusal) == ("hi", "hm", "no")
    assert (r.reasoning_carrier, r.usage) == ("reasoning_content", events[6])
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [("c1", "f", '{"a":1}')]
    assert r.finish_reason is FinishReason.TOOL_CALLS
    assert r.complete


def test_events_with_no_chunk_encode_to_nothing() -> None:
    enc = ChatStreamEncoder()
    assert enc.encode(ToolCallDelta(index=0, id="c", name="f", arguments="{")) == b""
    assert enc.encode(ResponseStarted(status=200, headers=())) == b""
    assert enc.encode(StreamEnded(complete=False)) == b""  # a cut stays a cut: no [DONE]


def test_a_failure_is_an_error_chunk_then_done_and_keeps_its_kind() -> None:
    for kind in FailureKind:
        enc = ChatStreamEncoder()
        failure = Failure(kind=kind, message="it broke", code="x1")
        body = enc.encode(StreamFailed(error=failure)) + enc.encode(StreamEnded(complete=False))
        assert body.endswith(b"data: [DONE]\n\n")
        d = ChatStreamDecoder()
        run(d, [body])
        assert d.result.error == failure, kind
