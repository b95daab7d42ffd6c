"""GeminiStreamDecoder: each rule of its module docstring, and the edges between them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from svir_proto import NEED_DATA, PeerProtocolError, ToolCallError
from svir_proto._dialect import MAX_ENTRIES
from svir_proto._weights import BLOCK
from svir_proto.events import (
    FilterVerdict,
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
from svir_proto.gemini import GeminiStreamDecoder, GeminiStreamEncoder
from svir_proto.gemini._array import MAX_TRIES
from tests.helpers import CONFORMANCE, FEEDS, bytewise, every_event, feed_as, relayed, run


def sse(*chunks: Any, end: bytes = b"\r\n\r\n") -> bytes:
    return b"".join(
        b"data: " + (c if isinstance(c, bytes) else json.dumps(c).encode()) + end for c in chunks
    )


def chunk(*parts: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "m", "responseId": "r", **top}


def decode(body: bytes, **options: Any) -> tuple[list[Any], GeminiStreamDecoder]:
    d = GeminiStreamDecoder(**options)
    return run(d, [body]), d


def error_of(body: bytes, **options: Any) -> PeerProtocolError:
    with pytest.raises(PeerProtocolError) as caught:
        decode(body, **options)
    return caught.value


def test_the_pull_api_gives_the_same_events_and_ends_in_a_terminal() -> None:
    body = sse(chunk({"text": "hi"}, finish="STOP"))
    d = GeminiStreamDecoder()
    assert d.next_event() is NEED_DATA
    for piece in bytewise(body):
        d.receive_data(piece)
    d.receive_data(b"")
    events = []
    while not isinstance(event := d.next_event(), StreamEnded):
        assert event is not NEED_DATA
        events.append(event)
    assert [type(e) for e in events] == [StreamStarted, TextDelta, Finished]
    assert d.next_event() == StreamEnded(complete=True, done=True)
    assert d.result.done


C = b'{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", '  # then its field


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{nope", "not JSON"),
        (b"[1]", "must be a JSON object"),
        (b'{"candidates": 3}', "'candidates' must be a list"),
        (b'{"candidates": [3]}', "a candidate must be an object"),
        (b'{"candidates": [{"index": "1"}]}', "candidate index '1' is not an integer"),
        (b'{"candidates": [{"content": []}]}', "content must be an object"),
        (b'{"candidates": [{"content": {"parts": {}}}]}', "content.parts must be a list"),
        (b'{"candidates": [{"content": {"parts": [1]}}]}', "a part must be an object"),
        (b'{"candidates": [{"content": {"parts": [{"text": 1}]}}]}', "text must be a string"),
        (b'{"candidates": [{"finishReason": 1}]}', "finishReason must be a string"),
        (
            b'{"candidates": [{"content": {"parts": [{"text": "", "thoughtSignature": 5}]}}]}',
            "thoughtSignature must be a string",
        ),
        (
            b'{"candidates": [{"content": {"parts": [{"thoughtSignature": 5}]}}]}',
            "thoughtSignature must be a string",
        ),
        (
            b'{"candidates": [{"content": {"parts": [{"functionCall": 1}]}}]}',
            "functionCall must be an object",
        ),
        (
            b'{"candidates": [{"content": {"parts": [{"functionCall": {"name": 1}}]}}]}',
            "functionCall.name must be a string",
        ),
        (
            C + b'"id": 1}}]}}]}',
            "functionCall.id must be a string",
        ),
        (
            C + b'"args": []}}]}}]}',
            "functionCall.args must be an object",
        ),
        (
            C + b'"partialArgs": {}}}]}}]}',
            "partialArgs must be a list",
        ),
        (b'{"usageMetadata": []}', "'usageMetadata' must be an object"),
        (b'{"promptFeedback": 1}', "'promptFeedback' must be an object"),
        (b'{"promptFeedback": {"blockReason": 1}}', "blockReason must be a string"),
    ],
)
def test_what_breaks_the_schema_is_an_error_at_its_chunk(data: bytes, message: str) -> None:
    body = sse(chunk({"text": "a"})) + sse(data)
    d = GeminiStreamDecoder()
    assert [type(e) for e in d.feed(body)] == [StreamStarted, TextDelta]  # what came before
    with pytest.raises(PeerProtocolError) as caught:
        d.close()
    assert message in str(caught.value)
    at = len(sse(chunk({"text": "a"}))) + 6
    assert caught.value.offset == at + (1 if data == b"{nope" else 0)


def test_a_chunk_that_is_not_json_on_the_fast_lane_is_an_error_at_its_chunk() -> None:
    """The lane is open after the first event: the hot loop hands what its parser refused to
    the general read, which reports it as the general way does."""
    first = sse(chunk({"text": "a"}))
    d = GeminiStreamDecoder()
    assert [type(e) for e in d.feed(first)] == [StreamStarted, TextDelta]
    with pytest.raises(PeerProtocolError) as caught:
        d.feed(sse(b"{nope"))
    assert "not JSON" in str(caught.value)
    assert caught.value.offset == len(first) + 7


def test_a_chunk_that_nests_too_deeply_is_refused_by_both_parsers() -> None:
    deep = b'{"candidates": [{"content": {"parts": [{"text": "a", "x": ' + b"[" * 600 + b"]" * 600
    exc = error_of(sse(deep + b"}]}}]}"))
    assert "deeper than 512" in str(exc)


def test_replace_mends_bad_utf8_and_strict_refuses_it() -> None:
    body = sse(b'{"candidates": [{"content": {"parts": [{"text": "a\xffb"}]}}]}')
    assert "invalid UTF-8" in str(error_of(body))
    _, d = decode(body, errors="replace")
    assert d.result.text == "a\ufffdb"


def test_identity_from_the_first_chunk_that_has_it_and_a_change_is_noted() -> None:
    body = sse(
        {"usageMetadata": {"promptTokenCount": 1}},  # no identity yet: nothing starts
        {**chunk({"text": "a"}), "createTime": "2025-01-02T03:04:05+01:00"},
        {**chunk({"text": "b"}), "responseId": "other"},
        chunk({"text": "c"}, finish="STOP"),
    )
    events, d = decode(body)
    assert events[0] == StreamStarted(response_id="r", model="m", created=1735783445)
    assert d.result.problems == (
        "responseId changed from 'r' to 'other'",
        "responseId changed from 'other' to 'r'",
    )


@pytest.mark.parametrize("value", ["2025-02-30T00:00:00Z", "yesterday", 17, "1969-12-31T23:59:59Z"])
def test_a_create_time_that_is_no_time_is_none(value: object) -> None:
    events, _ = decode(sse({**chunk({"text": "a"}), "createTime": value}))
    assert events[0].created is None


def test_a_create_time_with_a_negative_offset() -> None:
    events, _ = decode(sse({**chunk({"text": "a"}), "createTime": "2025-01-01T00:00:00.5-00:30"}))
    assert events[0].created == 1735689600 + 1800


def test_content_before_any_identity_starts_the_stream_with_none() -> None:
    body = sse({"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"}]})
    events, d = decode(body)
    assert events[:2] == [StreamStarted(response_id="", model=""), TextDelta(text="a")]
    assert d.result.complete


def test_other_sse_event_types_are_ignored_and_noted() -> None:
    body = b"event: ping\r\ndata: {}\r\n\r\n" + sse(chunk({"text": "a"}, finish="STOP"))
    _, d = decode(body)
    assert d.result.text == "a"
    assert d.result.problems == ("ignored SSE events of type 'ping'",)


def test_thoughts_signatures_and_parts_without_an_event() -> None:
    body = sse(
        chunk({"text": "t1", "thought": True}, {"thought": True, "thoughtSignature": "s1"}),
        chunk(
            {"text": "t2", "thought": True},
            {"inlineData": {"mimeType": "image/png", "data": ""}, "thoughtSignature": "s2"},
        ),
        chunk({"text": "", "thoughtSignature": ""}, {"text": "answer"}, finish="STOP"),
    )
    events, d = decode(body)
    signatures = [e for e in events if isinstance(e, ReasoningSignature)]
    assert [s.signature for s in signatures] == ["s1", "s2"]
    assert [(b.text, b.signature) for b in d.result.reasoning_blocks] == [
        ("t1", "s1"),
        ("t2", "s2"),
    ]
    assert d.result.reasoning == "t1t2"
    assert d.result.reasoning_carrier == "thought"
    assert ReasoningDelta(text="t1", carrier="thought") in events
    assert d.result.problems == (
        "ignored parts of kind 'inlineData': the vocabulary has no event for them",
    )


def test_calls_get_ids_from_the_response_when_gemini_gives_none() -> None:
    body = sse(
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f"}}]}}]},
        chunk({"functionCall": {"name": "g", "args": {"x": [1, "é"]}}}, finish="STOP"),
    )
    events, d = decode(body, declared_tools=["f", "g"])
    calls = d.result.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call-0", "f", "{}"),
        ("r-1", "g", '{"x":[1,"é"]}'),
    ]
    assert d.result.finish_reason is FinishReason.TOOL_CALLS
    assert [type(e) for e in events[-3:]] == [ToolCall, ToolCall, StreamEnded]


def test_calls_with_a_finish_that_is_not_stop_are_noted() -> None:
    _, d = decode(sse(chunk({"functionCall": {"name": "f", "id": "a"}}, finish="OTHER")))
    assert d.result.problems == ("function calls arrived with finishReason 'OTHER'",)
    _, d = decode(sse(chunk({"functionCall": {"name": "f", "id": "a"}}, finish="MAX_TOKENS")))
    assert d.result.problems == ()


def test_calls_that_break_the_rules_fail_at_the_end_after_everything_else() -> None:
    body = sse(
        chunk({"functionCall": {"name": "f", "id": "same"}}),
        chunk({"functionCall": {"name": "g", "id": "same"}}, finish="STOP"),
    )
    d = GeminiStreamDecoder()
    events = d.feed(body)
    with pytest.raises(ToolCallError, match="repeats the id") as caught:
        d.close()
    assert [type(e) for e in events] == [StreamStarted, ToolCallDelta, ToolCallDelta, Finished]
    assert caught.value.pending_events == ()
    assert d.result.pending_tool_calls[1].id == "same"
    assert not d.result.complete


def test_bounds_on_calls_and_on_the_result() -> None:
    calls = [{"functionCall": {"name": "f", "id": str(i)}} for i in range(3)]
    exc = error_of(sse(chunk(*calls)), max_tool_calls=2)
    assert exc.limit == "max_tool_calls"
    exc = error_of(sse(chunk({"text": "x" * 50})), max_result_size=10)
    assert exc.limit == "max_result_size"
    exc = error_of(
        sse(chunk({"functionCall": {"name": "f", "args": {"a": "x" * 50}}})), max_result_size=10
    )
    assert exc.limit == "max_result_size"


def test_partial_arguments_build_the_call_by_path() -> None:
    def call(**fc: Any) -> dict[str, Any]:
        return chunk({"functionCall": fc})

    body = sse(
        call(
            name="f",
            id="v1",
            willContinue=True,
            partialArgs=[{"jsonPath": "$.a", "stringValue": "x", "willContinue": True}],
        ),
        call(
            partialArgs=[
                {"jsonPath": "$.a", "stringValue": "y"},
                {"jsonPath": "$.b[0]", "boolValue": True},
                {"jsonPath": "$.b[1].c", "numberValue": 2.5},
                {"jsonPath": "$.b[0]", "boolValue": False},
                {"jsonPath": "$.b[1].e", "numberValue": 3},
                {"jsonPath": '$["d"]', "stringValue": "q"},
            ],
            willContinue=True,
        ),
        call(partialArgs=[{"jsonPath": "$.a", "stringValue": "z"}]),
        chunk(finish="STOP"),
    )
    events, d = decode(body)
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas[0] == ToolCallDelta(index=0, id="v1", name="f", arguments="")
    assert d.result.tool_calls[0].parse_arguments().value == {
        "a": "z",
        "b": [False, {"c": 2.5, "e": 3}],
        "d": "q",
    }


def test_a_streamed_calls_signature_comes_before_it_a_later_ones_after() -> None:
    """Rule 3: the signature on the part that opens a streamed call (Vertex AI's partial
    arguments) comes before the call's first delta, as a whole call's does; one on a later
    part of it, after what that part gave."""
    opening = {
        "functionCall": {"name": "f", "id": "v1", "willContinue": True, "partialArgs": []},
        "thoughtSignature": "open",
    }
    closing = {"functionCall": {"partialArgs": []}, "thoughtSignature": "late"}
    events, d = decode(sse(chunk(opening), chunk(closing), chunk(finish="STOP")))
    kinds = [
        (type(e).__name__, getattr(e, "signature", None))
        for e in events
        if isinstance(e, (ToolCallDelta, ReasoningSignature))
    ]
    assert kinds == [
        ("ReasoningSignature", "open"),
        ("ToolCallDelta", None),
        ("ToolCallDelta", None),
        ("ReasoningSignature", "late"),
    ]
    assert [b.item_id for b in d.result.reasoning_blocks] == ["v1", "v1"]


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        (1, "must be an object"),
        ({"jsonPath": "a", "stringValue": "x"}, "must be a JSON path"),
        ({"jsonPath": "$.a..b", "stringValue": "x"}, "is not one we read"),
        ({"jsonPath": "$", "stringValue": "x"}, "names no argument"),
        ({"jsonPath": "$.a"}, "exactly one value"),
        ({"jsonPath": "$.a", "stringValue": 1}, "has the wrong type"),
        ({"jsonPath": "$.a", "boolValue": 1}, "has the wrong type"),
        ({"jsonPath": "$.a", "numberValue": "1"}, "has the wrong type"),
        ({"jsonPath": "$.a[1]", "numberValue": 1}, "does not follow its array"),
        ({"jsonPath": "$.s.t", "numberValue": 1}, "inside a non-object"),
        ({"jsonPath": "$" + ".a" * 65, "numberValue": 1}, "over 64 segments"),  # attack 28
        ({"jsonPath": "$" + ".a" * 1000, "stringValue": "x"}, "over 64 segments"),
    ],
)
def test_partial_arguments_that_we_cannot_read_are_errors(arg: object, message: str) -> None:
    first = {
        "functionCall": {
            "name": "f",
            "willContinue": True,
            "partialArgs": [{"jsonPath": "$.s", "stringValue": "v"}],
        }
    }
    body = sse(chunk(first), chunk({"functionCall": {"partialArgs": [arg], "willContinue": True}}))
    assert message in str(error_of(body))


def test_a_streamed_call_that_never_closes_is_pending_and_the_stream_incomplete() -> None:
    body = sse(chunk({"functionCall": {"name": "f", "willContinue": True}}, finish="STOP"))
    events, d = decode(body)
    assert not d.result.complete
    assert not d.result.done  # a cut: every translator passes it on as one (attack 28)
    assert events[-1] == StreamEnded(complete=False, done=False)
    assert d.result.pending_tool_calls == (ToolCallDelta(index=0, id="r-0", name="f"),)
    assert "the body ended inside a streamed function call" in d.result.problems


def test_a_streamed_call_opened_by_partial_args_and_closed_at_once() -> None:
    fc = {"name": "f", "id": "x", "partialArgs": [{"jsonPath": "$.n", "nullValue": "NULL_VALUE"}]}
    _, d = decode(sse(chunk({"functionCall": fc, "thoughtSignature": "s"}, finish="STOP")))
    assert d.result.tool_calls[0].arguments == '{"n":null}'
    assert d.result.reasoning_blocks[0].item_id == "x"


def test_finish_reasons_map_and_a_second_is_noted() -> None:
    for raw, reason in [
        ("STOP", FinishReason.STOP),
        ("MAX_TOKENS", FinishReason.LENGTH),
        ("SPII", FinishReason.CONTENT_FILTER),
        ("LANGUAGE", FinishReason.OTHER),
        ("SOMETHING_NEW", FinishReason.OTHER),
    ]:
        _, d = decode(sse(chunk(finish=raw)))
        assert (d.result.finish_reason, d.result.finish_raw) == (reason, raw)
    _, d = decode(sse(chunk(finish="STOP"), chunk(finish="OTHER")))
    assert d.result.problems == ("a second finishReason 'OTHER' after 'STOP'",)


def test_a_candidate_that_repeats_the_prompts_block_is_no_second_finish() -> None:
    """Attack 74: a chunk with the prompt's ``blockReason`` and a candidate whose
    ``finishReason`` means the same was said to have a second finishReason; it adds nothing.
    One that means another thing is said, as what it follows."""
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}}
    _, d = decode(sse(chunk(finish="SAFETY", **blocked)))
    assert (d.result.finish_reason, d.result.finish_raw) == (FinishReason.CONTENT_FILTER, "SAFETY")
    assert d.result.problems == ()
    _, d = decode(sse(chunk(finish="STOP", **blocked)))
    assert d.result.finish_raw == "SAFETY"
    assert d.result.problems == ("the prompt's blockReason 'SAFETY' and a finishReason 'STOP'",)
    _, d = decode(sse(chunk(finish="SAFETY"), {"promptFeedback": {"blockReason": "SAFETY"}}))
    assert (d.result.finish_raw, d.result.problems) == ("SAFETY", ())  # (the other order)
    _, d = decode(sse(chunk(finish="STOP"), {"promptFeedback": {"blockReason": "OTHER"}}))
    assert d.result.problems == ("the prompt's blockReason 'OTHER' and a finishReason 'STOP'",)


def test_candidates_other_than_zero_are_ignored_once() -> None:
    other = {"content": {"parts": [{"text": "no"}]}, "index": 1}
    body = sse(
        {"candidates": [other, {"content": {"parts": [{"text": "yes"}]}}]},
        {"candidates": [other, {"index": None, "finishReason": "STOP"}]},
    )
    _, d = decode(body)
    assert d.result.text == "yes"
    assert d.result.complete
    assert len(d.result.problems) == 1


def test_usage_is_news_with_the_finish_after_it_and_at_the_end() -> None:
    u1 = {"promptTokenCount": 4, "candidatesTokenCount": 1}
    u2 = {"promptTokenCount": 4, "candidatesTokenCount": 2, "thoughtsTokenCount": 3}
    body = sse(
        chunk({"text": "a"}, usageMetadata=u1),
        chunk({"text": "b"}, usageMetadata=u1),
        chunk(finish="STOP", usageMetadata=u1),
        {"usageMetadata": u1},  # the same again: no news
        {"usageMetadata": u2},
    )
    events, d = decode(body)
    usages = [e for e in events if isinstance(e, Usage)]
    assert [(u.completion_tokens, u.reasoning_tokens) for u in usages] == [(1, None), (5, 3)]
    assert d.result.usage == usages[-1]
    _, cut = decode(sse(chunk({"text": "a"}, usageMetadata={"thoughtsTokenCount": 2})))
    assert cut.result.usage == Usage(completion_tokens=2, reasoning_tokens=2)


def test_usage_normalised_with_every_count_kept() -> None:
    raw = {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 60,
        "toolUsePromptTokenCount": 7,
        "candidatesTokenCount": 10,
        "thoughtsTokenCount": 20,
        "totalTokenCount": 137,
        "vendor:svir": {"cacheCreationTokenCount": 5},
    }
    _, d = decode(sse(chunk(finish="STOP", usageMetadata=raw)))
    assert d.result.usage == Usage(
        prompt_tokens=107,
        completion_tokens=30,
        total_tokens=137,
        reasoning_tokens=20,
        cached_tokens=60,
        cache_creation_tokens=5,
    )
    _, d = decode(sse(chunk(finish="STOP", usageMetadata={"toolUsePromptTokenCount": 7})))
    assert d.result.usage == Usage(prompt_tokens=7)


def test_a_blocked_prompt_is_a_verdict_and_a_finish_even_without_ratings() -> None:
    events, d = decode(sse({"promptFeedback": {"blockReason": "OTHER"}}))
    assert [type(e).__name__ for e in events] == [
        "StreamStarted",
        "FilterVerdict",
        "Finished",
        "StreamEnded",
    ]
    assert d.result.filter_verdicts[0].filtered
    assert d.result.complete
    assert not d.result.usable
    _, quiet = decode(sse({"promptFeedback": {"safetyRatings": []}}))
    assert quiet.result.filter_verdicts == ()


def test_an_error_chunk_is_a_failure_and_ends_the_stream_done() -> None:
    body = sse(
        chunk({"text": "a"}),
        {
            "error": {
                "code": 400,
                "message": "The input token count (9) exceeds the maximum number of tokens "
                "allowed (4).",
                "status": "INVALID_ARGUMENT",
            }
        },
        {"error": {"code": 500, "message": "again", "status": "INTERNAL"}},
    )
    events, d = decode(body)
    failures = [e.error for e in events if isinstance(e, StreamFailed)]
    assert [f.kind.value for f in failures] == ["context_overflow", "transient"]
    assert d.result.error == failures[0]
    assert d.result.done
    assert not d.result.complete


def test_a_clean_end_without_a_finish_or_a_cut_is_not_done() -> None:
    _, d = decode(sse(chunk({"text": "a"})))
    assert (d.result.done, d.result.cut, d.result.complete) == (False, False, False)
    _, d = decode(sse(chunk({"text": "a"}, finish="STOP")) + b'data: {"usageMeta')
    assert (d.result.done, d.result.cut, d.result.complete) == (False, True, False)
    assert d.result.finish_reason is FinishReason.STOP


def test_ratings_that_rate_nothing_are_no_verdict() -> None:
    body = sse({"candidates": [{"safetyRatings": []}, {"index": 0, "safetyRatings": [7]}]})
    _, d = decode(body)
    assert d.result.filter_verdicts == ()
    assert d.result.filter_repeats == 0


def test_a_long_streamed_string_costs_its_length_once() -> None:
    """A string argument in 3,000 pieces: each piece counts once against max_result_size and
    is joined once (the pieces were concatenated one by one and counted whole each time: a
    quadratic cost, and a long argument ran past the bound)."""
    first = {"name": "write", "id": "w", "willContinue": True}
    pieces = [
        chunk(
            {
                "functionCall": {
                    "partialArgs": [
                        {"jsonPath": "$.file.text", "stringValue": "abcd", "willContinue": True}
                    ],
                    "willContinue": True,
                }
            }
        )
        for _ in range(3000)
    ]
    last = chunk(
        {"functionCall": {"partialArgs": [{"jsonPath": "$.file.text", "stringValue": "!"}]}},
        finish="STOP",
    )
    _, d = decode(sse(chunk({"functionCall": first}), *pieces, last), max_result_size=60_000)
    args = d.result.tool_calls[0].parse_arguments().value
    assert args == {"file": {"text": "abcd" * 3000 + "!"}}


def test_the_hot_paths_thought_delta_is_the_event() -> None:
    from svir_proto.gemini.stream import thought_delta

    assert thought_delta("hm") == ReasoningDelta(text="hm", carrier="thought")
    assert hash(thought_delta("hm")) == hash(ReasoningDelta(text="hm", carrier="thought"))


def per_event(body: bytes) -> list[bytes]:
    """One event per read, as a live server flushes them: the decoder's fast lanes."""
    return [block + b"\r\n\r\n" for block in body.split(b"\r\n\r\n") if block]


