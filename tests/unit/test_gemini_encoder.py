"""GeminiStreamEncoder: each rule of its module docstring, checked on the bytes and by decoding
them again; and the OpenAI encoder's finish for another dialect's raw value."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from svir_proto._signatures import carried_in_base64
from svir_proto.answer import cut_by_length
from svir_proto.errors import Failure, FailureKind, FilterResult
from svir_proto.events import (
    FilterVerdict,
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
from svir_proto.gemini import ArrayWriter, GeminiStreamDecoder, GeminiStreamEncoder
from svir_proto.openai import ChatStreamDecoder, ChatStreamEncoder
from tests.helpers import ROOT, run

END = StreamEnded(complete=True, done=True)
STOP = Finished(reason=FinishReason.STOP, raw="stop")


def chunks(data: bytes) -> list[dict[str, Any]]:
    assert data.endswith(b"\r\n\r\n") or not data
    out = []
    for block in data.split(b"\r\n\r\n")[:-1]:
        assert block.startswith(b"data: ")
        out.append(json.loads(block[6:]))
    return out


def encode(*events: Any, **options: Any) -> tuple[list[dict[str, Any]], GeminiStreamEncoder]:
    encoder = GeminiStreamEncoder(**options)
    return chunks(b"".join(encoder.encode(e) for e in events)), encoder


def parts(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    return chunk["candidates"][0]["content"]["parts"]  # type: ignore[no-any-return]


def test_every_chunk_carries_the_identity_and_text_is_a_part() -> None:
    out, _ = encode(
        StreamStarted(response_id="r9", model="gemini-x", created=1735689600),
        TextDelta(text='hé "<'),
        TextDelta(text=""),
        STOP,
        END,
    )
    assert parts(out[0]) == [{"text": 'hé "<'}]
    for c in out:
        assert (c["modelVersion"], c["responseId"], c["createTime"]) == (
            "gemini-x",
            "r9",
            "2025-01-01T00:00:00Z",
        )
    assert out[-1]["candidates"][0]["finishReason"] == "STOP"
    assert len(out) == 2


def test_lf_line_ends_on_request() -> None:
    encoder = GeminiStreamEncoder(crlf=False, model="m")
    assert encoder.encode(TextDelta(text="a")).endswith(b'"responseId":""}\n\n')


def test_reasoning_is_a_thought_part_and_its_carrier_is_listed() -> None:
    out, encoder = encode(
        ReasoningDelta(text="hm", carrier="thought"),
        ReasoningDelta(text="", carrier="thought"),
        ReasoningDelta(text="so", carrier="reasoning_content"),
    )
    assert [parts(c) for c in out] == [
        [{"text": "hm", "thought": True}],
        [{"text": "so", "thought": True}],
    ]
    assert encoder.lost == ["reasoning's carrier 'reasoning_content': sent as thought parts"]


def test_a_refusal_goes_out_as_text_and_is_listed() -> None:
    out, encoder = encode(RefusalDelta(text="no"), RefusalDelta(text=""))
    assert [parts(c) for c in out] == [[{"text": "no"}]]
    assert encoder.lost == ["a refusal: Gemini has none, it went out as text"]


def test_openai_pieces_make_whole_calls_in_index_order() -> None:
    out, encoder = encode(
        ToolCallDelta(index=0, id="a", name="f", arguments='{"x":'),
        ToolCallDelta(index=1, id="b", name="g", arguments="{}"),  # whole before call 0
        ToolCallDelta(index=1, arguments=""),
        TextDelta(text="t"),
        ToolCallDelta(index=0, arguments="1}"),  # now call 0 is whole: both go out
        ToolCallDelta(index=0, arguments=" "),  # after it was written
        STOP,
        ToolCall(index=0, id="a", name="f", arguments='{"x":1}'),
        ToolCall(index=1, id="b", name="g", arguments="{}"),
        END,
    )
    calls = [p["functionCall"] for c in out for p in parts(c) if "functionCall" in p]
    assert calls == [
        {"id": "a", "name": "f", "args": {"x": 1}},
        {"id": "b", "name": "g", "args": {}},
    ]
    assert parts(out[0]) == [{"text": "t"}]
    assert encoder.lost == ["tool call 0: arguments after it was whole, not sent"]


def test_a_calls_pieces_are_parsed_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack 81 F2: every piece of a call's arguments parsed all of them so far (0.5 MB in
    two-byte pieces stalled a gateway's loop 5 s). They are parsed only when they end with
    ``}``, at most `CHECK_COST` times their length in all; past it, the whole `ToolCall` the
    decoder gives at the end makes the call."""
    from svir_proto.gemini import encoder as module

    parsed: list[int] = []
    real = module._object

    def counting(text: str) -> dict[str, Any] | None:
        parsed.append(len(text))
        return real(text)

    monkeypatch.setattr(module, "_object", counting)
    pieces = ['{"code": "', *["}"] * 2000, '"}']
    arguments = "".join(pieces)
    out, _ = encode(
        *(ToolCallDelta(index=0, id="a" if not i else None, name="f" if not i else None,
                        arguments=p) for i, p in enumerate(pieces)),
        ToolCallDelta(index=0, arguments=" "),
        STOP,
        ToolCall(index=0, id="a", name="f", arguments=arguments),
        END,
    )  # fmt: skip
    calls = [p["functionCall"] for c in out for p in parts(c) if "functionCall" in p]
    assert calls == [{"id": "a", "name": "f", "args": {"code": "}" * 2000}}]
    assert sum(parsed) <= (module.CHECK_COST + 1) * len(arguments)  # (+1: the call written)
    parsed.clear()
    out, _ = encode(ToolCallDelta(index=0, id="a", name="f", arguments='{"x": '),
                    ToolCallDelta(index=0, arguments="1}"), STOP)  # fmt: skip
    assert [p["functionCall"] for c in out for p in parts(c) if "functionCall" in p] == [
        {"id": "a", "name": "f", "args": {"x": 1}}
    ]  # (whole at once, before the stream's end)
    assert parsed == [len('{"x": 1}')] * 2  # (once to know it whole, once written)


