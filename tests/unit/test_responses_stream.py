"""ResponsesStreamDecoder: each rule of its module docstring, at its edges."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import (
    FailureKind,
    FinishReason,
    PeerProtocolError,
    ReasoningDelta,
    ReasoningSignature,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from svir_proto._dialect import MAX_ENTRIES
from svir_proto._weights import BLOCK, PART
from svir_proto.openai import ToolCallError
from svir_proto.responses import ResponsesStreamDecoder
from tests.helpers import FEEDS, bytewise, feed_as, relayed, run


def ev(etype: str, *, name: bool = True, **fields: Any) -> bytes:
    data = json.dumps({"type": etype, **fields}, ensure_ascii=False, separators=(",", ":"))
    return (f"event: {etype}\n" if name else "") + f"data: {data}\n\n"


def body(*events: str) -> bytes:
    return "".join(events).encode()


def numbered(*events: tuple[str, dict[str, Any]], start: int = 0) -> bytes:
    return body(*(ev(t, sequence_number=start + i, **f) for i, (t, f) in enumerate(events)))


CREATED = ev("response.created", response={"id": "resp_1", "model": "m", "created_at": 7})
COMPLETED = ev("response.completed", response={"id": "resp_1", "status": "completed"})
MSG = {
    "id": "msg_1",
    "type": "message",
    "status": "in_progress",
    "content": [],
    "role": "assistant",
}


def added(item: dict[str, Any], index: int | None = 0) -> str:
    return ev(
        "response.output_item.added",
        item=item,
        **({} if index is None else {"output_index": index}),
    )


def text(delta: str, index: int | None = 0, item_id: str | None = "msg_1", **more: Any) -> str:
    fields: dict[str, Any] = {"delta": delta, **more}
    if index is not None:
        fields["output_index"] = index
    if item_id is not None:
        fields["item_id"] = item_id
    return ev("response.output_text.delta", **fields)


def decode(raw: bytes, **options: Any) -> tuple[list[Any], ResponsesStreamDecoder]:
    """The events and the decoder of ``raw`` in one piece, checked against one event per
    read (the express) giving the same."""
    d = ResponsesStreamDecoder(**options)
    events = run(d, [raw])
    alone = ResponsesStreamDecoder(**options)
    assert run(alone, per_event(raw)) == events
    assert alone.result == d.result
    return events, d


def error_of(raw: bytes, **options: Any) -> PeerProtocolError:
    """The error ``raw`` ends in, the same in one piece, byte by byte and one event per read."""
    d = ResponsesStreamDecoder(**options)
    with pytest.raises(PeerProtocolError) as info:
        run(d, [raw])
    for pieces in (bytewise(raw), per_event(raw)):
        again = ResponsesStreamDecoder(**options)
        with pytest.raises(PeerProtocolError) as split:
            run(again, pieces)
        assert (type(split.value), split.value.offset) == (type(info.value), info.value.offset)
    return info.value


def per_event(raw: bytes) -> list[bytes]:
    """One event per read: the express (`ResponsesStreamDecoder.feed`); what follows the
    last blank line, if anything, the last read."""
    *events, rest = raw.split(b"\n\n")
    return [e + b"\n\n" for e in events] + ([rest] if rest else [])


# -- Rule 1: sequence numbers ----------------------------------------------------------------


def test_a_gap_names_both_numbers_and_where() -> None:
    raw = numbered(
        ("response.created", {"response": {"id": "r"}}),
        ("response.in_progress", {"response": {"id": "r"}}),
    )
    raw += ev("response.completed", sequence_number=5, response={"id": "r"}).encode()
    exc = error_of(raw)
    assert "expected 2, got 5" in str(exc)
    assert "lost" in str(exc)
    assert exc.offset == raw.rindex(b"data: ") + 6


def test_a_repeat_is_out_of_order() -> None:
    raw = body(
        ev("response.created", sequence_number=3, response={"id": "r"}),
        ev("response.in_progress", sequence_number=3, response={"id": "r"}),
    )
    assert "expected 4, got 3 (an event came again or out of order)" in str(error_of(raw))


@pytest.mark.parametrize("bad", ["1", -1, 1.5, True, 2**70])
def test_a_sequence_number_is_a_count(bad: object) -> None:
    assert "sequence_number must be an integer" in str(
        error_of(body(ev("response.created", sequence_number=bad, response={"id": "r"})))
    )


def test_the_first_number_may_be_any_and_unnumbered_events_are_noted_once() -> None:
    raw = body(
        ev("response.created", sequence_number=41, response={"id": "r"}),
        ev("response.in_progress", response={"id": "r"}),
        ev("response.in_progress", response={"id": "r"}),
        ev("response.completed", sequence_number=42, response={"id": "r"}),
    )
    _, d = decode(raw)
    assert d.result.complete
    assert d.result.problems == ("some events have no sequence_number: their order is not checked",)


# -- events that are not what they should be ----------------------------------------------


def test_the_type_may_come_from_the_sse_line_or_an_error_key() -> None:
    raw = body(
        'event: response.created\ndata: {"response":{"id":"r"}}\n\n',
        'data: {"error":{"message":"upstream said no","code":"server_error"}}\n\n',
    )
    events, d = decode(raw)
    assert isinstance(events[0], StreamStarted)
    assert d.result.error.message == "upstream said no"
    assert events[-1] == StreamEnded(complete=False, done=True)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"sequence_number":0}', "has no type"),
        (b'{"type":7}', "type must be a string"),
        (b"[1,2]", "must be a JSON object, not list"),
        (b'{"type":"response.created"', "not JSON"),
        (b'{"type":"response.created","response":[]}', "needs a response object"),
        (b'{"type":"response.output_item.added","item":{"type":""}}', "needs a type"),
        (b'{"type":"response.output_item.added"}', "needs 'item', an object"),
        (b'{"type":"response.output_text.delta","delta":7}', "needs 'delta', a string"),
    ],
)
def test_malformed_events(data: bytes, message: str) -> None:
    exc = error_of(b"data: " + data + b"\n\n")
    assert message in str(exc)
    assert exc.offset is not None


def test_done_markers_are_not_this_dialects_end() -> None:
    raw = body(CREATED, "data: [DONE]\n\n", COMPLETED, "data: [DONE]\n\n", COMPLETED)
    _, d = decode(raw)
    r = d.result
    assert r.complete
    assert (
        r.ignored_after_done == 1
    )  # the second completed; the marker after the end is not counted
    assert r.problems == ("a [DONE] marker came before the end of the response: ignored",)


def test_bytes_after_the_end_that_break_framing_are_noted() -> None:
    raw = body(CREATED, COMPLETED) + b"data: x\n\n: \xb4bad\n\ndata: y\n\n"
    _, d = decode(raw)
    _, split = decode(b"".join(bytewise(raw)))
    assert d.result == split.result
    assert d.result.complete
    assert d.result.ignored_after_done == 1
    assert len(d.result.problems) == 1
    assert d.result.problems[0].startswith("after the end of the response:")


# -- Rules 2 and 3: identity and items ----------------------------------------------------


def test_identity_from_created_and_a_changed_id_is_noted() -> None:
    raw = body(
        ev("response.created", response={"id": "a", "model": "m1", "created_at": 1764547200.0}),
        ev("response.completed", response={"id": "b", "model": "m2"}),
    )
    events, d = decode(raw)
    assert events[0] == StreamStarted(response_id="a", model="m1", created=1764547200)
    assert (d.response_id, d.model) == ("a", "m2")
    assert d.result.problems == ("the response id changes between events",)


def test_a_stream_without_created_still_starts() -> None:
    events, _ = decode(body(added(MSG), text("hi"), COMPLETED))
    assert events[:2] == [StreamStarted(response_id="", model=""), TextDelta(text="hi")]
    events, _ = decode(body(ev("response.created", response={"id": "r", "created_at": "soon"})))
    assert events[0].created is None


def test_an_item_added_twice_is_an_error() -> None:
    assert "output item 0 was added twice" in str(error_of(body(CREATED, added(MSG), added(MSG))))
    raw = body(CREATED, added(MSG, None), added(MSG, None))
    assert "output item 'msg_1' was added twice" in str(error_of(raw))


def test_items_are_found_by_index_then_id_then_the_last_one() -> None:
    raw = body(
        CREATED,
        added(MSG, None),  # llama.cpp: no index
        text("a", index=None),  # by id
        text("b", index=None, item_id=None),  # neither: the item last opened
        text("c", item_id="msg_other"),  # by index, its id rotated
        COMPLETED,
    )
    _, d = decode(raw)
    assert d.result.text == "abc"
    _, d = decode(body(CREATED, added(MSG), text("a"), text("b", item_id="x"), COMPLETED))
    assert d.result.problems == ("item_id changes between events of one output item",)


def test_a_delta_for_an_item_never_added_opens_it() -> None:
    _, d = decode(body(CREATED, text("hi", index=3), COMPLETED))
    assert d.result.text == "hi"
    assert d.result.problems == ("an event came for an output item that was never added",)


def test_an_event_about_an_item_of_another_kind_is_an_error() -> None:
    call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    exc = error_of(body(CREATED, added(call), text("hi", item_id="fc_1")))
    assert "for output item 'fc_1', which is a function_call" in str(exc)


def test_other_item_types_are_noted_once() -> None:
    ws = {"id": "ws_1", "type": "web_search_call"}
    raw = body(CREATED, added(ws), added({**ws, "id": "ws_2"}, 1), COMPLETED)
    _, d = decode(raw)
    assert d.result.problems == ("output items of type 'web_search_call' are not carried",)


def test_unknown_event_types_are_named_and_bounded() -> None:
    long = ev("response.future_" + "x" * 10_000)  # (attack 34: names a megabyte long)
    raw = body(CREATED, long, *(ev(f"response.future_{i}.thing") for i in range(70)), COMPLETED)
    _, d = decode(raw)
    assert d.result.complete
    assert len(d.ignored_types) == 64
    assert "response.future_0.thing" in d.ignored_types  # the long one is ignored unnamed


def test_output_items_are_bounded() -> None:
    items = [added({**MSG, "id": f"m{i}"}, i) for i in range(5)]
    exc = error_of(body(CREATED, *items), max_output_items=4)
    assert (exc.limit, exc.limit_value) == ("max_output_items", 4)
    with pytest.raises(ValueError, match="max_output_items"):
        ResponsesStreamDecoder(max_output_items=0)


@pytest.mark.parametrize("field", ["message", "summary", "content"])
def test_an_items_parts_are_bounded(field: str) -> None:
    """Beside attack 41 F1: a whole message of 100,000 output_text parts gave a delta each
    at once; past `MAX_ENTRIES` an item's parts fail the stream, naming the list."""
    part = {"type": "output_text", "text": "a", "annotations": []}
    if field == "message":
        item = {**MSG, "status": "completed", "content": [part] * (MAX_ENTRIES + 1)}
    else:
        part = {"type": "summary_text" if field == "summary" else "reasoning_text", "text": "a"}
        item = {"id": "rs_1", "type": "reasoning", "summary": [], field: [part] * (MAX_ENTRIES + 1)}
    done = ev("response.output_item.done", output_index=0, item=item)
    exc = error_of(body(CREATED, done))
    assert "holds 1025 entries" in str(exc)
    assert (exc.limit, exc.limit_value) == ("max_entries", MAX_ENTRIES)
    fits = {**item, ("content" if field == "message" else field): [part] * MAX_ENTRIES}
    events, _ = decode(body(CREATED, ev("response.output_item.done", output_index=0, item=fits)))
    assert (
        len([e for e in events if type(e).__name__ in ("TextDelta", "ReasoningDelta")])
        == MAX_ENTRIES
    )


