"""LLM-Stream: every envelope and lifecycle violation, the encoder's refusals, request paths,
negotiation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import (
    CallerProtocolError,
    FailureKind,
    FinishReason,
    PeerProtocolError,
    ReasoningDelta,
    StreamEnded,
    StreamFailed,
    TextDelta,
    ToolCall,
    Usage,
)
from svir_proto._template import BUDGET
from svir_proto._weights import BLOCK, CALL, PART
from svir_proto.llmstream import (
    ACCEPT_LLM_STREAM,
    MAX_SEQ,
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    LLMStreamDecoder,
    LLMStreamEncoder,
    LLMTextPart,
    RequestError,
    parse_media_type,
    request_dialect,
    response_dialect,
    should_fall_back,
    unsupported_media_type,
)
from svir_proto.llmstream._lifecycle import TRANSITIONS, State, advance
from tests.helpers import FEEDS, bytewise, feed_as, relayed, run


def ev(type_: str, seq: int, event: str | None = None, **fields: Any) -> bytes:
    obj = {"v": "1.0", "seq": seq, "type": type_, **fields}
    head = b"" if event == "" else f"event: {event or type_}\n".encode()
    return head + b"data: " + json.dumps(obj).encode() + b"\n\n"


START = ev("stream.start", 0, model="m", created=1)
DELTA1 = ev("content.delta", 1, index=0, role="assistant", delta={"text": "hi"})
STOP2 = ev("content.stop", 2, index=0, stop_reason="end_turn")


def decode(body: bytes, **options: Any) -> tuple[list[Any], LLMStreamDecoder]:
    d = LLMStreamDecoder(**options)
    return run(d, [body]), d


def test_a_minimal_complete_stream() -> None:
    events, d = decode(START + DELTA1 + STOP2 + ev("stream.end", 3))
    assert events[-1] == StreamEnded(complete=True, done=True)
    assert d.result.complete
    assert d.result.text == "hi"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"event: stream.start\ndata: [1]\n\n", "one JSON object"),
        (b"event: stream.start\ndata: {nope\n\n", "not JSON"),
        (
            ev("stream.start", 0, model="m", created=1).replace(b'"v": "1.0"', b'"v": "2.0"'),
            "version",
        ),
        (ev("stream.start", 0, model="m", created=1).replace(b'"v": "1.0", ', b""), "version"),
        (ev("stream.start", 1, model="m", created=1), "expected 0, got 1"),
        (
            START + ev("content.delta", 3, index=0, role="assistant", delta={"text": "x"}),
            "expected 1, got 3",
        ),
        (
            START + DELTA1 + ev("content.delta", 1, index=0, role="assistant", delta={"text": "x"}),
            "expected 2, got 1",
        ),
        (
            ev("stream.start", 0, model="m", created=1).replace(b'"seq": 0', b'"seq": "0"'),
            "seq must be an integer",
        ),
        (
            ev("stream.start", 0, model="m", created=1).replace(b'"seq": 0', b'"seq": true'),
            "seq must be an integer",
        ),
        (
            ev("stream.start", 0, event="content.delta", model="m", created=1),
            "does not match the SSE event: content.delta",
        ),
        (
            ev("stream.start", 0, event="", model="m", created=1),
            "does not match the SSE no event: field",
        ),
        (
            ev("stream.start", 0, model="m", created=1).replace(
                b'"type": "stream.start"', b'"type": 5'
            ),
            "type must be a string",
        ),
        (DELTA1.replace(b'"seq": 1', b'"seq": 0'), "cannot receive content.delta in state IDLE"),
        (
            START + ev("stream.start", 1, model="m", created=1),
            "cannot receive stream.start in state STREAMING",
        ),
        (
            START
            + ev("error", 1, code="internal_error", message="x")
            + ev("content.delta", 2, index=0, role="assistant", delta={"text": "x"}),
            "cannot receive content.delta in state FAILED",
        ),
        (
            START + ev("stream.end", 1) + ev("usage", 2, input_tokens=1, output_tokens=1),
            "cannot receive usage in state ENDED",
        ),
        (START + ev("content.delta", 1, index=0, role="assistant", delta={}), "delta.text"),
        (
            START + ev("content.delta", 1, index="0", role="assistant", delta={"text": "x"}),
            "'index'",
        ),
        (
            START
            + STOP2.replace(b'"seq": 2', b'"seq": 1')
            + ev("content.delta", 2, index=0, role="assistant", delta={"text": "x"}),
            "after its content.stop",
        ),
        (
            START
            + ev("tool.call", 1, index=0, id="a", name="f", arguments="{}")
            + ev("tool.call", 2, index=0, id="a", name="g", arguments="{}"),
            "already used",
        ),
        (START + ev("tool.call", 1, index=0, id="", name="f", arguments="{}"), "non-empty id"),
        (START + ev("tool.call", 1, index=0, id="a", name="f", arguments={}), "'arguments'"),
        (START + ev("usage", 1, input_tokens="1", output_tokens=1), "'input_tokens'"),
        (START + ev("error", 1, code="rate_limited"), "'message'"),
        (ev("stream.start", 0, created=1), "'model'"),
    ],
)
def test_violations_are_remote_errors(body: bytes, match: str, json_backend: str) -> None:
    d = LLMStreamDecoder()
    with pytest.raises(PeerProtocolError, match=match):
        run(d, [body])
    assert not d.result.complete


def test_seq_at_2_to_the_53_terminates_the_stream() -> None:
    d = LLMStreamDecoder()
    d._seq = MAX_SEQ  # a stream that has really come this far is not something to build in a test
    with pytest.raises(PeerProtocolError) as info:
        run(d, [ev("usage", MAX_SEQ, input_tokens=1, output_tokens=1)])
    assert info.value.limit == "seq"
    assert info.value.limit_value == 2**53


def test_data_after_stream_end_is_an_error_even_after_the_terminal_event() -> None:
    d = LLMStreamDecoder()
    assert d.feed(START + STOP2.replace(b'"seq": 2', b'"seq": 1') + ev("stream.end", 2))[
        -1
    ] == StreamEnded(complete=True, done=True)
    with pytest.raises(PeerProtocolError, match="ENDED"):
        d.feed(ev("content.delta", 3, index=0, role="assistant", delta={"text": "late"}))


def test_unknown_fields_extensions_and_event_types_are_ignored() -> None:
    body = (
        START
        + ev(
            "content.delta",
            1,
            index=0,
            role="assistant",
            delta={"text": "a", "future": 1},
            extra=2,
            **{"vendor:acme": {"x": 1}},
        )
        + ev("content.thinking", 2, text="ignored")
        + ev("content.stop", 3, index=0, stop_reason="end_turn")
        + ev("stream.end", 4)
    )
    events, d = decode(body)
    assert [type(e).__name__ for e in events] == [
        "StreamStarted",
        "TextDelta",
        "Finished",
        "StreamEnded",
    ]
    assert d.result.complete
    assert d.result.problems == ("ignored events of unknown type 'content.thinking'",)


def test_an_error_then_stream_end() -> None:
    body = (
        START
        + DELTA1
        + ev("error", 2, code="context_length_exceeded", message="too long")
        + ev("stream.end", 3)
    )
    events, d = decode(body)
    failed = next(e for e in events if isinstance(e, StreamFailed))
    assert failed.error.kind is FailureKind.CONTEXT_OVERFLOW
    assert failed.error.code == "context_length_exceeded"
    assert events[-1] == StreamEnded(complete=False, done=True)
    assert d.result.text == "hi"
    assert d.result.done


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("rate_limited", FailureKind.RATE_LIMITED),
        ("content_filtered", FailureKind.CONTENT_FILTER),
        ("internal_error", FailureKind.SERVER_ERROR),
        ("overloaded", FailureKind.OVERLOADED),
        ("weird", FailureKind.SERVER_ERROR),
    ],
)
def test_error_codes(code: str, kind: FailureKind) -> None:
    events, _ = decode(START + ev("error", 1, code=code, message="m") + ev("stream.end", 2))
    assert next(e for e in events if isinstance(e, StreamFailed)).error.kind is kind


def test_undeclared_tool_is_flagged_never_passed_off() -> None:
    body = (
        START
        + ev("tool.call", 1, index=0, id="c", name="rm_rf", arguments="{}")
        + ev("content.stop", 2, index=0, stop_reason="tool_use")
        + ev("stream.end", 3)
    )
    events, d = decode(body, declared_tools={"get_weather"})
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.declared is False
    assert any("not declared" in p for p in d.result.problems)
    _, d = decode(body)
    assert d.result.tool_calls[0].declared is None


def test_cut_before_stream_end_is_partial() -> None:
    _, d = decode(START + DELTA1 + STOP2)
    assert not d.result.complete
    assert d.result.finish_reason is FinishReason.STOP
    assert not d.result.done


def svir_delta(seq: int, ext: dict[str, Any]) -> bytes:
    """An empty content.delta that carries only the svir extension."""
    return ev(
        "content.delta", seq, index=0, role="assistant", delta={"text": ""}, **{"vendor:svir": ext}
    )


def test_svir_extensions_carry_what_the_draft_has_no_event_for() -> None:
    body = (
        START
        + svir_delta(1, {"reasoning": "hmm", "carrier": "think"})
        + ev(
            "content.stop",
            2,
            index=0,
            stop_reason="end_turn",
            **{"vendor:svir": {"finish": "abort"}},
        )
    )
    events, d = decode(body)
    assert ReasoningDelta(text="hmm", carrier="think") in events
    assert not any(isinstance(e, TextDelta) for e in events)
    assert d.result.finish_raw == "abort"


def _answer(n: int) -> bytes:
    """Signed reasoning, a refusal, ``n`` text deltas of 10 characters (a template reads
    them), then a call."""
    body = START + svir_delta(1, {"reasoning": "why" * 10, "signature": "sig"})
    body += svir_delta(2, {"refusal": "no" * 10})
    body += b"".join(
        ev("content.delta", 3 + i, index=0, role="assistant", delta={"text": f"{i:010d}"})
        for i in range(n)
    )
    body += ev("tool.call", 3 + n, index=0, id="c", name="f", arguments='{"a": 1}')
    body += ev("content.stop", 4 + n, index=0, stop_reason="tool_use")
    return body + ev("stream.end", 5 + n)


@pytest.mark.parametrize("mode", FEEDS)
def test_without_keep_text_the_text_is_neither_kept_nor_bounded(mode: str) -> None:
    # a relay passes the deltas on: 450 characters of text, reasoning and refusal pass a
    # bound of 20, which still counts the signature and the arguments
    bound = BLOCK + CALL + 3 * PART + 20  # a block, a call, the blocks stopped
    kept, relay = relayed(LLMStreamDecoder, _answer(40), mode, max_result_size=bound)
    assert kept.text == "".join(f"{i:010d}" for i in range(40))  # as before
    assert [(b.text, b.signature) for b in relay.reasoning_blocks] == [("", "sig")]
    assert relay.tool_calls[0].arguments == '{"a": 1}'
    with pytest.raises(PeerProtocolError) as caught:
        decode(_answer(40), max_result_size=bound)
    assert caught.value.limit == "max_result_size"


@pytest.mark.parametrize("mode", FEEDS)
def test_without_keep_text_the_arguments_are_still_bounded(mode: str) -> None:
    # the block and its signature, the call, its id and name, and 7 of its arguments' 8
    d = LLMStreamDecoder(keep_text=False, max_result_size=BLOCK + 3 + CALL + 2 + 7)
    with pytest.raises(PeerProtocolError) as caught:
        run(d, feed_as(mode, _answer(40)))
    assert caught.value.limit == "max_result_size"
    assert d.result.text == ""


# -- the encoder ------------------------------------------------------------------------------


def test_the_lifecycle_table_is_closed() -> None:
    types = {t for _, t in TRANSITIONS}
    for state in State:
        for t in types:
            nxt = advance(state, t)
            assert nxt is None or nxt in State


def test_encoder_refuses_out_of_order_and_changes_nothing() -> None:
    e = LLMStreamEncoder()
    with pytest.raises(CallerProtocolError, match=r"cannot send content\.delta in state IDLE"):
        e.delta("x")
    assert (e.seq, e.state) == (0, State.IDLE)
    e.start(model="m", created=1)
    e.error("internal_error", "boom")
    with pytest.raises(CallerProtocolError, match="in state FAILED"):
        e.usage(input_tokens=1, output_tokens=1)
    e.end()
    with pytest.raises(CallerProtocolError, match=r"cannot send stream\.end in state ENDED"):
        e.end()
    assert e.seq == 3


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda e: e.stop("finished"), "stop_reason"),
        (lambda e: e.error("teapot", "x"), "error code"),
        (lambda e: e.tool_call(id="", name="f", arguments="{}"), "non-empty id"),
        (lambda e: e.delta(5), "str"),
    ],
)
def test_encoder_value_errors(call: Any, match: str) -> None:
    e = LLMStreamEncoder()
    e.start(model="m", created=1)
    with pytest.raises(ValueError, match=match):
        call(e)
    assert e.seq == 1


def test_encoder_echoes_request_id_and_numbers_seq() -> None:
    e = LLMStreamEncoder(request_id="r-1")
    body = e.start(model="m", created=5) + e.delta("a") + e.stop("max_tokens") + e.end()
    events, d = decode(body)
    assert events[0].request_id == "r-1"
    assert b'"seq":3,"type":"stream.end","request_id":"r-1"' in body
    assert d.result.finish_reason is FinishReason.LENGTH


# -- requests ---------------------------------------------------------------------------------

BASE: dict[str, Any] = {
    "version": "1.0",
    "stream": True,
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"version": "1.1"}, "$.version"),
        ({"stream": False}, "$.stream"),
        ({"model": ""}, "$.model"),
        ({"messages": []}, "$.messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "$.messages[0].role"),
        ({"messages": [{"role": "user"}]}, "$.messages[0].content"),
        ({"messages": [{"role": "user", "content": 5}]}, "$.messages[0].content"),
        ({"messages": [{"role": "user", "content": []}]}, "$.messages[0].content"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "$.messages[0].tool_call_id"),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "video", "media_type": "video/mp4", "data": ""}],
                    }
                ]
            },
            "$.messages[0].content[0].type",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "image", "data": ""}]}]},
            "$.messages[0].content[0].media_type",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "audio", "media_type": "audio/wav", "data": "***"}],
                    }
                ]
            },
            "$.messages[0].content[0].data",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "$.messages[0].content[0].text",
        ),
        (
            {"messages": [{"role": "user", "content": "x", "tool_calls": []}]},
            "$.messages[0].tool_calls",
        ),
        (
            {
                "messages": [
                    {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "name": "f"}]}
                ]
            },
            "$.messages[0].tool_calls[0].arguments",
        ),
        ({"tools": [{"name": "f", "description": "d"}]}, "$.tools[0].parameters"),
        (
            {
                "tools": [
                    {"name": "f", "description": "d", "parameters": {}},
                    {"name": "f", "description": "d", "parameters": {}},
                ]
            },
            "$.tools[1].name",
        ),
        ({"parameters": {"max_tokens": 0}}, "$.parameters.max_tokens"),
        ({"parameters": {"top_p": 2}}, "$.parameters.top_p"),
        ({"parameters": {"stop_sequences": "x"}}, "$.parameters.stop_sequences"),
        ({"metadata": {"request_id": 5}}, "$.metadata.request_id"),
        ({"extensions": {"acme": {}}}, "$.extensions['acme']"),
    ],
)
def test_request_errors_name_the_json_path(change: dict[str, Any], path: str) -> None:
    with pytest.raises(RequestError) as info:
        LLMRequest.parse(json.dumps({**BASE, **change}))
    assert info.value.path == path
    assert isinstance(info.value, PeerProtocolError)


def test_request_not_json_and_caller_errors() -> None:
    with pytest.raises(RequestError, match=r"^\$: not JSON"):
        LLMRequest.parse(b"{")
    with pytest.raises(ValueError, match="tool_call_id"):
        LLMMessage(role="tool", content="x")
    with pytest.raises(ValueError, match=r"\$.extensions"):
        LLMRequest(
            model="m", messages=[LLMMessage(role="user", content="x")], extensions={"bad": 1}
        )


def test_request_media_parts_stream_from_disk(tmp_path: Any) -> None:
    f = tmp_path / "scan.pdf"
    f.write_bytes(b"%PDF-1.7 " + bytes(range(256)) * 100)
    req = LLMRequest(
        model="m",
        messages=[
            LLMMessage(
                role="user",
                content=(
                    LLMTextPart(text="read"),
                    LLMMediaPart.from_path("document", f, "application/pdf"),
                ),
            )
        ],
    )
    body = req.body(piece_size=999)
    parsed = LLMRequest.parse(body.read())
    part = parsed.messages[0].content[1]  # type: ignore[index]
    assert isinstance(part, LLMMediaPart)
    assert part.decoded() == f.read_bytes()


# -- negotiation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "dialect"),
    [
        ("application/llm-request+json", "llm-stream"),
        ("application/llm-request+json; version=1.0", "llm-stream"),
        ('Application/LLM-Request+JSON; version="1.0"', "llm-stream"),
        ("application/llm-request+json; version=2.0", None),
        ("application/json", "openai"),
        ("application/json; charset=utf-8", "openai"),
        ("text/plain", None),
        (None, None),
        ("", None),
    ],
)
def test_request_dialect(content_type: str | None, dialect: str | None) -> None:
    assert request_dialect(content_type) == dialect


@pytest.mark.parametrize(
    ("request_is", "accept", "response_is"),
    [
        ("llm-stream", None, "llm-stream"),
        ("openai", None, "openai"),
        ("openai", "text/event-stream", "openai"),
        ("openai", ACCEPT_LLM_STREAM, "llm-stream"),
        (
            "openai",
            'application/json;q=0.5, text/event-stream;profile="llm-stream-1.0"',
            "llm-stream",
        ),
        ("openai", "text/event-stream; profile=other", "openai"),
    ],
)
def test_response_dialect(request_is: Any, accept: str | None, response_is: str) -> None:
    assert response_dialect(request_is, accept) == response_is


def test_415_answer_and_fallback() -> None:
    status, headers, body = unsupported_media_type("text/xml")
    assert status == 415
    assert dict(headers)["Accept-Post"] == "application/llm-request+json, application/json"
    assert json.loads(body)["error"]["code"] == "unsupported_media_type"
    assert dict(headers)["Content-Length"] == str(len(body))
    assert should_fall_back(415)
    assert should_fall_back(200, "message")
    assert not should_fall_back(200, "stream.start")
    assert not should_fall_back(200)
    assert not should_fall_back(500)
    assert parse_media_type('a/b; x="q\\"uote"; y=z') == ("a/b", {"x": 'q"uote', "y": "z"})


# -- building requests: each bad value named ----------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "video", "media_type": "video/mp4", "raw": b"x"}, "image, document or audio"),
        ({"type": "image", "media_type": "png", "raw": b"x"}, "is not a media type"),
        ({"type": "image", "media_type": "image/png"}, "exactly one of data, raw or path"),
        ({"type": "image", "media_type": "image/png", "raw": b"x", "data": "eA=="}, "exactly one"),
    ],
)
def test_a_media_part_names_what_is_wrong(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LLMMediaPart(**kwargs)


def test_media_part_bytes_from_each_source(tmp_path: Any) -> None:
    assert LLMMediaPart(type="image", media_type="image/png", raw=b"\x89P").decoded() == b"\x89P"
    assert LLMMediaPart(type="audio", media_type="audio/wav", data="AAE=").decoded() == b"\0\1"
    f = tmp_path / "a.pdf"
    f.write_bytes(b"%PDF-1.7")
    assert LLMMediaPart.from_path("document", f, "application/pdf").decoded() == b"%PDF-1.7"


def test_bytes_that_break_framing_after_stream_end_are_an_error() -> None:
    body = START + DELTA1 + STOP2 + ev("stream.end", 3)
    d = LLMStreamDecoder(max_event_size=200)
    events = d.feed(body)
    assert events[-1] == StreamEnded(complete=True, done=True)
    with pytest.raises(PeerProtocolError, match="max_event_size"):
        d.feed(b"data: " + b"x" * 300)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"role": "robot", "content": "x"}, "role must be one of"),
        ({"role": "tool", "content": "x"}, "needs tool_call_id"),
        ({"role": "user", "content": None}, "content is required"),
    ],
)
def test_a_message_names_what_is_wrong(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LLMMessage(**kwargs)


def test_a_named_message_keeps_its_name_on_the_wire() -> None:
    req = LLMRequest(model="m", messages=[LLMMessage(role="user", content="hi", name="ann")])
    doc = json.loads(req.body().read())
    assert doc["messages"][0] == {"role": "user", "content": "hi", "name": "ann"}
    assert LLMRequest.parse(req.body().read()).messages[0].name == "ann"


def test_media_type_parameters_without_a_value_or_a_name_are_skipped() -> None:
    assert parse_media_type("Text/Plain; charset") == ("text/plain", {})
    assert parse_media_type('a/b; =x; Q="a\\"b"; r=1') == ("a/b", {"q": 'a"b', "r": "1"})


def test_tool_names_are_the_declared_tools() -> None:
    from svir_proto.llmstream import LLMTool

    req = LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="hi")],
        tools=[LLMTool(name="f", description="", parameters={"type": "object"})],
    )
    assert req.tool_names == {"f"}


# -- the encoder's and decoder's less travelled paths ------------------------------------------


def test_encoder_checks_start_and_refuses_a_delta_after_its_stop() -> None:
    with pytest.raises(ValueError, match="model"):
        LLMStreamEncoder().start(model=None, created=1)  # type: ignore[arg-type]
    e = LLMStreamEncoder()
    e.start(model="m", created=1)
    e.stop("end_turn", index=0)
    with pytest.raises(CallerProtocolError, match=r"after its content\.stop"):
        e.delta("late", index=0)
    assert e.delta("other block", index=1).startswith(b"event: content.delta\n")


def test_encoder_encodes_the_end_and_skips_tool_call_pieces() -> None:
    from svir_proto import ToolCallDelta

    e = LLMStreamEncoder()
    e.start(model="m", created=1)
    assert e.encode(ToolCallDelta(index=0, id="c", name="f", arguments="{")) == b""
    assert e.encode(StreamEnded(complete=True)).startswith(b"event: stream.end\n")


def test_decoder_notes_an_unknown_type_once_and_an_unknown_stop_reason() -> None:
    body = (
        START
        + ev("content.thinking", 1)
        + ev("content.thinking", 2)
        + ev("content.stop", 3, index=0, stop_reason="sleepy")
        + ev("stream.end", 4)
    )
    _, d = decode(body)
    assert d.result.problems == (
        "ignored events of unknown type 'content.thinking'",
        "unknown stop_reason 'sleepy'",
    )
    assert d.result.finish_reason is FinishReason.OTHER


def test_decoder_reads_the_svir_extension_defensively() -> None:
    ext = {
        "reasoning": "hm",
        "carrier": "telepathy",  # not a carrier: the default one
        "filter": {"scope": "completion", "results": ["not a result", {"category": "hate"}]},
    }
    body = START + svir_delta(1, ext) + STOP2 + ev("stream.end", 3)
    events, _ = decode(body)
    assert ReasoningDelta(text="hm", carrier="reasoning") in events
    verdicts = [e for e in events if type(e).__name__ == "FilterVerdict"]
    assert [r.category for r in verdicts[0].results] == ["hate"]


def test_a_request_from_its_document() -> None:
    doc = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "parameters": {"max_tokens": 5, "top_k": 3},
        "extensions": {"vendor:x": {"a": 1}},
    }
    request = LLMRequest.from_document(doc)  # version and stream may be left out
    assert request.parameters == {"max_tokens": 5, "top_k": 3}
    assert request.to_document()["version"] == "1.0"
    assert LLMRequest.from_document(request.to_document()) == request
    with pytest.raises(ValueError, match=r"\$.messages\[0\].role"):
        LLMRequest.from_document({"model": "m", "messages": [{"role": "x", "content": "a"}]})
    with pytest.raises(ValueError, match="'temperature' is not a field of the draft"):
        LLMRequest.from_document({**doc, "temperature": 0.5})
    with pytest.raises(TypeError, match="must be a mapping"):
        LLMRequest.from_document([doc])  # type: ignore[arg-type]


# The template (`svir_proto._template`): repeated deltas read without the parser, with the
# events, errors and offsets of the general way, in one piece, one event per read, byte by byte.


def delta(seq: int, piece: str, index: int = 0, **more: Any) -> bytes:
    return ev("content.delta", seq, index=index, role="assistant", delta={"text": piece}, **more)


def readings(body: bytes) -> list[list[bytes]]:
    """``body`` one event per read, byte by byte, and in reads that end inside events (runs
    of deltas read ahead of the lanes, `DialectDecoder._ahead`)."""
    *whole, rest = body.split(b"\n\n")
    cuts = [[body[i : i + size] for i in range(0, len(body), size)] for size in (7, 100, 333)]
    return [[e + b"\n\n" for e in whole] + [rest], bytewise(body), *cuts]


def by_template(body: bytes, **options: Any) -> tuple[list[Any], LLMStreamDecoder]:
    """The events of ``body``, the same in one piece and however else it is read."""
    d = LLMStreamDecoder(**options)
    events = run(d, [body])
    for pieces in readings(body):
        again = LLMStreamDecoder(**options)
        assert run(again, pieces) == events
        assert again.result == d.result
    return events, d


def error_by_template(body: bytes, **options: Any) -> PeerProtocolError:
    """The error ``body`` ends in, with the same offset however it is read."""
    errors = []
    for pieces in [[body], *readings(body)]:
        with pytest.raises(PeerProtocolError) as info:
            run(LLMStreamDecoder(**options), pieces)
        errors.append(info.value)
    assert len({(str(e), e.offset) for e in errors}) == 1, errors
    return errors[0]


RUN = START + b"".join(delta(1 + i, c) for i, c in enumerate("abcde"))  # seq 1..5


def test_repeated_deltas_are_read_by_the_template() -> None:
    events, d = by_template(RUN + ev("content.stop", 6, index=0, stop_reason="end_turn"))
    assert d.result.text == "abcde"
    assert [e.text for e in events if isinstance(e, TextDelta)] == list("abcde")
    assert d._template is None  # a block's stop ends its template
    alone = LLMStreamDecoder()
    run(alone, [RUN])
    assert alone._template is not None
    assert alone._template.hits == 4  # all after the first


@pytest.mark.parametrize(
    ("after", "match"),
    [
        (delta(7, "x"), "expected 6, got 7"),
        (ev("content.stop", 6, index=0, stop_reason="end_turn") + delta(7, "x"), "after its"),
        (ev("error", 6, code="internal_error", message="m") + delta(7, "x"), "state FAILED"),
        (ev("stream.end", 6) + delta(7, "x"), "state ENDED"),
        (delta(6, "x").replace(b"event: content.delta", b"event: other"), "does not match"),
        (delta(6, "x").replace(b"event: content.delta\n", b""), "does not match"),
        (delta(6, "Z").replace(b'"Z"', b'"a\xed\xb3\xbf"'), "UTF-8"),  # a surrogate's bytes
        (delta(6, "Z").replace(b'"Z"', b'"a\xc3("'), "UTF-8"),
    ],
)
def test_what_follows_a_template_is_checked_as_ever(after: bytes, match: str) -> None:
    assert match in str(error_by_template(RUN + after))


def test_deltas_with_an_extension_or_another_block_are_read_the_general_way() -> None:
    reasoning = delta(6, "", **{"vendor:svir": {"reasoning": "think"}})
    other = delta(7, "f", index=1)
    _, d = by_template(RUN + reasoning + other + delta(8, "g", index=1))
    assert d.result.text == "abcdefg"
    assert d.result.reasoning == "think"


def test_the_template_counts_the_result_exactly() -> None:
    by_template(RUN, max_result_size=5)
    assert "max_result_size" in str(error_by_template(RUN, max_result_size=4))


def test_the_template_stops_short_of_2_to_the_53() -> None:
    tail = delta(MAX_SEQ - 2, "c") + delta(MAX_SEQ - 1, "d") + delta(MAX_SEQ, "e")
    *events, _ = tail.split(b"\n\n")
    for pieces in ([tail], [e + b"\n\n" for e in events], [tail[:50], tail[50:]]):
        d = LLMStreamDecoder()
        d.feed(START + delta(1, "a"))
        d.feed(delta(2, "b"))  # learned, and used once
        assert d._template is not None
        assert d._template.hits == 1
        d._seq = MAX_SEQ - 2  # a stream that has come this far is not something to build here
        with pytest.raises(PeerProtocolError) as info:
            run(d, pieces)
        assert info.value.limit == "seq"
        assert d.result.text == "abcd"


def test_empty_deltas_bytes_that_change_every_time_and_two_texts() -> None:
    _, d = by_template(RUN + delta(6, "") + delta(7, "f"))
    assert d.result.text == "abcdef"
    assert d._template is not None
    assert d._template.hits == 6
    rotating = START + b"".join(delta(1 + i, c, n=i) for i, c in enumerate("abcdefghijkl"))
    _, d = by_template(rotating)
    assert d.result.text == "abcdefghijkl"
    assert d._template is None  # learned 8 in vain: no more learning
    twice = START + delta(1, "a", text="b") + delta(2, "c", text="b")  # two texts
    _, d = by_template(twice)
    assert (d.result.text, d._template) == ("ac", None)


def test_a_usage_after_every_delta_is_read_without_the_parser() -> None:
    """A server that reports usage with every delta (5.3: it MAY come mid-stream): a usage of
    the draft's fields alone that repeats the last one's bytes but for its numbers is read by
    a pattern, with the events and result of the general way (the property test holds that
    for the odd ones); the budget stops the learning of a stream whose usages never repeat."""

    def usage(seq: int, output: int, **more: Any) -> bytes:
        return ev("usage", seq, input_tokens=12, output_tokens=output, **more)

    body = START + b"".join(delta(1 + 2 * i, "ab") + usage(2 + 2 * i, i + 1) for i in range(4))
    events, d = by_template(body)
    counts = [(e.prompt_tokens, e.completion_tokens) for e in events if isinstance(e, Usage)]
    assert counts == [(12, 1), (12, 2), (12, 3), (12, 4)]
    assert d.result.usage == Usage(prompt_tokens=12, completion_tokens=4)
    fast = LLMStreamDecoder()
    fast.feed(body)
    fast._loads = None  # type: ignore[assignment]  # any parse would fail now
    assert fast.feed(usage(9, 123456789)) == [Usage(prompt_tokens=12, completion_tokens=123456789)]
    wrong = error_by_template(body + usage(9, 5) + usage(11, 6))  # its number is checked
    assert "expected 10, got 11" in str(wrong)
    failed = ev("error", 9, code="internal_error", message="m")
    late = error_by_template(body + failed + usage(10, 5))  # and where it may come
    assert "cannot receive usage in state FAILED" in str(late)
    rotating = START + b"".join(usage(1 + i, i, **{f"x{i}": 1}) for i in range(12))
    _, d = by_template(rotating)
    assert d._counts is None  # none of them had the draft's fields alone: nothing learned
    assert d._counts_budget == BUDGET
    spaced = START + b"".join(  # every other one without spaces
        usage(1 + i, i).replace(b'": ', b'":' if i % 2 else b'": ') for i in range(12)
    )
    _, d = by_template(spaced)
    assert d._counts_budget == 0  # each learned, none repeated by the next: learning stops


def test_a_template_learned_from_data_in_two_lines_never_reads_the_wire() -> None:
    """The framer joined the learned delta's two data lines at an LF; the next event's second
    line is no data line, so its data is not JSON, however the bytes are read (found by an
    attack on the read-ahead)."""
    name = b"event: content.delta\ndata: "
    head = b'{"v":"1.0","seq":%d,"type":"content.delta","index":0,"role":"assistant",\n'
    first = name + head % 1 + b'data: "delta":{"text":"a"}}\n\n'
    second = name + head % 2 + b'"delta":{"text":"b"}}\n\n'
    error = error_by_template(START + first + second)
    assert "not JSON" in str(error)


def test_deltas_whose_number_follows_the_text_are_tried_within_the_budget() -> None:
    """Another writer's key order (``seq`` after the delta) cannot be learned (`_template`
    Rule 5): each failed try counts, so after `BUDGET` of them the decoder stops trying, and
    reads every delta the general way with the same events."""
    from svir_proto._template import BUDGET

    def late_seq(seq: int, text: str) -> bytes:
        obj = {"type": "content.delta", "index": 0, "role": "assistant", "delta": {"text": text}}
        data = json.dumps({**obj, "v": "1.0", "seq": seq}).encode()
        return b"event: content.delta\ndata: " + data + b"\n\n"

    n = 3 * BUDGET
    body = START + b"".join(late_seq(i, f"t{i}") for i in range(1, n + 1))
    body += ev("content.stop", n + 1, index=0, stop_reason="end_turn") + ev("stream.end", n + 2)
    events, d = decode(body)
    assert d._budget == 0
    assert d._template is None
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(
        f"t{i}" for i in range(1, n + 1)
    )
    assert events[-1] == StreamEnded(complete=True, done=True)