def test_a_signature_that_follows_its_call_rides_on_it() -> None:
    out, _ = encode(
        ToolCallDelta(index=0, id="a", name="f", arguments="{}"),
        ReasoningSignature(signature="s", carrier="thought", item_id="a"),
        STOP,
        ToolCall(index=0, id="a", name="f", arguments="{}"),
        END,
    )
    assert parts(out[0]) == [
        {"functionCall": {"id": "a", "name": "f", "args": {}}, "thoughtSignature": "s"}
    ]


def test_a_signature_before_its_call_rides_on_it_and_one_whose_call_never_comes_ends() -> None:
    """`GeminiStreamDecoder` gives a call's signature before the call (client round 32); one
    whose call never comes goes out at the end, an empty text part carrying it."""
    out, _ = encode(
        ReasoningSignature(signature="s", carrier="thought", item_id="a"),
        ToolCallDelta(index=0, id="a", name="f", arguments="{}"),
        ReasoningSignature(signature="lone", carrier="thought", item_id="never"),
        STOP,
        ToolCall(index=0, id="a", name="f", arguments="{}"),
        END,
    )
    got = [p for c in out for p in parts(c)]
    assert got[0] == {"functionCall": {"id": "a", "name": "f", "args": {}}, "thoughtSignature": "s"}
    assert {"text": "", "thoughtSignature": "lone"} in got[1:]


