"""`svir_proto.gemini.answer`: a whole answer as one ``GenerateContentResponse``.

The strongest check is the way back: a recorded answer (Gemini's own, and every other
dialect's conformance recording), folded as the gateway folds it, written whole, and read by a
fresh `GeminiStreamDecoder` as the one event of a stream, says what the recording said; and it
says what the stream encoder's chunks say, and lists what they list. Then each rule of the
module's docstring, and a property over generated answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svir_proto._signatures import carried_in_base64
from svir_proto.answer import AnswerFold, finished_of
from svir_proto.anthropic import MessagesStreamDecoder
from svir_proto.errors import Failure, FailureKind, FilterResult
from svir_proto.events import (
    Completion,
    Event,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningBlock,
    ReasoningCarrier,
    ReasoningDelta,
    ReasoningSignature,
    RefusalDelta,
    StreamEnded,
    StreamStarted,
    TextDelta,
    ToolCall,
    Usage,
)
from svir_proto.gemini import GeminiStreamDecoder, GeminiStreamEncoder
from svir_proto.gemini.answer import generate_content_response
from svir_proto.openai import ChatStreamDecoder
from svir_proto.responses import ResponsesStreamDecoder
from tests.helpers import CONFORMANCE

END = StreamEnded(complete=True, done=True)
STOP = Finished(reason=FinishReason.STOP, raw="STOP")
LENGTH = Finished(reason=FinishReason.LENGTH, raw="length")
HATE = FilterResult(category="HARM_CATEGORY_HATE_SPEECH", filtered=False, severity="LOW")
HARASSED = FilterResult(category="HARM_CATEGORY_HARASSMENT", filtered=True, severity="HIGH")
AZURE = FilterResult(category="hate", filtered=False, severity="safe")


def fold(*events: Any) -> Completion:
    """The `Completion` the gateway folds from ``events`` (a stream that ended)."""
    answer = AnswerFold()
    answer.extend([StreamStarted(response_id="up", model="up"), *events, END])
    return answer.result()


def write(result: Completion, **options: Any) -> tuple[dict[str, Any], list[str]]:
    """The answer for ``result``, read as JSON, and what it said it lost."""
    lost: list[str] = []
    body = generate_content_response(
        result,
        model=options.pop("model", "gemini-2.5-flash"),
        response_id=options.pop("response_id", "rid"),
        created=options.pop("created", 0),
        lost=lost,
    )
    assert type(body) is bytes, body
    doc: dict[str, Any] = json.loads(body)
    return doc, lost


def parts_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = doc["candidates"][0]["content"]["parts"]
    return parts


def read_back(body: bytes, **options: Any) -> tuple[GeminiStreamDecoder, list[Event]]:
    """``body`` as the one event of a Gemini stream, read by a fresh decoder."""
    decoder = GeminiStreamDecoder(**options)
    events = decoder.feed(b"data: " + body + b"\r\n\r\n") + decoder.close()
    return decoder, events


def calls(result: Completion) -> list[tuple[int, str, str, object]]:
    return [(c.index, c.id, c.name, json.loads(c.arguments or "{}")) for c in result.tool_calls]


def last_verdicts(result: Completion) -> dict[str, FilterVerdict]:
    return {v.scope: v for v in result.filter_verdicts}


# -- the way back: recorded answers ----------------------------------------------------------


def recordings(directory: str) -> list[Path]:
    return sorted((CONFORMANCE / directory).glob("*.sse"))


def options_of(path: Path) -> dict[str, Any]:
    meta = json.loads(path.with_suffix(".json").read_text("utf-8"))
    options: dict[str, Any] = meta.get("options") or {}
    return options


def decoded(make: Any, path: Path) -> tuple[Any, list[Event]]:
    decoder = make(**options_of(path))
    events = decoder.feed(path.read_bytes()) + decoder.close()
    return decoder, events


def answered(make: Any, path: Path) -> bool:
    """Whether the gateway writes the recording's answer whole (it ended, with no error)."""
    result = decoded(make, path)[0].result
    return bool(result.done and result.error is None)


