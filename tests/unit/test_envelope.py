"""The learned envelope (svir_proto.openai._envelope) and Azure's repeat rule, case by case.

Each test feeds a stream whose chunks repeat one envelope, so that what it checks happens on
the parser-free path; tests/property/test_envelope_properties.py checks the two paths agree.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import (
    FilterVerdict,
    PeerProtocolError,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from svir_proto.events import (
    TextRun,
    reasoning_delta,
    text_delta,
    text_run,
    tool_call_delta,
    usage_counts,
)
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai._envelope import BUDGET, Envelope, plain_delta
from tests.helpers import CONFORMANCE, bytewise, run

HEAD = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
DONE = b"data: [DONE]\n\n"
FINISH = b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'


def chunk(delta: object, **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": None, **extra}
    obj = {**HEAD, "choices": [choice]}
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def raw_chunk(delta: bytes) -> bytes:
    """A chunk in `chunk`'s envelope whose delta is written by hand."""
    return chunk({"content": "@"}).replace(b'{"content":"@"}', delta)


def learned(**options: Any) -> ChatStreamDecoder:
    """A decoder that has read two chunks, so that it holds an envelope that was used."""
    d = ChatStreamDecoder(**options)
    d.feed(chunk({"role": "assistant", "content": ""}) + chunk({"content": "a"}))
    assert d._envelope is not None
    assert d._envelope.hits == 1
    return d


def test_plain_content_is_read_without_a_parser() -> None:
    d = learned()
    d._loads = None  # type: ignore[assignment]  # any parse would fail now
    events = d.feed(chunk({"content": "b"}) + chunk({"content": 'say "hi"\n'}))
    assert events == [TextDelta(text="b"), TextDelta(text='say "hi"\n')]


def test_plain_reasoning_is_read_without_a_parser() -> None:
    """A reasoning server (LM Studio, DeepSeek, vLLM, llama.cpp) sends nearly every chunk of its
    thinking as ``{"reasoning_content":"..."}`` (or ``reasoning``): it has a lane of its own,
    like plain content's and a call's arguments'."""
    d = learned()
    d._loads = None  # type: ignore[assignment]  # any parse would fail now
    events = d.feed(
        chunk({"reasoning_content": "think"})
        + chunk({"reasoning": 'say "hi"\n'})
        + chunk({"reasoning_content": ""})
    )
    assert events == [
        ReasoningDelta(text="think", carrier="reasoning_content"),
        ReasoningDelta(text='say "hi"\n', carrier="reasoning"),
    ]
    assert d._envelope is not None
    assert d._envelope.hits == 4
    # what only begins like it goes on to the delta's span: another key, a quote that ends the
    # string early, a lone surrogate (its policy: the general way's)
    d = learned()
    d._loads = None  # type: ignore[assignment]
    with pytest.raises(TypeError):  # parsed: the lane did not read it
        d.feed(raw_chunk(b'{"reasoning_x":"a"}'))
    for delta, want in [
        (
            b'{"reasoning_content":"a","content":"b"}',
            [ReasoningDelta(text="a", carrier="reasoning_content")],
        ),
        (b'{"reasoning":"x\\ud800"}', [ReasoningDelta(text="x\ufffd", carrier="reasoning")]),
    ]:
        d = learned(errors="replace")
        got = d.feed(raw_chunk(delta))
        assert [e for e in got if isinstance(e, ReasoningDelta)] == want, delta


def test_a_lone_surrogate_escape_goes_the_general_way_and_gets_its_policy() -> None:
    d = learned()
    body = raw_chunk(b'{"content":"x\\ud800"}')
    with pytest.raises(PeerProtocolError, match="surrogate"):
        run(d, [body, FINISH, DONE])
    d = learned(errors="replace")
    assert [e for e in d.feed(body) if isinstance(e, TextDelta)] == [TextDelta(text="x\ufffd")]


def test_invalid_utf8_in_plain_content_gets_the_policy_with_its_offset() -> None:
    d = learned()
    start = d._framer._base
    body = raw_chunk(b'{"content":"ab\xff"}')
    with pytest.raises(PeerProtocolError) as info:
        run(d, [body])
    assert info.value.offset == start + body.index(b"\xff")
    d = learned(errors="replace")
    assert d.feed(body) == [TextDelta(text="ab\ufffd")]