def test_whole_calls_without_pieces_and_calls_never_whole() -> None:
    out, encoder = encode(
        ToolCall(index=0, id="x", name="f", arguments=" "),  # none: {}
        ToolCallDelta(index=1, id="p", name="g", arguments="{"),
        ToolCallDelta(index=2, id="q", name="h", arguments="{}"),  # waits for call 1
        ReasoningSignature(signature="s-p", carrier="thought", item_id="p"),
        ToolCallDelta(index=3, id="z", name="k"),
        ResponseStarted(status=200, headers=()),  # the HTTP level: nothing to write
        StreamEnded(complete=False, done=False),
    )
    assert parts(out[0]) == [{"functionCall": {"id": "x", "name": "f", "args": {}}}]
    assert parts(out[1]) == [{"text": "", "thoughtSignature": "s-p"}]
    assert encoder.lost == [
        "tool call 1 never became whole: not sent",
        "tool call 3 never became whole: not sent",
        "tool call 2 waited for a call before it that never came: not sent",
    ]


@pytest.mark.parametrize("arguments", ['"not an object"', "[1]", '{"a": '])
def test_a_call_whose_arguments_are_no_object_ends_the_stream_with_the_failure(
    arguments: str,
) -> None:
    """Attack 62 F3: it went out as ``{}`` with a STOP, said only in ``lost`` (which a Gemini
    client of a gateway never reads): a client would run it with arguments the model never
    gave. The stream ends with Gemini's error chunk, which the SDK raises, as the Messages
    encoder's does; nothing after it is written."""
    out, encoder = encode(
        TextDelta(text="calling"),
        ToolCall(index=0, id="x", name="f", arguments=arguments),
        ToolCall(index=1, id="y", name="g", arguments="{}"),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        END,
    )
    assert parts(out[0]) == [{"text": "calling"}]
    error = out[-1]["error"]  # (once the finish said the length did not cut it)
    assert error["details"][0]["metadata"] == {"code": "invalid_tool_arguments"}
    assert "tool call 0 ('f') are not a JSON object" in error["message"]
    names = [p["functionCall"]["name"] for c in out[:-1] for p in parts(c) if "functionCall" in p]
    assert names == ["g"]  # (not f: it never goes)
    assert "finishReason" not in json.dumps(out)  # the error is the end
    assert encoder.done  # (the stream's end: its body may end there)


LENGTH = Finished(reason=FinishReason.LENGTH, raw="length")
CUT = ToolCall(index=0, id="x", name="f", arguments='{"a": "xy')


@pytest.mark.parametrize(
    "events",
    [[LENGTH, CUT], [CUT, LENGTH]],
    ids=["finish-first", "call-first"],  # (Chat's decoder gives the finish first, Anthropic's
)  # the call)
def test_a_call_the_length_cut_is_left_out_and_said_as_the_whole_answer_does(
    events: list[Any],
) -> None:
    """Review 63: a call cut by ``maxOutputTokens`` ended the stream as a broken protocol,
    where ``:generateContent`` of the same answer is a MAX_TOKENS answer without it."""
    out, encoder = encode(TextDelta(text="a"), *events, END)
    assert parts(out[0]) == [{"text": "a"}]
    assert [c["candidates"][0]["finishReason"] for c in out[1:]] == ["MAX_TOKENS"]
    assert encoder.lost == [cut_by_length(CUT, written=False)]
    assert encoder.done


def test_a_call_no_finish_said_was_cut_ends_the_stream_at_its_end() -> None:
    out, encoder = encode(TextDelta(text="a"), CUT, END)
    assert [c.get("error", {}).get("code") for c in out] == [None, 502]
    assert encoder.done  # (its error chunk is its end)


def test_nothing_is_written_after_a_held_call_fails() -> None:
    """Review 63: the event after a call that failed as it left the queue went out after
    the error chunk."""
    out, _ = encode(
        ToolCallDelta(index=0, id="a", name="f", arguments='{"x":'),
        ToolCall(index=1, id="b", name="g", arguments="[1]"),
        STOP,
        ToolCallDelta(index=0, arguments="1}"),
        TextDelta(text="after the error"),
        END,
    )
    assert "error" in out[-1]
    assert "after the error" not in json.dumps(out)


