"""What an answer in one dialect cannot carry to a client of another is said (fidelity 43).

The decoders note what they read and have no event for (`Completion.problems`); the
encoders, what their dialect has no value for (their ``lost``); a relay says both
(`svir_proto.gateway`). And an answer that a content-filter verdict blocked after it finished
(Azure's asynchronous filter) ends as blocked in a dialect with no verdicts.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from svir_proto import dialects
from svir_proto.errors import Failure, FailureKind, FilterResult
from svir_proto.events import (
    FilterVerdict,
    Finished,
    FinishReason,
    RefusalDelta,
    StreamEnded,
    StreamStarted,
    TextDelta,
    ToolCall,
    Usage,
)
from svir_proto.openai.status import error_status
from svir_proto.responses._wire import error_code

PAUSED = Finished(reason=FinishReason.OTHER, raw="pause_turn")
STOP = Finished(reason=FinishReason.STOP, raw="stop")
SAFE = FilterVerdict(scope="completion", results=(FilterResult(category="hate", filtered=False),))
BLOCK = FilterVerdict(
    scope="completion", results=(FilterResult(category="hate", filtered=True),), filtered=True
)
SEEN = FilterVerdict(scope="completion", results=(), detected=True)
END = StreamEnded(complete=True, done=True)


def _encoder(name: str) -> Any:
    return dialects.dialect(name).encoder("m", "r", 1, None)


def _written(name: str, events: list[Any]) -> tuple[bytes, Any]:
    encoder = _encoder(name)
    start = [StreamStarted(response_id="r", model="m"), TextDelta(text="hi")]
    body = b"".join(encoder.encode(e) for e in [*start, *events, Usage(prompt_tokens=1), END])
    return body, encoder


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("chat", "finish 'pause_turn' is none of the Chat API's finish reasons: sent as it came"),
        ("messages", None),  # (its own)
        ("responses", "finish 'pause_turn' is none of the Responses API's: sent as "
                      "response.incomplete, its reason as it came"),
        ("llm-stream", "finish 'pause_turn' is none of the draft's stop reasons: sent as "
                       "'end_turn', itself under vendor:svir"),
    ],
)  # fmt: skip
def test_a_finish_a_dialect_has_no_value_for_is_said(name: str, said: str | None) -> None:
    """Fidelity 43 F03: Anthropic's ``pause_turn`` (send the turn back to go on), Gemini's
    ``UNEXPECTED_TOOL_CALL``... went out as they came, or as a plain end, unsaid."""
    _, encoder = _written(name, [PAUSED])
    assert encoder.lost == ([] if said is None else [said])
    _, plain = _written(name, [STOP])
    assert plain.lost == []


@pytest.mark.parametrize("name", ["messages", "responses", "gemini"])
@pytest.mark.parametrize("after", [True, False])
def test_an_answer_a_verdict_blocked_ends_blocked(name: str, after: bool) -> None:
    """Fidelity 43 F01: Azure's filter blocked an answer after its ``stop``; a Messages,
    Responses or Gemini client, whose dialect has no such verdict, got ``end_turn``,
    ``completed`` or ``STOP``: the blocked text as approved. Its message was whole, its item
    says so, whichever came first (review 43 M4); a verdict on the prompt blocks no answer
    (review 43 M8)."""
    events = [STOP, BLOCK] if after else [BLOCK, STOP]
    body, encoder = _written(name, events)
    if name == "messages":
        assert b'"stop_reason":"refusal"' in body
    elif name == "gemini":
        assert b'"finishReason":"SAFETY"' in body
    else:
        final = json.loads(body.rsplit(b"data: ", 1)[1])
        assert final["type"] == "response.incomplete"
        assert final["response"]["incomplete_details"] == {"reason": "content_filter"}
        assert [item["status"] for item in final["response"]["output"]] == ["completed"]
    if name != "gemini":  # (Gemini has ratings: it writes this one)
        assert len(encoder.lost) == 1
        assert encoder.lost[0].startswith("content-filter verdicts have no field")
    prompt = attrs.evolve(BLOCK, scope="prompt")
    body, _ = _written(name, [prompt, STOP] if after else [STOP, prompt])
    assert b"refusal" not in body
    assert b"content_filter" not in body
    assert b"SAFETY" not in body


def test_a_whole_answer_a_verdict_blocked_ends_blocked() -> None:
    """The same, whole: a Messages answer says ``refusal``; one whose only blocking verdict
    was on the prompt does not (review 43 M8)."""
    from svir_proto.anthropic.answer import message
    from svir_proto.events import Completion

    result = Completion(
        text="hi", finish_reason=FinishReason.STOP, finish_raw="stop", filter_verdicts=(BLOCK,),
        filtered=True, done=True, complete=True,
    )  # fmt: skip
    doc = json.loads(message(result, message_id="m", model="m"))  # type: ignore[arg-type]
    assert doc["stop_reason"] == "refusal"
    prompt = attrs.evolve(result, filter_verdicts=(attrs.evolve(BLOCK, scope="prompt"),))
    doc = json.loads(message(prompt, message_id="m", model="m"))  # type: ignore[arg-type]
    assert doc["stop_reason"] == "end_turn"


@pytest.mark.parametrize("name", ["messages", "responses"])
def test_only_a_verdict_that_found_something_is_said_lost(name: str) -> None:
    _, quiet = _written(name, [SAFE, STOP])
    assert quiet.lost == []
    body, seen = _written(name, [SEEN, SEEN, STOP])
    assert len(seen.lost) == 1  # (said once, however many)
    assert b"refusal" not in body
    assert b"content_filter" not in body


def _problems(name: str, body: bytes) -> tuple[str, ...]:
    decoder = dialects.dialect(name).decoder()
    decoder.feed(body)
    decoder.close()
    return decoder.result.problems


def _chat(choice: dict[str, Any]) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m",
             "choices": [{"index": 0, "delta": {"content": "a"}, **choice}]}  # fmt: skip
    return b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n"


@pytest.mark.parametrize(
    ("logprobs", "noted"),
    [
        ({"content": [{"token": "a", "logprob": -0.1, "top_logprobs": []}]}, True),
        ({"content": None, "refusal": None}, False),
        ([1], True),
        (None, False),
    ],
)
def test_a_chat_choices_logprobs_are_said_lost(logprobs: object, noted: bool) -> None:
    """Fidelity 43 F09: no event carries token log probabilities."""
    problems = _problems("chat", _chat({"logprobs": logprobs, "finish_reason": "stop"}))
    assert ("choices[].logprobs are not carried" in problems) is noted


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("groundingMetadata", {"webSearchQueries": ["wien"]}, "the search results"),
        ("citationMetadata", {"citationSources": [{"uri": "https://x.test"}]}, "recites"),
        ("urlContextMetadata", {"urlMetadata": [{"retrievedUrl": "https://x.test"}]}, "URLs"),
        ("logprobsResult", {"chosenCandidates": [{"token": "a"}]}, "log probabilities"),
        ("logprobsResult", {}, None),
        ("avgLogprobs", -0.5, None),
    ],
)
def test_a_gemini_candidates_sources_are_said_lost(
    key: str, value: object, said: str | None
) -> None:
    """Fidelity 43 F04: a grounded answer's sources, a recitation's, went nowhere, unsaid."""
    candidate = {"content": {"parts": [{"text": "a"}], "role": "model"},
                 "finishReason": "STOP", key: value}  # fmt: skip
    body = b"data: " + json.dumps({"candidates": [candidate], "responseId": "r"}).encode()
    problems = _problems("gemini", body + b"\n\n")
    notes = [p for p in problems if p.startswith(key)]
    assert len(notes) == (0 if said is None else 1)
    if said is not None:
        assert notes[0].startswith(f"{key} is not carried (")
        assert said in notes[0]


def test_a_responses_parts_annotations_are_said_lost() -> None:
    """Fidelity 43 F05: citations in a part (or an item) went nowhere, unsaid, though a Chat
    upstream's and Anthropic's are said."""
    part = {"type": "output_text", "text": "a", "annotations": [{"type": "url_citation"}]}
    events = [
        ("response.created", {"response": {"id": "r", "model": "m", "output": []}}),
        ("response.output_item.added", {"output_index": 0, "item": {
            "type": "message", "id": "m1", "role": "assistant", "content": []}}),
        ("response.content_part.done", {"output_index": 0, "content_index": 0,
                                        "item_id": "m1", "part": part}),
        ("response.completed", {"response": {"id": "r", "model": "m", "status": "completed",
                                              "output": []}}),
    ]  # fmt: skip
    body = b"".join(
        f"event: {t}\n".encode()
        + b"data: "
        + json.dumps({"type": t, "sequence_number": i, **doc}).encode()
        + b"\n\n"
        for i, (t, doc) in enumerate(events)
    )
    assert "output_text annotations (citations) are not carried" in _problems("responses", body)
    bare = body.replace(b'"annotations": [{"type": "url_citation"}]', b'"annotations": []')
    assert "output_text annotations (citations) are not carried" not in _problems("responses", bare)


def test_a_messages_prefill_in_message_start_is_said_lost() -> None:
    """Attack 43 F3: a proxy's prefill in ``message_start.message.content`` went nowhere."""
    start = {"type": "message_start", "message": {
        "id": "msg", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "PREFILL "}],
        "usage": {"input_tokens": 1, "output_tokens": 1}}}  # fmt: skip
    body = b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n"
    said = "message_start's content (blocks before the stream's) is not carried"
    assert said in _problems("messages", body)
    start["message"]["content"] = []  # type: ignore[index]
    body = b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n"
    assert said not in _problems("messages", body)


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        (FailureKind.RATE_LIMITED, 429),
        (FailureKind.CONTEXT_OVERFLOW, 400),
        (FailureKind.OVERLOADED, 503),
        (FailureKind.TIMEOUT, 504),
        (FailureKind.SERVER_ERROR, 502),
        (FailureKind.UNEXPECTED, 502),
    ],
)
def test_a_failure_inside_a_stream_is_answered_with_its_kinds_status(
    kind: FailureKind, status: int
) -> None:
    """Fidelity 43 F07: a whole answer whose stream failed was a 502 whatever the failure: a
    rate limit, which the OpenAI SDKs retry after a 429, or a context too long, which a 400
    says is not worth retrying."""
    assert error_status(Failure(kind=kind, message="m")) == status
    assert error_status(Failure(kind=kind, message="m", status=418)) == 418