def test_a_chunk_that_does_not_repeat_the_envelope_goes_the_general_way() -> None:
    d = learned()
    events = d.feed(chunk({"content": "b"}, logprobs=None) + FINISH)
    assert [type(e).__name__ for e in events] == ["TextDelta", "Finished"]
    assert d.result.text == "ab"


@pytest.mark.parametrize(
    "delta",
    [
        b"",  # nothing where the delta goes
        b'{"content":"a\\qb"}',  # an invalid escape
        b'{"content":"a\\"\tb"}',  # an escape, then a raw control character
        b'{"reasoning":"\\q"}',
        b'{"content":"x","n":}',
    ],
)
def test_what_is_not_json_is_the_general_ways_error(delta: bytes) -> None:
    d = learned()
    general = ChatStreamDecoder()
    general._budget = 0
    body = raw_chunk(delta)
    with pytest.raises(PeerProtocolError) as fast:
        run(d, [body])
    with pytest.raises(PeerProtocolError) as slow:
        run(general, [chunk({"role": "assistant", "content": ""}) + chunk({"content": "a"}) + body])
    assert (str(fast.value), fast.value.offset) == (str(slow.value), slow.value.offset)


def test_a_delta_that_is_not_an_object_means_what_it_means_the_general_way() -> None:
    d = learned()
    assert d.feed(raw_chunk(b"null") + chunk({"content": ""})) == []  # a null delta says nothing
    with pytest.raises(PeerProtocolError, match="'delta' must be an object"):
        run(d, [raw_chunk(b"[1]")])


def test_an_empty_delta_says_nothing() -> None:
    d = learned()
    assert d.feed(raw_chunk(b"{}") + raw_chunk(b'{"refusal":null}')) == []
    assert d.result.text == "a"
    assert d._envelope is not None
    assert d._envelope.hits == 3  # both read in the envelope, not the general way


def test_a_delta_that_only_begins_like_content_is_parsed() -> None:
    d = learned()
    events = d.feed(raw_chunk(b'{"content":"x","n":1}'))
    assert events == [TextDelta(text="x")]


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (b'{"content":"x","n":"y"}', [TextDelta(text="x")]),  # begins and ends like content
        (b'{"content":"x","refusal":"no"}', [TextDelta(text="x"), RefusalDelta(text="no")]),
        (
            b'{"tool_calls":[{"index":0,"function":{"arguments":"a"}},'
            b'{"index":1,"function":{"arguments":"b"}}]}',
            [ToolCallDelta(index=0, arguments="a"), ToolCallDelta(index=1, arguments="b")],
        ),  # begins and ends like one call's arguments: two calls' pieces
    ],
)
def test_a_delta_shaped_like_a_plain_one_at_both_ends_is_parsed(
    padded: bool, delta: bytes, expected: list[object]
) -> None:
    pad = b',"obfuscation":"Xy9"}\n\n' if padded else b"}\n\n"
    calls = {"tool_calls": [{"index": i, "id": f"c{i}", "function": {"name": "f"}} for i in (0, 1)]}
    d = ChatStreamDecoder()
    d.feed(b"".join(c[:-3] + pad for c in (chunk(calls), chunk({"content": "a"}))))
    assert d._envelope is not None
    hits = d._envelope.hits
    assert d.feed(raw_chunk(delta)[:-3] + pad) == expected
    assert d._envelope.hits == hits + 1  # read in the envelope: its delta parsed alone


def test_the_base_batch_loop_gives_each_payload_its_offset() -> None:
    """`DialectDecoder._on_batch`, the loop a dialect without its own inherits."""
    from svir_proto._dialect import DialectDecoder

    d = learned()
    first = chunk({"content": "b"})[6:-2]
    d._framer._base = 0
    with pytest.raises(PeerProtocolError) as info:
        DialectDecoder._on_batch(d, 100, [first, b"{oops"], 8)
    assert info.value.offset == 100 + 6 + len(first) + 8 + 1  # "{oops": its second byte