def test_a_whole_call_its_pieces_never_made_whole_goes_out_in_its_turn() -> None:
    out, _ = encode(
        ToolCallDelta(index=0, id="a", name="f", arguments="{"),
        ToolCallDelta(index=1, id="b", name="g", arguments="{}"),
        ToolCall(index=0, id="a", name="f", arguments="{}"),  # the decoder's whole call
        ToolCall(index=1, id="b", name="g", arguments="{}"),
        END,
    )
    assert [parts(c)[0]["functionCall"]["id"] for c in out[:2]] == ["a", "b"]


def test_signatures_that_name_no_pending_call_are_empty_text_parts() -> None:
    """Another vendor's signature, and a redacted block's data, go carried in base64 (attack
    62 F1, F2: as they were, google-genai refused the answer, or sent the signature back
    re-encoded to be dropped as Gemini's): our decoder reads each back as it was, and so
    does the hub from the turn a client sends back in the SDK's URL-safe alphabet."""
    out, encoder = encode(
        ReasoningSignature(signature="s1", carrier="thought"),
        ReasoningSignature(signature="s2+/=", carrier="thinking", item_id="rs_1"),
        ReasoningSignature(signature="enc", carrier="thinking", redacted=True),
    )
    s2 = carried_in_base64("s2+/=", "thinking", "rs_1")
    enc = carried_in_base64("enc", "thinking", None, redacted=True)
    assert [parts(c) for c in out] == [
        [{"text": "", "thoughtSignature": "s1"}],
        [{"text": "", "thoughtSignature": s2}],
        [{"text": "", "thoughtSignature": enc}],
    ]
    assert base64.b64decode(s2, validate=True)  # strict base64, as the SDK reads it
    assert encoder.lost == []
    data = b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in out)
    decoder = GeminiStreamDecoder()
    decoder.feed(data)
    decoder.close()
    assert [
        (b.signature, b.carrier, b.item_id, b.redacted) for b in decoder.result.reasoning_blocks
    ] == [
        ("s1", "thought", None, False),
        ("s2+/=", "thinking", "rs_1", False),
        ("enc", "thinking", None, True),
    ]
    # google-genai sends them back in the URL-safe alphabet, unpadded or not: the hub reads them
    from svir_proto.gemini import GeminiRequest, to_hub
    from svir_proto.hub import message_reasoning

    urlsafe = base64.urlsafe_b64encode(base64.b64decode(s2)).decode()
    turn = {
        "role": "model",
        "parts": [
            {"text": "", "thoughtSignature": urlsafe},
            {"text": "", "thoughtSignature": enc.rstrip("=")},
        ],
    }
    request = GeminiRequest.parse(
        json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}, turn,
                                 {"role": "user", "parts": [{"text": "go on"}]}]}).encode(),
        model="m",
    )  # fmt: skip
    (model_turn,) = [m for m in to_hub(request).messages if m.role == "assistant"]
    blocks = message_reasoning(model_turn)
    assert [(b.signature, b.carrier, b.redacted) for b in blocks] == [
        ("s2+/=", "thinking", False),
        ("enc", "thinking", True),
    ]


def test_the_last_chunk_has_the_finish_and_the_usage_gemini_counts_it() -> None:
    usage = Usage(
        prompt_tokens=10,
        completion_tokens=30,
        total_tokens=40,
        reasoning_tokens=20,
        cached_tokens=4,
        cache_creation_tokens=3,
    )
    out, _ = encode(STOP, Finished(reason=FinishReason.OTHER, raw="x"), usage, END)
    assert out[-1]["usageMetadata"] == {
        "promptTokenCount": 10,
        "cachedContentTokenCount": 4,
        "candidatesTokenCount": 10,
        "thoughtsTokenCount": 20,
        "totalTokenCount": 40,
        "vendor:svir": {"cacheCreationTokenCount": 3},
    }
    d = GeminiStreamDecoder()
    encoder = GeminiStreamEncoder()
    run(d, [b"".join(encoder.encode(e) for e in (STOP, usage, END))])
    assert d.result.usage == usage