def test_the_hot_loop_reads_what_the_general_way_reads() -> None:
    u = {"promptTokenCount": 1}
    ratings = [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"}]
    rated = {
        "candidates": [
            {
                "content": {"parts": [{"text": "r"}], "role": "model"},
                "safetyRatings": ratings,
                "index": 0,
            }
        ],
        "usageMetadata": u,
        "modelVersion": "m",
        "responseId": "r",
    }
    piece = {
        "functionCall": {
            "partialArgs": [{"jsonPath": "$.s", "stringValue": "p", "willContinue": True}],
            "willContinue": True,
        }
    }
    body = sse(
        chunk({"text": "a"}, usageMetadata=u),
        chunk({"text": ""}, usageMetadata=u),
        chunk({"text": "t", "thought": True}, usageMetadata=u),
        rated,
        rated,
        chunk(
            {
                "functionCall": {
                    "name": "f",
                    "id": "i",
                    "willContinue": True,
                    "partialArgs": [{"jsonPath": "$.s", "stringValue": "x", "willContinue": True}],
                }
            },
            usageMetadata=u,
        ),
        chunk(piece, usageMetadata=u),
        {
            **chunk(piece, usageMetadata=u),
            "candidates": [{**chunk(piece)["candidates"][0], "safetyRatings": ratings}],
        },
        chunk(
            {
                "functionCall": {
                    "partialArgs": [
                        {"jsonPath": "$.s", "stringValue": "y", "willContinue": True, "x": 1}
                    ],
                    "willContinue": True,
                }
            },
            usageMetadata=u,
        ),
        chunk({"functionCall": {}}, usageMetadata=u),
        chunk({"text": "b"}, finish="STOP", usageMetadata={"promptTokenCount": 2}),
    )
    general = GeminiStreamDecoder()
    expected = run(general, bytewise(body))
    events = per_event(body)
    # one event per read; and the first, then all the rest at once (one batch, in which the
    # usage the hot loop read is stored before a chunk it hands to the general read)
    for feeds in (events, [events[0], b"".join(events[1:])]):
        hot = GeminiStreamDecoder()
        assert run(hot, feeds) == expected
        assert hot.result == general.result
        assert hot.result.filter_repeats == 2
        assert hot.result.tool_calls[0].arguments == '{"s":"xppy"}'
        assert hot.result.usage == Usage(prompt_tokens=2)


@pytest.mark.parametrize("kind", ["text", "piece"])
def test_the_hot_loop_keeps_the_bound(kind: str) -> None:
    part: dict[str, Any] = {"text": "x" * 40}
    opening = sse(chunk({"text": "a"}, usageMetadata={}))
    if kind == "piece":
        opening = sse(
            chunk(
                {
                    "functionCall": {
                        "name": "f",
                        "willContinue": True,
                        "partialArgs": [
                            {"jsonPath": "$.s", "stringValue": "", "willContinue": True}
                        ],
                    }
                },
                usageMetadata={},
            )
        )
        part = {
            "functionCall": {
                "partialArgs": [{"jsonPath": "$.s", "stringValue": "x" * 40, "willContinue": True}],
                "willContinue": True,
            }
        }
    d = GeminiStreamDecoder(max_result_size=30)
    d.feed(opening)
    with pytest.raises(PeerProtocolError) as caught:
        d.feed(sse(chunk(part, usageMetadata={})))
    assert caught.value.limit == "max_result_size"


def _answer(n: int) -> bytes:
    """Thoughts, a signature, text, then a call whose argument streams: ``n`` chunks of 10
    characters each, of the shape the hot loop reads (``usageMetadata`` on every chunk)."""
    usage = {"usageMetadata": {"promptTokenCount": 1}}

    def piece(value: str, more: bool = True) -> dict[str, Any]:
        arg = {"jsonPath": "$.a", "stringValue": value, "willContinue": more}
        fc: dict[str, Any] = {"partialArgs": [arg], "willContinue": True}
        return chunk({"functionCall": fc}, **usage)

    thoughts = [chunk({"text": f"{i:010d}", "thought": True}, **usage) for i in range(n)]
    signed = chunk({"text": "", "thoughtSignature": "sig"}, **usage)
    texts = [chunk({"text": f"{i:010d}"}, **usage) for i in range(n)]
    opened = chunk({"functionCall": {"name": "f", "id": "c", "willContinue": True}}, **usage)
    closed = chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "z"}]}})
    end = chunk(finish="STOP", **usage)
    return sse(*thoughts, signed, *texts, opened, piece("x"), piece("y"), closed, end)