# -- Rule 4: whole values ---------------------------------------------------------------


def test_a_whole_text_that_differs_is_noted_and_the_deltas_kept() -> None:
    raw = body(
        CREATED,
        added(MSG),
        text("Hello"),
        ev("response.output_text.done", item_id="msg_1", output_index=0, text="Hello!"),  # more
        ev("response.output_text.done", item_id="msg_1", output_index=0, text="Bye"),  # other
        COMPLETED,
    )
    _, d = decode(raw)
    assert d.result.text == "Hello!"
    assert d.result.problems == (
        "the whole text of output item 'msg_1' differs from its deltas: the deltas are kept",
    )


@pytest.mark.parametrize("keep_text", [True, False])
def test_a_whole_item_without_a_part_its_deltas_gave_is_not_settled_against_them(
    keep_text: bool,
) -> None:
    """Attack 49b F3: a text streamed as part 1 and given whole as part 0 of the done item (an
    upstream that numbered its part wrongly) went out twice, "XX": part 0 had no deltas, so its
    whole value was all news. A whole item without a part its deltas gave is noted, as a value
    that differs, and settles nothing; a reasoning item's summary the same."""
    whole = {**MSG, "status": "completed",
             "content": [{"type": "output_text", "text": "X", "annotations": []}]}  # fmt: skip
    raw = body(
        CREATED,
        added(MSG),
        text("X", content_index=1),
        ev("response.output_item.done", output_index=0, item=whole),
        COMPLETED,
    )
    events, d = decode(raw, keep_text=keep_text)
    assert "".join(e.text for e in events if type(e).__name__ == "TextDelta") == "X"
    assert d.result.problems == (
        "the whole text of output item 'msg_1' differs from its deltas: the deltas are kept",
    )
    item = {"id": "rs_1", "type": "reasoning", "summary": []}
    summary = ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0,
                 summary_index=2, delta="R")  # fmt: skip
    done = {**item, "summary": [{"type": "summary_text", "text": "R"}]}
    raw = body(CREATED, added(item), summary, ev("response.output_item.done", output_index=0,
               item=done), COMPLETED)  # fmt: skip
    events, d = decode(raw, keep_text=keep_text)
    assert "".join(e.text for e in events if type(e).__name__ == "ReasoningDelta") == "R"
    assert d.result.problems == (
        "the whole reasoning summary of output item 'rs_1' differs from its deltas: "
        "the deltas are kept",
    )