def test_finish_values_are_geminis_own_or_the_normal_forms() -> None:
    cases = [
        (Finished(reason=FinishReason.STOP, raw="STOP"), "STOP"),
        (Finished(reason=FinishReason.TOOL_CALLS, raw="STOP"), "STOP"),
        (Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"), "STOP"),
        (Finished(reason=FinishReason.LENGTH, raw="length"), "MAX_TOKENS"),
        (Finished(reason=FinishReason.CONTENT_FILTER, raw="RECITATION"), "RECITATION"),
        (Finished(reason=FinishReason.CONTENT_FILTER, raw="content_filter"), "SAFETY"),
        (Finished(reason=FinishReason.OTHER, raw="LANGUAGE"), "LANGUAGE"),
        (Finished(reason=FinishReason.OTHER, raw="abort"), "OTHER"),
        (Finished(reason=FinishReason.STOP, raw="LANGUAGE"), "STOP"),
    ]
    for finish, value in cases:
        out, _ = encode(finish, END)
        assert out[-1]["candidates"][0]["finishReason"] == value, finish


def test_a_cut_writes_no_finish_but_what_it_has() -> None:
    out, encoder = encode(STOP, Usage(prompt_tokens=1), StreamEnded(complete=False, done=False))
    assert out == [{"usageMetadata": {"promptTokenCount": 1}, "modelVersion": "", "responseId": ""}]
    assert not encoder.done
    assert encode(StreamEnded(complete=False, done=False))[0] == []


def test_a_failure_is_an_error_chunk_and_the_end() -> None:
    failure = Failure(kind=FailureKind.RATE_LIMITED, message="slow down", code="x", retry_after=2)
    out, encoder = encode(
        TextDelta(text="a"), STOP, StreamFailed(error=failure), TextDelta(text="b"), END
    )
    assert out[1] == {
        "error": {
            "code": 429,
            "message": "slow down",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "RATE_LIMITED",
                    "domain": "svir-proto",
                    "metadata": {"code": "x"},
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2.000s"},
            ],
        }
    }
    assert len(out) == 2
    assert encoder.done  # (its error chunk ends the stream: its body may end there)


HATE = FilterResult(category="HARM_CATEGORY_HATE_SPEECH", filtered=False, severity="LOW")
BLOCKED = FilterResult(category="HARM_CATEGORY_HARASSMENT", filtered=True, severity="HIGH")
AZURE = FilterResult(category="hate", filtered=False, severity="safe")


def test_a_failure_before_anything_was_said_comes_after_the_streams_identity() -> None:
    """A stream that began (its first chunk said only who answers) and then failed: the
    identity goes out first, so the client sees the stream begin, as the upstream's did
    (found by the round-trip property)."""
    failure = Failure(kind=FailureKind.OVERLOADED, message="busy")
    started = StreamStarted(response_id="r1", model="m")
    out, _ = encode(started, StreamFailed(error=failure), END)
    assert out[0] == {"modelVersion": "m", "responseId": "r1"}
    assert out[1]["error"]["message"] == "busy"
    assert len(out) == 2
    out, _ = encode(started, TextDelta(text="a"), StreamFailed(error=failure))
    assert [("error" in c) for c in out] == [False, True]  # said once, with the text
    out, _ = encode(StreamFailed(error=failure))  # no beginning to say
    assert len(out) == 1


def test_verdicts_in_geminis_categories_are_safety_ratings() -> None:
    out, encoder = encode(
        FilterVerdict(scope="prompt", results=(HATE, AZURE)),
        FilterVerdict(scope="completion", results=(BLOCKED,), filtered=True, detected=True),
        FilterVerdict(scope="completion", results=(AZURE,)),
        FilterVerdict(scope="prompt", results=(AZURE,)),
    )
    assert out[0]["promptFeedback"] == {
        "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "LOW"}]
    }
    assert out[1]["candidates"] == [
        {
            "safetyRatings": [
                {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}
            ],
            "index": 0,
        }
    ]
    assert len(out) == 2
    assert encoder.lost == ["filter verdicts in categories Gemini has not: not sent"]