def test_tool_call_arguments_with_a_two_digit_index_are_read_too() -> None:
    d = learned()
    call = {"index": 12, "id": "call_1", "type": "function", "function": {"name": "f"}}
    d.feed(chunk({"tool_calls": [call]}))
    events = d.feed(chunk({"tool_calls": [{"index": 12, "function": {"arguments": '{"a":'}}]}))
    assert [(e.index, e.arguments) for e in events] == [(12, '{"a":')]  # type: ignore[attr-defined]
    span = b'{"tool_calls":[{"index":12,"function":{"arguments":"x"}}]}'
    assert plain_delta(span, 0, len(span)) == (12, "x")
    leading_zero = b'{"tool_calls":[{"index":012,"function":{"arguments":"x"}}]}'
    assert plain_delta(leading_zero, 0, len(leading_zero)) is None  # not JSON: the general way


@pytest.mark.parametrize("padded", [False, True])
def test_arguments_with_escapes_read_like_the_general_way(padded: bool) -> None:
    """A call's arguments are JSON inside a JSON string: quotes come escaped (read by a
    replace), and any other escape goes through the string scanner; an invalid one sends
    the chunk the general way, which reports it. With and without OpenAI's padding."""
    pad = {"obfuscation": "Xy9"} if padded else {}

    def args(text: str | None, raw: bytes | None = None) -> bytes:
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": text or "@"}}]}
        obj = {**HEAD, "choices": [{"index": 0, "delta": delta, "finish_reason": None}], **pad}
        out = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
        return (
            out if raw is None else out.replace(b'"arguments":"@"', b'"arguments":"' + raw + b'"')
        )

    opened = {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}]}
    first = chunk(opened).replace(
        b"}\n\n",
        b"".join(b',"' + k.encode() + b'":"' + v.encode() + b'"' for k, v in pad.items())
        + b"}\n\n",
    )
    texts = ['{"', 'city": "Wien', "\\", 'a\\"b', "line\nnext", "plain"]
    d = ChatStreamDecoder()
    d.feed(first + args("x") + args("y"))
    assert d._envelope is not None
    for text in texts:
        (event,) = d.feed(args(text))
        assert event.arguments == text  # type: ignore[attr-defined]
    assert d._envelope.hits >= len(texts)
    with pytest.raises(PeerProtocolError, match="Invalid \\\\escape") as fast:
        run(d, [args(None, rb"\q")])
    general = ChatStreamDecoder()
    general._budget = 0
    with pytest.raises(PeerProtocolError) as slow:
        run(general, [first, args("x"), args("y"), *(args(t) for t in texts), args(None, rb"\q")])
    assert (str(fast.value), fast.value.offset) == (str(slow.value), slow.value.offset)


def test_empty_reasoning_and_arguments_are_no_text() -> None:
    d = learned()
    d.feed(chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f"}}]}))
    events = d.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}))
    assert [(e.index, e.arguments) for e in events] == [(0, "")]  # type: ignore[attr-defined]
    d = learned()
    events = d.feed(chunk({"reasoning_content": ""}) + chunk({"reasoning": "hmm"}))
    assert events == [ReasoningDelta(text="hmm", carrier="reasoning")]


def test_the_result_bound_holds_on_the_fast_path() -> None:
    d = learned(max_result_size=4)
    with pytest.raises(PeerProtocolError) as info:
        run(d, [chunk({"content": "bcdef"})])
    assert info.value.limit == "max_result_size"
    d = learned(max_result_size=4)
    arguments = {"tool_calls": [{"index": 0, "function": {"arguments": "abcdef"}}]}
    with pytest.raises(PeerProtocolError) as info:
        run(d, [chunk(arguments)])
    assert info.value.limit == "max_result_size"


def test_a_long_chunk_goes_the_general_way_for_its_depth() -> None:
    deep = {"content": "x", "extra": [[[[[[["x" * 2000]]]]]]]}
    d = learned()
    events = d.feed(chunk(deep))
    assert events == [TextDelta(text="x")]