@pytest.mark.parametrize("keep_text", [True, False])
def test_a_whole_part_before_parts_already_streamed_is_written_after_them_said(
    keep_text: bool,
) -> None:
    """Attack 50b N8: "X" streamed as part 1, then the done item gives part 0 "Z", never
    streamed, and part 1 "X": the upstream's answer reads "ZX", the clients got "XZ", unsaid.
    It cannot go before what was streamed: it goes after it, said."""
    whole = {**MSG, "status": "completed", "content": [
        {"type": "output_text", "text": "Z", "annotations": []},
        {"type": "output_text", "text": "X", "annotations": []},
    ]}  # fmt: skip
    raw = body(
        CREATED,
        added(MSG),
        text("X", content_index=1),
        ev("response.output_item.done", output_index=0, item=whole),
        COMPLETED,
    )
    events, d = decode(raw, keep_text=keep_text)
    assert "".join(e.text for e in events if type(e).__name__ == "TextDelta") == "XZ"
    assert d.result.problems == (
        "the whole text of output item 'msg_1', part 0, came after the parts after it were "
        "streamed: written after them",
    )
    done = ev("response.output_item.done", output_index=0, item=whole)
    in_order = body(CREATED, added(MSG), text("Z"), text("X", content_index=1), done, COMPLETED)
    events, d = decode(in_order, keep_text=keep_text)
    assert d.result.problems == ()
    # review 51 r6: part 0 streamed its beginning; its rest goes after part 1 too, said
    whole["content"][0]["text"] = "ZY"
    done = ev("response.output_item.done", output_index=0, item=whole)
    begun = body(CREATED, added(MSG), text("Z"), text("X", content_index=1), done, COMPLETED)
    events, d = decode(begun, keep_text=keep_text)
    assert "".join(e.text for e in events if type(e).__name__ == "TextDelta") == "ZXY"
    assert d.result.problems == (
        "the rest of the text of output item 'msg_1', part 0, came after the parts after it "
        "were streamed: written after them",
    )


