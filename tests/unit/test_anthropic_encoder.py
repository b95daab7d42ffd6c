"""MessagesStreamEncoder: vocabulary events to Messages stream bytes, read back by our decoder."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto.anthropic import (
    MessagesStreamDecoder,
    MessagesStreamEncoder,
    error_body,
    error_status,
    stop_reason_of,
    usage_object,
)
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
from svir_proto.openai import ChatStreamDecoder
from tests.helpers import CONFORMANCE, run

END = StreamEnded(complete=True, done=True)


def encode(events: list[Any], **options: Any) -> tuple[bytes, MessagesStreamEncoder]:
    enc = MessagesStreamEncoder(**options)
    return b"".join(enc.encode(e) for e in events), enc


def wire(body: bytes) -> list[dict[str, Any]]:
    out = []
    for block in body.split(b"\n\n"):
        if block:
            name, data = block.split(b"\n")
            obj = json.loads(data[6:])
            assert name == b"event: " + obj["type"].encode()
            out.append(obj)
    return out


def test_reasoning_then_text_then_tools_in_order_with_indexes() -> None:
    events = [
        StreamStarted(response_id="r1", model="m"),
        ReasoningDelta(text="hm", carrier="reasoning_content"),
        ReasoningDelta(text="", carrier="reasoning_content"),
        TextDelta(text="Hi"),
        TextDelta(text=""),
        ReasoningSignature(signature="s1", carrier="thinking"),
        ReasoningSignature(signature="enc", carrier="thinking", redacted=True),
        ToolCallDelta(index=0, id="c1", name="f", arguments=""),
        ToolCallDelta(index=0, arguments='{"a":'),
        ToolCallDelta(index=0, arguments=""),
        ToolCallDelta(index=0, arguments="1}"),
        ToolCall(index=1, id="c2", name="g", arguments=""),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        Usage(prompt_tokens=10, completion_tokens=4, total_tokens=14, cached_tokens=6),
        ToolCall(index=0, id="c1", name="f", arguments='{"a":1}'),
        END,
    ]
    body, enc = encode(events)
    objs = wire(body)
    starts = [
        (o["index"], o["content_block"]["type"]) for o in objs if o["type"] == "content_block_start"
    ]
    assert starts == [
        (0, "thinking"),
        (1, "text"),
        (2, "thinking"),
        (3, "redacted_thinking"),
        (4, "tool_use"),
        (5, "tool_use"),
    ]
    assert objs[-2]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert objs[-2]["usage"] == {
        "input_tokens": 4,
        "cache_read_input_tokens": 6,
        "output_tokens": 4,
    }
    assert objs[0]["message"]["usage"] == {"input_tokens": 0, "output_tokens": 0}
    d = MessagesStreamDecoder()
    run(d, [body])
    r = d.result
    assert (r.reasoning, r.text) == ("hm", "Hi")
    # the signature came after the text: it closes a thinking block of its own, empty
    assert [(b.text, b.signature, b.redacted) for b in r.reasoning_blocks] == [
        ("", "s1", False),
        ("", "enc", True),
    ]
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [
        ("c1", "f", '{"a":1}'),
        ("c2", "g", "{}"),
    ]
    assert r.usage == events[13]
    assert r.complete
    assert enc.done
    assert enc.lost == []


def test_interleaved_calls_are_held_until_their_turn() -> None:
    events = [
        ToolCallDelta(index=1, id="b", name="g", arguments="{"),
        ToolCallDelta(index=0, id="a", name="f", arguments="{"),
        ToolCallDelta(index=1, arguments="}"),
        ToolCallDelta(index=0, arguments="}"),
        ToolCallDelta(index=2, id="c", name="h", arguments="{}"),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        END,  # no whole calls: the held ones are written at the end
    ]
    body, enc = encode(events, model="m", message_id="msg_x")
    d = MessagesStreamDecoder()
    run(d, [body])
    assert [(c.id, c.arguments) for c in d.result.tool_calls] == [
        ("a", "{}"),
        ("b", "{}"),
        ("c", "{}"),
    ]
    assert d.message_id == "msg_x"
    assert enc.lost == ["usage: the upstream gave none, so message_delta says 0 output tokens"]


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"q": oops', " (Expecting value: line 1 column 7 (char 6))"),
        ("[1, 2]", ""),
        ('"text"', ""),
        ("{", " (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        ('{"n": 1e400}', " (1e400 is beyond the float range)"),
    ],
)
@pytest.mark.parametrize("streamed", [True, False])
def test_arguments_that_are_not_an_object_end_the_stream_as_a_failure(
    arguments: str, why: str, streamed: bool
) -> None:
    """Attack 22: an upstream's tool call whose arguments are not a JSON object went out as a
    ``tool_use`` (its input unparsable, or a list) in a stream that ended with
    ``message_stop``; a tool_use input is always an object: the stream ends with an error,
    which says why an object does not read (attack 47 H3: a number past the float range,
    which this package's JSON refuses, was "not a JSON object" and no more)."""
    call = ToolCall(index=0, id="a", name="f", arguments=arguments, declared=None)
    events: list[Any] = [StreamStarted(response_id="r", model="m")]
    if streamed:
        events.append(ToolCallDelta(index=0, id="a", name="f", arguments=arguments))
    events += [Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"), call, END]
    body, enc = encode(events, model="m", message_id="msg_x")
    got = wire(body)
    assert got[-1]["type"] == "error", got
    assert got[-1]["error"]["message"].endswith(f"tool_use input must be{why}")
    assert "message_stop" not in [e["type"] for e in got]
    assert enc.done
    started = [e for e in got if e["type"] == "content_block_start"]
    assert len(started) == (1 if streamed else 0)  # a call not streamed is not written


def test_empty_arguments_are_an_empty_input() -> None:
    call = ToolCall(index=0, id="a", name="f", arguments="", declared=None)
    body, _ = encode([StreamStarted(response_id="r", model="m"), call, END], model="m")
    assert wire(body)[-1]["type"] == "message_stop"


def test_what_cannot_be_carried_is_listed() -> None:
    events = [
        ToolCallDelta(index=0, id="a", name="lo", arguments="{"),
        ToolCallDelta(index=0, name="ok", arguments="}"),
        TextDelta(text="x"),
        ToolCallDelta(index=0, arguments=" "),
        ToolCallDelta(index=0, name="more"),  # (no arguments: nothing to lose of them)
        RefusalDelta(text="no"),
        FilterVerdict(
            scope="completion",
            results=(FilterResult(category="hate", filtered=True),),
            filtered=True,
        ),
        ResponseStarted(status=200, headers=()),
        Usage(prompt_tokens=1, completion_tokens=1, total_tokens=7, reasoning_tokens=1),
        END,
    ]
    body, enc = encode(events)
    assert enc.lost == [
        "a tool call's name continued after its block opened",
        "tool-call arguments that came after their call's block was closed",
        "refusal text: written as text, the turn's stop_reason refusal",
        "content-filter verdicts have no field in the Messages API",
    ]
    d = MessagesStreamDecoder()
    run(d, [body])
    assert d.result.text == "xno"
    assert d.result.usage == events[8]
    assert d.result.finish_reason is None
    assert wire(body)[-2]["usage"]["vendor:svir"] == {"total_tokens": 7}


def _said(body: bytes) -> tuple[str, list[tuple[str, str]], str]:
    """What a Messages client of ``body`` reads: its text and thinking in order, its calls
    (name, input as JSON), and how it ended."""
    d = MessagesStreamDecoder()
    run(d, [body])
    blocks = [e["content_block"]["type"] for e in wire(body) if e["type"] == "content_block_start"]
    calls = [(c.name, c.arguments) for c in d.result.tool_calls]
    return ",".join(blocks), calls, wire(body)[-1]["type"]


@pytest.mark.parametrize(
    "between",
    [
        [TextDelta(text="b")],
        [ReasoningDelta(text="r", carrier="reasoning_content")],
        [ReasoningDelta(text="r", carrier="reasoning_content"),
         ReasoningSignature(signature="s", carrier="reasoning_content"), TextDelta(text="t")],
        [RefusalDelta(text="no")],
    ],
)  # fmt: skip
@pytest.mark.parametrize("whole", [True, False])
def test_what_comes_between_a_calls_arguments_waits_for_its_block(
    between: list[Any], whole: bool
) -> None:
    """Attack 41 F4: text (or thinking) in the middle of a call's arguments closed its block,
    the rest of the arguments was lost, and the stream ended as a success with the input
    ``{"x``. It is held until the call's block closes (its whole call, or the end)."""
    events: list[Any] = [
        StreamStarted(response_id="r", model="m"),
        ToolCallDelta(index=0, id="a", name="f", arguments='{"x'),
        *between,
        ToolCallDelta(index=0, arguments='":1}'),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
    ]
    if whole:
        events.append(ToolCall(index=0, id="a", name="f", arguments='{"x":1}', declared=None))
    body, _ = encode([*events, END], model="m")
    blocks, calls, last = _said(body)
    assert blocks.startswith("tool_use,")
    assert calls == [("f", '{"x":1}')]
    assert last == "message_stop"
    d = MessagesStreamDecoder()
    run(d, [body])
    texts = [e.text for e in between if isinstance(e, (TextDelta, RefusalDelta))]
    reasoning = [e.text for e in between if isinstance(e, ReasoningDelta)]
    assert (d.result.text, d.result.reasoning) == ("".join(texts), "".join(reasoning))


def test_a_call_whose_arguments_are_whole_lets_what_follows_through_at_once() -> None:
    """Arguments that are a JSON object already: the text after them closes the block as it
    comes (nothing is held); a later piece of the call is a failure, not a cut input."""
    first = ToolCallDelta(index=0, id="a", name="f", arguments='{"x":1}')
    enc = MessagesStreamEncoder(model="m")
    enc.encode(StreamStarted(response_id="r", model="m"))
    enc.encode(first)
    assert b"text_delta" in enc.encode(TextDelta(text="b"))
    rest = [
        ToolCallDelta(index=0, arguments=',"y":2}'),
        ToolCall(index=0, id="a", name="f", arguments='{"x":1,"y":2}', declared=None),
        END,
    ]
    got = wire(b"".join(enc.encode(e) for e in rest))
    assert got[-1]["type"] == "error"
    assert "more of its arguments came after" in got[-1]["error"]["message"]


def test_what_waits_for_a_calls_block_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_DEFERRED characters held the block closes; what came is written, and the
    rest of the arguments fails the stream at the whole call."""
    from svir_proto.anthropic import encoder

    monkeypatch.setattr(encoder, "MAX_DEFERRED", 10 + 2 * encoder.DEFER_COST)  # two deltas
    events: list[Any] = [
        StreamStarted(response_id="r", model="m"),
        ToolCallDelta(index=0, id="a", name="f", arguments='{"x'),
        TextDelta(text="12345"),
        TextDelta(text="67890"),
        TextDelta(text="abc"),
        ToolCallDelta(index=0, arguments='":1}'),
        ToolCall(index=0, id="a", name="f", arguments='{"x":1}', declared=None),
        END,
    ]
    body, _ = encode(events, model="m")
    blocks, _, last = _said(body)
    assert blocks == "tool_use,text,text"  # (what waited, then what came)
    assert last == "error"
    d = MessagesStreamDecoder()
    run(d, [body])
    assert d.result.text == "1234567890abc"
    assert d.result.error is not None


def test_many_small_deltas_held_for_a_call_are_joined_and_bounded() -> None:
    """Review 41: a million one-character deltas held behind a call's block took minutes to
    write (each write copied what came before) and ~100 MB. The deltas of one kind held in a
    row are one; each counts DEFER_COST characters more, so few are held."""
    from svir_proto.anthropic.encoder import DEFER_COST, MAX_DEFERRED

    enc = MessagesStreamEncoder(model="m")
    out = [enc.encode(StreamStarted(response_id="r", model="m"))]
    out.append(enc.encode(ToolCallDelta(index=0, id="a", name="f", arguments='{"x')))
    n = 200_000
    out += [enc.encode(TextDelta(text="t")) for _ in range(n)]
    out.append(enc.encode(ToolCallDelta(index=0, arguments='":1}')))
    out += [enc.encode(e) for e in (Finished(reason=FinishReason.STOP, raw="stop"), END)]
    got = wire(b"".join(out))
    held = MAX_DEFERRED // (1 + DEFER_COST)
    deltas = [e["delta"]["text"] for e in got if e["type"] == "content_block_delta"
              and e["delta"]["type"] == "text_delta"]  # fmt: skip
    assert "".join(deltas) == "t" * n
    assert deltas[0] == "t" * held  # what was held, as one delta
    assert len(deltas) == 1 + n - held  # then the rest as it came
    d = MessagesStreamDecoder()
    run(d, [b"".join(out)])
    assert d.result.error is not None  # the arguments came after the block closed


@pytest.mark.parametrize("refusal", ["", "I can't help with that."])
def test_a_refusal_ends_the_turn_as_a_refusal(refusal: str) -> None:
    """Client round 32 (F5): an OpenAI refusal reached an Anthropic client as text with
    ``end_turn``; Anthropic says a refusal by ``stop_reason``, in the stream and whole."""
    from svir_proto.anthropic.answer import message
    from svir_proto.anthropic.encoder import stop_reason_of
    from svir_proto.events import Completion, Finished, FinishReason

    finish = Finished(reason=FinishReason.STOP, raw="stop")
    events = [StreamStarted(response_id="r", model="m"), RefusalDelta(text=refusal), finish, END]
    body, _ = encode(events)
    reason = "refusal" if refusal else "end_turn"
    delta = next(e for e in wire(body) if e["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == reason
    done = Completion(refusal=refusal, finish_reason=FinishReason.STOP, finish_raw="stop")
    whole = json.loads(message(done, message_id="m", model="m"))
    assert whole["stop_reason"] == reason
    ended = Finished(reason=FinishReason.STOP, raw="end_turn")  # Anthropic's own word
    assert stop_reason_of(ended, refused=True) == "refusal"
    assert stop_reason_of(ended) == "end_turn"
    length = Finished(reason=FinishReason.LENGTH, raw="length")
    body, _ = encode([*events[:2], length, END])
    assert "max_tokens" in body.decode()  # cut short: what it is, refusal or not


def test_a_usage_known_at_once_goes_in_message_start() -> None:
    usage = Usage(prompt_tokens=5, completion_tokens=1, total_tokens=6, cache_creation_tokens=2)
    body, _ = encode([StreamStarted(response_id="r", model="m"), usage, TextDelta(text="a")])
    start = wire(body)[0]["message"]
    assert start["usage"] == {
        "input_tokens": 3,
        "cache_creation_input_tokens": 2,
        "output_tokens": 1,
    }
    assert (start["id"], start["model"]) == ("r", "m")


@pytest.mark.parametrize("kind", list(FailureKind))
def test_a_failure_is_an_error_event_and_the_end(kind: FailureKind) -> None:
    failure = Failure(kind=kind, message="it broke")
    body, enc = encode([StreamFailed(error=failure), TextDelta(text="late"), END])
    assert enc.done
    d = MessagesStreamDecoder()
    events = run(d, [body])
    assert isinstance(events[0], StreamFailed)
    got = events[0].error
    assert got.message == "it broke"
    same = {FailureKind.TRANSIENT, FailureKind.NOT_A_STREAM, FailureKind.UNEXPECTED}
    same |= {FailureKind.CONTEXT_OVERFLOW, FailureKind.CONTENT_FILTER}
    if kind not in same:
        assert got.kind is kind
    status = error_status(failure)
    assert 400 <= status < 600
    assert json.loads(error_body(failure))["error"]["type"] == got.code


def test_a_failure_after_a_finish_and_usage_sends_them_first() -> None:
    events = [
        TextDelta(text="a"),
        Finished(reason=FinishReason.LENGTH, raw="length"),
        Usage(prompt_tokens=2, completion_tokens=1, total_tokens=3),
        StreamFailed(error=Failure(kind=FailureKind.OVERLOADED, message="busy")),
    ]
    body, _ = encode(events)
    d = MessagesStreamDecoder()
    out = run(d, [body])
    assert [type(e).__name__ for e in out][-4:] == [
        "Finished",
        "Usage",
        "StreamFailed",
        "StreamEnded",
    ]
    assert d.result.finish_raw == "max_tokens"


def test_a_cut_writes_no_message_stop() -> None:
    body, enc = encode([TextDelta(text="a"), StreamEnded(complete=False, done=False)])
    assert b"message_stop" not in body
    assert not enc.done
    body, _ = encode([StreamEnded(complete=True, done=True)])
    assert [o["type"] for o in wire(body)] == ["message_start", "message_delta", "message_stop"]


def test_stop_reasons() -> None:
    cases = [
        (FinishReason.STOP, "stop", "end_turn"),
        (FinishReason.STOP, "stop_sequence", "stop_sequence"),
        (FinishReason.LENGTH, "length", "max_tokens"),
        (FinishReason.LENGTH, "model_context_window_exceeded", "model_context_window_exceeded"),
        (FinishReason.TOOL_CALLS, "tool_calls", "tool_use"),
        (FinishReason.CONTENT_FILTER, "content_filter", "refusal"),
        (FinishReason.OTHER, "pause_turn", "pause_turn"),
        (FinishReason.OTHER, "weird", "weird"),  # attack 28: not a finished turn's end_turn
        (FinishReason.OTHER, "end_turn", "end_turn"),
    ]
    for reason, raw, wire_value in cases:
        assert stop_reason_of(Finished(reason=reason, raw=raw)) == wire_value


def test_usage_objects() -> None:
    assert usage_object(Usage(), start=True) == {"input_tokens": 0, "output_tokens": 0}
    assert usage_object(Usage(completion_tokens=2, total_tokens=9)) == {
        "output_tokens": 2,
        "vendor:svir": {"total_tokens": 9},
    }


def test_a_name_that_goes_on_after_its_arguments_began_is_written_whole() -> None:
    """Wire reference 3.3's recorded example sends ``look``, then ``up`` with more arguments:
    a ``tool_use`` block opened at the first piece named the call ``look``, and a block cannot
    be renamed. With the declared tools known, a call waits until its name is one of them and
    no other goes on from it; without them, the first piece is taken as the name."""
    from svir_proto._names import name_settled

    body = (CONFORMANCE / "openai" / "wire-3.3-tool-calls.sse").read_bytes()
    decoder = ChatStreamDecoder()
    events = decoder.feed(body) + decoder.close()
    for declared, first in ((None, "look"), ({"lookup"}, "lookup"), ({"look", "lookup"}, "lookup")):
        encoder = MessagesStreamEncoder(declared_tools=declared)
        out = b"".join(encoder.encode(e) for e in events)
        starts = [
            json.loads(line[6:])["content_block"]
            for line in out.split(b"\n")
            if line.startswith(b"data: ") and b'"content_block_start"' in line
        ]
        names = [b["name"] for b in starts if b["type"] == "tool_use"]
        assert names == [first, "lookup"], declared
        back = MessagesStreamDecoder()
        back.feed(out)
        back.close()
        got = [(c.name, c.arguments) for c in back.result.tool_calls]
        want = [(c.name, c.arguments) for c in decoder.result.tool_calls]
        assert (got == want) is (declared is not None)
    assert name_settled("lookup", {"lookup"})
    assert not name_settled("look", {"lookup"})
    assert not name_settled("look", {"look", "lookup"})
    assert not name_settled("", None)
    assert name_settled("x", None)
    assert not name_settled("other", {"lookup"})  # undeclared: it may yet grow


def test_a_held_call_goes_before_the_text_after_it() -> None:
    """Attack 49b F2: a call held for its name (a declared name another goes on from) or its
    turn (an earlier call's arguments were ``""``) was written whole at the end, after text
    that came later; the whole answer has the call first. Text after a name ends it, and at
    the end the calls begun before what was held go first."""
    prefix = [
        ToolCallDelta(index=0, id="a", name="get", arguments='{"c":1}'),
        TextDelta(text="X"),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        ToolCall(index=0, id="a", name="get", arguments='{"c":1}'),
        END,
    ]
    empty = [
        ToolCallDelta(index=0, id="a", name="f", arguments=""),
        ToolCallDelta(index=1, id="b", name="g", arguments="{}"),
        TextDelta(text="X"),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        ToolCall(index=0, id="a", name="f", arguments=""),
        ToolCall(index=1, id="b", name="g", arguments="{}"),
        END,
    ]
    nameless = [  # a call begun without an id while text waits: it goes where its id came
        ToolCallDelta(index=0, id="a", name="f", arguments='{"x":'),
        TextDelta(text="X"),
        ToolCallDelta(index=1, name="g"),
        ToolCallDelta(index=0, arguments="1}"),
        ToolCallDelta(index=1, id="b", arguments="{}"),
        END,
    ]
    for events, declared, blocks in (
        (prefix, {"get", "get_weather"}, ["tool_use", "text"]),
        (empty, {"f", "g"}, ["tool_use", "tool_use", "text"]),
        ([*empty[:-3], END], {"f", "g"}, ["tool_use", "tool_use", "text"]),  # no whole calls
        (nameless, {"f", "g"}, ["tool_use", "text", "tool_use"]),
    ):
        body, encoder = encode(events, declared_tools=declared)
        starts = [e["content_block"] for e in wire(body) if e["type"] == "content_block_start"]
        assert [b["type"] for b in starts] == blocks
        assert not any("name" in n for n in encoder.lost)
        d = MessagesStreamDecoder()
        run(d, [body])
        assert d.result.text == "X"
        assert [c.id for c in d.result.tool_calls] == [b["id"] for b in starts if b.get("id")]
    empty = [  # an empty text ends nothing (review 50 r9): the name goes on, whole
        ToolCallDelta(index=0, id="a", name="get", arguments="{}"),
        TextDelta(text=""),
        ToolCallDelta(index=0, name="_weather"),
        END,
    ]
    body, encoder = encode(empty, declared_tools={"get", "get_weather"})
    starts = [e["content_block"] for e in wire(body) if e["type"] == "content_block_start"]
    assert [b["name"] for b in starts if b["type"] == "tool_use"] == ["get_weather"]
    assert not any("name" in n for n in encoder.lost)


def test_whether_held_text_may_go_is_asked_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack 45 F4: while text waits for an open call's block, each piece of its arguments
    that ends with ``}`` asks whether they are a JSON object yet, so that the text goes as
    soon as they are. A long string cut into pieces that each end with ``}`` would parse
    them all each time (quadratic); the parses stop at `CHECK_COST` times their length, and
    the text goes when the block closes (here, at the whole `ToolCall`)."""
    from svir_proto.anthropic import encoder as module

    parsed = 0
    real = module.an_object

    def counted(arguments: str, *, empty: bool = True) -> bool:
        nonlocal parsed
        parsed += len(arguments)
        return real(arguments, empty=empty)

    monkeypatch.setattr(module, "an_object", counted)
    enc = MessagesStreamEncoder(declared_tools=["f"])
    out = enc.encode(ToolCallDelta(index=0, id="call_1", name="f", arguments='{"a":"'))
    out += enc.encode(TextDelta(text="later"))
    out += enc.encode(ToolCallDelta(index=0, arguments="x"))  # (not asked: no "}")
    n = 20_000
    out += b"".join(enc.encode(ToolCallDelta(index=0, arguments="}")) for _ in range(n))
    size = len('{"a":"x') + n
    assert parsed <= module.CHECK_COST * size  # (unbounded: some n * n / 2 = 2e8)
    assert b"later" not in out  # the arguments are not whole: it waits
    out += enc.encode(ToolCallDelta(index=0, arguments='"}'))  # whole, past the bound
    assert b"later" not in out
    whole = '{"a":"x' + "}" * n + '"}'
    out += enc.encode(ToolCall(index=0, id="call_1", name="f", arguments=whole))
    out += enc.encode(StreamEnded(complete=True, done=True))
    assert out.count(b"later") == 1
    assert out.index(b"later") > out.index(b"content_block_stop")  # after the call's block


def test_what_was_written_no_longer_counts_as_held() -> None:
    """Review 46 M1: text held for f's block (B), a call g begun after it, f's arguments
    whole: B goes, g's block opens, and the next text (C) waits for g's arguments. B was still
    counted as held: B and C each within `MAX_DEFERRED`, together past it, closed g's block
    early and failed the stream. What is held counts only what is."""
    from svir_proto.anthropic.encoder import MAX_DEFERRED

    n = MAX_DEFERRED * 6 // 10
    enc = MessagesStreamEncoder(declared_tools=["f", "g"])
    out = enc.encode(ToolCallDelta(index=0, id="c0", name="f", arguments='{"a":'))
    out += enc.encode(TextDelta(text="B" * n))
    out += enc.encode(ToolCallDelta(index=1, id="c1", name="g", arguments='{"b":'))
    out += enc.encode(ToolCallDelta(index=0, arguments=" 1}"))
    assert b"B" * n in out
    out += enc.encode(TextDelta(text="C" * n))
    assert b"C" * n not in out  # (held: g's arguments are not whole)
    out += enc.encode(ToolCallDelta(index=1, arguments=" 2}"))
    out += enc.encode(Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"))
    out += enc.encode(ToolCall(index=0, id="c0", name="f", arguments='{"a": 1}'))
    out += enc.encode(ToolCall(index=1, id="c1", name="g", arguments='{"b": 2}'))
    out += enc.encode(StreamEnded(complete=True, done=True))
    kinds = [json.loads(line[5:])["type"] for line in out.split(b"\n") if line.startswith(b"data:")]
    assert "error" not in kinds
    assert kinds[-1] == "message_stop"
    assert out.index(b'"name":"g"') < out.index(b"C" * n)


def test_what_stays_held_behind_a_call_counts_as_it_did() -> None:
    """Review 46 M1: after a call begun among held text opens, what is still held behind it
    (thinking, a signature, another call's beginning, text) counts what it did when held."""
    from svir_proto.anthropic.encoder import DEFER_COST

    enc = MessagesStreamEncoder(declared_tools=["f", "g", "h"])
    out = enc.encode(ToolCallDelta(index=0, id="c0", name="f", arguments='{"a":'))
    out += enc.encode(TextDelta(text="B"))
    out += enc.encode(ToolCallDelta(index=1, id="c1", name="g", arguments='{"b":'))
    out += enc.encode(ReasoningDelta(text="T", carrier="reasoning_content"))
    out += enc.encode(ReasoningSignature(signature="S", carrier="reasoning_content"))
    out += enc.encode(ToolCallDelta(index=2, id="c2", name="h", arguments='{"c":'))
    out += enc.encode(TextDelta(text="C"))
    out += enc.encode(ToolCallDelta(index=0, arguments=" 1}"))  # B goes, then g's block
    assert enc._deferred_size == 3 * (1 + DEFER_COST)  # T, S, C: h's beginning counts none
    for index, rest in ((1, " 2}"), (2, " 3}")):
        out += enc.encode(ToolCallDelta(index=index, arguments=rest))
    out += enc.encode(Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"))
    out += enc.encode(StreamEnded(complete=True, done=True))
    starts = [
        json.loads(line[5:])["content_block"]["type"]
        for line in out.split(b"\n")
        if line.startswith(b'data: {"type":"content_block_start"')
    ]
    assert starts == ["tool_use", "text", "tool_use", "thinking", "tool_use", "text"]


@pytest.mark.parametrize("ending", ["end", "cut", "arguments"])
def test_thousands_of_calls_held_behind_an_open_one_are_written_without_recursing(
    ending: str,
) -> None:
    """Review 51 r1: each call held behind text deferred for an open call took two frames as
    its block opened and closed (attack 49b F2's order), so 1,000 of them ended the stream in
    a RecursionError; now a loop, and no slice of what is left per call."""
    n = 3000
    enc = MessagesStreamEncoder(model="m")
    out = [enc.encode(ToolCallDelta(index=0, id="a", name="f", arguments='{"x":'))]
    out.append(enc.encode(TextDelta(text="X")))  # deferred: call 0's arguments are not whole
    out += [
        enc.encode(ToolCallDelta(index=k, id=f"c{k}", name="f", arguments="{}"))
        for k in range(1, n)
    ]
    if ending == "arguments":  # call 0's arguments complete: every held call follows it
        out.append(enc.encode(ToolCallDelta(index=0, arguments="1}")))
    out.append(enc.encode(Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls")))
    out.append(enc.encode(StreamEnded(complete=ending != "cut", done=ending != "cut")))
    body = b"".join(out)
    starts = [e for e in wire(body) if e["type"] == "content_block_start"]
    ids = [b["content_block"].get("id") for b in starts]
    assert ids == ["a", None, *(f"c{k}" for k in range(1, n))]  # as they began: the text second
    assert [b["index"] for b in starts] == list(range(n + 1))


def test_text_before_a_calls_name_began_does_not_end_the_name() -> None:
    """Attack 51 F1: text that came while a call had its id and arguments but no name yet
    counted as ending its name, so its first piece (``get_we``) opened the block: a tool the
    request never declared. Text ends a name that had begun before it, not one to come."""
    events: list[Any] = [
        StreamStarted(response_id="r", model="m"),
        ToolCallDelta(index=0, id="call_0", arguments='{"city":'),
        TextDelta(text="Let me check."),
        ToolCallDelta(index=0, name="get_we"),
        ToolCallDelta(index=0, name="ather"),
        ToolCallDelta(index=0, arguments='"Paris"}'),
        ToolCall(
            index=0, id="call_0", name="get_weather", arguments='{"city":"Paris"}', declared=True
        ),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        END,
    ]
    body, enc = encode(events, model="m", declared_tools=frozenset({"get_weather", "get"}))
    starts = [e["content_block"] for e in wire(body) if e["type"] == "content_block_start"]
    assert [b.get("name") for b in starts if b["type"] == "tool_use"] == ["get_weather"]
    assert not any("continued" in note for note in enc.lost)
    d = MessagesStreamDecoder()
    run(d, [body])
    assert [(c.name, c.arguments) for c in d.result.tool_calls] == [
        ("get_weather", '{"city":"Paris"}')
    ]