def test_a_prompt_blocked_upstream_is_a_block_reason() -> None:
    blocked = FilterVerdict(scope="prompt", results=(BLOCKED,), filtered=True, detected=True)
    out, _ = encode(
        blocked,
        Finished(reason=FinishReason.CONTENT_FILTER, raw="content_filter"),
        Usage(prompt_tokens=2),
        END,
    )
    assert out == [
        {
            "promptFeedback": {
                "blockReason": "OTHER",
                "safetyRatings": [
                    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}
                ],
            },
            "usageMetadata": {"promptTokenCount": 2},
            "modelVersion": "",
            "responseId": "",
        }
    ]
    out, _ = encode(
        FilterVerdict(scope="prompt", results=(AZURE,), filtered=True),
        Finished(reason=FinishReason.CONTENT_FILTER, raw="SAFETY"),
        END,
    )
    assert out[0]["promptFeedback"] == {"blockReason": "SAFETY"}
    # a filtered prompt verdict, then an answer after all: the ratings, then the answer's end
    out, _ = encode(blocked, TextDelta(text="a"), STOP, END)
    assert [next(iter(c)) for c in out] == ["candidates", "promptFeedback", "candidates"]
    out, _ = encode(FilterVerdict(scope="prompt", results=(AZURE,), filtered=True), STOP, END)
    assert [next(iter(c)) for c in out] == ["candidates"]


def test_an_openai_client_gets_openais_finish_for_another_dialects_raw_value() -> None:
    """The gateway's OpenAI side (svir_proto.openai.encoder): Gemini's STOP is ``stop``,
    its STOP with calls ``tool_calls``; an OpenAI server's own unknown value stays as it is."""
    for finish, value in [
        (Finished(reason=FinishReason.STOP, raw="STOP"), "stop"),
        (Finished(reason=FinishReason.TOOL_CALLS, raw="STOP"), "tool_calls"),
        (Finished(reason=FinishReason.LENGTH, raw="MAX_TOKENS"), "length"),
        (Finished(reason=FinishReason.STOP, raw="stop"), "stop"),
        (Finished(reason=FinishReason.OTHER, raw="eos"), "eos"),
    ]:
        data = ChatStreamEncoder().encode(finish)
        assert json.loads(data[6:])["choices"][0]["finish_reason"] == value
        d = ChatStreamDecoder()
        d.feed(data)
        assert d.result.finish_reason is finish.reason


def test_fuzz_crash_text_after_a_failure() -> None:
    """fuzz/corpus/gemini/crash-text-after-a-failure: an error chunk, then text. The decoder
    reads on after a failure, the encoder writes nothing after one (Rule 6: the error chunk is
    the end of a Gemini stream, where its client raises); the fuzz target expected the text
    after it too. It now checks what precedes the first failure."""
    body = (ROOT / "fuzz/corpus/gemini/crash-text-after-a-failure").read_bytes()
    d = GeminiStreamDecoder()
    events = run(d, [body])
    assert d.result.text  # read on
    encoder = GeminiStreamEncoder()
    again = GeminiStreamDecoder()
    run(again, [b"".join(encoder.encode(e) for e in events)])
    assert again.result.text == ""
    assert again.result.error == d.result.error


def test_fuzz_crash_incomplete_stream_finished_by_the_encoder() -> None:
    """fuzz/corpus/gemini/crash-incomplete-stream-finished-by-the-encoder: a whole call, then a
    streamed call left open at the end: not complete, so no call is executable, and now a cut
    (decoder Rule 9: it was done, and every other dialect's client was told a complete
    answer, attack 28). The encoder wrote the finish because the stream was done, and a
    Gemini client then took the first call as a complete answer's. The finish now goes out
    only when the stream was complete (Rule 5)."""
    body = (
        ROOT / "fuzz/corpus/gemini/crash-incomplete-stream-finished-by-the-encoder"
    ).read_bytes()
    d = GeminiStreamDecoder()
    events = run(d, [body])
    assert (d.result.done, d.result.complete, d.result.tool_calls) == (False, False, ())
    encoder = GeminiStreamEncoder()
    again = GeminiStreamDecoder()
    run(again, [b"".join(encoder.encode(e) for e in events)])
    assert (again.result.complete, again.result.tool_calls) == (False, ())
    assert again.result.finish_reason is None