GEMINI = [p for p in recordings("gemini") if answered(GeminiStreamDecoder, p)]


def test_the_recordings_are_there() -> None:
    assert len(GEMINI) >= 15
    assert {"function-call-2.5", "thinking-summaries-signed", "prompt-blocked"} <= {
        p.stem for p in GEMINI
    }


@pytest.mark.parametrize("path", GEMINI, ids=lambda p: p.stem)
@pytest.mark.parametrize("kept", ["folded", "decoded"])
def test_a_recorded_gemini_answer_reads_back_as_it_came(path: Path, kept: str) -> None:
    """Gemini's own answers, the gateway's `Completion` (``folded``, which keeps the order) or
    the decoder's own (``decoded``, which keeps none), written whole and read back: the text,
    the thoughts and their signatures, the calls, the finish, the usage and the last verdicts
    are the recording's; nothing is said lost, and the decoder notices nothing new."""
    decoder, events = decoded(GeminiStreamDecoder, path)
    original = decoder.result
    if kept == "folded":
        answer = AnswerFold()
        answer.extend(events)
        result = answer.result()
        assert bool(result.segments) is bool(result.text or result.reasoning_blocks)
    else:
        result = original
    lost: list[str] = []
    body = generate_content_response(
        result, model="gemini-x", response_id="rid-1", created=0, lost=lost
    )
    assert type(body) is bytes
    assert lost == []
    again, events = read_back(body, **options_of(path))
    back = again.result
    assert back.complete is original.complete
    assert set(back.problems) <= set(original.problems)  # (nothing new: a call undeclared)
    assert events[0] == StreamStarted(response_id="rid-1", model="gemini-x")
    for field in ("text", "reasoning", "reasoning_blocks", "tool_calls", "usage"):
        assert getattr(back, field) == getattr(original, field), field
    assert (back.finish_reason, back.finish_raw) == (original.finish_reason, original.finish_raw)
    assert last_verdicts(back) == last_verdicts(original)


OTHERS = [
    (make, path)
    for name, make in [
        ("anthropic", MessagesStreamDecoder),
        ("openai", ChatStreamDecoder),
        ("responses", ResponsesStreamDecoder),
    ]
    for path in recordings(name)
    if answered(make, path)
]


def test_the_other_recordings_are_there() -> None:
    assert len(OTHERS) >= 40


@pytest.mark.parametrize(
    ("make", "path"), OTHERS, ids=[f"{p.parent.name}-{p.stem}" for _, p in OTHERS]
)
def test_any_upstreams_answer_reads_back_and_says_what_its_stream_says(
    make: Any, path: Path
) -> None:
    """Every other dialect's recorded answers, folded and written whole: read back, the text
    (a refusal's too), the reasoning, the calls, the finish (the content filter's when a
    verdict blocked the answer) and the usage are the upstream's; and they are what the
    stream encoder's chunks of the same events say, with the same ``lost``."""
    _, events = decoded(make, path)
    answer = AnswerFold()
    answer.extend(events)
    result = answer.result()
    lost: list[str] = []
    body = generate_content_response(result, model="m", response_id="r", created=1, lost=lost)
    assert type(body) is bytes
    back = read_back(body)[0].result
    assert back.text == "".join(
        e.text for e in events if type(e) is TextDelta or type(e) is RefusalDelta
    )
    assert back.reasoning == result.reasoning
    assert calls(back) == calls(result)
    assert back.usage == result.usage
    finished = finished_of(result, verdicts=True)
    assert back.finish_reason is (None if finished is None else finished.reason)

    encoder = GeminiStreamEncoder(model="m", response_id="r", created=1)
    stream = b"".join(encoder.encode(e) for e in events)
    streamed = GeminiStreamDecoder()
    streamed.feed(stream)
    streamed.close()
    for field in ("text", "reasoning", "tool_calls", "finish_reason", "finish_raw", "usage"):
        assert getattr(back, field) == getattr(streamed.result, field), field
    assert sorted(lost) == sorted(encoder.lost)


# -- the object --------------------------------------------------------------------------------