def test_whole_arguments_that_differ_are_an_error() -> None:
    call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": "{"}
    raw = body(
        CREATED,
        added(call),
        ev("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta='"a":1'),
        ev(
            "response.function_call_arguments.done",
            item_id="fc_1",
            output_index=0,
            arguments='{"b":2}',
        ),
    )
    exc = error_of(raw)
    assert isinstance(exc, ToolCallError)
    assert (exc.index, exc.call_id) == (0, "c")


def test_a_calls_name_may_go_on_and_its_id_is_set_once() -> None:
    call = {"id": "fc_1", "type": "function_call", "call_id": "", "name": "get_", "arguments": ""}
    done = {
        **call,
        "call_id": "c1",
        "name": "get_weather",
        "arguments": "{}",
        "status": "completed",
    }
    raw = body(
        CREATED, added(call), ev("response.output_item.done", output_index=0, item=done), COMPLETED
    )
    events, d = decode(raw)
    assert ToolCallDelta(index=0, id="c1", name="weather") in events
    assert d.result.tool_calls == (ToolCall(index=0, id="c1", name="get_weather", arguments="{}"),)
    renamed = {**done, "call_id": "c2", "name": "other"}
    raw = body(
        CREATED,
        added({**call, "call_id": "c1", "name": "f"}),
        ev("response.output_item.done", output_index=0, item=renamed),
        COMPLETED,
    )
    _, d = decode(raw)
    assert d.result.problems == (
        "a tool call's call_id changes between events: the first is kept",
        "a tool call's name changes between events: the first is kept",
    )
    assert d.result.tool_calls[0].name == "f"


def test_a_call_without_id_is_a_tool_call_error_at_the_end() -> None:
    call = {"id": "fc_1", "type": "function_call", "name": "f", "arguments": "{}"}
    assert isinstance(error_of(body(CREATED, added(call), COMPLETED)), ToolCallError)


# -- reasoning ----------------------------------------------------------------------------


def summary(delta: str, index: int, item: str = "rs_1") -> str:
    return ev(
        "response.reasoning_summary_text.delta",
        item_id=item,
        output_index=0,
        summary_index=index,
        delta=delta,
    )


def test_summary_parts_are_joined_with_a_blank_line_and_signed_at_done() -> None:
    rs = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "partial"}
    done = {
        **rs,
        "encrypted_content": "whole",
        "summary": [{"type": "summary_text", "text": "A"}, {"type": "summary_text", "text": "B"}],
    }
    raw = body(
        CREATED,
        added(rs),
        summary("A", 0),
        summary("B", 1),
        ev("response.output_item.done", output_index=0, item=done),
        COMPLETED,
    )
    events, d = decode(raw)
    assert ReasoningDelta(text="\n\nB", carrier="summary") in events
    assert ReasoningSignature(signature="whole", carrier="summary", item_id="rs_1") in events
    assert d.result.reasoning == "A\n\nB"
    assert d.result.reasoning_blocks[0].text == "A\n\nB"
    assert not d.result.problems


def test_an_unsigned_item_is_no_block_and_leaves_nothing_for_the_next() -> None:
    plain = {"id": "rs_1", "type": "reasoning", "summary": []}
    signed = {"id": "rs_2", "type": "reasoning", "summary": []}
    raw = body(
        CREATED,
        added(plain),
        summary("unsigned", 0),
        ev("response.output_item.done", output_index=0, item=plain),
        added(signed, 1),
        ev(
            "response.reasoning_text.delta",
            item_id="rs_2",
            output_index=1,
            content_index=0,
            delta="raw",
        ),
        ev(
            "response.reasoning_text.done",
            item_id="rs_2",
            output_index=1,
            content_index=0,
            text="raw!",
        ),
        ev(
            "response.output_item.done", output_index=1, item={**signed, "encrypted_content": "sig"}
        ),
        COMPLETED,
    )
    _, d = decode(raw)
    (block,) = d.result.reasoning_blocks
    assert (block.text, block.carrier, block.item_id) == ("raw!", "reasoning_text", "rs_2")
    assert d.result.reasoning == "unsignedraw!"
    assert d.result.reasoning_carrier == "summary"


# -- Rules 5 and 6: the end -------------------------------------------------------------


@pytest.mark.parametrize(
    ("details", "reason", "raw"),
    [
        ({"reason": "max_output_tokens"}, FinishReason.LENGTH, "max_output_tokens"),
        ({"reason": "content_filter"}, FinishReason.CONTENT_FILTER, "content_filter"),
        ({"reason": "max_messages"}, FinishReason.OTHER, "max_messages"),
        (None, FinishReason.OTHER, "incomplete"),
    ],
)
def test_incomplete_reasons(details: object, reason: FinishReason, raw: str) -> None:
    _, d = decode(
        body(
            CREATED,
            ev("response.incomplete", response={"id": "resp_1", "incomplete_details": details}),
        )
    )
    assert (d.result.finish_reason, d.result.finish_raw, d.result.complete) == (reason, raw, True)
    assert d.result.usage_missing


def test_completed_with_another_status_is_noted() -> None:
    _, d = decode(
        body(CREATED, ev("response.completed", response={"id": "resp_1", "status": "incomplete"}))
    )
    assert d.result.problems == ("response.completed with status 'incomplete'",)


def test_items_only_in_the_final_response_are_read_whole() -> None:
    call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    final = {
        "id": "resp_1",
        "output": [{**MSG, "content": [{"type": "output_text", "text": "hi"}]}, call, "junk"],
    }
    _, d = decode(body(CREATED, ev("response.completed", response=final)), declared_tools=["g"])
    assert d.result.text == "hi"
    assert d.result.tool_calls == (
        ToolCall(index=0, id="c", name="f", arguments="{}", declared=False),
    )
    assert d.result.finish_reason is FinishReason.TOOL_CALLS
    assert d.result.problems == ("tool call 'c' calls 'f', not declared by the request",)


def test_one_failure_from_error_then_failed_and_what_came_is_kept() -> None:
    raw = body(
        CREATED,
        added(MSG),
        text("part"),
        ev("error", code="server_error", message="boom", param=None),
        text(" more"),
        ev("error", code="server_error", message="again"),
        ev(
            "response.failed",
            response={
                "id": "resp_1",
                "error": {"code": "server_error", "message": "boom"},
                "usage": {"input_tokens": 3, "output_tokens": 1},
            },
        ),
    )
    events, d = decode(raw)
    assert [type(e) for e in events].count(StreamFailed) == 1
    r = d.result
    assert (r.text, r.error.kind, r.done, r.complete) == (
        "part more",
        FailureKind.SERVER_ERROR,
        True,
        False,
    )
    assert r.usage.prompt_tokens == 3
    assert r.problems == ("another failure came after the first: the first is kept",)


def test_failed_without_an_error_object() -> None:
    _, d = decode(
        body(CREATED, ev("response.failed", response={"id": "resp_1", "status": "failed"}))
    )
    assert d.result.error.message == "the response failed"


def test_a_body_that_ends_early_is_a_cut() -> None:
    events, d = decode(body(CREATED, added(MSG), text("par")) + b"data: {")
    assert events[-1] == StreamEnded(complete=False, done=False)
    r = d.result
    assert (r.text, r.cut, r.closed, r.complete) == ("par", True, True, False)
    assert r.problems == ("the body ended before response.completed",)


# -- the bounds ---------------------------------------------------------------------------


def test_the_result_is_bounded_on_every_path() -> None:
    call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    args = ev(
        "response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta="x" * 200
    )
    for raw in (
        body(CREATED, added(MSG), text("y" * 200)),
        body(CREATED, added(MSG), text("y" * 100), text("y" * 100)),  # the second on the fast path
        body(CREATED, added(call), args, args),
        body(
            CREATED,
            added(MSG),
            ev("response.refusal.delta", item_id="msg_1", output_index=0, delta="n" * 300),
        ),
    ):
        exc = error_of(raw, max_result_size=ITEM + 150)
        assert exc.limit == "max_result_size"


ITEM = 256  # what an item counts against the result


@pytest.mark.parametrize("how", ["whole", "events", "pieces"])
def test_the_fast_path_counts_the_result_exactly(how: str) -> None:
    """Forty deltas, nearly all read by a template, in one piece, one event per read, or
    runs of them: a limit of exactly what they hold passes, one character less fails at the
    last delta, wherever the runs begin and end."""
    deltas = [odelta(i + 2, "abcde") for i in range(40)]
    raw = b"".join([OPENED, *deltas])
    if how == "whole":
        parts = [raw]
    elif how == "events":
        parts = [raw[: -sum(map(len, deltas))], *deltas]
    else:
        parts = [raw[i : i + 700] for i in range(0, len(raw), 700)]
    exact = ITEM + len("msg_1") + PART + 40 * 5  # the item, its id, its part, the text
    d = ResponsesStreamDecoder(max_result_size=exact)
    run(d, parts)
    assert d.result.text == "abcde" * 40
    short = ResponsesStreamDecoder(max_result_size=exact - 1)
    with pytest.raises(PeerProtocolError) as info:
        run(short, parts)
    assert info.value.limit == "max_result_size"
    assert len(raw) - len(deltas[-1]) < info.value.offset < len(raw)  # in the last delta
    assert short.result.text == "abcde" * 39  # nothing received before is lost


def odelta(seq: int, delta: str, *, item: str = "msg_1", pad: str | None = None) -> bytes:
    """A text delta in OpenAI's key order: its number before the delta, padding after."""
    fields: dict[str, Any] = {"sequence_number": seq, "item_id": item, "output_index": 0}
    fields.update(content_index=0, delta=delta, logprobs=[])
    if pad is not None:
        fields["obfuscation"] = pad
    return ev("response.output_text.delta", **fields).encode()


OPENED = numbered(
    ("response.created", {"response": {"id": "r"}}),
    ("response.output_item.added", {"item": MSG, "output_index": 0}),
)


def test_a_read_of_one_event_past_the_size_bound_is_the_general_ways() -> None:
    """The express reads a delta alone only within ``max_event_size``; past it the general
    way says the limit, where, in one piece or one event per read."""
    raw = OPENED + odelta(2, "a") + odelta(3, "b") + odelta(4, "c" * 400)
    exc = error_of(raw, max_event_size=400)
    assert exc.limit == "max_event_size"


def test_a_delta_after_the_end_is_ignored_in_the_run_it_came_in() -> None:
    """The end comes in the middle of a run of deltas a template reads: what follows it is
    ignored and counted, not read."""
    done = ev("response.completed", sequence_number=5, response={"id": "r", "status": "completed"})
    raw = OPENED + odelta(2, "a") + odelta(3, "b") + odelta(4, "c") + done.encode()
    _, d = decode(raw + odelta(6, "d") + odelta(7, "e"))
    assert d.result.text == "abc"
    assert d.result.ignored_after_done == 2


def test_the_fast_path_meets_invalid_utf8_the_general_way() -> None:
    first = odelta(2, "é")
    bad = odelta(3, "é").replace("é".encode(), b"\xc3(")
    exc = error_of(OPENED + first + bad)
    assert "invalid UTF-8" in str(exc)
    assert exc.offset == len(OPENED + first) + bad.index(b"\xc3")
    _, d = decode(OPENED + first + bad, errors="replace")
    assert d.result.text == "é\ufffd("


def test_the_fast_path_checks_numbers_and_gives_up_on_rotating_bytes() -> None:
    deltas = b"".join(odelta(2 + i, c, pad="P" * i) for i, c in enumerate("abcd"))
    _, d = decode(OPENED + deltas + odelta(6, "", pad="Q") + odelta(7, "e", pad="R"))
    assert d.result.text == "abcde"
    assert d._template is not None
    assert d._template.hits == 5  # every delta after the first
    assert "expected 6, got 9" in str(error_of(OPENED + deltas + odelta(9, "e")))
    rotating = b"".join(odelta(2 + i, c, item=f"id{i}") for i, c in enumerate("abcdefghijkl"))
    _, d = decode(OPENED + rotating)
    assert d.result.text == "abcdefghijkl"
    assert d._template is None  # learned 8 in vain: no more learning


def test_an_unnumbered_delta_on_a_numbered_stream_goes_the_general_way() -> None:
    raw = body(
        CREATED,
        added(MSG),
        text("a"),
        text("b"),
        ev("response.in_progress", sequence_number=0, response={"id": "resp_1"}),
        text("c"),
        COMPLETED,
    )
    _, d = decode(raw)
    assert d.result.text == "abc"
    assert "some events have no sequence_number: their order is not checked" in d.result.problems


def test_json_nested_deeper_than_the_policy_allows() -> None:
    deep = "[" * 600 + "]" * 600
    raw = b'data: {"type":"response.created","response":{"id":"r","x":' + deep.encode() + b"}}\n\n"
    assert "nested deeper" in str(error_of(raw))


def test_the_less_travelled_shapes() -> None:
    """Parts and items with fields of the wrong type are skipped, not trusted."""
    call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    rs = {"id": "rs_1", "type": "reasoning", "summary": ["x", {"type": "summary_text"}]}
    message = {**MSG, "content": ["x", {"type": "refusal"}, {"type": "input_audio"}]}
    raw = body(
        ev("response.created", response={"model": "m"}),
        added(message),
        text(""),
        added(rs, 1),
        added({**call, "arguments": None}, 2),
        ev("response.output_item.done", item={**call, "arguments": "{}", "id": 5}, output_index=2),
        ev(
            "response.reasoning_summary_part.added",
            item_id="rs_1",
            output_index=1,
            part={"text": None},
        ),
        ev(
            "response.content_part.added",
            item_id="rs_1",
            output_index=1,
            part={"type": "reasoning_text", "text": "r"},
        ),
        ev("response.function_call_arguments.delta", item_id="fc_1", output_index=2, delta=""),
        ev(
            "response.output_item.done",
            item={
                "id": "fc_2",
                "type": "function_call",
                "call_id": "d",
                "name": "g",
                "arguments": "[]",
            },
        ),
        ev("error", message="late"),
        ev("response.completed", response={"id": "resp_1"}),
    )
    events, d = decode(raw)
    r = d.result
    assert (r.reasoning, r.error.message, r.complete, r.tool_calls) == ("r", "late", False, ())
    assert len(r.pending_tool_calls) == 2
    assert "ResponsesStreamDecoder" not in repr(events)
    assert "needs a response object" in str(
        error_of(body(CREATED, ev("response.failed", response=None)))
    )


def test_a_whole_response_reads_as_a_stream_of_its_final_event() -> None:
    from svir_proto.responses import decode_response

    message = {**MSG, "content": [{"type": "output_text", "text": "hi"}]}
    events, r = decode_response(
        json.dumps({"id": "r", "status": "completed", "output": [message]}).encode()
    )
    assert [type(e).__name__ for e in events] == [
        "StreamStarted",
        "TextDelta",
        "Finished",
        "StreamEnded",
    ]
    assert r.complete
    _, r = decode_response(
        b'{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}'
    )
    assert r.finish_reason is FinishReason.LENGTH
    _, r = decode_response(
        b'{"id":"r","status":"failed","error":{"code":"server_error","message":"x"}}'
    )
    assert (r.error.message, r.complete) == ("x", False)
    _, r = decode_response(b'{"id":"r"}')
    assert r.complete
    with pytest.raises(PeerProtocolError, match="not JSON"):
        decode_response(b"{")
    with pytest.raises(PeerProtocolError, match="JSON object"):
        decode_response(b"[]")


def test_the_fast_path_meets_a_lone_surrogate_the_general_way() -> None:
    first = odelta(2, "é")
    bad = odelta(3, "Z").replace(b'"Z"', b'"a\\ud800"')
    for pieces in ([OPENED + first + bad], per_event(OPENED + first + bad)):
        d = ResponsesStreamDecoder()
        with pytest.raises(PeerProtocolError, match="surrogate"):
            run(d, pieces)
        mended = ResponsesStreamDecoder(errors="replace")
        run(mended, pieces)
        assert mended.result.text == "éa\ufffd"


def test_bytes_that_do_not_say_their_type_are_not_learned() -> None:
    """The SSE name stands in for a missing type: the same bytes under another name mean
    another thing, so a template would be wrong."""
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}

    def bare(etype: str, delta: str) -> str:
        data = json.dumps({**where, "delta": delta}, separators=(",", ":"))
        return f"event: {etype}\ndata: {data}\n\n"

    raw = body(
        CREATED,
        added(MSG),
        bare("response.output_text.delta", "a"),
        bare("response.output_text.delta", "b"),
        bare("response.refusal.delta", "c"),
    )
    for pieces in ([raw], per_event(raw)):
        d = ResponsesStreamDecoder()
        run(d, pieces)
        assert (d.result.text, d.result.refusal) == ("ab", "c")
        assert d._template is None