@pytest.mark.parametrize("mode", FEEDS)
def test_without_keep_text_the_text_is_neither_kept_nor_bounded(mode: str) -> None:
    # a relay passes the deltas on: 800 characters of text and thoughts pass a bound of 50,
    # which still counts the signature and the arguments
    kept, relay = relayed(GeminiStreamDecoder, _answer(40), mode, max_result_size=BLOCK + 50)
    assert kept.text == "".join(f"{i:010d}" for i in range(40))  # as before
    assert [(b.text, b.signature) for b in kept.reasoning_blocks] == [(kept.reasoning, "sig")]
    assert [(b.text, b.signature) for b in relay.reasoning_blocks] == [("", "sig")]
    assert relay.tool_calls[0].parse_arguments().value == {"a": "xyz"}
    assert error_of(_answer(40), max_result_size=BLOCK + 50).limit == "max_result_size"  # kept


@pytest.mark.parametrize("mode", FEEDS)
def test_without_keep_text_the_arguments_are_still_bounded(mode: str) -> None:
    d = GeminiStreamDecoder(keep_text=False, max_result_size=BLOCK + 12)
    with pytest.raises(PeerProtocolError) as caught:
        run(d, feed_as(mode, _answer(40)))
    assert caught.value.limit == "max_result_size"
    assert d.result.text == ""