def test_a_signed_call_is_gemini_s_own_object() -> None:
    """Gemini's recorded call, whole: the call's part carries its signature; the usage has
    the thoughts out of the candidates; the identity is the one given, ``createTime`` with a
    clock (Vertex AI's field, as the stream writes it)."""
    _, events = decoded(GeminiStreamDecoder, CONFORMANCE / "gemini" / "function-call-2.5.sse")
    answer = AnswerFold()
    answer.extend(events)
    doc, lost = write(answer.result(), model="gemini-2.5-flash", response_id="r-1", created=86400)
    assert doc == {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {
                            "functionCall": {
                                "id": "u7jYaNyOEp2I1dkP0ZfQoAU-0",
                                "name": "get_current_weather",
                                "args": {"location": "Boston, MA", "unit": "celsius"},
                            },
                            "thoughtSignature": "CiQB0e2Kb2ZzaWduYXR1cmUtb24tdGhlLWNhbGw=",
                        }
                    ],
                    "role": "model",
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 78,
            "candidatesTokenCount": 22,
            "thoughtsTokenCount": 41,
            "totalTokenCount": 141,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r-1",
        "createTime": "1970-01-02T00:00:00Z",
    }
    assert lost == []
    assert "createTime" not in write(answer.result(), created=0)[0]


def test_thoughts_text_and_the_turns_signature_in_order() -> None:
    """Gemini's thinking recording: the two thoughts one part, the two texts one part, and
    the signature Gemini streamed on an empty last part on the text it closes."""
    _, events = decoded(
        GeminiStreamDecoder, CONFORMANCE / "gemini" / "thinking-summaries-signed.sse"
    )
    answer = AnswerFold()
    answer.extend(events)
    assert parts_of(write(answer.result())[0]) == [
        {
            "text": "**Weighing the options**\n\nThe user asks for a haiku about rain. "
            "I will count syllables: 5, 7, 5.",
            "thought": True,
        },
        {
            "text": "Soft rain on the roof,\npuddles hold a grey sky still,\nthe street "
            "breathes again.",
            "thoughtSignature": "EpoECpcEAdHtim9kQ1wvY3V0dGxlZmlzaC1zaWduYXR1cmUtMDAx",
        },
    ]


def test_a_blocked_prompt_is_a_block_reason_and_no_candidate() -> None:
    _, events = decoded(GeminiStreamDecoder, CONFORMANCE / "gemini" / "prompt-blocked.sse")
    answer = AnswerFold()
    answer.extend(events)
    doc, lost = write(answer.result())
    assert "candidates" not in doc
    assert doc["promptFeedback"]["blockReason"] == "SAFETY"
    assert doc["promptFeedback"]["safetyRatings"][2] == {
        "category": "HARM_CATEGORY_HARASSMENT",
        "probability": "HIGH",
        "blocked": True,
    }
    assert doc["usageMetadata"] == {"promptTokenCount": 11, "totalTokenCount": 11}
    assert lost == []


# -- Rule 1: parts -------------------------------------------------------------------------------


def test_text_next_to_text_is_one_part_and_the_order_is_the_streams() -> None:
    """A refusal is text (said), joined with the text next to it; reasoning of another
    carrier is a thought part (said); each run keeps its place."""
    result = fold(
        ReasoningDelta(text="hm", carrier="reasoning_content"),
        ReasoningDelta(text=" so", carrier="reasoning_content"),
        TextDelta(text="a"),
        RefusalDelta(text="b"),
        TextDelta(text="c"),
        ReasoningDelta(text="more", carrier="thought"),
        TextDelta(text="d"),
        STOP,
    )
    doc, lost = write(result)
    assert parts_of(doc) == [
        {"text": "hm so", "thought": True},
        {"text": "abc"},
        {"text": "more", "thought": True},
        {"text": "d"},
    ]
    assert sorted(lost) == [
        "a refusal: Gemini has none, it went out as text",
        "reasoning's carrier 'reasoning_content': sent as thought parts",
    ]