def test_one_event_per_read_takes_the_express_and_decodes_alike() -> None:
    deltas = b"".join(odelta(2 + i, c, pad="P" * i) for i, c in enumerate('ab"\\c'))
    raw = OPENED + deltas
    whole, _ = decode(raw)
    d2 = ResponsesStreamDecoder()
    assert run(d2, per_event(raw)) == whole
    assert d2._template is not None
    assert d2._template.hits == 4
    assert d2._skipped + d2._framer._base == len(raw)  # every byte counted


def test_a_run_of_untyped_events_reads_its_deltas_at_once_and_the_rest_one_by_one() -> None:
    events = [
        ev("response.created", name=False, response={"id": "resp_1"}),
        ev("response.output_item.added", name=False, item=MSG, output_index=0),
        *(ev("response.output_text.delta", name=False, item_id="msg_1", delta=c) for c in "abc"),
        ev("response.output_text.done", name=False, item_id="msg_1", text="abc"),
        *(ev("response.output_text.delta", name=False, item_id="msg_1", delta=c) for c in "de"),
    ]
    raw = body(*events)
    whole, _ = decode(raw)
    d = ResponsesStreamDecoder()
    # the first event opens the lane; the rest is one run of simple events
    assert run(d, [events[0].encode(), body(*events[1:])]) == whole
    assert d.result.text == "abcde"
    assert d._template is not None
    assert d._template.hits == 4  # b, c, and after the .done, d and e