def test_a_stream_not_started_learns_nothing() -> None:
    """A server that never says who it is: the first chunk's empty delta starts nothing, so
    no envelope may be learned from it (a repeat would skip the stream's start)."""
    d = ChatStreamDecoder()
    d.feed(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":null}]}\n\n')
    assert d._envelope is None
    events = d.feed(
        b'data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}\n\n'
    )
    assert [type(e).__name__ for e in events] == ["StreamStarted", "TextDelta"]


def test_learning_refuses_envelopes_it_cannot_read_safely() -> None:
    choice: dict[str, object] = {"delta": {}}
    twice = b'{"delta":{},"x":{"delta":{}}}'
    assert Envelope.learn(twice, choice) is None
    odd_padding = b'{"obfuscation":"a-b","choices":[{"delta":{}}]}'
    assert Envelope.learn(odd_padding, choice) is None
    both = b'{"obfuscation":"a","choices":[{"delta":{}}],"x":{"obfuscation":"b"}}'
    assert Envelope.learn(both, choice) is None  # one hole at most
    padded_head = Envelope.learn(b'{"obfuscation":"ab","choices":[{"delta":{}}]}', choice)
    assert padded_head is not None
    assert padded_head.read(b'{"obfuscation":"a-b","choices":[{"delta":{}}]}') is None
    assert padded_head.read(b'{"obfuscation":"zz9","choices":[{"delta":{"content":"q"}}]}') == "q"
    padded_tail = Envelope.learn(b'{"choices":[{"delta":{}}],"obfuscation":"ab"}', choice)
    assert padded_tail is not None
    assert padded_tail.read(b'{"choices":[{"delta":{}}],"obfuscation":"a b"}') is None
    assert padded_tail.read(b'{"choices":[{"delta":{"content":"q"}}],"obfuscation":""}') == "q"
    assert padded_tail.read(b'{"choices":[{"delta":{"content":"q"}}],"x":1}') is None


def test_a_chunk_over_64_kib_teaches_no_envelope() -> None:
    """Rule 1: finding the delta's end would parse it again (attack 41 F3); the next chunk
    teaches the envelope instead, and the events are the same."""
    d = ChatStreamDecoder()
    big = {"role": "assistant", "content": "x" * (1 << 16)}
    assert d.feed(chunk(big))[1:] == [TextDelta(text="x" * (1 << 16))]
    assert d._envelope is None
    d.feed(chunk({"content": "a"}))
    assert d._envelope is not None
    assert d.feed(chunk({"content": "b"})) == [TextDelta(text="b")]
    assert d._envelope.hits == 1
    many = ChatStreamDecoder()  # review 42 F7: no try of Rule 4, however many come
    many.feed(b"".join(chunk({"content": "x" * (1 << 16)}) for _ in range(BUDGET + 2)))
    many.feed(chunk({"content": "a"}) + chunk({"content": "b"}))
    assert many._envelope is not None
    assert many._envelope.hits == 1


def vllm(delta: object, completion: int, **usage: object) -> bytes:
    """A chunk of vLLM's with ``continuous_usage_stats``: its usage on every chunk."""
    counts = {"prompt_tokens": 31, "total_tokens": 31 + completion}
    counts |= {"completion_tokens": completion, **usage}
    return chunk(delta).replace(b"}]}\n\n", b'}],"usage":%s}\n\n' % json.dumps(counts).encode())


def test_usage_on_every_chunk_is_read_without_a_parser() -> None:
    """Rule 1 and 2: the usage's counts are holes; each chunk is its delta and a `Usage`."""
    d = ChatStreamDecoder()
    d.feed(vllm({"role": "assistant", "content": ""}, 0))
    envelope = d._envelope
    assert envelope is not None
    assert envelope.counts is not None
    d._loads = None  # type: ignore[assignment]  # any parse would fail now
    details = {"completion_tokens_details": {"reasoning_tokens": 2}}
    events = d.feed(vllm({"reasoning_content": "r"}, 1) + vllm({"content": 'a "b"'}, 12345))
    assert events == [
        ReasoningDelta(text="r", carrier="reasoning_content"),
        Usage(prompt_tokens=31, completion_tokens=1, total_tokens=32),
        TextDelta(text='a "b"'),
        Usage(prompt_tokens=31, completion_tokens=12345, total_tokens=12376),
    ]
    assert envelope.hits == 2
    d._loads = ChatStreamDecoder()._loads  # a chunk of other keys goes the general way
    d.feed(vllm({"content": "c"}, 3, **details) + FINISH + DONE)
    assert d.result.usage == Usage(
        prompt_tokens=31, completion_tokens=3, total_tokens=34, reasoning_tokens=2
    )
    assert d.result.text == 'a "b"c'
    assert d.result.complete


def test_a_usage_with_null_details_is_a_hole_too() -> None:
    """vLLM writes ``"prompt_tokens_details":null`` in every chunk's usage: the null was not
    a count, so no usage hole was learned and every chunk was parsed (1.26x the json.loads
    floor on an independent benchmark's vLLM shape, 2.3x without orjson). The null's bytes
    are part of the pattern: a chunk with details there goes the general way, which reads
    them."""
    null = {"prompt_tokens_details": None}
    d = ChatStreamDecoder()
    d.feed(vllm({"role": "assistant", "content": ""}, 0, **null))
    envelope = d._envelope
    assert envelope is not None
    assert envelope.counts is not None
    loads, d._loads = d._loads, None  # type: ignore[assignment]  # any parse would fail now
    events = d.feed(vllm({"content": "a"}, 1, **null) + vllm({"reasoning": "r"}, 2, **null))
    assert events == [
        TextDelta(text="a"),
        Usage(prompt_tokens=31, completion_tokens=1, total_tokens=32),
        ReasoningDelta(text="r", carrier="reasoning"),
        Usage(prompt_tokens=31, completion_tokens=2, total_tokens=33),
    ]
    cached = {"prompt_tokens_details": {"cached_tokens": 7}}
    assert envelope.read(vllm({"content": "b"}, 3, **cached)[6:-2]) is None
    d._loads = loads
    d.feed(vllm({"content": "b"}, 3, **cached) + FINISH + DONE)
    assert d.result.usage == Usage(
        prompt_tokens=31, completion_tokens=3, total_tokens=34, cached_tokens=7
    )
    assert d.result.text == "ab"
    twice = b'{"choices":[{"delta":{}}],"usage":{"prompt_tokens":null,"completion_tokens":5,'
    twice += b'"prompt_tokens":5}}'  # a key twice, its first value null: not learned
    learned = Envelope.learn(twice, {"delta": {}}, {"prompt_tokens": 5, "completion_tokens": 5})
    assert learned is None or learned.counts is None


def test_the_hot_path_builds_the_events_attrs_builds() -> None:
    """`svir_proto.events`' builders set every slot, as the classes' own __init__ does."""
    assert usage_counts(1, 2, 3, 4, 5) == Usage(
        prompt_tokens=1, completion_tokens=2, total_tokens=3, reasoning_tokens=4, cached_tokens=5
    )
    assert usage_counts(None, 2, None) == Usage(completion_tokens=2)
    assert text_delta("t", 2) == TextDelta(text="t", index=2)
    assert reasoning_delta("r", "reasoning") == ReasoningDelta(text="r", carrier="reasoning")
    assert tool_call_delta(1, "{", "c", "f") == ToolCallDelta(
        index=1, id="c", name="f", arguments="{"
    )
    assert text_run(b"ab", 2) == TextRun(bodies=b"ab", count=2)


def test_a_usage_hole_takes_only_what_the_parser_would_read_alike() -> None:
    counts: dict[str, object] = {"prompt_tokens": 1, "completion_tokens": 2}
    choice: dict[str, object] = {"delta": {}}
    learned = b'{"choices":[{"delta":{}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}'
    envelope = Envelope.learn(learned, choice, counts)
    assert envelope is not None
    big = (
        b'{"choices":[{"delta":{"content":"q"}}],'
        + b'"usage":{"prompt_tokens":%s,"completion_tokens":2}}'
    )
    assert envelope.read(big % b"999999999999999999") == "q"
    assert envelope.usage().prompt_tokens == 999999999999999999
    for other in (b"1000000000000000000", b"01", b"1.0", b"-1", b"null", b'"1"', b"1e3"):
        assert envelope.read(big % other) is None  # the general way reads what it means
    assert Envelope.learn(learned, choice, {**counts, "completion_tokens": 2.0}) is None
    twice = learned.replace(b"}}", b',"prompt_tokens":3}}')
    assert Envelope.learn(twice, choice, {**counts, "prompt_tokens": 3}) is None
    padded = learned.replace(b'"usage"', b'"obfuscation":"ab","usage"')
    assert Envelope.learn(padded, choice, counts) is None
    before = b'{"usage":{"prompt_tokens":1,"completion_tokens":2},"choices":[{"delta":{}}]}'
    assert Envelope.learn(before, choice, counts) is None  # the usage before the delta


def test_an_envelope_that_never_repeats_stops_being_learned() -> None:
    """Rule 4: a server with an id per chunk would learn in vain on every chunk."""
    d = ChatStreamDecoder()
    each = b'data: {"id":"c%d","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    body = b"".join(each % i for i in range(20))
    d.feed(body)
    assert d._budget == 0
    assert d._envelope is None
    assert d.result.text == "a" * 20


def test_a_bug_on_the_fast_path_poisons_the_decoder() -> None:
    d = learned()

    def broken(text: str, at: int) -> None:
        raise ValueError("a bug")

    d._content = broken  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="a bug"):
        d.feed(chunk({"content": "b"}))
    assert isinstance(d.error, ValueError)
    with pytest.raises(ValueError, match="a bug"):
        d.feed(chunk({"content": "c"}))