def test_a_decoders_own_result_gives_its_parts_in_the_fields_order() -> None:
    """A `Completion` that kept no order (a decoder's own): its reasoning, its text, its
    refusal, its calls."""
    result = Completion(
        text="t",
        reasoning="r",
        reasoning_carrier="thought",
        refusal="no",
        tool_calls=(ToolCall(index=0, id="c", name="f", arguments='{"a":1}'),),
        finish_reason=FinishReason.TOOL_CALLS,
        finish_raw="tool_calls",
    )
    assert parts_of(write(result)[0]) == [
        {"text": "r", "thought": True},
        {"text": "tno"},
        {"functionCall": {"id": "c", "name": "f", "args": {"a": 1}}},
    ]


def test_a_redacted_blocks_data_is_carried_and_read_back_as_it_was() -> None:
    """Attack 62 F1: it had no form, and an Anthropic client's turn went back without it."""
    result = fold(
        TextDelta(text="a"),
        ReasoningSignature(signature="data", carrier="thinking", redacted=True),
        TextDelta(text="b"),
        STOP,
    )
    doc, lost = write(result)
    carried = carried_in_base64("data", "thinking", None, redacted=True)
    assert parts_of(doc) == [{"text": "a", "thoughtSignature": carried}, {"text": "b"}]
    assert lost == []
    back = read_back(json.dumps(doc).encode())[0].result
    assert back.text == "ab"
    assert back.reasoning_blocks == (
        ReasoningBlock(text="", signature="data", carrier="thinking", redacted=True),
    )


def test_an_empty_answer_is_a_candidate_without_parts() -> None:
    doc, lost = write(fold(STOP))
    assert doc["candidates"] == [
        {"content": {"parts": [], "role": "model"}, "finishReason": "STOP", "index": 0}
    ]
    assert lost == []


# -- Rule 2: signatures --------------------------------------------------------------------------


def test_a_signature_naming_a_call_rides_on_it_and_its_thought_stays_in_place() -> None:
    call = ToolCall(index=0, id="call-0", name="f", arguments='{"x": 1}')
    result = fold(
        ReasoningDelta(text="think", carrier="thought"),
        ReasoningSignature(signature="S0", carrier="thought", item_id="call-0"),
        call,
        TextDelta(text="after"),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
    )
    doc, lost = write(result)
    assert parts_of(doc) == [
        {"text": "think", "thought": True},
        {"functionCall": {"id": "call-0", "name": "f", "args": {"x": 1}}, "thoughtSignature": "S0"},
        {"text": "after"},
    ]
    assert doc["candidates"][0]["finishReason"] == "STOP"
    assert lost == []
    back = read_back(json.dumps(doc).encode())[0].result
    assert back.reasoning_blocks == result.reasoning_blocks
    assert back.finish_reason is FinishReason.TOOL_CALLS


def test_a_signature_that_came_after_its_call_still_rides_on_it() -> None:
    """Vertex AI signs a streamed call on the part that closes it: the block comes after the
    call, and its signature goes on the call all the same."""
    result = fold(
        ToolCall(index=0, id="v-0", name="f", arguments="{}"),
        ReasoningSignature(signature="V", carrier="thought", item_id="v-0"),
        STOP,
    )
    assert parts_of(write(result)[0]) == [
        {"functionCall": {"id": "v-0", "name": "f", "args": {}}, "thoughtSignature": "V"}
    ]


def test_other_signatures_close_their_run_or_stand_alone() -> None:
    """A signature on no call goes on the thought or text it closes, or, with none open (right
    after a call), on an empty text part; another carrier's goes carried in base64 (attack 62
    F2: google-genai refuses one that is not base64), and reads back as its carrier's."""
    result = fold(
        ReasoningDelta(text="one", carrier="thought"),
        ReasoningSignature(signature="A", carrier="thought"),
        TextDelta(text="text"),
        ReasoningSignature(signature="B", carrier="thought", item_id="not-a-call"),
        ToolCall(index=0, id="c", name="f", arguments="{}"),
        ReasoningSignature(signature="C", carrier="thought"),
        ReasoningDelta(text="two", carrier="thinking"),
        ReasoningSignature(signature="D", carrier="thinking"),
        STOP,
    )
    doc, lost = write(result)
    assert parts_of(doc) == [
        {"text": "one", "thought": True, "thoughtSignature": "A"},
        {"text": "text", "thoughtSignature": "B"},
        {"functionCall": {"id": "c", "name": "f", "args": {}}},
        {"text": "", "thoughtSignature": "C"},
        {
            "text": "two",
            "thought": True,
            "thoughtSignature": carried_in_base64("D", "thinking", None),
        },
    ]
    assert lost == ["reasoning's carrier 'thinking': sent as thought parts"]
    back = read_back(json.dumps(doc).encode())[0].result
    assert [(b.text, b.signature, b.carrier) for b in back.reasoning_blocks] == [
        ("one", "A", "thought"),
        ("", "B", "thought"),
        ("", "C", "thought"),
        ("two", "D", "thinking"),
    ]