# -- the template ahead of the lanes (`DialectDecoder._ahead`) --------------------------------


def in_pieces(raw: bytes, size: int) -> list[bytes]:
    return [raw[i : i + size] for i in range(0, len(raw), size)]


def fcall(seq: int, delta: str, *, pad: str = "Pq9") -> bytes:
    """A function call's argument delta in OpenAI's key order, with padding."""
    fields: dict[str, Any] = {"sequence_number": seq, "item_id": "fc_1", "output_index": 0}
    return ev("response.function_call_arguments.delta", **fields, delta=delta, obfuscation=pad)


CALL = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""}


@pytest.mark.parametrize("size", [*range(1, 40, 3), 97, 211, 256, 700, 1460])
def test_reads_of_any_size_give_what_one_piece_gives(size: int) -> None:
    """Reads that end anywhere: a template reads the runs of deltas they complete, with the
    piece of the next delta they begin held for the next read."""
    args = ['{"', "city", '": "', "Wien", '"', ", ", "\\", "}"]
    deltas = [fcall(2 + i, piece, pad="x" * (i % 4)) for i, piece in enumerate(args * 6)]
    seq = 2 + len(deltas)
    raw = b"".join(
        [
            numbered(
                ("response.created", {"response": {"id": "r"}}),
                ("response.output_item.added", {"item": CALL, "output_index": 0}),
            ),
            *[d.encode() for d in deltas],
            ev(
                "response.function_call_arguments.done",
                sequence_number=seq,
                item_id="fc_1",
                output_index=0,
                arguments="".join(args * 6),
            ).encode(),
            ev(
                "response.output_item.added", sequence_number=seq + 1, item=MSG, output_index=1
            ).encode(),
            *[
                ev(
                    "response.output_text.delta",
                    sequence_number=seq + 2 + i,
                    item_id="msg_1",
                    output_index=1,
                    content_index=0,
                    delta=c,
                ).encode()
                for i, c in enumerate("hello, wörld")
            ],
        ]
    )
    whole, d = decode(raw)
    split = ResponsesStreamDecoder()
    assert run(split, in_pieces(raw, size)) == whole
    assert split.result == d.result
    assert [e.arguments for e in whole if isinstance(e, ToolCallDelta)][1:] == args * 6
    assert d.result.text == "hello, wörld"