# -- Azure's verdict on every chunk (the repeat rule in FilterVerdict's docstring) -------------

SAFE = {"filtered": False, "severity": "safe"}


def verdicts(events: list[object]) -> list[FilterVerdict]:
    return [e for e in events if isinstance(e, FilterVerdict)]


def test_a_quiet_verdict_that_repeats_is_counted_not_kept() -> None:
    quiet = {"hate": SAFE, "violence": SAFE}
    body = b"".join(chunk({"content": c}, content_filter_results=quiet) for c in "abcdef")
    d = ChatStreamDecoder()
    events = run(d, bytewise(body + FINISH + DONE))
    assert len(verdicts(events)) == 1
    assert d.result.filter_repeats == 5
    assert len(d.result.filter_verdicts) == 1


def test_news_is_always_kept() -> None:
    quiet = {"hate": SAFE}
    low = {"hate": {"filtered": False, "severity": "low"}}
    flagged = {"hate": {"filtered": True, "severity": "high"}}
    offsets = {"check_offset": 1, "start_offset": 0, "end_offset": 3}
    body = (
        chunk({"content": "a"}, content_filter_results=quiet)
        + chunk({"content": "b"}, content_filter_results=low)  # a change of severity
        + chunk({"content": "c"}, content_filter_results=low)  # found something: kept
        + chunk({"content": "d"}, content_filter_results=quiet)  # a change back
        + chunk({"content": "e"}, content_filter_results=quiet)  # a quiet repeat
        + chunk({"content": "f"}, content_filter_results=quiet, content_filter_offsets=offsets)
        + FINISH
        + b'data: {"choices":[{"index":0,"content_filter_results":'
        + json.dumps(flagged).encode()
        + b',"content_filter_offsets":{"check_offset":9,"start_offset":0,"end_offset":9}}],'
        + b'"id":"","model":""}\n\n'  # a block after stop
        + DONE
    )
    d = ChatStreamDecoder()
    kept = verdicts(run(d, [body]))
    assert [(v.detected, v.filtered, v.offsets is not None) for v in kept] == [
        (False, False, False),
        (True, False, False),
        (True, False, False),
        (False, False, False),
        (False, False, True),
        (True, True, True),
    ]
    assert d.result.filter_repeats == 1
    assert d.result.filtered