# -- Rule 3: calls -------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", ["", "  ", "{}", ' {"a": [1, {"b": null}]} '])
def test_a_calls_args_are_its_arguments_as_an_object(arguments: str) -> None:
    call = ToolCall(index=0, id="c", name="f", arguments=arguments)
    doc, _ = write(fold(call, Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls")))
    expected = json.loads(arguments) if arguments.strip() else {}
    assert parts_of(doc) == [{"functionCall": {"id": "c", "name": "f", "args": expected}}]


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ("[1]", ""),
        ('"x"', ""),
        ("nope", ""),
        ('{"a": ', " (Expecting value: line 1 column 6 (char 5))"),
        ('{"a": NaN}', " ("),
    ],
)
@pytest.mark.parametrize("finish", ["tool_calls", "stop", None])
def test_a_call_whose_arguments_are_no_object_is_the_failure(
    arguments: str, why: str, finish: str | None
) -> None:
    """Unless the length cut it, a call that cannot be written fails the answer (the text
    before it included), with why the arguments did not read when they began as an object;
    nothing is said lost."""
    good = ToolCall(index=0, id="a", name="ok", arguments="{}")
    bad = ToolCall(index=1, id="b", name="get_weather", arguments=arguments)
    events: list[Any] = [TextDelta(text="first"), good, bad]
    if finish is not None:
        events.append(Finished(reason=FinishReason(finish), raw=finish))
    lost: list[str] = []
    failure = generate_content_response(
        fold(*events), model="m", response_id="r", created=0, lost=lost
    )
    assert isinstance(failure, Failure)
    assert failure.kind is FailureKind.UNEXPECTED
    assert failure.code == "invalid_tool_arguments"
    assert failure.message.startswith(
        "the upstream broke the protocol: the arguments of tool call 1 ('get_weather') are not "
        "a JSON object, which a functionCall's args must be" + why
    )
    if not why:
        assert failure.message.endswith("must be")
    assert lost == []


def test_a_call_the_length_cut_is_left_out_and_said() -> None:
    cut = ToolCall(index=1, id="b", name="get_weather", arguments='{"location": "Wien"')
    result = fold(
        TextDelta(text="Let me look."),
        ReasoningSignature(signature="S", carrier="thought", item_id="b"),
        ToolCall(index=0, id="a", name="ok", arguments="{}"),
        cut,
        LENGTH,
        Usage(prompt_tokens=1, completion_tokens=16),
    )
    doc, lost = write(result)
    assert parts_of(doc) == [
        {"text": "Let me look.", "thoughtSignature": "S"},  # (its call left out: in place)
        {"functionCall": {"id": "a", "name": "ok", "args": {}}},
    ]
    assert doc["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert lost == [
        "tool call 1 ('get_weather') was cut by the answer's length: its arguments are no "
        "object, and it is left out"
    ]
    body = generate_content_response(result, model="m", response_id="r", created=0)
    assert type(body) is bytes  # (no list: unsaid)