@pytest.mark.parametrize(
    ("code", "kind", "written"),
    [
        ("RESOURCE_EXHAUSTED", FailureKind.RATE_LIMITED, "rate_limit_exceeded"),
        ("overloaded_error", FailureKind.OVERLOADED, "overloaded_error"),  # (no code here)
        ("exceed_context_size_error", FailureKind.CONTEXT_OVERFLOW, "context_length_exceeded"),
        ("server_error", FailureKind.SERVER_ERROR, "server_error"),
        ("rate_limit_exceeded", FailureKind.RATE_LIMITED, "rate_limit_exceeded"),
        ("too_large", FailureKind.UNEXPECTED, "too_large"),
        (None, FailureKind.TIMEOUT, "timeout"),
    ],
)
def test_a_responses_error_code_is_the_apis_own(
    code: str | None, kind: FailureKind, written: str
) -> None:
    """Fidelity 43 F07: a Responses stream's ``error.code`` was another vendor's."""
    assert error_code(Failure(kind=kind, message="m", code=code)) == written


def test_a_call_cut_by_the_answers_length_leaves_a_whole_messages_answer() -> None:
    """Fidelity 43 F10: an answer cut by its length inside a call's arguments was a 502 for
    a Messages client that asked for no stream, its text and its ``max_tokens`` lost; a
    streamed one got them. The cut call is left out, and said; one that claims to be whole
    and is no object is still the failure."""
    from svir_proto.anthropic.answer import message
    from svir_proto.events import Completion, ToolCall

    call = ToolCall(index=0, id="c", name="get_weather", arguments='{"location": "Wien"')
    cut = Completion(
        text="Let me look that up.", tool_calls=(call,), finish_reason=FinishReason.LENGTH,
        finish_raw="length", usage=Usage(prompt_tokens=1, completion_tokens=16), done=True,
        complete=True,
    )  # fmt: skip
    lost: list[str] = []
    body = message(cut, message_id="m", model="m", lost=lost)
    assert isinstance(body, bytes)
    doc = json.loads(body)
    assert doc["content"] == [{"type": "text", "text": "Let me look that up."}]
    assert doc["stop_reason"] == "max_tokens"
    assert lost == [
        "tool call 0 ('get_weather') was cut by the answer's length: its arguments are no "
        "object, and it is left out"
    ]
    claimed = Completion(
        tool_calls=(call,), finish_reason=FinishReason.TOOL_CALLS, finish_raw="tool_calls",
        done=True, complete=True,
    )  # fmt: skip
    assert isinstance(message(claimed, message_id="m", model="m"), Failure)
    assert isinstance(message(cut, message_id="m", model="m"), bytes)  # (no list: unsaid)