def test_a_run_read_ahead_then_an_error_in_the_same_read() -> None:
    """What follows the deltas a template read in one read breaks the protocol: the deltas'
    events come first and the next call raises; with no event (empty deltas), the read
    raises at once; where, as in one piece."""
    bad = b"event: response.in_progress\ndata: {nope}\n\n"
    for delta, events in (("a", 1), ("", 0)):
        head = OPENED + odelta(2, "x") + odelta(3, delta)
        raw = head + odelta(4, delta) + bad
        expected = error_of(raw)
        cut = len(head) - 5  # the second delta begun, then held
        d = ResponsesStreamDecoder()
        d.feed(raw[:cut])
        if events:
            got = d.feed(raw[cut:])
            assert [e.text for e in got] == [delta, delta]
            assert d.error is not None
            with pytest.raises(PeerProtocolError) as info:
                d.feed(b"")
        else:
            with pytest.raises(PeerProtocolError) as info:
                d.feed(raw[cut:])
        assert info.value.offset == expected.offset


def test_what_stops_a_run_read_ahead() -> None:
    """A run a template reads ahead stops before what the general way must see, which says
    the same as in one piece: a delta past max_event_size or max_result_size, invalid UTF-8,
    an invalid escape, a CR, a long delta begun."""
    head = OPENED + odelta(2, "x")
    long = odelta(3, "y" * 5000)
    for raw, options in (
        (head + odelta(3, "ab") + odelta(4, "c" * 600), {"max_event_size": 500}),
        (head + odelta(3, "ab") + odelta(4, "cdef"), {"max_result_size": ITEM + 4}),
        (head + odelta(3, "ab") + odelta(4, "é").replace("é".encode(), b"\xc3("), {}),
        (head + odelta(3, "ab") + odelta(4, "q").replace(b'"q"', b'"\\ud800"'), {}),
    ):
        expected = error_of(raw, **options)
        for size in (len(head) + 9, 300, 1460):
            d = ResponsesStreamDecoder(**options)
            with pytest.raises(PeerProtocolError) as info:
                run(d, in_pieces(raw, size))
            assert (info.value.limit, info.value.offset) == (expected.limit, expected.offset)
    crlf = head + odelta(3, "ab") + odelta(4, "c").replace(b"\n", b"\r\n")
    assert run(ResponsesStreamDecoder(), in_pieces(crlf, len(head) + 9)) == decode(crlf)[0]
    done = ev("response.completed", sequence_number=5, response={"id": "r", "status": "completed"})
    raw = head + long + odelta(4, "z") + done.encode()
    whole, _ = decode(raw)
    for size in (len(head) + 9, 1000, 4095):
        assert run(ResponsesStreamDecoder(), in_pieces(raw, size)) == whole


def test_a_template_learned_from_data_in_two_lines_never_reads_the_wire() -> None:
    """The learned delta's data came in two data lines, which the framer joined at an LF: the
    bytes of the next event, whose second line is no data line, mean something else (found by
    an attack on the read-ahead; the one-event express had it too)."""
    name = b"event: response.output_text.delta\ndata: "
    first = name + b'{"type":"response.output_text.delta","output_index":0,\ndata: "delta":"a"}\n\n'
    second = name + b'{"type":"response.output_text.delta","output_index":0,\n"delta":"b"}\n\n'
    raw = first + second
    expected = error_of(raw)
    assert "not JSON" in str(expected)  # the second event's data, one line: not JSON
    for cut in (len(first) - 1, len(first), len(first) + 5):
        d = ResponsesStreamDecoder()
        with pytest.raises(PeerProtocolError) as info:
            run(d, [raw[:cut], raw[cut:]])
        assert info.value.offset == expected.offset
        assert d.result.text == "a"


def test_a_delta_arriving_in_small_reads_is_matched_once_whole() -> None:
    """A long delta in 1-byte reads: the template's pattern runs once the event is whole, not
    on every read over the piece held so far (which made each event cost its length squared,
    found by an attack on the read-ahead)."""
    d = ResponsesStreamDecoder()
    d.feed(OPENED + odelta(2, "a") + odelta(3, "b"))
    template = d._template
    assert template is not None
    calls = []
    event = template.event

    def counted(*args: Any) -> Any:
        calls.append(args[1:])
        return event(*args)

    template.event = counted  # type: ignore[misc]
    long = odelta(4, "y" * 3000) + odelta(5, "z" * 3000)
    events = [e for byte in bytewise(long) for e in d.feed(byte)]
    assert [e.text for e in events] == ["y" * 3000, "z" * 3000]
    assert len(calls) <= 2


def _answer(n: int) -> bytes:
    """Signed reasoning in two summary parts, text and a refusal settled by their whole
    values, then a call: ``n`` deltas of 10 characters each, most read by a template."""
    rs = {"id": "rs_1", "type": "reasoning", "summary": []}
    call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    words = [f"{i:010d}" for i in range(n)]
    whole = "".join(words)
    message = {"item_id": "msg_1", "output_index": 1}
    refusal = {**message, "content_index": 1}
    args = {"item_id": "fc_1", "output_index": 2}
    return body(
        CREATED,
        added(rs),
        *(summary(w, 0) for w in words),
        *(summary(w, 1) for w in words),
        ev("response.output_item.done", output_index=0, item={**rs, "encrypted_content": "sig"}),
        added(MSG, 1),
        *(text(w, 1, content_index=0) for w in words),
        ev("response.output_text.done", **message, content_index=0, text=whole),  # as streamed
        *(ev("response.refusal.delta", **refusal, delta=w) for w in words),
        ev("response.refusal.done", **refusal, refusal=whole + "!"),  # its rest: one more delta
        added(call, 2),
        ev("response.function_call_arguments.delta", **args, delta='{"a":'),
        ev("response.function_call_arguments.delta", **args, delta=" 1}"),
        ev("response.function_call_arguments.done", **args, arguments='{"a": 1}'),
        COMPLETED,
    )


