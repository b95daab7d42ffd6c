"""ChatStreamEncoder: vocabulary events back to chat.completion.chunk bytes, read back by ours."""

from __future__ import annotations

import json
from typing import Any

from svir_proto import (
    Completion,
    Failure,
    FailureKind,
    Finished,
    FinishReason,
    ReasoningDelta,
    ReasoningSignature,
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
from svir_proto.hub import carried_signature
from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai.encoder import ChatStreamEncoder
from tests.helpers import run


def through(enc: ChatStreamEncoder, events: list[Any]) -> tuple[bytes, Completion]:
    """The events encoded, and what our decoder makes of the bytes."""
    body = b"".join(enc.encode(e) for e in events)
    d = ChatStreamDecoder()
    run(d, [body])
    return body, d.result


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
    _, r = through(enc, events)
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


def test_filter_verdicts_encode_to_azure_chunks_that_decode_to_the_same_verdicts() -> None:
    """Prompt and answer verdicts, a list-valued category (custom blocklists, with ids) and an
    asynchronous annotation's offsets, back as Azure writes them, and read back by ours."""
    from svir_proto import FilterOffsets, FilterResult, FilterVerdict

    prompt = FilterVerdict(
        scope="prompt",
        results=(FilterResult(category="jailbreak", filtered=False, detected=False),),
    )
    low = FilterVerdict(
        scope="completion",
        results=(FilterResult(category="hate", filtered=False, severity="low"),),
        detected=True,
    )
    block = FilterVerdict(
        scope="completion",
        results=(
            FilterResult(category="hate", filtered=True, severity="high"),
            FilterResult(category="custom_blocklists", filtered=True, id="list-1"),
        ),
        offsets=FilterOffsets(check_offset=0, start_offset=0, end_offset=12),
        filtered=True,
        detected=True,
    )
    enc = ChatStreamEncoder()
    events = [
        StreamStarted(response_id="chatcmpl-1", model="m", created=5),
        prompt,
        TextDelta(text="hi"),
        low,
        block,
        Finished(reason=FinishReason.STOP, raw="stop"),
        StreamEnded(complete=True, done=True),
    ]
    d = ChatStreamDecoder()
    body = b"".join(enc.encode(e) for e in events)
    decoded = run(d, [body])
    assert [e for e in decoded if isinstance(e, FilterVerdict)] == [prompt, low, block]
    assert d.result.filtered
    # fidelity 51 N2: every chunk has a choice with a delta, as openai-python's loop reads it
    chunks = [json.loads(b[6:]) for b in body.split(b"\n\n") if b.startswith(b"data: {")]
    assert all(c["choices"] and "delta" in c["choices"][0] for c in chunks)


def test_another_dialects_finish_is_written_as_the_reason_it_stands_for() -> None:
    """Responses' "completed", Anthropic's "end_turn" are no finish_reason an OpenAI client
    knows; an unknown reason stays the upstream's word."""
    e = ChatStreamEncoder()

    def finish(reason: FinishReason, raw: str) -> object:
        chunk = json.loads(e.encode(Finished(reason=reason, raw=raw))[6:])
        return chunk["choices"][0]["finish_reason"]

    assert finish(FinishReason.TOOL_CALLS, "completed") == "tool_calls"
    assert finish(FinishReason.STOP, "end_turn") == "stop"
    assert finish(FinishReason.LENGTH, "max_output_tokens") == "length"
    assert finish(FinishReason.OTHER, "abort") == "abort"
    assert finish(FinishReason.TOOL_CALLS, "tool_call") == "tool_call"  # mlx-lm's, kept


def test_after_an_error_only_the_usage_and_the_end_are_written() -> None:
    """Attack 28: a Gemini upstream's error chunk, then more text and a finish: every other
    dialect's client stopped at the error, an OpenAI client got the text and a stop after it."""
    enc = ChatStreamEncoder()
    failure = Failure(kind=FailureKind.TRANSIENT, message="it broke", code="x1")
    events = [
        StreamStarted(response_id="r", model="m"),
        TextDelta(text="a"),
        StreamFailed(error=failure),
        TextDelta(text="after"),
        Finished(reason=FinishReason.STOP, raw="stop"),
        Usage(prompt_tokens=3, completion_tokens=1, total_tokens=4),
        StreamEnded(complete=False, done=True),
    ]
    body, r = through(enc, events)
    assert (r.text, r.error, r.finish_reason) == ("a", failure, None)
    assert r.usage == Usage(prompt_tokens=3, completion_tokens=1, total_tokens=4)
    assert body.endswith(b"data: [DONE]\n\n")


def thinking_blocks(body: bytes) -> list[dict[str, Any]]:
    return [
        entry
        for line in body.split(b"\n")
        if line.startswith(b"data: {")
        for choice in json.loads(line[6:])["choices"]
        for entry in choice.get("delta", {}).get("thinking_blocks", [])
    ]


def test_signed_reasoning_goes_out_in_thinking_blocks_when_its_block_ends() -> None:
    """Each signed block's whole text and signature, at its signature, numbered; a redacted
    block's data, the reasoning before it left to the next block (as `AnswerFold` holds it);
    the reasoning stays where it was (``reasoning_content``), read by our decoder as before."""
    events = [
        StreamStarted(response_id="chatcmpl-1", model="m"),
        ReasoningDelta(text="a", carrier="thinking"),
        ReasoningSignature(signature="RED", carrier="thinking", redacted=True),
        ReasoningDelta(text="b", carrier="thinking"),
        ReasoningSignature(signature="S1", carrier="thinking"),
        ReasoningDelta(text="c", carrier="thought"),
        ReasoningSignature(signature="G", carrier="thought", item_id="fc-1"),
        TextDelta(text="hi"),
        StreamEnded(complete=True, done=True),
    ]
    body, result = through(ChatStreamEncoder(), events)
    assert thinking_blocks(body) == [
        {"index": 0, "type": "redacted_thinking", "data": "RED"},
        {"index": 1, "type": "thinking", "thinking": "ab", "signature": "S1"},
        {
            "index": 2,
            "type": "thinking",
            "thinking": "c",
            "signature": carried_signature("G", "thought", "fc-1"),
        },
    ]
    assert (result.reasoning, result.text) == ("abc", "hi")


def test_a_block_longer_than_the_bound_goes_out_without_its_entry() -> None:
    """The text of a block is held only up to ``max_output_size``: one longer (an upstream that
    reasons on and on) is not held, and has no entry (one without its text would not verify);
    the next block is held again."""
    enc = ChatStreamEncoder(max_output_size=5)
    events = [
        ReasoningDelta(text="abc", carrier="thinking"),
        ReasoningDelta(text="def", carrier="thinking"),
        ReasoningSignature(signature="S1", carrier="thinking"),
        ReasoningDelta(text="12345", carrier="thinking"),
        ReasoningSignature(signature="S2", carrier="thinking"),
    ]
    body = b"".join(enc.encode(e) for e in events)
    assert thinking_blocks(body) == [
        {"index": 0, "type": "thinking", "thinking": "12345", "signature": "S2"}
    ]
    assert enc._thought == []  # nothing held after its block


def test_reasoning_no_vendor_signs_is_not_held() -> None:
    """Only the reasoning of a carrier a vendor signs waits for its ``thinking_blocks`` entry:
    a Chat or LLM-Stream upstream's (``reasoning_content``) never gets one, and would be held
    to the stream's end (review 36)."""
    enc = ChatStreamEncoder()
    enc.encode(ReasoningDelta(text="abc", carrier="reasoning_content"))
    enc.encode(ReasoningDelta(text="def", carrier="thinking"))
    assert enc._thought == ["def"]


def test_relaying_deltas_a_whole_call_no_delta_began_is_written() -> None:
    """Review 49 S1: with ``tool_call_deltas`` (a relay of deltas) the whole calls were never
    written, and an upstream that sends whole calls only (LLM-Stream's ``tool.call``) reached
    a streaming Chat client with ``finish_reason: tool_calls`` and no call. A whole call whose
    index a delta began is not written again; one no delta began is."""
    enc = ChatStreamEncoder(tool_call_deltas=True)
    streamed = ToolCallDelta(index=0, id="c0", name="f", arguments='{"a": 1}')
    whole = [
        ToolCall(index=0, id="c0", name="f", arguments='{"a": 1}'),
        ToolCall(index=1, id="c1", name="g", arguments="{}"),
    ]
    finish = Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls")
    ends = [finish, StreamEnded(complete=True, done=True)]
    _, result = through(enc, [StreamStarted(response_id="r", model="m"), streamed, *whole, *ends])
    assert [(c.index, c.id, c.name, c.arguments) for c in result.tool_calls] == [
        (0, "c0", "f", '{"a": 1}'), (1, "c1", "g", "{}")
    ]  # fmt: skip