def test_vertex_scores_that_change_with_the_same_verdict_are_repeats() -> None:
    """Vertex AI scores every rating (``probabilityScore``, ``severityScore``), new numbers on
    every chunk; the verdict keeps neither, so a chunk whose verdict is the last quiet one is a
    repeat (Rule 6), not a verdict more (independent benchmark: 1,000 chunks gave 1,000 equal
    verdicts, each charged against max_result_size)."""

    def rated(text: str, score: float, probability: str = "NEGLIGIBLE") -> dict[str, Any]:
        ratings = [
            {"category": c, "probability": probability, "probabilityScore": score,
             "severity": "HARM_SEVERITY_NEGLIGIBLE", "severityScore": score / 2}
            for c in ("HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_HARASSMENT")
        ]  # fmt: skip
        part = chunk({"text": text})
        return {"candidates": [{**part["candidates"][0], "safetyRatings": ratings}]}

    chunks = [rated(f"t{i}", 0.01 * (i + 1)) for i in range(50)]
    chunks.insert(25, rated("loud", 0.9, "MEDIUM"))  # news: detected
    events, d = decode(sse(*chunks, chunk({"text": "."}, finish="STOP")))
    verdicts = [e for e in events if isinstance(e, FilterVerdict)]
    assert [v.detected for v in verdicts] == [False, True, False]
    assert d.result.filter_repeats == 48
    assert (
        d.result.text
        == "".join(f"t{i}" for i in range(25))
        + "loud"
        + "".join(f"t{i}" for i in range(25, 50))
        + "."
    )