def array_of(*events: Any, **options: Any) -> tuple[bytes, GeminiStreamEncoder]:
    encoder = GeminiStreamEncoder(sse=False, **options)
    return b"".join(encoder.encode(e) for e in events), encoder


def test_without_sse_the_stream_is_one_json_array_of_the_same_chunks() -> None:
    """Rule 8: Gemini's stream without ``alt=sse``; the same chunks, each an element."""
    events = (
        StreamStarted(response_id="r1", model="m"),
        TextDelta(text="a\r\n\r\nb"),  # (a line end in the text is escaped: one chunk still)
        ToolCallDelta(index=0, id="c1", name="f", arguments='{"x": 1}'),
        TextDelta(text="c"),
        STOP,
        Usage(prompt_tokens=2, completion_tokens=3),
        END,
    )
    sse, _ = encode(*events)
    body, encoder = array_of(*events)
    assert body.startswith(b'[{"candidates"')
    assert body.endswith(b"}\r\n]")
    assert json.loads(body) == sse
    assert len(sse) == 4
    assert encoder.done
    assert [parts(c) for c in sse[:3]] == [
        [{"text": "a\r\n\r\nb"}],
        [{"functionCall": {"id": "c1", "name": "f", "args": {"x": 1}}}],
        [{"text": "c"}],
    ]
    assert encoder.encode(TextDelta(text="late")) == b""  # nothing after its end


def test_an_array_stream_that_failed_ends_with_its_error_element() -> None:
    failure = Failure(kind=FailureKind.OVERLOADED, message="busy")
    body, _ = array_of(TextDelta(text="a"), StreamFailed(error=failure), END)
    doc = json.loads(body)
    assert doc[-1]["error"]["message"] == "busy"
    assert len(doc) == 2
    assert parts(doc[0]) == [{"text": "a"}]


def test_an_array_stream_with_nothing_in_it_is_an_empty_array_and_a_cut_stays_open() -> None:
    assert array_of(END)[0] == b"[]"
    body, encoder = array_of(TextDelta(text="a"), StreamEnded(complete=False, done=False))
    assert body.startswith(b"[{")
    assert not body.endswith(b"]")
    assert json.loads(body + b"]")[0]["candidates"][0]["content"]["parts"] == [{"text": "a"}]
    assert not encoder.done


def test_the_array_writer_takes_each_whole_events_data_as_it_came() -> None:
    """`ArrayWriter` (Rule 8, and a relay's): each event's data, its lines joined by a line
    feed, whatever the line ends; comments, other fields and events with no data or blank
    data are no element; an event the end cut short is discarded, as SSE does, and the
    array left open: the stream was cut (attack 75 F3)."""
    writer = ArrayWriter()
    out = writer.events(b'data: {"a": 1}\r\n\r\n: c\r\n\r\nid: 7\ndata:{"b":\ndata: 2}\n\n')
    out += writer.events(b"data: \r\rdata:   \r\r\r\n")
    out += writer.events(b'data: {"c": 3}\r\r')
    assert out == b'[{"a": 1},\r\n{"b":\n2},\r\n{"c": 3}'
    assert writer.written == 3
    assert (writer.end(), writer.cut) == (b"\r\n]", False)
    assert json.loads(out + b"\r\n]") == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert (writer.end(), writer.events(b"data: {}\n\n")) == (b"", b"")  # (ended once)
    cut = ArrayWriter()
    assert cut.events(b'data: {"c": 3}\r\rdata: {"cut": ') == b'[{"c": 3}'
    assert (cut.end(), cut.cut) == (b"", True)
    ended = ArrayWriter()  # (a comment, a field, a lone line end: no event begun)
    assert ended.events(b'data: {"c": 3}\n\n: bye\nid: 9\n\r') == b'[{"c": 3}'
    assert (ended.end(), ended.cut) == (b"\r\n]", False)
    assert ArrayWriter().end() == b"[]"
    assert ArrayWriter(written=2).events(b"data: {}\n\n") == b",\r\n{}"
    bom = ArrayWriter()  # (WHATWG: a mark that begins the stream; "data" alone is empty data)
    assert bom.events(b"") == b""
    assert bom.events(b'\xef\xbb\xbfdata: {"a":\ndata\ndata: 1}\r\n\r\n') == b'[{"a":\n\n1}'
    assert bom.events(b"\xef\xbb\xbfdata: 2\n\n") == b""  # (no longer the stream's start)


