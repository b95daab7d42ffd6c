"""ResponsesStreamEncoder: the events the API sends, from every order of the vocabulary."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import (
    Failure,
    FailureKind,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningDelta,
    ReasoningSignature,
    RefusalDelta,
    RequestFailed,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from svir_proto.responses import (
    FunctionTool,
    ResponsesRequest,
    ResponsesStreamDecoder,
    ResponsesStreamEncoder,
)
from svir_proto.responses.encoder import ITEM_COST
from tests.helpers import run

START = StreamStarted(response_id="resp_abc", model="m", created=1764547200)
END = StreamEnded(complete=True, done=True)
STOP = Finished(reason=FinishReason.STOP, raw="stop")


def encode(events: list[Any], **options: Any) -> tuple[bytes, ResponsesStreamEncoder]:
    e = ResponsesStreamEncoder(**options)
    return b"".join(e.encode(x) for x in events), e


def objects(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for block in raw.split(b"\n\n"):
        if block:
            name, data = block.split(b"\n")
            obj = json.loads(data[6:])
            assert name == b"event: " + obj["type"].encode()
            out.append(obj)
    return out


def types(raw: bytes) -> list[str]:
    return [o["type"] for o in objects(raw)]


def decoded(raw: bytes) -> ResponsesStreamDecoder:
    d = ResponsesStreamDecoder()
    run(d, [raw])
    return d


def test_text_is_a_message_item_with_one_part_numbered_from_zero() -> None:
    raw, e = encode([START, TextDelta(text="Grüß"), TextDelta(text=" Gott"), STOP, END])
    assert types(raw) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    objs = objects(raw)
    assert [o["sequence_number"] for o in objs] == list(range(10))
    assert objs[4] == {
        "type": "response.output_text.delta",
        "sequence_number": 4,
        "item_id": "msg_abc_0",
        "output_index": 0,
        "content_index": 0,
        "delta": "Grüß",
        "logprobs": [],
    }
    final = objs[-1]["response"]
    assert final["status"] == "completed"
    assert final["output"][0]["content"][0]["text"] == "Grüß Gott"
    assert (final["id"], final["model"], final["created_at"]) == ("resp_abc", "m", 1764547200)
    assert e.response() == final
    assert decoded(raw).result.text == "Grüß Gott"
    assert e.lost == []


def test_the_final_object_repeats_the_request_and_carries_usage() -> None:
    request = ResponsesRequest(
        model="m",
        input="hi",
        instructions="brief",
        tools=[FunctionTool(name="f", parameters={"type": "object"})],
        max_output_tokens=9,
    )
    usage = Usage(prompt_tokens=10, completion_tokens=4, cached_tokens=3, cache_creation_tokens=2)
    raw, _ = encode([START, TextDelta(text="x"), STOP, usage, END], request=request)
    final = objects(raw)[-1]["response"]
    assert (final["instructions"], final["max_output_tokens"], final["tools"][0]["name"]) == (
        "brief",
        9,
        "f",
    )
    assert final["usage"] == {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 2},
        "output_tokens": 4,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 14,
    }
    assert decoded(raw).result.usage == Usage(
        prompt_tokens=10,
        completion_tokens=4,
        total_tokens=14,
        reasoning_tokens=0,
        cached_tokens=3,
        cache_creation_tokens=2,
    )


@pytest.mark.parametrize(
    ("finish", "status", "reason"),
    [
        (Finished(reason=FinishReason.LENGTH, raw="length"), "incomplete", "max_output_tokens"),
        (Finished(reason=FinishReason.CONTENT_FILTER, raw="x"), "incomplete", "content_filter"),
        (Finished(reason=FinishReason.OTHER, raw="max_messages"), "incomplete", "max_messages"),
        (Finished(reason=FinishReason.OTHER, raw="abort"), "incomplete", "abort"),  # attack 28
        (
            Finished(reason=FinishReason.OTHER, raw="MALFORMED_FUNCTION_CALL"),
            "incomplete",
            "MALFORMED_FUNCTION_CALL",
        ),
        (Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"), "completed", None),
    ],
)
def test_finish_reasons(finish: Finished, status: str, reason: str | None) -> None:
    raw, _ = encode([START, TextDelta(text="x"), finish, END])
    final = objects(raw)[-1]
    assert final["type"] == f"response.{status}"
    assert final["response"]["status"] == status
    details = final["response"]["incomplete_details"]
    assert (details or {}).get("reason") == reason
    if reason == "max_output_tokens":
        assert decoded(raw).result.finish_reason is FinishReason.LENGTH
    # the message an incomplete answer ends is incomplete too, as OpenAI writes it (client
    # round 30, F4): in its output_item.done and in the final output
    done = [o["item"]["status"] for o in objects(raw) if o["type"] == "response.output_item.done"]
    assert done == [status]
    assert final["response"]["output"][0]["status"] == status


def test_no_finish_is_sent_as_incomplete_and_said() -> None:
    raw, e = encode([START, TextDelta(text="x"), END])
    assert types(raw)[-1] == "response.incomplete"
    assert e.lost == ["the upstream ended without a finish reason: sent as response.incomplete"]
    assert objects(raw)[-1]["response"]["output"][0]["status"] == "incomplete"


def test_only_the_message_the_end_cut_short_is_incomplete() -> None:
    length = Finished(reason=FinishReason.LENGTH, raw="length")
    raw, _ = encode([START, TextDelta(text="a"), ReasoningDelta(text="r", carrier="summary"),
                     TextDelta(text="b"), length, END])  # fmt: skip
    output = objects(raw)[-1]["response"]["output"]
    assert [(o["type"], o.get("status")) for o in output] == [
        ("message", "completed"),
        ("reasoning", None),
        ("message", "incomplete"),
    ]
    types_module = pytest.importorskip("openai.types.responses")
    final = types_module.Response.model_validate(objects(raw)[-1]["response"])
    assert final.output[-1].status == "incomplete"  # type: ignore[union-attr]


def test_a_cut_writes_nothing_more() -> None:
    raw, e = encode([START, TextDelta(text="x"), StreamEnded(complete=False, done=False)])
    assert types(raw)[-1] == "response.output_text.delta"
    assert e.encode(TextDelta(text="late")) == b""
    d = decoded(raw)
    assert d.result.cut is False
    assert not d.result.done


def test_a_failure_before_anything_starts_the_response_then_fails_it() -> None:
    failure = Failure(kind=FailureKind.RATE_LIMITED, message="slow down")
    raw, e = encode([StreamFailed(error=failure), END])
    objs = objects(raw)
    assert [o["type"] for o in objs] == [
        "response.created",
        "response.in_progress",
        "error",
        "response.failed",
    ]
    assert objs[2] == {
        "type": "error",
        "sequence_number": 2,
        "code": "rate_limit_exceeded",
        "message": "slow down",
        "param": None,
    }
    assert objs[3]["response"]["error"] == {"code": "rate_limit_exceeded", "message": "slow down"}
    d = decoded(raw)
    assert d.result.error.kind is FailureKind.RATE_LIMITED
    assert e.encode(StreamStarted(response_id="x", model="y")) == b""


def test_a_failure_mid_answer_keeps_what_came() -> None:
    failure = Failure(kind=FailureKind.SERVER_ERROR, message="boom", code="overloaded_error")
    raw, _ = encode([START, TextDelta(text="par"), StreamFailed(error=failure), END])
    failed = objects(raw)[-1]["response"]
    assert failed["output"][0]["status"] == "in_progress"
    assert failed["output"][0]["content"][0]["text"] == "par"
    d = decoded(raw)
    assert (d.result.text, d.result.error.code, d.result.error.kind) == (
        "par",
        "overloaded_error",
        FailureKind.OVERLOADED,
    )


def test_reasoning_summary_and_raw_reasoning_are_parts_of_their_kinds() -> None:
    events = [
        START,
        ReasoningDelta(text="sum", carrier="summary"),
        ReasoningDelta(text="raw", carrier="reasoning_content"),
        ReasoningDelta(text="more", carrier="reasoning_content"),
        ReasoningDelta(text="", carrier="summary"),
        ReasoningSignature(signature="enc", carrier="summary", item_id="rs_up"),
        ReasoningDelta(text="next", carrier="summary"),
        TextDelta(text="answer"),
        STOP,
        END,
    ]
    raw, e = encode(events)
    objs = objects(raw)
    done = [o["item"] for o in objs if o["type"] == "response.output_item.done"]
    assert done[0]["summary"] == [{"type": "summary_text", "text": "sum"}]
    assert done[0]["content"] == [{"type": "reasoning_text", "text": "rawmore"}]
    assert done[0]["encrypted_content"] == "enc"
    assert "encrypted_content" not in done[1]
    assert [d["type"] for d in done] == ["reasoning", "reasoning", "message"]
    assert any("reasoning item ids are this encoder's own" in x for x in e.lost)
    d = decoded(raw)
    assert d.result.reasoning == "sum\n\nrawmorenext"
    (block,) = d.result.reasoning_blocks
    assert (block.signature, block.text) == ("enc", "sum\n\nrawmore")


def test_a_signature_with_nothing_before_keeps_its_item_id() -> None:
    raw, e = encode(
        [START, ReasoningSignature(signature="enc", carrier="summary", item_id="rs_1"), STOP, END]
    )
    item = next(o for o in objects(raw) if o["type"] == "response.output_item.added")["item"]
    assert item["id"] == "rs_1"
    assert e.lost == []
    assert decoded(raw).result.reasoning_blocks[0].item_id == "rs_1"


def test_refusal_and_text_are_parts_of_one_message() -> None:
    raw, _ = encode(
        [START, RefusalDelta(text="no"), RefusalDelta(text=""), TextDelta(text="but"), STOP, END]
    )
    message = objects(raw)[-1]["response"]["output"][0]
    assert message["content"] == [
        {"type": "refusal", "refusal": "no"},
        {"type": "output_text", "annotations": [], "logprobs": [], "text": "but"},
    ]
    d = decoded(raw)
    assert (d.result.refusal, d.result.text) == ("no", "but")


def test_tool_call_deltas_stay_deltas_and_wait_for_a_whole_name() -> None:
    events = [
        START,
        TextDelta(text="Let me look."),
        ToolCallDelta(index=0, id="c1", name="get_"),
        ToolCallDelta(index=0, name="weather", arguments='{"city":'),
        ToolCallDelta(index=0, arguments='"Vienna"}'),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        ToolCall(index=0, id="c1", name="get_weather", arguments='{"city":"Vienna"}'),
        END,
    ]
    raw, e = encode(events)
    objs = objects(raw)
    added = [o["item"] for o in objs if o["type"] == "response.output_item.added"]
    assert added[1] == {
        "id": "fc_abc_1",
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": "c1",
        "name": "get_weather",
    }
    assert [o["delta"] for o in objs if o["type"] == "response.function_call_arguments.delta"] == [
        '{"city":',
        '"Vienna"}',
    ]
    d = decoded(raw)
    assert d.result.tool_calls == (
        ToolCall(index=0, id="c1", name="get_weather", arguments='{"city":"Vienna"}'),
    )
    assert d.result.text == "Let me look."
    assert e.lost == []


def test_a_call_begun_before_text_goes_before_it_once_its_name_is_whole() -> None:
    """Attack 47 H2: what follows a call's id and name goes after the call, as in the whole
    answer, its arguments still to come; also while the declared tools say its name may go on
    (attack 49b F2: held till the end, the call came after the text; review 48 L4 held it
    for a name that goes on after the text, which no server does, and which is noted); never
    between reasoning and its signature, which signs what came before it (review 48 M4)."""
    call = ToolCallDelta(index=0, id="c1", name="get")
    raw, _ = encode(
        [START, call, TextDelta(text="hm"), ToolCallDelta(index=0, arguments="{}"), END],
        declared_tools={"get"},
    )
    added = [o["item"]["type"] for o in objects(raw) if o["type"] == "response.output_item.added"]
    assert added == ["function_call", "message"]
    raw, encoder = encode(
        [START, call, TextDelta(text="hm"), ToolCallDelta(index=0, arguments="{}"), END],
        declared_tools={"get", "get_weather"},
    )
    added = [o["item"] for o in objects(raw) if o["type"] == "response.output_item.added"]
    assert [(i["type"], i.get("name")) for i in added] == [
        ("function_call", "get"),
        ("message", None),
    ]
    assert not any("name" in n for n in encoder.lost)
    raw, encoder = encode(
        [START, call, TextDelta(text="hm"), ToolCallDelta(index=0, name="_weather"), END],
        declared_tools={"get", "get_weather"},
    )
    added = [o["item"] for o in objects(raw) if o["type"] == "response.output_item.added"]
    assert [(i["type"], i.get("name")) for i in added] == [
        ("function_call", "get"),
        ("message", None),
    ]
    done = [o["item"] for o in objects(raw) if o["type"] == "response.output_item.done"]
    assert [i["name"] for i in done if i["type"] == "function_call"] == ["get_weather"]
    assert "a tool call's name continued after its output_item.added" in encoder.lost
    raw, _ = encode(
        [START, call, ToolCallDelta(index=0, arguments="{}"), TextDelta(text="hm"), END],
        declared_tools={"get", "get_weather"},
    )
    added = [o["item"] for o in objects(raw) if o["type"] == "response.output_item.added"]
    assert [(i["type"], i.get("name")) for i in added] == [
        ("function_call", "get"),
        ("message", None),
    ]
    signed = [
        START,
        ReasoningDelta(text="think", carrier="thinking"),
        ToolCallDelta(index=0, id="c1", name="get_weather"),
        ReasoningSignature(signature="SIG", carrier="thinking"),
        ToolCallDelta(index=0, arguments="{}"),
        END,
    ]
    raw, _ = encode(signed)
    done = [o["item"] for o in objects(raw) if o["type"] == "response.output_item.done"]
    assert [(i["type"], i.get("encrypted_content") is not None) for i in done] == [
        ("reasoning", True),
        ("function_call", False),
    ]


def test_interleaved_calls_are_written_in_index_order() -> None:
    events = [
        START,
        ToolCallDelta(index=1, id="b", name="g", arguments="[2"),
        ToolCallDelta(index=0, id="a", name="f", arguments="[1"),
        ToolCallDelta(index=1, arguments="]"),
        ToolCallDelta(index=0, arguments="]"),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        ToolCall(index=0, id="a", name="f", arguments="[1]"),
        ToolCall(index=1, id="b", name="g", arguments="[2]"),
        END,
    ]
    raw, _ = encode(events)
    d = decoded(raw)
    assert [(c.index, c.id, c.arguments) for c in d.result.tool_calls] == [
        (0, "a", "[1]"),
        (1, "b", "[2]"),
    ]


def test_whole_calls_without_deltas_and_calls_that_disagree() -> None:
    events = [
        START,
        ToolCall(index=0, id="a", name="f", arguments="{}"),  # LLM-Stream: whole, no deltas
        ToolCallDelta(index=1, id="b", name="g", arguments="[1"),
        ToolCall(index=1, id="b", name="g", arguments="[2]"),  # not what its deltas said
        ToolCallDelta(index=1, arguments="late"),  # after it was whole
        ToolCall(index=0, id="a", name="f", arguments="{}"),  # a second call with the same id
        ToolCall(index=0, id="z", name="h", arguments="0"),  # the index reused for a new call
        STOP,
        END,
    ]
    raw, e = encode(events)
    calls = [o for o in objects(raw)[-1]["response"]["output"] if o["type"] == "function_call"]
    assert [(c["call_id"], c["arguments"]) for c in calls] == [
        ("a", "{}"),
        ("b", "[2]"),
        ("a", "{}"),
        ("z", "0"),
    ]
    assert e.lost == [
        "tool call 'b': the whole arguments differ from its deltas",
        "tool call 1 had arguments after it was whole: not carried",
    ]


def test_calls_never_whole_are_closed_at_the_end() -> None:
    raw, _ = encode(
        [
            START,
            ToolCallDelta(index=0, id="a", name="f"),
            ToolCallDelta(index=2, id="c", name="h", arguments="1"),
            STOP,
            END,
        ]
    )
    calls = [o for o in objects(raw)[-1]["response"]["output"] if o["type"] == "function_call"]
    assert [(c["call_id"], c["status"]) for c in calls] == [("a", "completed"), ("c", "completed")]


def test_what_has_no_event_here() -> None:
    raw, e = encode(
        [
            FilterVerdict(scope="completion", results=()),
            RequestFailed(failure=Failure(kind=FailureKind.REJECTED, message="x")),
            START,
            StreamStarted(response_id="other", model="other"),  # a second says nothing new
            TextDelta(text=""),
            Usage(prompt_tokens=1),
            FilterVerdict(scope="prompt", results=()),
            ReasoningDelta(text="r", carrier="thinking"),
            ReasoningSignature(signature="s", carrier="thinking"),  # no id of its own: no loss
        ]
    )
    assert types(raw)[:3] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
    ]
    assert e.response_id == "resp_abc"  # the first StreamStarted
    assert e.lost == []  # (a verdict that found nothing says nothing to lose)


def test_the_kept_answer_is_bounded() -> None:
    e = ResponsesStreamEncoder(max_output_size=5)  # (its one item costs nothing: attack 49b F5)
    e.encode(TextDelta(text="abc"))
    with pytest.raises(ValueError, match="max_output_size"):
        e.encode(TextDelta(text="def"))


def test_each_item_counts_towards_the_bound() -> None:
    """Attack 42 F3: an answer that switched between text and reasoning at every character
    was a new item each time, the final event repeating them all (39 MB for 18 MB of an
    upstream's small events); each item after the first counts `ITEM_COST` characters, as
    the whole answer's fold weighs each run another kind ended."""
    from svir_proto._weights import RUN
    from svir_proto.answer import AnswerFold

    assert ITEM_COST == RUN
    e = ResponsesStreamEncoder(max_output_size=9 * ITEM_COST + 10)  # ten items of one
    fold = AnswerFold(max_size=9 * ITEM_COST + 10)
    e.encode(START)
    for i in range(10):
        event = TextDelta(text="a") if i % 2 else ReasoningDelta(text="r", carrier="summary")
        e.encode(event)
        fold.add(event)
    with pytest.raises(ValueError, match="max_output_size"):
        e.encode(ReasoningDelta(text="r", carrier="summary"))
    with pytest.raises(ValueError, match="characters kept"):  # the whole answer too
        fold.add(ReasoningDelta(text="r", carrier="summary"))


def test_a_calls_held_arguments_count_once() -> None:
    """Attack 39 F3: a call's arguments held until its name was whole were counted when held
    and again when written, so a call of 0.6 of the bound failed a streaming client."""
    e = ResponsesStreamEncoder(max_output_size=10, declared_tools=["lookup", "look"])
    e.encode(START)
    e.encode(ToolCallDelta(index=0, id="c1", name="look", arguments="123456"))  # held
    raw = e.encode(ToolCallDelta(index=0, name="up", arguments=""))  # whole: announced
    assert b"123456" in raw
    assert b"response.output_item.added" in raw
    e.encode(ToolCallDelta(index=0, arguments="7890"))  # 10 in all: within the bound
    with pytest.raises(ValueError, match="max_output_size"):
        e.encode(ToolCallDelta(index=0, arguments="1"))


def test_holding_reasoning_keeps_the_upstreams_item_ids() -> None:
    events = [
        START,
        ReasoningDelta(text="a", carrier="summary"),
        ReasoningDelta(text="", carrier="summary"),
        ReasoningDelta(text="b", carrier="summary"),
        ReasoningSignature(signature="enc1", carrier="summary", item_id="rs_up1"),
        ReasoningDelta(text="unsigned", carrier="summary"),
        TextDelta(text="answer"),
        ReasoningDelta(text="late", carrier="summary"),
        STOP,
        END,
    ]
    raw, e = encode(events, hold_reasoning=True)
    assert e.lost == []
    added = [o["item"] for o in objects(raw) if o["type"] == "response.output_item.added"]
    assert [a["id"] for a in added] == ["rs_up1", "rs_abc_1", "msg_abc_2", "rs_abc_3"]
    d = decoded(raw)
    (block,) = d.result.reasoning_blocks
    assert (block.item_id, block.text, block.signature) == ("rs_up1", "ab", "enc1")
    assert (d.result.reasoning, d.result.text) == ("abunsignedlate", "answer")
    held = ResponsesStreamEncoder(hold_reasoning=True, max_output_size=3)
    held.encode(ReasoningDelta(text="abc", carrier="summary"))
    with pytest.raises(ValueError, match="max_output_size"):
        held.encode(ReasoningDelta(text="d", carrier="summary"))  # held text is bounded too


def test_a_call_is_announced_once_its_name_is_whole() -> None:
    """Wire reference 3.3's ``look`` then ``up``: ``output_item.added`` named the call ``look``
    (its ``.done`` had it whole, but the AI SDK names a streamed call from ``added``). With
    the declared tools known, it waits for a name no other declared one goes on from."""
    from svir_proto.openai import ChatStreamDecoder
    from tests.helpers import CONFORMANCE

    body = (CONFORMANCE / "openai" / "wire-3.3-tool-calls.sse").read_bytes()
    decoder = ChatStreamDecoder()
    events = decoder.feed(body) + decoder.close()
    waiting = ResponsesStreamEncoder()
    waiting.encode(TextDelta(text="a"))
    assert waiting.encode(ToolCallDelta(index=0, id="c")) == b""  # no name, no arguments yet
    for declared, first in ((None, "look"), ({"lookup"}, "lookup")):
        encoder = ResponsesStreamEncoder(declared_tools=declared)
        out = b"".join(encoder.encode(e) for e in events)
        added = [
            json.loads(line[6:])["item"]
            for line in out.split(b"\n")
            if line.startswith(b"data: ") and b'"response.output_item.added"' in line
        ]
        assert [i["name"] for i in added if i["type"] == "function_call"] == [first, "lookup"]
        calls = [i for i in encoder.response()["output"] if i["type"] == "function_call"]
        assert [(c["name"], c["arguments"]) for c in calls] == [
            (c.name, c.arguments) for c in decoder.result.tool_calls
        ]