def _breaks(text: bytes) -> int:
    """Where this Python's ``json`` says ``text`` breaks (the one JSON policy's offsets)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.pos
    raise AssertionError(f"{text!r} is JSON")


def as_array(body: bytes, style: str = "google") -> bytes:
    """An SSE recording's chunks as Gemini's stream without ``alt=sse``: Google's own layout
    (each element indented, then a line with the comma), or our encoder's (compact)."""
    chunks = [json.loads(c[5:]) for c in body.replace(b"\r\n", b"\n").split(b"\n\n") if c]
    if style == "google":
        return b"[" + b"\n,\r\n".join(json.dumps(c, indent=2).encode() for c in chunks) + b"\n]"
    return b"[" + b",\r\n".join(json.dumps(c).encode() for c in chunks) + b"]"


def _arrayable(path: Path) -> bool:
    try:
        as_array(path.read_bytes())
    except ValueError:  # a recording cut inside an event: no array to make of it
        return False
    return True


ARRAYABLE = [p for p in sorted((CONFORMANCE / "gemini").glob("*.sse")) if _arrayable(p)]


@pytest.mark.parametrize("style", ["google", "compact"])
@pytest.mark.parametrize("mode", FEEDS)
@pytest.mark.parametrize("path", ARRAYABLE, ids=lambda p: p.stem)
def test_a_json_array_body_reads_as_the_same_chunks_in_sse(
    path: Path, mode: str, style: str
) -> None:
    """Rule 10: without ``alt=sse`` Gemini answers one JSON array of the same chunks (it was
    an error): the same events and result, however the body is cut."""
    body = path.read_bytes()
    array = as_array(body, style)
    want, d = decode(body)
    got = GeminiStreamDecoder()
    assert run(got, feed_as(mode, b"\r\n " + array + b"\n")) == want
    assert got.result == d.result