# -- Rule 4: the end -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "written"),
    [
        (Finished(reason=FinishReason.STOP, raw="STOP"), "STOP"),
        (Finished(reason=FinishReason.STOP, raw="end_turn"), "STOP"),
        (Finished(reason=FinishReason.TOOL_CALLS, raw="tool_use"), "STOP"),
        (Finished(reason=FinishReason.LENGTH, raw="MAX_TOKENS"), "MAX_TOKENS"),
        (Finished(reason=FinishReason.LENGTH, raw="length"), "MAX_TOKENS"),
        (Finished(reason=FinishReason.CONTENT_FILTER, raw="RECITATION"), "RECITATION"),
        (Finished(reason=FinishReason.CONTENT_FILTER, raw="refusal"), "SAFETY"),
        (Finished(reason=FinishReason.OTHER, raw="MALFORMED_FUNCTION_CALL"),
         "MALFORMED_FUNCTION_CALL"),
        (Finished(reason=FinishReason.OTHER, raw="pause_turn"), "OTHER"),
        (None, None),
    ],
)  # fmt: skip
def test_the_finish_is_geminis_own_value_or_the_normal_forms(
    finish: Finished | None, written: str | None
) -> None:
    result = fold(TextDelta(text="a"), *([] if finish is None else [finish]))
    candidate = write(result)[0]["candidates"][0]
    assert candidate.get("finishReason") == written
    assert ("finishReason" in candidate) is (finish is not None)


def test_the_usage_has_the_thoughts_out_and_the_cache_writes_under_svirs_key() -> None:
    usage = Usage(
        prompt_tokens=100,
        completion_tokens=30,
        total_tokens=130,
        reasoning_tokens=20,
        cached_tokens=40,
        cache_creation_tokens=7,
    )
    doc, lost = write(fold(TextDelta(text="a"), STOP, usage))
    assert doc["usageMetadata"] == {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 40,
        "candidatesTokenCount": 10,
        "thoughtsTokenCount": 20,
        "totalTokenCount": 130,
        "vendor:svir": {"cacheCreationTokenCount": 7},
    }
    assert read_back(json.dumps(doc).encode())[0].result.usage == usage
    assert lost == []


def test_no_usage_is_no_usage_metadata_and_nothing_said() -> None:
    """As the stream writes none, and says nothing: Gemini's field is left out, not made up."""
    doc, lost = write(fold(TextDelta(text="a"), STOP))
    assert "usageMetadata" not in doc
    assert lost == []


def test_without_a_list_nothing_is_said() -> None:
    body = generate_content_response(
        fold(RefusalDelta(text="no"), STOP), model="m", response_id="r", created=0
    )
    assert type(body) is bytes
    assert json.loads(body)["candidates"][0]["content"]["parts"] == [{"text": "no"}]


# -- Rule 5: verdicts ----------------------------------------------------------------------------


def test_the_last_verdicts_are_safety_ratings_in_geminis_categories() -> None:
    result = fold(
        FilterVerdict(scope="prompt", results=(HATE, AZURE), detected=True),
        TextDelta(text="a"),
        FilterVerdict(scope="completion", results=(AZURE,)),
        FilterVerdict(scope="completion", results=(HATE,), detected=True),
        STOP,
    )
    doc, lost = write(result)
    low = {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "LOW"}
    assert doc["candidates"][0]["safetyRatings"] == [low]
    assert doc["candidates"][0]["finishReason"] == "STOP"
    assert doc["promptFeedback"] == {"safetyRatings": [low]}
    assert list(doc) == ["candidates", "promptFeedback", "modelVersion", "responseId"]
    assert lost == ["filter verdicts in categories Gemini has not: not sent"]


def test_a_verdict_with_no_gemini_category_has_no_ratings() -> None:
    result = fold(
        FilterVerdict(scope="prompt", results=(AZURE,)),
        TextDelta(text="a"),
        FilterVerdict(scope="completion", results=(AZURE,)),
        STOP,
    )
    doc, lost = write(result)
    assert "safetyRatings" not in doc["candidates"][0]
    assert "promptFeedback" not in doc
    assert lost == ["filter verdicts in categories Gemini has not: not sent"]


def test_a_verdict_that_blocked_the_answer_ends_it_blocked() -> None:
    """Azure's asynchronous filter blocks after ``stop``: the finish is the filter's."""
    blocked = FilterVerdict(scope="completion", results=(HARASSED,), filtered=True)
    candidate = write(fold(TextDelta(text="a"), STOP, blocked))[0]["candidates"][0]
    assert candidate["finishReason"] == "SAFETY"
    assert candidate["safetyRatings"] == [
        {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}
    ]