def test_an_untyped_event_reaches_the_llm_stream_decoder_by_any_path() -> None:
    """The draft's events without their ``event:`` lines arrive in a batch (the fast lane)
    when whole, one by one when byte by byte; either way the first is refused where it is."""
    example = CONFORMANCE / "llmstream" / "draft-5.5-complete-example.sse"
    lines = example.read_bytes().split(b"\n")
    body = b"".join(line + b"\n\n" for line in lines if line.startswith(b"data: "))

    def outcome(pieces: list[bytes]) -> object:
        d = LLMStreamDecoder()
        with pytest.raises(PeerProtocolError) as info:
            run(d, pieces)
        return str(info.value), info.value.offset, d.result

    assert outcome([body]) == outcome(bytewise(body))
    assert outcome([body])[1] == 6


def test_the_repeat_rule_holds_on_the_general_way_too() -> None:
    """A stream whose chunks never repeat an envelope (an id per chunk) is read the general
    way: a quiet verdict that repeats is counted there too, not built."""
    quiet = {"hate": SAFE, "violence": SAFE}
    body = b"".join(
        chunk({"content": c}, content_filter_results=quiet).replace(b'"c1"', f'"c{i}"'.encode())
        for i, c in enumerate("abcdef")
    )
    d = ChatStreamDecoder()
    d._budget = 0  # learns no envelope
    events = run(d, [body + FINISH + DONE])
    assert d._envelope is None
    assert len(verdicts(events)) == 1
    assert d.result.filter_repeats == 5