def test_an_arrays_elements_that_repeat_the_envelope_are_read_where_the_framer_holds_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rule 10: an element that repeats the learned envelope is read in the framer's buffer
    (`GeminiStreamDecoder._read_held`), a streamed argument's piece, a thought and a long text too,
    as the general way reads it (a decoder that learns no envelope parses each): one a read,
    all in one, each in two reads (read when the second comes) or three (read once a try
    finds its end); a result past its
    bound stops at the element that passes it; and a hole that is not UTF-8 or not one string
    is the general way's to judge."""
    u = {"promptTokenCount": 1, "candidatesTokenCount": 2}
    arg = {"jsonPath": "$.s", "stringValue": "x", "willContinue": True}
    call = {"name": "f", "id": "i", "willContinue": True, "partialArgs": [arg]}

    def piece(text: str) -> dict[str, Any]:
        fc = {"partialArgs": [{**arg, "stringValue": text}], "willContinue": True}
        return chunk({"functionCall": fc}, usageMetadata=u)

    chunks = [chunk({"functionCall": call}, usageMetadata=u)]
    chunks += [piece(t) for t in ("a", "b\\", "c")]
    chunks.append(chunk({"functionCall": {"partialArgs": []}}, usageMetadata=u))
    chunks += [chunk({"text": t, "thought": True}, usageMetadata=u) for t in ("t", "", "h")]
    chunks += [chunk({"text": t}, usageMetadata=u) for t in ("a", "b", "L" * 300 + '"', "c")]
    chunks.append(chunk({"text": "M" * 300}, finish="STOP", usageMetadata=u))  # (a long hole)
    array = as_array(sse(*chunks))
    reads = [array[: array.index(b"\n,")]]
    reads += [b"\n," + e for e in array[len(reads[0]) + 2 : -2].split(b"\n,")] + [b"\n]"]
    assert b"".join(reads) == array

    read_held = GeminiStreamDecoder._read_held
    held_reads: list[int] = []

    def counted(d: GeminiStreamDecoder, buf: bytearray, start: int, end: int, at: int) -> int:
        held_reads.append(-2)  # (it raised, unless it returns)
        held_reads[-1] = stop = read_held(d, buf, start, end, at)
        return stop

    monkeypatch.setattr(GeminiStreamDecoder, "_read_held", counted)

    def read(pieces: list[bytes], learn: bool, **options: Any) -> Any:
        d = GeminiStreamDecoder(**options)
        if not learn:
            d._budget = 0
        held_reads.clear()
        events, exc = every_event(d, pieces)
        hits = sum(stop >= 0 for stop in held_reads)
        return (events, d.result, exc and (exc.offset, exc.limit, str(exc))), hits

    want, none = read([array], False)
    assert none == 0
    assert want[1].complete
    assert want[1].tool_calls[0].arguments == '{"s":"xab\\\\c"}'
    halves = [p for r in reads for p in (r[: len(r) // 2], r[len(r) // 2 :])]
    thirds = [p for r in reads for p in (r[:9], r[9:-9], r[-9:]) if len(r) > 18]
    thirds.append(reads[-1])  # (each element in three: its end found by a try)
    for pieces in (reads, [array], halves, thirds):
        got, hits = read(pieces, True)
        assert got == want
        assert hits == 7  # two pieces, a thought (the empty one too) and three texts
    raised_there = 0
    for size in range(1, 1000):  # (each element's text in turn past the bound: review 70 F1)
        want, _ = read([array], False, max_result_size=size)
        assert read(reads, True, max_result_size=size)[0] == want
        if want[2] is None:  # (the whole result is within it)
            break
        assert want[2][1] == "max_result_size"
        raised_there += held_reads[-1] == -2
    assert size > 600
    assert raised_there
    # a hole that is not UTF-8, or not one string, is left to the general way's policy
    text = b'"text": "b"'
    assert array.count(text) == 1
    for bad, errors in [(b"\xff", "strict"), (b"\xff", "replace"), (b"\\q", "strict")]:
        broken = [r.replace(text, b'"text": "' + bad + b'"') for r in reads]
        want, _ = read([b"".join(broken)], False, errors=errors)
        assert read(broken, True, errors=errors)[0] == want


def test_an_array_cut_before_its_end_is_a_cut() -> None:
    whole = as_array(sse(chunk({"text": "hi"}, finish="STOP")))
    for body in (whole[:-1], whole[:-3], whole[:1], b"[" + whole[1:9]):
        events, d = decode(body)
        assert not d.result.done, body
        assert not d.result.complete
        assert isinstance(events[-1], StreamEnded)
    events, d = decode(whole)
    assert d.result.complete
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hi"]


@pytest.mark.parametrize(
    ("body", "says", "at"),
    [
        (b"[1]", "must be a JSON object", 1),
        (b"[{}, ]", "must be a JSON object", 5),
        (b'[{"candidates": []}] x', "after the end of the stream's array", 21),
        (b"[{} {}]", "followed by ',' or ']'", 4),
        # an element that is no JSON: where it breaks (where this Python's json says: 3.13
        # says the comma, 3.12 the brace after it)
        (b'\n [{"a": 1,}]', "not JSON", 3 + _breaks(b'{"a": 1,}')),
        (b"[" + b"[" * 10, "must be a JSON object", 1),
    ],
)
def test_what_breaks_the_arrays_grammar_says_what_and_where(
    body: bytes, says: str, at: int | None
) -> None:
    error = error_of(body)
    assert says in str(error)
    assert error.offset == at


def test_an_array_elements_bounds_hold_however_the_reads_cut_it() -> None:
    """An element past ``max_event_size`` is refused whether it came whole or a byte at a
    time, and one nested past what the parser takes once it is whole; one that ``}`` in its
    strings keeps from being parsed at once is counted, a read at a time."""
    big = b'[{"candidates": [{"content": {"parts": [{"text": "' + b"}" * 5000
    for pieces in ([big], bytewise(big)):
        d = GeminiStreamDecoder(max_event_size=4096)
        with pytest.raises(PeerProtocolError, match=r"longer than max_event_size \(4096 bytes\)"):
            run(d, pieces)
    # fuzz/corpus/gemini/crash-array-element-past-the-bound-whole-or-cut: an element whole in
    # one read, past the bound, was read (and broke as JSON elsewhere); a byte at a time it
    # was refused: the bound holds on an element found whole too
    whole = b'[{"x": "' + b"a}" * 3000 + b'", "y": 1}]'
    for pieces in ([whole], bytewise(whole)):
        with pytest.raises(
            PeerProtocolError, match=r"longer than max_event_size \(4096 bytes\)"
        ) as caught:
            run(GeminiStreamDecoder(max_event_size=4096), pieces)
        assert caught.value.offset == 1
        assert (caught.value.limit, caught.value.limit_value) == ("max_event_size", 4096)
    # fuzz/corpus/gemini/crash-array-bound-before-the-tries-ran-out: a short element that no
    # try could take (it is no JSON), the next ones after it a byte at a time: what was held
    # passed the bound before its end was counted, and the error was the bound's, where
    # whole it was the element's JSON: past the bound, the element is counted first
    bad = b'[{"a": "\x00"}' + b',\r\n{"b": "' + b"c" * 5000 + b'"}]'
    errors = []
    for pieces in ([bad], bytewise(bad)):
        with pytest.raises(PeerProtocolError) as caught:
            run(GeminiStreamDecoder(max_event_size=4096), pieces)
        errors.append((caught.value.offset, "not JSON" in str(caught.value)))
    assert errors[0] == errors[1]
    assert errors[0][1]
    # an element past the bound after a whole one, in the read that ends it: the first is
    # given, the next refused where it begins (the framer's common case bounds it too)
    first = b'[{"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}'
    after = first + b'\n,\r\n{"candidates": [{"content": {"parts": [{"text": "' + b"a" * 5000
    after += b'"}]}}]}\n]'
    d = GeminiStreamDecoder(max_event_size=4096)
    events, error = every_event(d, [after])
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hi"]
    assert isinstance(error, PeerProtocolError)
    assert (error.offset, error.limit) == (len(first) + 4, "max_event_size")
    deep = b'[{"a": ' + b"[" * 1100 + b"]" * 1100 + b"}]"
    with pytest.raises(PeerProtocolError, match="not JSON") as caught:  # (too deep: `_json`)
        run(GeminiStreamDecoder(), [deep[:7], deep[7:]])
    assert caught.value.offset is not None
    text = 'a "}" {x} \\ \\" }'
    body = as_array(sse(chunk({"text": text}), chunk({"text": "!"}, finish="STOP")), "compact")
    for pieces in ([body], bytewise(body), [body[:30], body[30:]]):
        d = GeminiStreamDecoder()
        run(d, pieces)
        assert (d.result.text, d.result.complete) == (text + "!", True)


def test_chunks_whose_envelope_cannot_be_learned_are_tried_within_the_budget() -> None:
    """Usage before the text (another writer's key order): no envelope can be learned, and a
    try that cannot learn counts, so the decoder stops trying after `BUDGET` of them."""
    from svir_proto._template import BUDGET

    usage = {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4}
    chunks = [{"usageMetadata": usage, **chunk({"text": f"t{i}"})} for i in range(3 * BUDGET)]
    d = GeminiStreamDecoder()
    events = run(d, feed_as("events", sse(*chunks, chunk({"text": "."}, finish="STOP"))))
    assert d._budget == 0
    assert (
        "".join(e.text for e in events if isinstance(e, TextDelta))
        == "".join(f"t{i}" for i in range(3 * BUDGET)) + "."
    )


def test_the_objects_partial_paths_build_count_against_the_size_bound() -> None:
    """Attack 28: each object or array a path builds counts (`NODE_SIZE` characters), so that
    paths of a few bytes each cannot build objects without bound."""
    from svir_proto.gemini._partial import MAX_SEGMENTS, NODE_SIZE

    deep = "".join(f".k{i}" for i in range(MAX_SEGMENTS - 1))
    args = [{"jsonPath": f"$.x{n}{deep}", "numberValue": 1} for n in range(40)]
    fc = {"name": "f", "willContinue": True, "partialArgs": args}
    bound = 40 * (MAX_SEGMENTS - 1) * NODE_SIZE
    _, fits = decode(sse(chunk({"functionCall": fc})), max_result_size=2 * bound)
    assert fits.result.pending_tool_calls
    with pytest.raises(PeerProtocolError) as caught:
        decode(sse(chunk({"functionCall": fc})), max_result_size=bound // 2)
    assert caught.value.limit == "max_result_size"


def test_a_signed_call_reaches_other_dialects_as_one_signed_block_before_it() -> None:
    """Client round 32 (F3): Gemini's thought summary then two calls, the first signed, reached
    an Anthropic client as a thinking block with an empty signature, the call, then a thinking
    block of only the signature after the call it signs; and a Responses client as a reasoning
    item whose id was that call's id. The signature now comes before its call."""
    from svir_proto.dialects import dialect
    from svir_proto.hub import carried_signature
    from tests.helpers import CONFORMANCE

    body = (CONFORMANCE / "gemini" / "parallel-calls-ids.sse").read_bytes()
    decoder = GeminiStreamDecoder()
    events = run(decoder, [body])
    signature = decoder.result.reasoning_blocks[0].signature
    messages = dialect("messages").encoder("m", "msg_1", 0)
    out = b"".join(messages.encode(e) for e in events).decode()
    blocks = [
        json.loads(line[6:])
        for line in out.splitlines()
        if line.startswith("data: ") and '"content_block_start"' in line
    ]
    assert [b["content_block"]["type"] for b in blocks] == ["thinking", "tool_use", "tool_use"]
    assert out.index(signature) < out.index('"tool_use"')  # its signature_delta, then the call
    assert out.count('"signature_delta"') == 1
    assert carried_signature(signature, "thought", "fc-a1") in out
    responses = dialect("responses").encoder("m", "resp_1", 0)
    out = b"".join(responses.encode(e) for e in events).decode()
    done = [
        json.loads(line[6:])["item"]
        for line in out.splitlines()
        if line.startswith("data: ") and '"response.output_item.done"' in line
    ]
    ids = [item["id"] for item in done]
    assert len(set(ids)) == len(ids)
    assert [item["type"] for item in done] == ["reasoning", "function_call", "function_call"]
    assert done[0]["encrypted_content"] == carried_signature(signature, "thought", "fc-a1")
    assert not {item.get("call_id") for item in done} & set(ids)


def test_a_gemini_signature_a_client_of_another_dialect_sends_back_goes_back_on_its_call() -> None:
    """Client round 32 (F1): Gemini's signature reached an Anthropic client as a thinking
    block's signature and a Responses client as encrypted_content, and, sent back, was dropped
    as another vendor's: Gemini 3 refuses the next turn without it. Carried with its carrier
    and its call (`svir_proto.hub.carried_signature`), it goes back on the call it signed."""
    from svir_proto.anthropic import MessagesRequest
    from svir_proto.dialects import dialect, translate_request
    from svir_proto.responses import ResponsesRequest
    from tests.helpers import CONFORMANCE

    body = (CONFORMANCE / "gemini" / "parallel-calls-ids.sse").read_bytes()
    decoder = GeminiStreamDecoder()
    events = run(decoder, [body])
    signature = decoder.result.reasoning_blocks[0].signature
    # the Anthropic client's next request: the answer's blocks as it read them, then results
    answer = json.loads(dialect("messages").answer(decoder.result, "m", "msg_1", 0))
    results = [
        {"type": "tool_result", "tool_use_id": b["id"], "content": "sunny"}
        for b in answer["content"]
        if b["type"] == "tool_use"
    ]
    turn = {
        "model": "m", "max_tokens": 64, "stream": True,
        "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": answer["content"]},
            {"role": "user", "content": results},
        ],
    }  # fmt: skip
    gemini = translate_request(MessagesRequest.parse(json.dumps(turn).encode()), "gemini")
    model = gemini.document()["contents"][1]["parts"]
    calls = [p for p in model if "functionCall" in p]
    assert calls[0]["thoughtSignature"] == signature  # its own, not the stand-in
    assert calls[0]["functionCall"]["id"] == "fc-a1"
    assert "thoughtSignature" not in calls[1]
    assert {"text": "Checking both cities.", "thought": True} in model
    # the Responses client's: the output items as it read them, then the outputs
    encoder = dialect("responses").encoder("m", "resp_1", 0)
    out = b"".join(encoder.encode(e) for e in events).decode()
    completed = next(
        json.loads(line[6:]) for line in out.splitlines() if '"response.completed"' in line
    )
    items = completed["response"]["output"]
    outputs = [
        {"type": "function_call_output", "call_id": i["call_id"], "output": "sunny"}
        for i in items
        if i["type"] == "function_call"
    ]
    again = {"model": "m", "input": [{"role": "user", "content": "weather?"}, *items, *outputs]}
    gemini = translate_request(ResponsesRequest.parse(json.dumps(again)), "gemini")
    calls = [p for p in gemini.document()["contents"][1]["parts"] if "functionCall" in p]
    assert calls[0]["thoughtSignature"] == signature


def test_a_run_of_text_parts_in_one_chunk_is_one_delta() -> None:
    """Attack 39 F2: 600,000 parts of one character in one event were a delta each, which
    stalled the gateway's other clients and made its answer 9-16 times the upstream's. A run of
    parts that are text alone (or a thought alone) is one delta; the text is the same."""
    call = {"functionCall": {"name": "f", "args": {}}}
    parts = [
        {"text": "a"},
        {"text": "b"},
        {"text": "c", "thought": True},
        {"text": "d", "thought": True},
    ]
    parts += [
        {"text": "e"},
        call,
        {"text": "f"},
        {"text": "g", "thoughtSignature": "s"},
        {"text": "h"},
    ]
    events, d = decode(sse(chunk(*parts, finish="STOP")))
    deltas = [
        (type(e).__name__, e.text) for e in events if isinstance(e, (TextDelta, ReasoningDelta))
    ]
    assert deltas == [
        ("TextDelta", "ab"), ("ReasoningDelta", "cd"), ("TextDelta", "e"), ("TextDelta", "f"),
        ("TextDelta", "g"), ("TextDelta", "h"),
    ]  # fmt: skip
    assert (d.result.text, d.result.reasoning) == ("abefgh", "cd")
    assert [c.name for c in d.result.tool_calls] == ["f"]
    many, d = decode(sse(chunk(*[{"text": "x"}] * 40_000, finish="STOP")))
    assert [e.text for e in many if isinstance(e, TextDelta)] == ["x" * 40_000]
    # (100,000 such parts are more values than `_json` Rule 6 lets a payload hold)


def test_what_a_text_part_carries_beside_its_text_does_not_break_a_run() -> None:
    """Attack 41 F1: ``"thought": false``, an empty ``thoughtSignature`` or a key the decoder
    does not read on each part made every part a delta again (x6-x15 the upstream's bytes). They
    are read as the part alone is; a signature, which is an event of its own, still ends a run,
    and a value the decoder refuses is still refused."""
    parts = [
        {"text": "a", "thought": False},
        {"text": "b", "thoughtSignature": ""},
        {"text": "c", "x": 0},
        {"text": "d", "thought": True, "thoughtSignature": ""},
        {"text": "e", "thought": True, "x": 0},
        {"text": "f", "thought": False, "thoughtSignature": "s"},
        {"text": "g", "thought": False},
    ]
    events, d = decode(sse(chunk(*parts, finish="STOP")))
    said = [
        (type(e).__name__, getattr(e, "text", None) or getattr(e, "signature", None))
        for e in events
        if isinstance(e, (TextDelta, ReasoningDelta, ReasoningSignature))
    ]
    assert said == [
        ("TextDelta", "abc"), ("ReasoningDelta", "de"), ("TextDelta", "f"),
        ("ReasoningSignature", "s"), ("TextDelta", "g"),
    ]  # fmt: skip
    alone = [decode(sse(chunk(p, finish="STOP")))[1].result for p in parts]
    assert d.result.text == "".join(r.text for r in alone)
    assert d.result.reasoning == "".join(r.reasoning for r in alone)
    refused = error_of(sse(chunk({"text": "a"}, {"text": "b", "thoughtSignature": 7})))
    assert "thoughtSignature must be a string" in str(refused)


def test_a_chunk_holds_max_entries_parts_and_candidates_at_most() -> None:
    """Attack 41 F1: parts alternating thought and text, which no join merges, were each an
    event, and a Messages client's three; past `MAX_ENTRIES` the stream fails, naming it,
    after what came before; counted over the event's lists in all, so that candidates of no
    index (each candidate 0) multiply nothing (review 42 F1)."""
    alternating = [{"text": "a", "thought": i % 2 == 0} for i in range(MAX_ENTRIES + 1)]
    at_most = alternating[: MAX_ENTRIES - 1]  # (and its candidate: the event's lists in all)
    events, _ = decode(sse(chunk(*at_most, finish="STOP")))
    assert sum(isinstance(e, (TextDelta, ReasoningDelta)) for e in events) == MAX_ENTRIES - 1
    body = sse(chunk({"text": "before"}), chunk(*alternating))
    d = GeminiStreamDecoder()
    assert TextDelta(text="before") in d.feed(body)  # what came before, then the error
    with pytest.raises(PeerProtocolError, match=r"content\.parts holds 1025 entries") as info:
        d.close()
    assert (info.value.limit, info.value.limit_value) == ("max_entries", MAX_ENTRIES)
    assert info.value.offset == body.index(b"data: ", 1) + 6
    joined = [{"text": "a"}] * (MAX_ENTRIES + 1)  # a run of plain text: one part once joined
    assert [e for e in decode(sse(chunk(*joined)))[0] if isinstance(e, TextDelta)] == [
        TextDelta(text="a" * (MAX_ENTRIES + 1))
    ]
    many = {"candidates": [{"index": 1}] * (MAX_ENTRIES + 1), "responseId": "r"}
    assert "candidates holds 1025 entries" in str(error_of(sse(many)))
    half = alternating[: MAX_ENTRIES // 2]
    nested = {"candidates": [{"content": {"parts": half, "role": "model"}}] * 2}
    assert "content.parts holds 512 entries: the event's lists hold more" in str(
        error_of(sse(nested))
    )


def test_an_element_read_before_an_error_is_not_read_again() -> None:
    """Review 68 #1: the framer's common case kept where reading went on only at a run's end,
    so an element that broke the protocol after others of its read sent the next reading (a
    caller that gave more bytes before taking every event) back to the run's first: its
    elements were given twice."""

    def text(t: str) -> bytes:
        return as_array(sse(chunk({"text": t})))[1:-2]  # (Google's layout, one element)

    d = GeminiStreamDecoder()
    d.receive_data(b"[" + text("zero"))
    while d.next_event() is not NEED_DATA:
        pass
    sep = b"\n,\r\n"
    d.receive_data(sep + text("one") + sep + text("two") + sep + b'{"candidates": 5}' + sep)
    got = [d.next_event()]
    d.receive_data(b"  ")  # (more bytes before the queue was taken)

    def rest() -> None:
        while (event := d.next_event()) is not NEED_DATA:
            got.append(event)

    with pytest.raises(PeerProtocolError, match="'candidates' must be a list"):
        rest()
    assert [e.text for e in got if isinstance(e, TextDelta)] == ["one", "two"]
    assert d.result.text == "zeroonetwo"


def test_the_element_framer_reads_only_an_array() -> None:
    """`ElementFramer` is given the body once its first byte but blanks is ``[`` (Rule 10);
    given another, it says so, where."""
    from svir_proto.gemini._array import ElementFramer

    framer = ElementFramer(max_element=64, offset=5)
    framer.receive(b" {}")
    with pytest.raises(PeerProtocolError, match="neither server-sent events nor an array") as e:
        framer.read(lambda payload, at, maybe: True, lambda buf, start, end, at: -1)
    assert e.value.offset == 6


def test_blanks_before_the_body_are_counted_whatever_it_turns_out_to_be() -> None:
    """Rule 10: the blanks before the first other byte decide nothing; they are counted, so
    offsets are the body's, by `feed` or by `receive_data`; what is held is `pending`; an end
    said again reads nothing again."""
    array = b'[{"a": 1,}]'
    d = GeminiStreamDecoder()
    d.receive_data(b" \r\n")
    d.receive_data(array[:4])
    assert d.next_event() is NEED_DATA
    assert d.pending == 3  # (the element begun, held: `{"a`)
    d.receive_data(array[4:])
    assert d.next_event() is NEED_DATA  # (one try failed: it may be an element not whole)
    d.receive_data(b"")
    with pytest.raises(PeerProtocolError) as caught:
        d.next_event()
    assert caught.value.offset == 3 + 1 + _breaks(b'{"a": 1,}')  # (blanks, "[", its JSON)
    body = sse(chunk({"text": "hi"}), b"{broken")
    whole = error_of(b"\r\n\r\n" + body)
    d = GeminiStreamDecoder()
    assert d.feed(b"\r\n") == []
    assert d.feed(b"\r\n") == []
    with pytest.raises(PeerProtocolError) as caught:
        run(d, [body])
    assert caught.value.offset == whole.offset
    assert d.pending == 0
    d = GeminiStreamDecoder()
    events = run(d, [as_array(sse(chunk({"text": "hi"}, finish="STOP")))])
    assert isinstance(events[-1], StreamEnded)
    assert d.feed(b"") == []  # (the end, said again: nothing, and no second end)


def test_an_element_is_given_by_the_read_that_ends_it_however_the_reads_fall() -> None:
    """Review 65 F1: a read that ended with ``},`` left its ``}`` no try would see again, so
    the element was held, then the next ones behind it, each tried at a ``}`` far on: the
    decoder fell thousands of reads behind and parsed what it held again on every read.
    The last bytes of a read are looked at again, and the tries parse at most twice what
    came: nothing is held past the read after an element's end."""
    encoder = GeminiStreamEncoder(sse=False)
    reads = [encoder.encode(TextDelta(text=f"token {i} ")) for i in range(300)]
    reads.append(encoder.encode(Finished(reason=FinishReason.STOP, raw="STOP")))
    reads.append(encoder.encode(StreamEnded(complete=True, done=True)))
    reads = [r for r in reads if r]  # (the finish is held for the last chunk)
    body = b"".join(reads)
    shifted = [*reads[:9], reads[9] + reads[10][:1], reads[10][1:], *reads[11:]]  # the
    # tenth read ends with "},"
    assert b"".join(shifted) == body
    assert shifted[9].endswith(b"},")
    d = GeminiStreamDecoder()
    texts = 0
    for i, piece in enumerate(shifted):
        texts += sum(isinstance(e, TextDelta) for e in d.feed(piece))
        assert texts >= min(i, 300) - 1  # at most the element the read began
        assert d.pending <= len(piece) + 200
    d.close()
    assert (texts, d.result.complete) == (300, True)
    # a compact layout with no line end (no try's ``}``), seven bytes a read: counted, and
    # held no longer than its elements
    compact = (
        b"["
        + b",".join(b'{"candidates":[{"content":{"parts":[{"text":"x}"}]}}]}' for _ in range(400))
        + b"]"
    )
    d = GeminiStreamDecoder()
    peak = 0
    for piece in [compact[i : i + 7] for i in range(0, len(compact), 7)]:
        d.feed(piece)
        peak = max(peak, d.pending)
    d.close()
    assert d.result.text == "x}" * 400
    assert peak < 600  # (a few elements: each waits for its tries, then is counted)


def test_blanks_first_are_json_blanks_and_the_same_in_a_read_of_their_own() -> None:
    """Review 65 F2: Python's blanks (a vertical tab, a form feed) were taken for JSON's, and
    blanks that came with the first byte were read while blanks in a read of their own were
    not: the same body gave another answer when cut after its first byte."""
    body = sse(chunk({"text": "hi"}, finish="STOP"))
    array = as_array(body)
    for lead in (b" \t\r\n", b"\x0b", b"\x0c"):
        for payload in (body, array):
            whole = outcome(lead + payload, [lead + payload])
            assert outcome(lead + payload, [lead[:1], lead[1:] + payload]) == whole
            assert outcome(lead + payload, bytewise(lead + payload)) == whole
            if lead == b" \t\r\n":
                assert whole[0][-1] == "StreamEnded"  # (read, as without the blanks)


def outcome(body: bytes, pieces: list[bytes]) -> tuple[list[str], object]:
    d = GeminiStreamDecoder()
    events, exc = every_event(d, pieces)
    said = (d.result.done, d.result.text) if exc is None else (exc.offset, exc.limit)
    return [type(e).__name__ for e in events], said


@pytest.mark.parametrize("layout", ["compact", "indented"])
def test_an_element_of_a_layout_no_try_knows_waits_a_few_reads_not_for_the_end(
    layout: str,
) -> None:
    """Review 66: compact ``[{...},{...}]`` read as ``{...},`` a read, or a list indented by
    ``json.dumps(indent=2)`` read an element a read: no try could find an end, and nothing
    came out before the body's end (or 8 MiB). A read with a ``}`` and no end a try can take
    counts as a failed try; once an element so counted ends where no try would have seen it,
    the next ones are counted from their first byte: the first waits a few reads, then each
    comes with the read that ends it."""
    chunks = [chunk({"text": f"t{i}"}) for i in range(30)] + [chunk({"text": "."}, finish="STOP")]
    if layout == "compact":
        texts = [json.dumps(c, separators=(",", ":")).encode() for c in chunks]
        reads = [b"[" + texts[0] + b","] + [t + b"," for t in texts[1:-1]] + [texts[-1] + b"]"]
    else:
        whole = json.dumps(chunks, indent=2).encode()
        cuts = [m.start() for m in re.finditer(rb"\n  \{", whole)] + [len(whole)]
        reads = [whole[a:b] for a, b in zip([0, *cuts[1:-1]], cuts[1:], strict=True)]
    d = GeminiStreamDecoder()
    given = 0
    for i, piece in enumerate(reads):
        given += sum(isinstance(e, TextDelta) for e in d.feed(piece))
        if i >= MAX_TRIES + 1:
            assert given >= i, (i, given)  # (the element the read ended, at most one behind)
    d.close()
    assert d.result.complete
    assert d.result.text == "".join(f"t{i}" for i in range(30)) + "."
