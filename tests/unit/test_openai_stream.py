"""ChatStreamDecoder: each rule of the module docstring, its errors, limits and bounds."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from svir_proto import (
    NEED_DATA,
    CallerProtocolError,
    FailureKind,
    Finished,
    FinishReason,
    PeerProtocolError,
    ReasoningDelta,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCallDelta,
)
from svir_proto._dialect import MAX_ENTRIES
from svir_proto.openai import ChatStreamDecoder, ToolCallError
from tests.helpers import bytewise, run

HEAD = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> bytes:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if delta is not None:
        choice["delta"] = delta
    obj = {**HEAD, "choices": [choice], **top}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


def decode(body: bytes, **options: Any) -> tuple[list[Any], ChatStreamDecoder]:
    d = ChatStreamDecoder(**options)
    return run(d, [body]), d


def test_pull_api() -> None:
    d = ChatStreamDecoder()
    assert d.next_event() is NEED_DATA
    d.receive_data(chunk({"content": "hi"}))
    assert d.next_event() == StreamStarted(response_id="c1", model="m", created=1)
    assert d.next_event() == TextDelta(text="hi")
    assert d.next_event() is NEED_DATA
    d.receive_data(chunk({}, "stop") + DONE)
    assert d.next_event() == Finished(reason=FinishReason.STOP, raw="stop")
    end = d.next_event()
    assert end == StreamEnded(complete=True, done=True)
    assert d.next_event() is end


def test_complete_needs_finish_and_done_and_no_error() -> None:
    _, d = decode(chunk({"content": "x"}) + chunk({}, "stop") + DONE)
    assert d.result.complete
    assert d.result.done
    assert d.result.closed
    _, d = decode(chunk({"content": "x"}) + chunk({}, "stop"))  # cut before [DONE]
    assert not d.result.complete
    assert d.result.finish_reason is FinishReason.STOP


def test_calls_are_whole_at_done_without_a_finish() -> None:
    """Attack 48 F1: a stream that ended with ``[DONE]`` and never said its finish gave its
    calls as deltas only, and a whole answer made of it dropped them: they are whole at the
    marker, and the missing finish is said."""
    call = {"tool_calls": [{"index": 0, "id": "t", "type": "function",
                            "function": {"name": "f", "arguments": "{}"}}]}  # fmt: skip
    events, d = decode(chunk(call) + DONE)
    assert [(c.id, c.name, c.arguments) for c in d.result.tool_calls] == [("t", "f", "{}")]
    assert [type(e).__name__ for e in events][-2:] == ["ToolCall", "StreamEnded"]
    assert d.result.problems == ("[DONE] came without a finish_reason",)
    assert not d.result.complete


def test_result_before_the_end() -> None:
    d = ChatStreamDecoder()
    d.feed(chunk({"content": "par"}) + chunk({"content": "tial"}))
    r = d.result
    assert r.text == "partial"
    assert not r.complete
    assert not r.closed
    assert d.result.text == "partial"  # joining twice changes nothing


def test_cut_inside_an_event_is_recorded() -> None:
    _, d = decode(chunk({"content": "x"}) + b'data: {"id":')
    assert d.result.cut
    assert not d.result.complete


def test_json_error_names_the_offset_and_keeps_what_came_before() -> None:
    good = chunk({"content": "kept"})
    d = ChatStreamDecoder()
    assert TextDelta(text="kept") in d.feed(good + b'data: {"id": nope}\n\n')
    with pytest.raises(PeerProtocolError) as info:
        d.close()
    assert info.value.offset == len(good) + 6 + len('{"id": ')
    assert d.result.text == "kept"
    with pytest.raises(PeerProtocolError):  # poisoned
        d.next_event()


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"[1, 2]", "JSON object"),
        (b'"text"', "JSON object"),
        (b'{"choices": {}}', "must be a list"),
        (b'{"choices": [1]}', "choice must be an object"),
        (b'{"choices": [{"index": 1, "delta": {"content": "x"}}]}', "one choice"),
        (b'{"choices": [{"delta": []}]}', "must be an object"),
        (b'{"choices": [{"delta": {"content": 5}}]}', "content must be a string"),
        (b'{"choices": [{"delta": {"reasoning": 5}}]}', "reasoning must be a string"),
        (b'{"choices": [{"delta": {"tool_calls": {}}}]}', "must be a list"),
        (b'{"choices": [{"delta": {"tool_calls": [5]}}]}', "must be an object"),
        (b'{"choices": [{"delta": {"tool_calls": [{"index": -1}]}}]}', "index must be"),
        (b'{"choices": [{"delta": {"tool_calls": [{"id": 7}]}}]}', "id must be a string"),
        (b'{"choices": [{"delta": {"tool_calls": [{"function": 7}]}}]}', "must be an object"),
        (b'{"choices": [{"finish_reason": 3}]}', "finish_reason must be"),
        (b'{"usage": 3}', "'usage' must be an object"),
        (b"[" * 100_000, "nested|not JSON"),
        (b'{"a": "\xff"}', "UTF-8"),
    ],
)
def test_malformed_chunks_are_remote_errors(payload: bytes, match: str, json_backend: str) -> None:
    with pytest.raises(PeerProtocolError, match=match):
        decode(b"data: " + payload + b"\n\n")


def test_invalid_utf8_offset() -> None:
    with pytest.raises(PeerProtocolError) as info:
        decode(b'data: {"a": "b\xffc"}\n\n')
    assert info.value.offset == 6 + len('{"a": "b')


def test_identity_skips_azure_filter_chunks_and_notes_a_change() -> None:
    prompt = b'data: {"choices":[],"created":0,"id":"","model":"","prompt_filter_results":[]}\n\n'
    body = prompt + chunk({"content": "a"}) + chunk({"content": "b"}, id="other")
    events, d = decode(body)
    assert events[0] == StreamStarted(response_id="c1", model="m", created=1)
    assert any("chunk id changed" in p for p in d.result.problems)


def test_a_server_without_identity_still_starts() -> None:
    events, _ = decode(b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n' + DONE)
    assert events[0] == StreamStarted(response_id="", model="")
    assert events[1] == TextDelta(text="x")


def test_empty_choices_no_object_no_delta_never_crash() -> None:
    body = (
        b'data: {"choices":[]}\n\n'
        b'data: {"id":"c1","choices":[{"index":0}]}\n\n'
        b'data: {"id":"c1","choices":[{"index":0,"delta":null,"finish_reason":null}]}\n\n'
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":null,"role":null,'
        b'"reasoning_content":null,"refusal":null,"tool_calls":null,"audio":{}}}]}\n\n'
    )
    events, d = decode(body)
    assert [type(e) for e in events] == [StreamStarted, StreamEnded]
    assert d.result.text == ""


def test_second_finish_is_noted_not_applied() -> None:
    _, d = decode(chunk({}, "stop") + chunk({}, "length") + DONE)
    assert d.result.finish_reason is FinishReason.STOP
    assert any("second finish_reason" in p for p in d.result.problems)


def test_unknown_finish_reason_is_other_with_raw() -> None:
    events, _ = decode(chunk({}, "abort") + DONE)
    assert Finished(reason=FinishReason.OTHER, raw="abort") in events


@pytest.mark.parametrize("raw", ["stop_sequence", "eos_token"])
def test_tgi_stops_are_stops_with_raw_kept(raw: str) -> None:
    # TGI's chat stream says "stop_sequence" when a stop sequence of the request ended the
    # answer (its router's FinishReason::format); older versions said "eos_token" for "stop"
    body = (
        b'data:{"object":"chat.completion.chunk","id":"","created":1750000000,"model":"tgi",'
        b'"choices":[{"index":0,"delta":{"role":"assistant","content":"1, 2"},"logprobs":null,'
        b'"finish_reason":null}]}\n\n'
        b'data:{"object":"chat.completion.chunk","id":"","created":1750000000,"model":"tgi",'
        b'"choices":[{"index":0,"delta":{"role":"assistant","content":","},"logprobs":null,'
        b'"finish_reason":"' + raw.encode() + b'"}]}\n\ndata:[DONE]\n\n'
    )
    events, d = decode(body)
    assert Finished(reason=FinishReason.STOP, raw=raw) in events
    assert d.result.usable
    assert d.result.text == "1, 2,"
    from svir_proto.openai.encoder import finish_value

    assert finish_value(Finished(reason=FinishReason.STOP, raw=raw)) == "stop"  # never written


def test_finish_and_calls_mismatch_is_reported_not_repaired() -> None:
    call = {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]}
    _, d = decode(chunk(call) + chunk({}, "stop") + DONE)
    assert d.result.finish_reason is FinishReason.STOP
    assert len(d.result.tool_calls) == 1
    assert any("finish_reason 'stop'" in p for p in d.result.problems)
    _, d = decode(chunk({}, "tool_calls") + DONE)
    assert any("without any tool call" in p for p in d.result.problems)
    _, d = decode(chunk(call) + chunk({}, "length") + DONE)
    assert d.result.problems == ()


def tc(**piece: Any) -> bytes:
    return chunk({"tool_calls": [piece]})


@pytest.mark.parametrize(
    ("pieces", "match"),
    [
        (
            [
                tc(index=0, id="a", function={"name": "f"}),
                tc(index=2, id="b", function={"name": "g"}),
            ],
            "contiguous",
        ),
        ([tc(index=0, function={"name": "f"})], "has no id"),
        ([tc(index=0, id="a"), tc(index=1, id="b", function={"name": "g"})], "has no name"),
        (
            [
                tc(index=0, id="a", function={"name": "f"}),
                tc(index=1, id="a", function={"name": "g"}),
            ],
            "repeats the id",
        ),
    ],
)
def test_tool_call_violations_name_the_call(pieces: list[bytes], match: str) -> None:
    d = ChatStreamDecoder()
    body = b"".join(pieces) + chunk({}, "tool_calls") + DONE
    with pytest.raises(ToolCallError, match=match) as info:
        run(d, [body])
    assert isinstance(info.value, PeerProtocolError)
    assert info.value.call_id in ("a", "b", "")
    assert not d.result.complete
    assert d.result.tool_calls == ()
    assert d.result.pending_tool_calls


@pytest.mark.parametrize(
    ("indices", "missing"),
    [([0, 2], "(missing 1)"), ([3, 10**12], "(missing 0, 1, 2, 4, 5, 6, 7, 8, ...)")],
)
def test_a_gap_in_tool_call_indices_is_named_in_bounded_memory(
    indices: list[int], missing: str
) -> None:
    """Attack 22: an index of 10**12 made the gap check build a set of 10**12 integers; the
    missing indices are counted up to eight, and the rest said to be more."""
    pieces = [tc(index=i, id=f"c{i}", function={"name": "f"}) for i in indices]
    with pytest.raises(ToolCallError) as info:
        run(ChatStreamDecoder(), [b"".join(pieces) + chunk({}, "tool_calls") + DONE])
    assert str(info.value).split(": ", 1)[1].endswith(missing), str(info.value)


def test_tool_calls_only_when_complete() -> None:
    body = tc(index=0, id="a", function={"name": "f", "arguments": '{"x":'}) + chunk(
        {}, "tool_calls"
    )
    events, d = decode(body)  # no [DONE]
    assert not any(type(e).__name__ == "ToolCall" for e in events)
    assert d.result.tool_calls == ()
    assert d.result.pending_tool_calls == (
        ToolCallDelta(index=0, id="a", name="f", arguments='{"x":'),
    )


def test_reused_index_with_new_id_is_a_new_call() -> None:
    body = (
        tc(index=0, id="a", function={"name": "f", "arguments": "{}"})
        + tc(index=0, id="b", function={"name": "g", "arguments": "{}"})
        + chunk({}, "tool_calls")
        + DONE
    )
    events, d = decode(body)
    assert [(c.index, c.id, c.name) for c in d.result.tool_calls] == [(0, "a", "f"), (1, "b", "g")]
    # each call's deltas carry its own index, as its whole call does (attack 49b F1: both
    # carried 0, and an encoder wrote b's arguments into a's block)
    deltas = [(e.index, e.id) for e in events if isinstance(e, ToolCallDelta)]
    assert deltas == [(0, "a"), (1, "b")]


def test_an_index_a_reused_index_took_goes_to_the_next_free_one() -> None:
    """A call that reused index 0 took index 1 for its own: a later call of wire index 1 has
    the next one; pieces of each wire index go on to the last call given it; a gap in what
    they were given is still a gap."""
    body = (
        tc(index=0, id="a", function={"name": "f", "arguments": "{"})
        + tc(index=0, id="b", function={"name": "g", "arguments": "{"})
        + tc(index=1, id="c", function={"name": "h", "arguments": "{"})
        + tc(index=0, function={"arguments": "}"})
        + tc(index=1, function={"arguments": "}"})
        + chunk({}, "tool_calls")
    )
    events, d = decode(body + DONE)
    deltas = [(e.index, e.id, e.arguments) for e in events if isinstance(e, ToolCallDelta)]
    assert deltas == [(0, "a", "{"), (1, "b", "{"), (2, "c", "{"), (1, None, "}"), (2, None, "}")]
    assert [(c.index, c.id, c.arguments) for c in d.result.tool_calls] == [
        (0, "a", "{"), (1, "b", "{}"), (2, "c", "{}")
    ]  # fmt: skip
    with pytest.raises(PeerProtocolError, match=r"contiguous from 0: \[0, 1, 3\] \(missing 2\)"):
        decode(body.replace(b'"index": 1', b'"index": 3') + DONE)


def test_piece_without_index_or_id_goes_to_the_only_open_call() -> None:
    body = (
        tc(index=0, id="a", function={"name": "get_", "arguments": '{"q":'})
        + tc(function={"name": "weather", "arguments": "1}"})
        + chunk({}, "tool_calls")
        + DONE
    )
    _, d = decode(body)
    (call,) = d.result.tool_calls
    assert (call.name, call.arguments) == ("get_weather", '{"q":1}')


def test_ambiguous_piece_is_an_error() -> None:
    body = tc(index=0, id="a", function={"name": "f"}) + tc(index=1, id="b", function={"name": "g"})
    with pytest.raises(PeerProtocolError, match="neither index nor id"):
        decode(body + tc(function={"arguments": "x"}))


def test_invalid_arguments_are_reported_per_call() -> None:
    body = (
        tc(index=0, id="a", function={"name": "f", "arguments": '{"ok": true}'})
        + tc(index=1, id="b", function={"name": "g", "arguments": "{broken"})
        + chunk({}, "tool_calls")
        + DONE
    )
    _, d = decode(body)
    ok, bad = d.result.parsed_arguments()
    assert ok.value == {"ok": True}
    assert ok.error is None
    assert bad.error is not None
    assert "'b'" in bad.error


def test_max_tool_calls_is_a_named_limit() -> None:
    body = b"".join(tc(index=i, id=f"c{i}", function={"name": "f"}) for i in range(4))
    with pytest.raises(PeerProtocolError) as info:
        decode(body, max_tool_calls=3)
    assert info.value.limit == "max_tool_calls"


def test_max_result_size_is_a_named_limit() -> None:
    with pytest.raises(PeerProtocolError) as info:
        decode(
            chunk({"content": "x" * 50}) + chunk({"reasoning_content": "y" * 60}),
            max_result_size=100,
        )
    assert info.value.limit == "max_result_size"
    assert info.value.limit_value == 100


def test_max_event_size_passes_through() -> None:
    with pytest.raises(PeerProtocolError) as info:
        decode(chunk({"content": "x" * 500}), max_event_size=100)
    assert info.value.limit == "max_event_size"


def test_reasoning_under_both_keys_once_and_different_texts_twice() -> None:
    events, _ = decode(chunk({"reasoning_content": "a", "reasoning": "a"}))
    assert [e for e in events if isinstance(e, ReasoningDelta)] == [
        ReasoningDelta(text="a", carrier="reasoning_content")
    ]
    events, d = decode(
        chunk({"reasoning": "b"}) + chunk({"reasoning_content": "c", "reasoning": "d"})
    )
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["b", "c", "d"]
    assert d.result.reasoning_carrier == "reasoning"


def test_think_tags_can_be_disabled() -> None:
    _, d = decode(
        chunk({"content": "<think>x</think>y"}) + chunk({}, "stop") + DONE, think_tags=False
    )
    assert d.result.text == "<think>x</think>y"
    assert d.result.reasoning == ""


def test_unclosed_think_at_the_end_stays_reasoning() -> None:
    _, d = decode(chunk({"content": "<think>still thinking</thi"}))
    assert d.result.reasoning == "still thinking</thi"
    assert d.result.text == ""


def test_orphan_close_marker_is_text() -> None:
    _, d = decode(chunk({"content": "a</think>b"}))
    assert d.result.text == "a</think>b"


def test_error_chunk_keeps_what_came_before_and_is_not_complete() -> None:
    body = (
        chunk({"content": "half"})
        + b'data: {"error":{"message":"boom","code":"rate_limit_exceeded"}}\n\n'
        + DONE
    )
    events, d = decode(body)
    failed = [e for e in events if isinstance(e, StreamFailed)]
    assert failed[0].error.kind is FailureKind.RATE_LIMITED
    assert d.result.text == "half"
    assert d.result.error == failed[0].error
    assert not d.result.complete
    assert events[-1] == StreamEnded(complete=False, done=True)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            {"message": "This model's maximum context length is 8192 tokens"},
            FailureKind.CONTEXT_OVERFLOW,
        ),
        ({"message": "x", "code": "context_length_exceeded"}, FailureKind.CONTEXT_OVERFLOW),
        ({"message": "x", "code": "content_filter"}, FailureKind.CONTENT_FILTER),
        ({"message": "Server is overloaded"}, FailureKind.OVERLOADED),
        ({"message": "something else"}, FailureKind.SERVER_ERROR),
        ("a plain string error", FailureKind.SERVER_ERROR),
    ],
)
def test_in_stream_error_kinds(error: Any, kind: FailureKind) -> None:
    events, _ = decode(b"data: " + json.dumps({"error": error}).encode() + b"\n\n")
    assert next(e for e in events if isinstance(e, StreamFailed)).error.kind is kind


def test_usage_missing_only_when_expected_and_ended() -> None:
    body = chunk({"content": "x"}) + chunk({}, "stop") + DONE
    assert decode(body, expect_usage=True)[1].result.usage_missing
    assert not decode(body)[1].result.usage_missing
    d = ChatStreamDecoder(expect_usage=True)
    d.feed(chunk({"content": "x"}))
    assert not d.result.usage_missing  # not ended yet: it may still come


def test_usage_on_every_chunk_keeps_the_last() -> None:
    body = chunk(
        {"content": "a"}, usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    )
    body += chunk(
        {"content": "b"}, usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    )
    _, d = decode(body)
    assert d.result.usage is not None
    assert d.result.usage.completion_tokens == 2


def test_data_after_done_is_counted_even_after_the_terminal_event() -> None:
    d = ChatStreamDecoder()
    events = d.feed(chunk({}, "stop") + DONE)
    assert events[-1] == StreamEnded(complete=True, done=True)
    assert d.feed(chunk({"content": "late"}) + b"data: garbage\n\n") == []
    assert d.close() == []
    assert d.result.ignored_after_done == 2
    assert d.result.closed
    assert d.result.text == ""


def test_an_error_event_after_done_is_ignored_like_data() -> None:
    body = chunk({}, "stop") + DONE + b"event: error\ndata: oops\n\n"
    events, d = decode(body)
    assert events[-1] == StreamEnded(complete=True, done=True)
    assert d.result.error is None
    assert d.result.ignored_after_done == 1


def test_local_error_after_close() -> None:
    d = ChatStreamDecoder()
    d.close()
    with pytest.raises(CallerProtocolError):
        d.feed(b"data: x\n\n")


def test_split_marker_bytewise_equals_whole() -> None:
    body = (
        chunk({"content": "a<thi"}) + chunk({"content": "nk>b</think>c"}) + chunk({}, "stop") + DONE
    )
    d1, d2 = ChatStreamDecoder(), ChatStreamDecoder()
    run(d1, [body])
    run(d2, bytewise(body))
    assert d1.result == d2.result
    assert (d1.result.text, d1.result.reasoning) == ("ac", "b")


def test_stdlib_json_path_without_orjson() -> None:
    """With orjson blocked from importing, the standard library parses, and decodes the same."""
    code = (
        "import sys; sys.modules['orjson'] = None\n"
        "from svir_proto import _json\n"
        "from svir_proto.openai import ChatStreamDecoder\n"
        "d = ChatStreamDecoder()\n"
        'd.feed(b\'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}\\n\\n'
        "data: [DONE]\\n\\n')\n"
        "print(_json.BACKEND, d.result.text, d.result.complete)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["json", "hi", "True"]


def test_fuzz_crash_bad_framing_after_done_is_noted_once() -> None:
    """fuzz/corpus/openai/crash-after-done-bad-utf8: after [DONE], a line that is not UTF-8
    broke SSE framing; the framer was then asked again on every piece, so the problem was noted
    once per piece and the result depended on the split."""
    body = chunk({}, "stop") + DONE + b"data: x\n\n: \xb4bad\n\ndata: y\n\n"
    whole = ChatStreamDecoder()
    run(whole, [body])
    split = ChatStreamDecoder()
    run(split, bytewise(body))
    assert whole.result == split.result
    assert whole.result.complete
    assert len(whole.result.problems) == 1
    assert whole.result.ignored_after_done == 1


def test_a_name_continuation_equal_to_the_name_so_far_reads_as_a_repeat() -> None:
    """The documented limit of Rule 3: "aa" sent as "a", "a" cannot be told from a repeat."""
    body = tc(index=0, id="x", function={"name": "a"}) + tc(index=0, function={"name": "a"})
    _, d = decode(body + chunk({}, "tool_calls") + DONE)
    assert d.result.tool_calls[0].name == "a"


# -- less travelled paths ----------------------------------------------------------------------


def test_a_changing_chunk_id_is_noted_once() -> None:
    body = chunk({"content": "a"}) + b"".join(chunk({"content": x}, id=f"c{x}") for x in "bc")
    _, d = decode(body + chunk({}, "stop") + DONE)
    assert [p for p in d.result.problems if "chunk id" in p] == [
        "chunk id changed from 'c1' to 'cb'"
    ]


def test_prompt_filter_results_that_say_nothing_give_no_verdict() -> None:
    prompt = [7, {"prompt_index": 0, "content_filter_results": {}}, {"prompt_index": 1}]
    events, _ = decode(chunk({"content": "a"}, prompt_filter_results=prompt) + DONE)
    assert not [e for e in events if type(e).__name__ == "FilterVerdict"]


def test_filter_results_skip_what_is_not_a_result() -> None:
    results = {"hate": "high", "violence": [{"filtered": True, "severity": "high"}, 3]}
    body = chunk({"content": "a"}) + (
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":null,'
        b'"content_filter_results":' + json.dumps(results).encode() + b"}]}\n\n"
    )
    events, _ = decode(body + DONE)
    verdicts = [e for e in events if type(e).__name__ == "FilterVerdict"]
    assert [(r.category, r.filtered) for r in verdicts[0].results] == [("violence", True)]


def test_a_tool_call_piece_by_id_alone_or_by_nothing_at_all() -> None:
    first = {"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{"}}]}
    more = {"tool_calls": [{"function": {"arguments": "}"}}]}
    d = ChatStreamDecoder()
    events = d.feed(chunk(first) + chunk(more) + chunk({}, "tool_calls"))
    assert [e.arguments for e in events if isinstance(e, ToolCallDelta)] == ["{", "}"]
    with pytest.raises(ToolCallError, match="has no id"):
        d.feed(DONE)
    two = {
        "tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}},
            {"index": 1, "id": "b", "function": {"name": "g", "arguments": ""}},
        ]
    }
    by_id = {"tool_calls": [{"id": "b", "function": {"arguments": "{}"}}]}
    _, d = decode(chunk(two) + chunk(by_id) + chunk({}, "tool_calls") + DONE)
    assert [(c.id, c.arguments) for c in d.result.tool_calls] == [("a", ""), ("b", "{}")]


def test_a_lt_sign_that_starts_no_marker_is_text_at_once() -> None:
    events, _ = decode(chunk({"content": "a<th<x"}) + chunk({"content": "y"}) + DONE)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["a<th<x", "y"]


def test_the_first_failure_in_a_stream_is_the_one_kept() -> None:
    body = (
        b'data: {"error": {"message": "first", "type": "server_error"}}\n\n'
        b'data: {"error": {"message": "second", "type": "server_error"}}\n\n'
    )
    _, d = decode(body)
    assert d.result.error is not None
    assert d.result.error.message == "first"


def test_arguments_for_a_call_never_opened_after_the_envelope_is_learned() -> None:
    """The learned envelope reads ``{"index": i, "function": {"arguments": ...}}`` at once (in
    OpenAI's compact JSON); for an index no piece opened, it takes the general rules, which
    open a call with no id, and the end names it, as the general path does for that chunk."""

    def compact(delta: dict[str, Any], finish: str | None = None) -> bytes:
        obj = {**HEAD, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"

    opened = compact({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]})
    args = compact({"tool_calls": [{"index": 0, "function": {"arguments": "x"}}]}) * 12
    stray = compact({"tool_calls": [{"index": 1, "function": {"arguments": "y"}}]})
    for learned in (True, False):
        d = ChatStreamDecoder()
        d.feed(opened + (args if learned else b""))
        assert d.feed(stray) == [ToolCallDelta(index=1, arguments="y")]
        d.feed(compact({}, "tool_calls") + DONE)  # the events before the error
        with pytest.raises(ToolCallError, match=r"tool call 1 .* has no id"):
            d.close()


def test_without_keep_text_the_text_is_neither_kept_nor_bounded() -> None:
    # a relay passes the deltas on: an answer longer than max_result_size is no error then,
    # while what is kept (a tool call's arguments) stays bounded
    chunk = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"0123456789"}}]}\n\n'
    think = (
        b'data: {"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"abcdefghij"}}]}\n\n'
    )
    body = chunk * 20 + think * 20 + b"data: [DONE]\n\n"
    relay = ChatStreamDecoder(keep_text=False, max_result_size=50)
    events = relay.feed(body) + relay.close()
    assert sum(len(e.text) for e in events if isinstance(e, TextDelta)) == 200
    assert relay.result.text == ""
    assert relay.result.reasoning == ""
    kept = ChatStreamDecoder(max_result_size=50)
    kept.feed(body)  # the events before the error; the error is kept for the next call
    assert isinstance(kept.error, PeerProtocolError)
    assert "max_result_size" in str(kept.error)


def test_a_long_event_in_many_reads_is_held_until_a_line_ends() -> None:
    """A read in the middle of an event the lane holds, that ends no line, is only held
    (`SSEFramer.goes_on`): the events, the offsets of errors and the size bound are as when
    the body comes whole; an empty read still ends the body (the stream was cut)."""
    first = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    long = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 5000 + b'"}}]}\n\n'
    body = first + long + b"data: [DONE]\n\n"
    whole, d = decode(body)
    pieces = [first + long[:7], *(long[i : i + 100] for i in range(7, len(long), 100))]
    held = ChatStreamDecoder()
    got = [e for p in [*pieces, b"data: [DONE]\n\n"] for e in held.feed(p)] + held.close()
    assert got == whole
    assert held.result == d.result
    # past the size bound in the middle of the event: the same error, at the same offset
    with pytest.raises(PeerProtocolError) as at_once:
        run(ChatStreamDecoder(max_event_size=1000), [body])
    small = ChatStreamDecoder(max_event_size=1000)
    with pytest.raises(PeerProtocolError) as in_reads:
        run(small, pieces)
    assert (in_reads.value.offset, in_reads.value.limit) == (at_once.value.offset, "max_event_size")
    cut = ChatStreamDecoder()
    for p in pieces[:10]:
        cut.feed(p)
    assert cut.feed(b"")[-1] == StreamEnded(complete=False, done=False)


def _pieces_chunk(pieces: list[object]) -> bytes:
    return chunk({"tool_calls": pieces})


def _bare(index: int, arguments: str) -> dict[str, Any]:
    return {"index": index, "function": {"arguments": arguments}}


def test_a_chunk_of_many_argument_pieces_gives_a_delta_per_run() -> None:
    """Attack 41 F2: bare argument pieces after a piece of the same index are joined to it,
    one delta per run, the calls as the pieces one by one make them."""
    first = {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": ""}}
    second = {"index": 1, "id": "b", "function": {"name": "g"}}  # no arguments yet
    pieces: list[object] = [first, *[_bare(0, c) for c in '{"k":1}'], second, _bare(1, "{}")]
    pieces += [_bare(0, ""), _bare(0, " ")]  # a run after the other call's: its own
    events, d = decode(_pieces_chunk(pieces) + chunk({}, "tool_calls") + DONE)
    assert [e for e in events if isinstance(e, ToolCallDelta)] == [
        ToolCallDelta(index=0, id="a", name="f", arguments='{"k":1}'),
        ToolCallDelta(index=1, id="b", name="g", arguments="{}"),
        ToolCallDelta(index=0, arguments=" "),
    ]
    one_by_one = b"".join(_pieces_chunk([p]) for p in pieces) + chunk({}, "tool_calls") + DONE
    assert decode(one_by_one)[1].result.tool_calls == d.result.tool_calls
    assert [c.arguments for c in d.result.tool_calls] == ['{"k":1} ', "{}"]
    assert pieces[0] == first  # the parsed pieces are left as they came


def test_a_chunk_of_a_great_many_argument_pieces_is_one_delta() -> None:
    head = {"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"k":"'}}
    n = 15_000  # (within the values `_json` Rule 6 allows)
    events, _ = decode(_pieces_chunk([head, *[_bare(0, "a")] * n]))
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas == [ToolCallDelta(index=0, id="a", name="f", arguments='{"k":"' + "a" * n)]


@pytest.mark.parametrize(
    ("before", "match"),
    [
        ({"index": 0, "function": []}, "'function' must be an object"),
        ({"index": 0, "function": {"arguments": 5}}, "arguments must be a string"),
        ({"index": 0, "id": 5}, "id must be a string"),
        ({"index": -1}, "index must be an int"),
        ("x", "must be an object"),
    ],
)
def test_bare_pieces_after_a_bad_piece_leave_its_error_as_it_was(
    before: object, match: str
) -> None:
    body = _pieces_chunk([before, _bare(0, "a"), _bare(0, "b")])
    with pytest.raises(PeerProtocolError, match=match):
        decode(body)


def test_pieces_that_are_not_bare_are_never_joined() -> None:
    head = {"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}}
    not_bare: list[object] = [
        {"index": 0, "function": {"arguments": "1"}, "type": "function"},  # a third key
        {"index": 0, "function": {"arguments": "2", "name": "f"}},  # a name too
        {"index": True, "function": {"arguments": "3"}},  # an index that only equals 1
        {"index": 0, "function": {"arguments": None}},
        {"index": 0, "function": "4"},
    ]
    for piece in not_bare:
        try:
            events, _ = decode(_pieces_chunk([head, piece]))
        except PeerProtocolError:
            continue  # the piece's own error, as before
        assert len([e for e in events if isinstance(e, ToolCallDelta)]) == 2, piece


def _content_choice(text: str, **more: Any) -> dict[str, Any]:
    return {"index": 0, "delta": {"content": text}, **more}


def test_a_chunk_of_many_content_choices_gives_a_delta_per_run() -> None:
    """Attack 41 F2: bare content choices in a row are one delta; any other choice stays
    where it was, and its own rules hold (an index other than 0 is refused)."""
    choices: list[object] = [
        _content_choice("a"),
        {"delta": {"content": "b"}},  # no index
        _content_choice("c", logprobs=None, finish_reason=None),
        {"index": 0, "delta": {"refusal": "r"}},
        _content_choice("d"),
        _content_choice("e", logprobs={"content": []}),  # something else to read: not bare
        _content_choice("f"),
        {"index": 0, "delta": {"content": "g", "role": "assistant"}},
        {"index": 0, "delta": {"content": 1}},
    ]
    body = b"data: " + json.dumps({**HEAD, "choices": choices[:-1]}).encode() + b"\n\n"
    events, _ = decode(body)
    texts = [(type(e).__name__, getattr(e, "text", None)) for e in events[1:-1]]
    assert texts == [
        ("TextDelta", "abc"),
        ("RefusalDelta", "r"),
        ("TextDelta", "d"),
        ("TextDelta", "e"),
        ("TextDelta", "f"),
        ("TextDelta", "g"),
    ]
    for bad, match in [
        (choices[-1], "content must be a string"),
        (_content_choice("x", index=1), "choice index 1"),
        ("x", "a choice must be an object"),
    ]:
        body = b"data: " + json.dumps({**HEAD, "choices": [_content_choice("a"), bad]}).encode()
        with pytest.raises(PeerProtocolError, match=match):
            decode(body + b"\n\n")
    many = [_content_choice("t")] * 10_000  # (within the values `_json` Rule 6 allows)
    events, _ = decode(b"data: " + json.dumps({**HEAD, "choices": many}).encode() + b"\n\n")
    assert events[1:-1] == [TextDelta(text="t" * 10_000)]


def test_a_chunk_holds_max_entries_choices_and_call_pieces_at_most() -> None:
    """Attack 41 F2: pieces of two calls alternating are not joined; past `MAX_ENTRIES`
    (after the joins) a chunk fails the stream, naming the bound, after what came before."""
    opened = [
        {"index": i, "id": f"c{i}", "function": {"name": "f", "arguments": ""}} for i in (0, 1)
    ]
    alternating = [_bare(i % 2, "a") for i in range(MAX_ENTRIES - 1)]
    events, _ = decode(_pieces_chunk(opened + alternating[:-1]))
    assert sum(isinstance(e, ToolCallDelta) for e in events) == MAX_ENTRIES
    body = chunk({"content": "before"}) + _pieces_chunk(opened + alternating)
    d = ChatStreamDecoder()
    assert TextDelta(text="before") in d.feed(body)  # what came before, then the error
    with pytest.raises(PeerProtocolError, match=r"delta\.tool_calls holds 1025 entries") as info:
        d.close()
    assert (info.value.limit, info.value.limit_value) == ("max_entries", MAX_ENTRIES)
    assert info.value.offset == body.index(b"data: ", 1) + 6
    choices = [_content_choice("a"), {"index": 0, "delta": {"refusal": "r"}}] * 513
    doc = {**HEAD, "choices": choices}
    with pytest.raises(PeerProtocolError, match="choices holds 1026 entries"):
        decode(b"data: " + json.dumps(doc).encode() + b"\n\n")
    pieces = [_bare(i % 2, "a") for i in range(400)]  # review 42 F1: nested, they add up
    nested = [{"index": 0, "delta": {"tool_calls": opened + pieces}}] * 3
    doc = {**HEAD, "choices": nested}
    with pytest.raises(PeerProtocolError, match="the event's lists hold more than 1024"):
        decode(b"data: " + json.dumps(doc).encode() + b"\n\n")


def test_a_deltas_keys_no_rule_reads_are_noted() -> None:
    """Attack 42 F4: a legacy ``function_call``, ``annotations`` and ``audio`` went nowhere in a
    translation, unsaid: each that holds something is noted once; what holds nothing is not."""
    body = (
        chunk({"role": "assistant", "content": "", "function_call": {"name": "f", "arguments": ""}})
        + chunk({"function_call": {"arguments": "{}"}})
        + chunk({"content": "a", "annotations": [{"type": "url_citation"}], "audio": None})
        + chunk({"audio": {"transcript": "hi"}, "annotations": []})
        + chunk({}, "function_call")
        + DONE
    )
    _, d = decode(body)
    assert [p for p in d.result.problems if p.startswith("delta.")] == [
        "delta.function_call is not carried (a legacy function call: the answer's call is lost)",
        "delta.annotations is not carried (citations)",
        "delta.audio is not carried (audio and its transcript)",
    ]
    quiet = chunk({"content": "a", "function_call": None, "audio": {}}) + chunk({}, "stop")
    _, plain = decode(quiet + DONE)
    assert plain.result.problems == ()
