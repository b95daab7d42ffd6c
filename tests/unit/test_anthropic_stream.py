"""MessagesStreamDecoder: every rule of its module docstring, edge by edge."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import _json
from svir_proto._weights import BLOCK
from svir_proto.anthropic import MAX_OPEN_BLOCKS, MessagesStreamDecoder
from svir_proto.errors import FailureKind, PeerProtocolError
from svir_proto.events import (
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
from svir_proto.openai import ToolCallError
from tests.helpers import FEEDS, bytewise, feed_as, relayed, run


def ev(obj: Any, name: str | None = "") -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj)
    if name == "":
        name = obj["type"] if isinstance(obj, dict) and isinstance(obj.get("type"), str) else None
    head = "" if name is None else f"event: {name}\n"
    return f"{head}data: {data}\n\n".encode()


START = ev(
    {
        "type": "message_start",
        "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 3, "output_tokens": 1}},
    }
)
STOP = ev({"type": "message_stop"})


def block(i: int, b: dict[str, Any]) -> bytes:
    return ev({"type": "content_block_start", "index": i, "content_block": b})


def delta(i: int, d: dict[str, Any]) -> bytes:
    return ev({"type": "content_block_delta", "index": i, "delta": d})


def stop(i: int) -> bytes:
    return ev({"type": "content_block_stop", "index": i})


def finish(reason: str | None, usage: dict[str, Any] | None = None, **more: Any) -> bytes:
    obj: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": reason, **more}}
    if usage is not None:
        obj["usage"] = usage
    return ev(obj)


TEXT = block(0, {"type": "text", "text": ""}) + delta(0, {"type": "text_delta", "text": "hi"})


def decode(body: bytes, **options: Any) -> tuple[list[Any], MessagesStreamDecoder]:
    d = MessagesStreamDecoder(**options)
    return run(d, [body]), d


def test_a_whole_stream_bytewise_gives_the_same_events() -> None:
    body = START + TEXT + stop(0) + finish("end_turn", {"output_tokens": 2}) + STOP
    whole, d1 = decode(body)
    d2 = MessagesStreamDecoder()
    assert run(d2, bytewise(body)) == whole
    assert d1.result == d2.result
    assert whole == [
        StreamStarted(response_id="msg_1", model="m"),
        TextDelta(text="hi"),
        Finished(reason=FinishReason.STOP, raw="end_turn"),
        Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5),
        StreamEnded(complete=True, done=True),
    ]
    assert (d1.message_id, d1.model, d1.pings) == ("msg_1", "m", 0)


BAD = {
    "not JSON": ev("{nope", None),
    "not an object": ev("[1]", None),
    "type not a string": ev({"type": 1}, None),
    "message not an object": ev({"type": "message_start", "message": 1}),
    "a second message_start": START + START,
    "index not an int": ev({"type": "content_block_start", "index": "0", "content_block": {}}),
    "content_block not an object": ev(
        {"type": "content_block_start", "index": 0, "content_block": 1}
    ),
    "block type not a string": block(0, {"type": 5}),
    "an index again": block(0, {"type": "text"}) + stop(0) + block(0, {"type": "text"}),
    "redacted without data": block(0, {"type": "redacted_thinking"}),
    "text not a string": block(0, {"type": "text", "text": 1}),
    "thinking not a string": block(0, {"type": "thinking", "thinking": 1}),
    "tool_use without a name": block(0, {"type": "tool_use", "id": "t"}),
    "delta index not an int": TEXT + ev({"type": "content_block_delta", "index": "0", "delta": {}}),
    "delta for a block never opened": delta(0, {"type": "text_delta", "text": "x"}),
    "delta after its stop": TEXT + stop(0) + delta(0, {"type": "text_delta", "text": "x"}),
    "delta type not a string": TEXT + delta(0, {"type": 3}),
    "delta of the wrong kind": TEXT + delta(0, {"type": "input_json_delta", "partial_json": "{"}),
    "text_delta text not a string": TEXT + delta(0, {"type": "text_delta", "text": 1}),
    "partial_json not a string": block(0, {"type": "tool_use", "id": "t", "name": "f"})
    + delta(0, {"type": "input_json_delta", "partial_json": 1}),
    "stop of a block never opened": stop(3),
    "message_delta delta not an object": ev({"type": "message_delta", "delta": 1}),
    "stop_reason not a string": finish(1),  # type: ignore[arg-type]
    "usage not an object": finish("end_turn", usage=1),  # type: ignore[arg-type]
    "repeated tool ids": block(0, {"type": "tool_use", "id": "t", "name": "f"})
    + stop(0)
    + block(1, {"type": "tool_use", "id": "t", "name": "f"})
    + stop(1)
    + finish("tool_use")
    + STOP,
    "too deep": ev('{"type":"ping","x":' + "[" * 600 + "]" * 600 + "}", "ping"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_what_breaks_the_protocol_is_an_error_whole_and_bytewise(
    name: str, json_backend: str
) -> None:
    body = START + BAD[name] if not name.startswith("a second") else BAD[name]
    with pytest.raises(PeerProtocolError) as whole:
        run(MessagesStreamDecoder(), [body])
    with pytest.raises(PeerProtocolError) as split:
        run(MessagesStreamDecoder(), bytewise(body))
    assert type(whole.value) is type(split.value)
    assert whole.value.offset == split.value.offset
    if name == "repeated tool ids":
        assert isinstance(whole.value, ToolCallError)


def test_too_many_open_blocks() -> None:
    tool = {"type": "tool_use", "id": "t", "name": "f"}
    body = START + b"".join(block(i, {**tool, "id": f"t{i}"}) for i in range(MAX_OPEN_BLOCKS + 1))
    with pytest.raises(PeerProtocolError) as caught:
        decode(body)
    assert (caught.value.limit, caught.value.limit_value) == ("max_open_blocks", MAX_OPEN_BLOCKS)


@pytest.mark.parametrize("kind", ["text", "thinking"])
def test_two_open_blocks_of_text_would_interleave(kind: str) -> None:
    """Attack 37, F6: text blocks 0 and 1 both open, their deltas "B", "A", "B2" were one text
    "BAB2", where the Messages API reads "A" then "BB2". Anthropic opens one block at a time;
    a second text (or thinking) block while one is open is refused, naming both."""
    body = START + block(0, {"type": kind}) + block(1, {"type": kind})
    with pytest.raises(PeerProtocolError, match=rf"a {kind} block \(1\) opened while block 0"):
        decode(body)
    closed = START + block(0, {"type": kind}) + stop(0) + block(1, {"type": kind})
    decode(closed + stop(1) + STOP)  # one after the other: as Anthropic sends them


@pytest.mark.parametrize("where", ["hot", "start", "reasoning", "tool"])
def test_max_result_size_is_a_bound_on_every_path(where: str) -> None:
    body = {
        "hot": TEXT,
        "start": block(0, {"type": "text", "text": "hi"}),
        "reasoning": block(0, {"type": "thinking", "thinking": ""})
        + delta(0, {"type": "thinking_delta", "thinking": "hi"}),
        "tool": block(0, {"type": "tool_use", "id": "t", "name": "f"})
        + delta(0, {"type": "input_json_delta", "partial_json": "{}"}),
    }[where]
    with pytest.raises(PeerProtocolError) as caught:
        decode(START + body, max_result_size=1)
    assert caught.value.limit == "max_result_size"


def test_invalid_utf8_is_an_error_or_replaced() -> None:
    bad = (
        START
        + block(0, {"type": "text"})
        + delta(0, {"type": "text_delta", "text": "A"}).replace(b"A", b"\xff")
    )
    with pytest.raises(PeerProtocolError, match="UTF-8"):
        decode(bad)
    _events, d = decode(bad, errors="replace")
    assert d.result.text == "\ufffd"


def test_what_is_noted_and_not_carried() -> None:
    body = (
        ev({"type": "ping"})
        + block(0, {"type": "text", "text": "early"})
        + ev(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "!"},
            },
            "wrong",
        )
        + ev({"type": "content_block_stop", "index": 0}, "also_wrong")
        + block(1, {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}})
        + delta(1, {"type": "input_json_delta", "partial_json": "{}"})
        + delta(1, {"type": "citations_delta", "citation": {}})
        + delta(1, {"type": "brand_new_delta"})
        + stop(1)
        + ev({"type": "brand_new_event"})
        + ev({"type": "ping"}, None)
        + finish("made_up")
        + finish("end_turn")
        + block(2, {"type": "text"})
        + STOP
    )
    events, d = decode(body)
    r = d.result
    assert r.text == "early!"
    assert r.finish_reason is FinishReason.OTHER
    assert r.finish_raw == "made_up"
    assert d.pings == 2
    assert r.problems == (
        "content came before message_start",
        "an SSE event named 'wrong' carried type 'content_block_delta'",
        "an SSE event named 'also_wrong' carried type 'content_block_stop'",
        "content blocks of type 'server_tool_use' are not carried (kept out of the text)",
        "citations are not carried",
        "'brand_new_delta' deltas are not carried",
        "ignored events of unknown type 'brand_new_event'",
        "unknown stop_reason 'made_up'",
        "a second stop_reason 'end_turn' after 'made_up'",
        "message_stop with blocks still open: [2]",
    )
    assert r.complete  # a stop reason then message_stop: the stream is whole, whatever it said
    assert not any(isinstance(e, StreamStarted) for e in events)


def test_thinking_blocks_given_whole_at_their_start() -> None:
    body = START + block(0, {"type": "thinking", "thinking": "hm", "signature": "sig"}) + stop(0)
    events, d = decode(body + finish("end_turn") + STOP)
    assert events[1:3] == [
        ReasoningDelta(text="hm", carrier="thinking"),
        ReasoningSignature(signature="sig", carrier="thinking"),
    ]
    assert [(b.text, b.signature) for b in d.result.reasoning_blocks] == [("hm", "sig")]


def test_a_tool_call_whose_input_came_whole_at_its_start() -> None:
    start = {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}
    body = START + block(0, start) + stop(0)
    body += block(1, {"type": "tool_use", "id": "t2", "name": "g", "input": {"b": 2}})
    body += delta(1, {"type": "input_json_delta", "partial_json": ""})
    body += delta(1, {"type": "input_json_delta", "partial_json": '{"c": 3}'}) + stop(1)
    body += block(2, {"type": "tool_use", "id": "t3", "name": "h"}) + stop(2)
    events, d = decode(body + finish("tool_use") + STOP, declared_tools=["f", "g"])
    calls = d.result.tool_calls
    assert [(c.id, c.arguments, c.declared) for c in calls] == [
        ("t1", '{"a":1}', True),
        ("t2", '{"c": 3}', True),
        ("t3", "{}", False),
    ]
    assert "tool call 't3' calls 'h', not declared by the request" in d.result.problems
    assert [e for e in events if isinstance(e, ToolCall)] == list(calls)


def test_tool_calls_and_stop_reasons_that_disagree_are_noted() -> None:
    thought = ev(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "t"},
        },
        "y",
    )
    _, d = decode(
        START + block(0, {"type": "thinking"}) + thought + stop(0) + finish("end_turn") + STOP
    )
    assert d.result.problems == ("an SSE event named 'y' carried type 'content_block_delta'",)
    bad = delta(0, {"type": "thinking_delta", "thinking": 1})
    with pytest.raises(PeerProtocolError, match="thinking"):
        decode(START + block(0, {"type": "thinking"}) + bad)
    named = ev(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{}"},
        },
        "x",
    )
    call = block(0, {"type": "tool_use", "id": "t", "name": "f"}) + named + stop(0)
    _, d = decode(START + call + finish("end_turn") + STOP)
    assert d.result.problems[0] == "an SSE event named 'x' carried type 'content_block_delta'"
    call = block(0, {"type": "tool_use", "id": "t", "name": "f"}) + stop(0)
    _, d = decode(START + call + finish("end_turn") + STOP)
    assert d.result.problems == ("tool calls arrived with stop_reason 'end_turn'",)
    _, d = decode(START + finish("tool_use") + STOP)
    assert d.result.problems == ("stop_reason 'tool_use' without any tool call",)
    _, d = decode(START + STOP)
    assert d.result.problems == ("message_stop came without a stop_reason",)
    assert not d.result.complete
    events, d = decode(STOP + START)  # nothing came before it: a cut, not an empty message
    assert d.result.problems[0] == "message_stop came before any message_start"
    assert events[-1] == StreamEnded(complete=False, done=False)
    events, d = decode(START + call + STOP)  # the calls are whole at the end all the same
    assert d.result.problems == ("message_stop came without a stop_reason",)  # (attack 48 F1:
    assert [c.name for c in d.result.tool_calls] == ["f"]  # a whole answer dropped them)
    assert [type(e).__name__ for e in events][-2:] == ["ToolCall", "StreamEnded"]


def test_usage_merges_and_keeps_every_count() -> None:
    body = START + finish(
        "end_turn",
        {
            "output_tokens": 9,
            "cache_read_input_tokens": 4,
            "input_tokens": None,
            "cache_creation_input_tokens": -1,
            "output_tokens_details": {"thinking_tokens": 5},
            "vendor:svir": {"total_tokens": 99},
        },
    )
    _, d = decode(body + STOP)
    assert d.result.usage == Usage(
        prompt_tokens=7, completion_tokens=9, total_tokens=99, reasoning_tokens=5, cached_tokens=4
    )
    _, d = decode(
        START.replace(b'"usage": {"input_tokens": 3, "output_tokens": 1}', b'"usage": {}') + STOP
    )
    assert d.result.usage == Usage()


def test_an_error_event_ends_the_stream() -> None:
    events, d = decode(START + ev({"type": "error"}) + TEXT)
    assert isinstance(events[-2], StreamFailed)
    assert events[-2].error.kind is FailureKind.SERVER_ERROR
    assert events[-2].error.message == "the server reported an error without a message"
    assert events[-1] == StreamEnded(complete=False, done=True)
    assert d.result.ignored_after_done == 2
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    events, d = decode(ev(error))
    assert d.result.error is not None
    assert (d.result.error.kind, d.result.error.code) == (
        FailureKind.RATE_LIMITED,
        "rate_limit_error",
    )
    overflow = {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}
    _, d = decode(ev({"type": "error", "error": overflow}))
    assert d.result.error is not None
    assert d.result.error.kind is FailureKind.CONTEXT_OVERFLOW


def test_a_cut_body() -> None:
    events, d = decode(START + TEXT[:-5])
    assert events[-1] == StreamEnded(complete=False, done=False)
    assert d.result.cut
    assert d.result.problems == ("the body ended before message_stop",)
    assert isinstance(events[-2], Usage)  # the counts of message_start, as they were


def test_what_follows_the_end_is_counted_and_its_framing_errors_noted() -> None:
    body = START + finish("end_turn") + STOP + TEXT + b"event: \xff\ndata: x\n\n"
    events, d = decode(body)
    assert events[-1] == StreamEnded(complete=True, done=True)
    assert d.result.ignored_after_done == 2
    assert any(p.startswith("after the end of the stream") for p in d.result.problems)


def test_pending_tool_calls_of_a_cut_stream() -> None:
    body = START + block(0, {"type": "tool_use", "id": "t", "name": "f"})
    body += delta(0, {"type": "input_json_delta", "partial_json": '{"a'})
    events, d = decode(body)
    assert events[1] == ToolCallDelta(index=0, id="t", name="f", arguments="")
    assert d.result.pending_tool_calls == (
        ToolCallDelta(index=0, id="t", name="f", arguments='{"a'),
    )


def test_the_backend_is_read_at_construction() -> None:
    assert MessagesStreamDecoder()._loads is _json.loads


def test_empty_pieces_carry_nothing_and_odd_counts_are_ignored() -> None:
    bare = ev({"type": "message_start", "message": {"id": "m1"}})
    body = bare + TEXT + delta(0, {"type": "text_delta", "text": ""}) + stop(0)
    body += block(1, {"type": "thinking", "thinking": ""})
    body += delta(1, {"type": "thinking_delta", "thinking": ""})
    body += delta(1, {"type": "signature_delta", "signature": ""}) + stop(1)
    body += ev({"type": "brand_new"}) + ev({"type": "brand_new"})
    usage = {"output_tokens": 1, "output_tokens_details": {"thinking_tokens": -1}}
    body += finish("end_turn", {**usage, "vendor:svir": {"total_tokens": "many"}}) + STOP
    events, d = decode(body)
    assert [type(e).__name__ for e in events] == [
        "StreamStarted",
        "TextDelta",
        "Finished",
        "Usage",
        "StreamEnded",
    ]
    assert d.result.usage == Usage(completion_tokens=1)
    assert d.result.problems == ("ignored events of unknown type 'brand_new'",)
    assert d.model == ""


def _answer(n: int) -> bytes:
    """Signed thinking, then text, then a tool call: ``n`` deltas of 10 characters each."""
    body = START + block(0, {"type": "thinking", "thinking": ""})
    thinking = ({"type": "thinking_delta", "thinking": f"{i:010d}"} for i in range(n))
    body += b"".join(delta(0, d) for d in thinking)
    body += delta(0, {"type": "signature_delta", "signature": "sig"}) + stop(0)
    body += block(1, {"type": "text", "text": "0123456789"})
    body += b"".join(delta(1, {"type": "text_delta", "text": f"{i:010d}"}) for i in range(n))
    body += stop(1) + block(2, {"type": "tool_use", "id": "t", "name": "f", "input": {}})
    body += delta(2, {"type": "input_json_delta", "partial_json": '{"a":'})
    body += delta(2, {"type": "input_json_delta", "partial_json": " 1}"}) + stop(2)
    return body + finish("tool_use", {"output_tokens": 9}) + STOP


@pytest.mark.parametrize("mode", FEEDS)
def test_without_keep_text_the_text_is_neither_kept_nor_bounded(mode: str) -> None:
    # a relay passes the deltas on: 810 characters of text and thinking pass a bound of 50,
    # which still counts the signature and the arguments
    kept, relay = relayed(MessagesStreamDecoder, _answer(40), mode, max_result_size=BLOCK + 50)
    assert kept.text == "0123456789" + "".join(f"{i:010d}" for i in range(40))  # as before
    assert [(b.text, b.signature) for b in kept.reasoning_blocks] == [(kept.reasoning, "sig")]
    assert [(b.text, b.signature) for b in relay.reasoning_blocks] == [("", "sig")]
    assert relay.tool_calls[0].arguments == '{"a": 1}'
    with pytest.raises(PeerProtocolError) as caught:  # the same bound keeps the text
        decode(_answer(40), max_result_size=BLOCK + 50)
    assert caught.value.limit == "max_result_size"


@pytest.mark.parametrize("mode", FEEDS)
def test_without_keep_text_the_arguments_are_still_bounded(mode: str) -> None:
    d = MessagesStreamDecoder(keep_text=False, max_result_size=BLOCK + 10)  # sig and 7 of 8
    with pytest.raises(PeerProtocolError) as caught:
        run(d, feed_as(mode, _answer(40)))
    assert caught.value.limit == "max_result_size"
    assert d.result.text == ""