@pytest.mark.parametrize("mode", FEEDS)
def test_without_keep_text_the_text_is_neither_kept_nor_bounded(mode: str) -> None:
    # a relay passes the deltas on: 4000 characters of text, reasoning and refusal pass a
    # bound that still counts the items, the signature and the arguments
    bound = 3 * ITEM + BLOCK + 4 * PART + 20 + 40  # (the items' ids, the call's id and name)
    kept, relay = relayed(ResponsesStreamDecoder, _answer(100), mode, max_result_size=bound)
    assert kept.text == "".join(f"{i:010d}" for i in range(100))  # as before
    assert kept.refusal == kept.text + "!"
    assert [(b.text, b.signature) for b in kept.reasoning_blocks] == [(kept.reasoning, "sig")]
    assert [(b.text, b.signature) for b in relay.reasoning_blocks] == [("", "sig")]
    assert relay.tool_calls[0].arguments == '{"a": 1}'
    assert not relay.problems
    assert error_of(_answer(100), max_result_size=bound).limit == "max_result_size"  # kept


@pytest.mark.parametrize("mode", FEEDS)
def test_without_keep_text_the_arguments_are_still_bounded(mode: str) -> None:
    d = ResponsesStreamDecoder(keep_text=False, max_result_size=3 * ITEM + BLOCK + 4 * PART + 10)
    with pytest.raises(PeerProtocolError) as caught:
        run(d, feed_as(mode, _answer(100)))
    assert caught.value.limit == "max_result_size"
    assert d.result.text == ""


@pytest.mark.parametrize(
    ("deltas", "whole"),
    [
        (["hi"], "DIFFERENT"),  # attack 31, F1: a relay gave "hi" + "FFERENT"
        (["hi"], "ho"),  # as long, not theirs
        (["h", "i"], "hi there"),
        (["hi"], "hi"),
        ([], "all of it"),
        (["\u00e9t\u00e9 ", "\U0001f600"], "\u00e9t\u00e9 \U0001f600!"),
        (["\u00e9t\u00e9"], "\u00e9t\u00e8 and more"),
    ],
)
def test_a_whole_value_is_settled_the_same_with_or_without_keep_text(
    deltas: list[str], whole: str
) -> None:
    done = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    raw = body(
        CREATED,
        added(MSG),
        *(text(d, content_index=0) for d in deltas),
        ev("response.output_text.done", **done, text=whole),
        COMPLETED,
    )
    seen = []
    for keep_text in (True, False):
        for pieces in ([raw], per_event(raw), bytewise(raw)):
            d = ResponsesStreamDecoder(keep_text=keep_text)
            events = run(d, pieces)
            seen.append(([e.text for e in events if isinstance(e, TextDelta)], d.result.problems))
    begins = whole.startswith("".join(deltas))
    rest = whole[len("".join(deltas)) :]
    assert seen[0][0] == [*deltas, *([rest] if begins and rest else [])]
    assert bool(seen[0][1]) is not begins
    assert all(s == seen[0] for s in seen), seen


def test_without_keep_text_a_whole_value_is_settled_by_its_length() -> None:
    # the deltas' text is not kept (Rule 4), only its length and CRC: a whole value longer
    # than them gives its rest, one shorter or another is noted
    done = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    raw = body(
        CREATED,
        added(MSG),
        text("Hello", content_index=0),
        ev("response.output_text.done", **done, text="Hello!"),
        ev("response.output_text.done", **done, text="Bye"),
        ev("response.output_text.done", **done, text="Other!"),
        COMPLETED,
    )
    for pieces in ([raw], per_event(raw), bytewise(raw)):
        d = ResponsesStreamDecoder(keep_text=False)
        events = run(d, pieces)
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", "!"]
        assert d.result.text == ""
        assert d.result.problems == (
            "the whole text of output item 'msg_1' differs from its deltas: the deltas are kept",
        )


def test_a_call_never_done_at_the_end_is_a_cut() -> None:
    """Attack round 30, F3: ``response.completed`` came while a ``function_call`` item was
    open, and the call was emitted whole with its arguments as far as they came. Its
    arguments never ended: the stream is a cut (the call pending), unless the final output
    says the call whole, or its arguments' ``.done`` came."""
    call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    args = {"item_id": "fc_1", "output_index": 0}
    opened = [CREATED, added(call), ev("response.function_call_arguments.delta", **args,
                                        delta='{"path": "/et')]  # fmt: skip
    events, d = decode(body(*opened, COMPLETED))
    assert not d.result.done
    assert d.result.cut
    assert not d.result.complete
    assert not any(isinstance(e, ToolCall) for e in events)
    assert d.result.pending_tool_calls[0].arguments == '{"path": "/et'
    whole = {**call, "arguments": '{"path": "/etc"}', "status": "completed"}
    final = ev("response.completed", response={"id": "resp_1", "status": "completed",
                                               "output": [whole]})  # fmt: skip
    _, d = decode(body(*opened, final))
    assert d.result.complete
    assert d.result.tool_calls[0].arguments == '{"path": "/etc"}'
    done = ev("response.function_call_arguments.done", **args, arguments='{"path": "/et')
    _, d = decode(body(*opened, done, COMPLETED))
    assert d.result.complete  # its arguments said whole (if not valid JSON)


def test_a_call_whose_place_in_the_final_output_holds_another_item_stays_a_cut() -> None:
    """The final output says the open call whole only where it has a function call: another
    item in its place leaves it open, and the stream a cut."""
    call = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    args = {"item_id": "fc_1", "output_index": 0}
    other = {"id": "msg_9", "type": "message", "role": "assistant", "content": []}
    final = ev("response.completed", response={"id": "resp_1", "status": "completed",
                                               "output": [other]})  # fmt: skip
    opened = [CREATED, added(call),
              ev("response.function_call_arguments.delta", **args, delta='{"a":')]  # fmt: skip
    _, d = decode(body(*opened, final))
    assert d.result.cut
    assert not d.result.complete