def test_the_array_writer_writes_only_what_the_gemini_decoder_reads() -> None:
    """Review 76 H1: an event of another type than ``message``, which the Gemini decoder
    skips unread, went into the array as it came: ``data: ]`` closed it, ``data: not json``
    spoiled it. Blanks before the stream's first line are nothing, as to the decoder (its
    Rule 10); a body that is an array, no SSE (an upstream that called it SSE), is not
    written, and its end is a cut."""
    writer = ArrayWriter()
    assert writer.events(b"\r\n \t") == b""
    events = (
        b'event: ping\ndata: ]\n\nevent: message\ndata: {"a": 1}\n\nevent: x\r\ndata: no\r\n\r\n'
    )
    assert writer.events(events) == b'[{"a": 1}'
    assert writer.events(b"event: y\ndata: [{}\n\n") == b""
    assert writer.end() == b"\r\n]"
    whole = ArrayWriter()  # (attack 77 F1: no SSE, nothing written, a cut)
    body = b'[{"candidates": []}\n,\r\n{"candidates": []}\n]'
    assert whole.events(b"\n" + body[:9]) + whole.events(body[9:]) == b""
    assert (whole.end(), whole.cut, whole.written) == (b"", True, 0)


def test_an_array_encoder_goes_on_from_the_elements_another_writer_wrote() -> None:
    """A relay that broke off wrote the array's first elements: the encoder's failure follows
    them (``opened``), the array's last."""
    failure = Failure(kind=FailureKind.TIMEOUT, message="stalled")
    body, _ = array_of(StreamFailed(error=failure), opened=2)
    assert body.startswith(b",\r\n{")
    doc = json.loads(b"[{},\r\n{}" + body)
    assert len(doc) == 3
    assert doc[-1]["error"]["message"] == "stalled"


def test_what_the_answer_cost_goes_out_before_its_failure() -> None:
    """Review 64 F6: the usage held for the last chunk was lost when the stream failed (a
    Gemini client, whose every chunk says it, saw none); it goes before the error chunk."""
    failure = Failure(kind=FailureKind.TIMEOUT, message="stalled")
    usage = Usage(prompt_tokens=9, completion_tokens=4, total_tokens=13)
    out, encoder = encode(TextDelta(text="a"), usage, StreamFailed(error=failure))
    assert parts(out[0]) == [{"text": "a"}]
    assert out[1]["usageMetadata"] == {
        "promptTokenCount": 9, "candidatesTokenCount": 4, "totalTokenCount": 13
    }  # fmt: skip
    assert out[2]["error"]["message"] == "stalled"
    assert encoder.done
    again = GeminiStreamDecoder()
    one = GeminiStreamEncoder()
    run(again, [b"".join(map(one.encode, (usage, StreamFailed(error=failure))))])
    assert again.result.usage is not None
    assert (again.result.usage.prompt_tokens, again.result.usage.completion_tokens) == (9, 4)