@pytest.mark.parametrize(
    ("raw", "reason"), [("PROHIBITED_CONTENT", "PROHIBITED_CONTENT"), ("content_filter", "OTHER")]
)
def test_a_prompt_blocked_with_no_answer_has_its_block_reason(raw: str, reason: str) -> None:
    """The block reason is the finish's raw value when Gemini has it, else ``OTHER``; the
    usage goes with it; an unblocked prompt verdict after the block does not undo it."""
    result = fold(
        FilterVerdict(scope="prompt", results=(HARASSED,), filtered=True),
        FilterVerdict(scope="prompt", results=(HATE,)),
        Finished(reason=FinishReason.CONTENT_FILTER, raw=raw),
        Usage(prompt_tokens=3),
    )
    doc, _ = write(result)
    assert doc == {
        "promptFeedback": {
            "blockReason": reason,
            "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "LOW"}],
        },
        "usageMetadata": {"promptTokenCount": 3},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "rid",
    }
    back = read_back(json.dumps(doc).encode())[0].result
    assert back.finish_reason is FinishReason.CONTENT_FILTER
    assert back.complete


@pytest.mark.parametrize(
    "events",
    [
        [TextDelta(text="a"), Finished(reason=FinishReason.CONTENT_FILTER, raw="SAFETY")],
        [Finished(reason=FinishReason.STOP, raw="STOP")],
        [],
    ],
    ids=["answered", "not-a-filter-finish", "no-finish"],
)
def test_a_blocked_prompt_verdict_without_its_finish_or_with_an_answer_is_only_ratings(
    events: list[Any],
) -> None:
    result = fold(FilterVerdict(scope="prompt", results=(HARASSED,), filtered=True), *events)
    doc, _ = write(result)
    assert "candidates" in doc
    assert doc["promptFeedback"] == {
        "safetyRatings": [
            {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}
        ]
    }


# -- a property over generated answers -----------------------------------------------------------

_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
_SIGNATURE = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/=", min_size=1, max_size=6
)
_CARRIER: st.SearchStrategy[ReasoningCarrier] = st.sampled_from(
    ["thought", "thought", "thinking", "reasoning_content"]
)
_ARGS = st.dictionaries(
    _TEXT, st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _TEXT, max_size=3
)
_FINISHES = [
    Finished(reason=FinishReason.STOP, raw="STOP"),
    Finished(reason=FinishReason.STOP, raw="stop"),
    Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
    Finished(reason=FinishReason.LENGTH, raw="MAX_TOKENS"),
    Finished(reason=FinishReason.CONTENT_FILTER, raw="SAFETY"),
    Finished(reason=FinishReason.OTHER, raw="pause_turn"),
]


@st.composite
def usages(draw: st.DrawFn) -> Usage | None:
    """Counts Gemini's fields can hold: no thoughts without an output, nor more than it."""
    if draw(st.booleans()):
        return None
    count = st.none() | st.integers(0, 10**6)
    completion = draw(count)
    reasoning = None if completion is None else draw(st.none() | st.integers(0, completion))
    return Usage(
        prompt_tokens=draw(count),
        completion_tokens=completion,
        total_tokens=draw(count),
        reasoning_tokens=reasoning,
        cached_tokens=draw(count),
        cache_creation_tokens=draw(count),
    )