def test_what_a_whole_responses_answer_could_not_write_is_said() -> None:
    """Fidelity 43 F02, F06: the encoder a whole answer is replayed through knows what it
    made up (a reasoning count Anthropic does not give, written 0 for the SDK's types)."""
    from svir_proto.events import Completion
    from svir_proto.responses.answer import response

    result = Completion(
        reasoning="hm", reasoning_carrier="thinking", text="a", finish_reason=FinishReason.STOP,
        finish_raw="end_turn", usage=Usage(prompt_tokens=3, completion_tokens=9), done=True,
        complete=True,
    )  # fmt: skip
    lost: list[str] = []
    body = json.loads(response(result, response_id="r", model="m", created=1, lost=lost))
    assert body["usage"]["output_tokens_details"] == {"reasoning_tokens": 0}
    assert lost == [
        "usage: the upstream does not count reasoning tokens apart: "
        "output_tokens_details.reasoning_tokens says 0"
    ]
    counted = attrs.evolve(result, usage=Usage(prompt_tokens=3, completion_tokens=9,
                                               reasoning_tokens=4))  # fmt: skip
    lost = []
    response(counted, response_id="r", model="m", created=1, lost=lost)
    assert lost == []


CASES = {
    "paused": [TextDelta(text="a"), PAUSED, Usage(prompt_tokens=1, completion_tokens=1)],
    "blocked, no usage": [TextDelta(text="a"), BLOCK, STOP],
    "refused": [RefusalDelta(text="no"), STOP, Usage(prompt_tokens=1, completion_tokens=1)],
    "cut call": [
        TextDelta(text="a"),
        ToolCall(index=0, id="c", name="f", arguments='{"a": "x'),
        Finished(reason=FinishReason.LENGTH, raw="length"),
        Usage(prompt_tokens=1, completion_tokens=1),
    ],
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", ["chat", "messages", "responses"])
def test_a_whole_answer_says_what_its_stream_says_it_lost(name: str, case: str) -> None:
    """Review 43 M6, M7: a whole answer's ``lost`` said less than its stream's (or nothing:
    Chat's, Messages'), and a call the answer's length cut was a failure streamed, an answer
    whole. The same events say the same, both ways."""
    from svir_proto.answer import AnswerFold

    events = [StreamStarted(response_id="r", model="m"), *CASES[case], END]
    encoder = _encoder(name)
    body = b"".join(encoder.encode(e) for e in events)
    assert b"event: error" not in body
    fold = AnswerFold()
    fold.extend(events)
    lost: list[str] = []
    spec = dialects.dialect(name)
    assert spec.answer is not None
    whole = spec.answer(fold.result(), "m", "r", 1, lost=lost)
    assert isinstance(whole, bytes)
    assert sorted(lost) == sorted(encoder.lost), (lost, encoder.lost)


@pytest.mark.parametrize("finish", ["length", "stop", "none"])
def test_a_streamed_call_the_answers_length_cut_is_closed_as_it_came(finish: str) -> None:
    """Review 43 M7: a call whose arguments the answer's length cut was an ``api_error`` for a
    streamed Messages client (and an answer whole). Its block closes with what came of its
    input, as Anthropic's own ``max_tokens`` does, the turn ends ``max_tokens``, and that is
    said; a call no length cut is still the failure."""
    from svir_proto.events import ToolCallDelta

    events: list[Any] = [
        StreamStarted(response_id="r", model="m"),
        ToolCallDelta(index=0, id="c", name="f", arguments='{"a": '),
        ToolCallDelta(index=0, arguments='"x'),
        ToolCall(index=0, id="c", name="f", arguments='{"a": "x'),
    ]
    if finish != "none":
        events.append(Finished(reason=FinishReason(finish), raw=finish))
    events.append(Usage(prompt_tokens=1, completion_tokens=1))
    encoder = _encoder("messages")
    body = b"".join(encoder.encode(e) for e in [*events, END])
    if finish == "length":
        assert b'"stop_reason":"max_tokens"' in body
        assert b'"partial_json":"\\"x"' in body
        assert encoder.lost == [
            "tool call 0 ('f') was cut by the answer's length: its arguments are no object, "
            "and its input is what came of them"
        ]
    else:
        assert b"event: error" in body
        assert b"are not a JSON object" in body
    before = _encoder("messages")  # the finish first: decided at once
    early = [*events[:3], Finished(reason=FinishReason.LENGTH, raw="length"), *events[3:4]]
    early += [Usage(prompt_tokens=1, completion_tokens=1), END]
    assert b"max_tokens" in b"".join(before.encode(e) for e in early)
    assert len(before.lost) == 1


def test_a_finish_none_of_the_messages_apis_is_said() -> None:
    """Fidelity 43 F03: Gemini's ``UNEXPECTED_TOOL_CALL`` to a Messages client goes as it came
    (a failed turn, not ``end_turn``), said, streamed and whole."""
    from svir_proto.anthropic.encoder import unvalued

    failed = Finished(reason=FinishReason.OTHER, raw="UNEXPECTED_TOOL_CALL")
    body, encoder = _written("messages", [failed])
    said = (
        "finish 'UNEXPECTED_TOOL_CALL' is none of the Messages API's stop reasons: sent as it came"
    )
    assert b'"stop_reason":"UNEXPECTED_TOOL_CALL"' in body
    assert encoder.lost == [said]
    assert unvalued(failed) == [said]
    assert unvalued(PAUSED) == []  # (its own)