@st.composite
def answers(draw: st.DrawFn) -> list[Event]:
    """An answer's events as a decoder gives them: text, refusal, reasoning of one carrier
    (any; the encoder notes an empty refusal or reasoning delta, which leaves nothing in the
    `Completion` the answer is written from), signatures (a call's right before it, as
    `GeminiStreamDecoder` gives it), whole calls whose arguments are objects, a finish, maybe
    a usage."""
    events: list[Event] = []
    n = 0
    carrier = draw(_CARRIER)
    for kind in draw(st.lists(st.integers(0, 5), max_size=12)):
        if kind == 0:
            events.append(TextDelta(text=draw(_TEXT)))
        elif kind == 1:
            events.append(RefusalDelta(text=draw(_TEXT.filter(bool))))
        elif kind == 2:
            events.append(ReasoningDelta(text=draw(_TEXT.filter(bool)), carrier=carrier))
        elif kind == 3:
            events.append(ReasoningSignature(signature=draw(_SIGNATURE), carrier=carrier))
        else:
            call_id = f"call-{n}"
            if kind == 5:
                events.append(
                    ReasoningSignature(signature=draw(_SIGNATURE), carrier=carrier, item_id=call_id)
                )
            arguments = json.dumps(draw(_ARGS))
            events.append(ToolCall(index=n, id=call_id, name=f"f{n}", arguments=arguments))
            n += 1
    events.append(draw(st.sampled_from(_FINISHES)))
    usage = draw(usages())
    if usage is not None:
        events.append(usage)
    return events


@given(answers())
def test_any_answer_reads_back_as_its_events_said_and_as_its_stream_does(
    events: list[Event],
) -> None:
    result = fold(*events)
    lost: list[str] = []
    body = generate_content_response(result, model="m", response_id="r", created=0, lost=lost)
    assert type(body) is bytes
    back = read_back(body)[0].result
    assert back.complete
    assert back.text == "".join(
        e.text for e in events if type(e) is TextDelta or type(e) is RefusalDelta
    )
    assert back.reasoning == "".join(e.text for e in events if type(e) is ReasoningDelta)
    assert calls(back) == calls(result)
    assert back.usage == result.usage
    reason = result.finish_reason
    if reason in (FinishReason.STOP, FinishReason.TOOL_CALLS):
        reason = FinishReason.TOOL_CALLS if result.tool_calls else FinishReason.STOP
    assert back.finish_reason is reason
    assert [(b.text, b.signature, b.item_id, b.carrier) for b in back.reasoning_blocks] == [
        (b.text, b.signature, b.item_id, b.carrier) for b in result.reasoning_blocks
    ]  # (another carrier's closes its run, carried with what it signed: attack 62 F1)

    encoder = GeminiStreamEncoder(model="m", response_id="r")
    stream = b"".join(
        encoder.encode(e) for e in [StreamStarted(response_id="r", model="m"), *events, END]
    )
    streamed = GeminiStreamDecoder()
    streamed.feed(stream)
    streamed.close()
    for field in ("text", "reasoning", "reasoning_blocks", "tool_calls", "finish_raw", "usage"):
        assert getattr(back, field) == getattr(streamed.result, field), field
    assert sorted(lost) == sorted(encoder.lost)


@pytest.mark.parametrize(
    ("finish", "sent", "said"),
    [
        (Finished(reason=FinishReason.OTHER, raw="pause_turn"), "OTHER", True),
        (Finished(reason=FinishReason.OTHER, raw="STOP"), "OTHER", True),  # (a Chat server's)
        (Finished(reason=FinishReason.OTHER, raw="LANGUAGE"), "LANGUAGE", False),  # (Gemini's)
        (Finished(reason=FinishReason.TOOL_CALLS, raw="tool_use"), "STOP", False),  # (the same)
        (STOP, "STOP", False),
    ],
)
def test_a_finish_gemini_has_no_value_for_is_said_in_the_answer_and_the_stream(
    finish: Finished, sent: str, said: bool
) -> None:
    """Attack 74 F3: Anthropic's ``pause_turn`` (the turn is to go on) reached a Gemini client
    as ``OTHER`` with nothing said, where every other dialect's client was told; the whole
    answer and the stream now say it, in the words of the others; attack 75 F4: so is a value
    spelled as one of Gemini's that does not mean it (a Chat server's ``STOP``)."""
    doc, lost = write(fold(TextDelta(text="a"), finish))
    note = f"finish {finish.raw!r} is none of Gemini's finish reasons: sent as OTHER"
    assert (note in lost) is said
    assert doc["candidates"][0]["finishReason"] == sent
    encoder = GeminiStreamEncoder()
    for event in (StreamStarted(response_id="r", model="m"), TextDelta(text="a"), finish, END):
        encoder.encode(event)
    assert encoder.lost == ([note] if said else [])
